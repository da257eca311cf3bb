#!/usr/bin/env bash
# run-all.sh SKYCMD [OUTDIR] - every measurement of docs/performance.md in one go (by hand;
# ~15 minutes on a 2-core machine). Needs /opt/gvenv (laya 0.4.15, torch 2.15) for the
# Python side. LLAMA_SERVER=/path/to/llama-server adds llama.cpp to the HTTP suite.
# Results: OUTDIR/*.json (every round) and OUTDIR/*.md (the tables), plus uptime lines.
set -euo pipefail
SKYCMD=$(realpath "$1")
OUT=${2:-/tmp/skycmd-perf-$(date +%Y%m%d-%H%M%S)}
PY=${PYTHON:-/opt/gvenv/bin/python}
HERE=$(cd "$(dirname "$0")" && pwd)
PEAK=${PEAK:-$(dirname "$SKYCMD")/bench/skycmd-peak}
ROUNDS=${ROUNDS:-5}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/skycmd-compare-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
LL=()
[ -n "${LLAMA_SERVER:-}" ] && LL=(--llama-server "$LLAMA_SERVER")

{ date -u; uptime; "$SKYCMD" --version; } | tee "$OUT/machine.txt"
lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | cut -c1-200 >> "$OUT/machine.txt"
[ -x "$PEAK" ] && "$PEAK" --ms 500 | tee "$OUT/peak.txt"

# s1-pico: in-process vs Python laya, serve over HTTP (vs llama-server), s1-micro load
"$PY" "$HERE/compare.py" --skycmd "$SKYCMD" --preset s1-pico --threads 1 \
    --suite inproc,http,load --rounds "$ROUNDS" "${LL[@]}" --work "$WORK/pico" \
    --out "$OUT/pico.json" | tee "$OUT/pico.md"

# base at 128 tokens: f32 vs torch fp32 (1 thread), 1 vs 2 threads, int8 vs f32
"$PY" "$HERE/compare.py" --skycmd "$SKYCMD" --preset base --tokens 128 --threads 1 \
    --suite inproc,threads,q8 --rounds "$ROUNDS" --sky-iters 3 --py-iters 2 --py-warmup 1 \
    --work "$WORK/base" --out "$OUT/base.json" | tee "$OUT/base.md"

# large at 128 tokens: skycmd alone (one run each, f32 and --q8-fast)
"$SKYCMD" bench --random large --tokens 128 --iters 3 --warmup 1 --json > "$OUT/large-f32.json"
"$SKYCMD" bench --random large --tokens 128 --iters 3 --warmup 1 --q8-fast --json \
    > "$OUT/large-q8-fast.json" || true
uptime | tee -a "$OUT/machine.txt"
echo "results in $OUT"
