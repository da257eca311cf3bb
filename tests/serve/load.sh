#!/usr/bin/env bash
# load.sh - bounded load test of `skycmd serve` with wrk, on loopback only.
#
#   bash tests/serve/load.sh --cli build/skycmd [--model m.gguf] [--duration 30] [--connections 64]
#                            [--threads 2] [--soak 60] [--soak-connections 256] [--ci]
#
# Starts a server (--threads worker threads), warms it up, records its RSS, runs wrk with
# the example request (POST /v1/systemone) for --duration seconds at --connections
# connections, records RSS again, then measures the latency of the example request over one
# keep-alive connection. Fails on any non-2xx answer or socket error, on an RSS growth over
# 4 MiB after warm-up, or on an unclean shutdown. --ci = 5 s instead of 30 s.
# Then the soak (issue 37): --soak seconds (default 60; 0 = none) of wrk at
# --soak-connections (256) connections; fails on any socket error or non-2xx answer, on a
# 408 cut, or when the longest gap between two completed requests (seen by each wrk thread,
# from a Lua response() hook reading CLOCK_MONOTONIC) reaches 1 s: libmicrohttpd 0.9.75
# stalled like that (its epoll thread asleep while requests waited, until the 408 deadline
# cut all 256 connections in the same second).
# Prints "N passed, M failed" last.
set -u

CLI="" MODEL="" DURATION=30 CONNS=64 THREADS=2 SOAK=60 SOAK_CONNS=256 SRC="$(cd "$(dirname "$0")/../.." && pwd)" WORK=""
while [ $# -gt 0 ]; do
    case "$1" in
    --cli) CLI="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --connections) CONNS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --soak) SOAK="$2"; shift 2 ;;
    --soak-connections) SOAK_CONNS="$2"; shift 2 ;;
    --source-dir) SRC="$2"; shift 2 ;;
    --work-dir) WORK="$2"; shift 2 ;;
    --ci) DURATION=5; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "load.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$CLI" ] || { echo "load.sh: --cli is required" >&2; exit 2; }
if ! command -v wrk >/dev/null 2>&1; then
    echo "load.sh: wrk is not installed; skipped"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
[ -n "$WORK" ] || WORK="$(mktemp -d)"
mkdir -p "$WORK"
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "PASS $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }

if [ -z "$MODEL" ]; then
    MODEL="$WORK/s1-pico.gguf"
    [ -f "$MODEL" ] || "$CLI" random s1-pico "$MODEL" >/dev/null || { echo "load.sh: cannot make a model" >&2; exit 1; }
fi
REQ="$SRC/examples/flappy-drone.json"
if [ ! -f "$REQ" ]; then
    REQ="$WORK/flappy-drone.json"
    cat >"$REQ" <<'EOF'
{"state": "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32", "questions": {"action": {"type": "choice", "instructions": "Which input keeps the drone flying through the next gap?", "criteria": {"thrust": "fire the rotors for an upward impulse", "glide": "let gravity pull the drone down"}}, "danger": {"type": "noul", "instructions": "Will the drone crash within the next half second if it keeps gliding?"}, "margin": {"type": "score", "instructions": "How much room is left above and below the drone?", "criteria": ["none", "tight", "comfortable"]}}}
EOF
fi
LUA="$WORK/post.lua"
python3 - "$REQ" "$LUA" <<'EOF'
import json, sys
body = open(sys.argv[1], "rb").read().decode()
with open(sys.argv[2], "w") as f:
    f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n')
    f.write("wrk.body = " + json.dumps(body) + "\n")
EOF

LOG="$WORK/load-server.log"
"$CLI" serve --model "$MODEL" --port 0 --threads "$THREADS" --queue 1024 --max-connections 1024 >"$LOG" 2>&1 &
PID=$!
cleanup() { kill -9 "$PID" 2>/dev/null; }
trap cleanup EXIT
PORT=""
for _ in $(seq 1 500); do
    PORT="$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9]*\) .*/\1/p' "$LOG" | head -1)"
    [ -n "$PORT" ] && grep -q "ready:" "$LOG" && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.02
done
if [ -z "$PORT" ] || ! grep -q "ready:" "$LOG"; then
    cat "$LOG"; bad "server start"; echo "$PASS passed, $FAIL failed"; exit 1
fi
URL="http://127.0.0.1:$PORT/v1/systemone"
rss() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }

check_wrk() { # $1 = wrk output file, $2 = label
    local out="$1" label="$2"
    if grep -q "Non-2xx" "$out" || grep -q "Socket errors" "$out"; then
        grep -E "Non-2xx|Socket errors" "$out"; bad "$label: errors"
    else
        ok "$label: zero errors"
    fi
}

# warm-up
wrk -t2 -c"$CONNS" -d2s -s "$LUA" "$URL" >"$WORK/wrk-warm.txt" 2>&1
check_wrk "$WORK/wrk-warm.txt" "warm-up"
RSS0=$(rss)

wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency -s "$LUA" "$URL" >"$WORK/wrk-main.txt" 2>&1
cat "$WORK/wrk-main.txt"
check_wrk "$WORK/wrk-main.txt" "${DURATION} s at $CONNS connections"
RSS1=$(rss)
RPS=$(awk '/^Requests\/sec/ {print $2}' "$WORK/wrk-main.txt")
echo "requests/s at $CONNS connections, $THREADS worker threads: $RPS"
echo "RSS after warm-up ${RSS0} KiB, after the run ${RSS1} KiB (growth $((RSS1 - RSS0)) KiB)"
if [ $((RSS1 - RSS0)) -le 4096 ]; then ok "RSS growth <= 4 MiB"; else bad "RSS grew by $((RSS1 - RSS0)) KiB"; fi

# latency of the example request over one keep-alive connection
wrk -t1 -c1 -d3s --latency -s "$LUA" "$URL" >"$WORK/wrk-one.txt" 2>&1
check_wrk "$WORK/wrk-one.txt" "one keep-alive connection"
MED=$(awk '/^ +50%/ {print $2}' "$WORK/wrk-one.txt")
echo "median latency of the example request over one keep-alive connection: $MED"

# the soak: many connections for a minute, no error and no stall of a second
if [ "$SOAK" -gt 0 ]; then
    SOAK_LUA="$WORK/soak.lua"
    cat "$LUA" - >"$SOAK_LUA" <<'LUA'
-- each wrk thread records the longest wait between two of its completed responses
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } skycmd_timespec;
int clock_gettime(int clk, skycmd_timespec *ts);
]]
local ts = ffi.new("skycmd_timespec")
local function now()
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
last, maxgap, done_n = nil, 0, 0
function response(status, headers, body)
    local t = now()
    if last ~= nil and t - last > maxgap then maxgap = t - last end
    last = t
    done_n = done_n + 1
end
function done(summary, latency, requests)
    local worst, n = 0, 0
    for _, t in ipairs(threads) do
        local g = t:get("maxgap")
        if g ~= nil and g > worst then worst = g end
        n = n + (t:get("done_n") or 0)
    end
    io.write(string.format("soak: %d responses seen by the Lua hook, longest gap %.3f s\n", n, worst))
end
LUA
    wrk -t2 -c"$SOAK_CONNS" -d"${SOAK}s" --latency -s "$SOAK_LUA" "$URL" >"$WORK/wrk-soak.txt" 2>&1
    cat "$WORK/wrk-soak.txt"
    check_wrk "$WORK/wrk-soak.txt" "soak ${SOAK} s at $SOAK_CONNS connections"
    SOAK_REQS=$(awk '/requests in/ {print $1}' "$WORK/wrk-soak.txt")
    GAP=$(sed -n 's/^soak: .*longest gap \([0-9.]*\) s$/\1/p' "$WORK/wrk-soak.txt")
    echo "soak: ${SOAK_REQS:-?} requests in ${SOAK} s at $SOAK_CONNS connections, longest gap ${GAP:-?} s"
    if [ -z "$GAP" ] || [ -z "$SOAK_REQS" ]; then
        bad "soak: no gap or request count in wrk's output"
    elif awk -v g="$GAP" 'BEGIN { exit !(g < 1.0) }'; then
        ok "soak: longest gap between completed requests ${GAP} s < 1 s"
    else
        bad "soak: the server stalled: ${GAP} s without a completed request"
    fi
    CUTS=$(python3 -c "import sys, urllib.request
for l in urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().splitlines():
    print(l.split()[1]) if l.startswith('skycmd_request_timeouts_total') else None" \
        "http://127.0.0.1:$PORT/metrics" 2>/dev/null)
    if [ "${CUTS:-x}" = 0 ]; then ok "soak: no connection cut by 408"; else bad "soak: 408 cuts: ${CUTS:-no /metrics}"; fi
fi

kill -TERM "$PID"
if wait "$PID"; then ok "clean shutdown"; else bad "server exit status $?"; fi
trap - EXIT
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
