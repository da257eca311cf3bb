#!/usr/bin/env bash
# poll_ab.sh [SKYCMD] [OUTDIR] - what `skycmd serve --poll-us` buys a client on another core,
# by hand: two servers on s1-pico, one without --poll-us and one per value of POLL (default
# "50 200"), all pinned to CPU SERVER_CPU (0), and `wrk -t1 -c1` with the one-question body
# pinned to CPU CLIENT_CPU (1), in interleaved rounds. Pinned, the client's own core is never
# the one kept awake, so the gain is the server's side alone (what a client on another machine
# would see); unpinned, as in serve_vs_llama.sh, the scheduler may also put the client on the
# awake core. Needs taskset, wrk and 2 CPUs or more.
# Environment: ROUNDS (5), SECONDS_PER_RUN (4), POLL ("50 200"), SERVER_CPU (0), CLIENT_CPU (1).
set -euo pipefail
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
for t in taskset wrk; do
    command -v "$t" >/dev/null || { echo "poll_ab.sh: needs $t" >&2; exit 2; }
done
HERE=$(cd "$(dirname "$0")" && pwd)
SKYCMD=$(realpath "${1:-$HERE/../../build/skycmd}")
OUT=${2:-/tmp/skycmd-poll-ab-$(date +%Y%m%d-%H%M%S)}
SCPU=${SERVER_CPU:-0}
CCPU=${CLIENT_CPU:-1}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/skycmd-pollab-XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
{ date -u; uptime; "$SKYCMD" --version; lscpu | grep -E 'Model name|^CPU\(s\)'; } | tee "$OUT/machine.txt"
"$SKYCMD" random s1-pico "$WORK/pico" --layout laya --seed 42 >/dev/null
"$SKYCMD" convert "$WORK/pico" "$WORK/pico.gguf" --type f32 >/dev/null
"$SKYCMD" bench "$WORK/pico.gguf" --questions 1 --iters 1 --save-request "$WORK/one.json" >/dev/null
printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nlocal f = io.open("%s"); wrk.body = f:read("*a"); f:close()\n' \
    "$WORK/one.json" >"$WORK/post.lua"

VALUES="0 ${POLL:-50 200}"
declare -A PORT
for v in $VALUES; do
    log="$WORK/serve-$v.log"
    taskset -c "$SCPU" "$SKYCMD" serve --model "pico=$WORK/pico.gguf" --port 0 --threads 2 \
        --poll-us "$v" >"$log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do
        grep -q "ready" "$log" && break
        sleep 0.1
    done
    p=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log" | head -n 1)
    { [ -n "$p" ] && grep -q "ready" "$log"; } || { echo "poll_ab.sh: the server with --poll-us $v did not start" >&2; cat "$log" >&2; exit 1; }
    PORT[$v]=$p
done
for r in $(seq "${ROUNDS:-5}"); do
    for v in $VALUES; do
        rps=$(taskset -c "$CCPU" wrk -t1 -c1 -d"${SECONDS_PER_RUN:-4}s" -s "$WORK/post.lua" \
              "http://127.0.0.1:${PORT[$v]}/v1/systemone" | sed -n 's/Requests\/sec:[[:space:]]*//p')
        echo "round $r --poll-us $v: $rps req/s" | tee -a "$OUT/rounds.txt"
    done
done
echo "| --poll-us | median req/s | vs off |" | tee "$OUT/poll-ab.md"
echo "|---|---|---|" | tee -a "$OUT/poll-ab.md"
base=""
for v in $VALUES; do
    med=$(sed -n "s/.* --poll-us $v: \([0-9.]*\) req\/s/\1/p" "$OUT/rounds.txt" | sort -n |
          awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
    [ -z "$base" ] && base=$med
    echo "| $v | $med | $(awk -v a="$med" -v b="$base" 'BEGIN {printf "%.3fx", a / b}') |" | tee -a "$OUT/poll-ab.md"
done
uptime | tee -a "$OUT/machine.txt"
echo "results in $OUT"
