#!/usr/bin/env bash
# SIGINT / SIGTERM while `skycmd decide` (and `decide --batch`) loads its model cancel the
# load through the library: the signal is recorded, the load's progress callback returns
# non-zero, skycmd_model_open returns SKYCMD_E_CANCELLED with everything freed, and decide
# prints "skycmd decide: SIG...: interrupted while loading the model" (a line printed only
# after the library returned), writes no answer, removes a --random temporary model, and
# ends by the signal as every interrupted command and serve's first load do (the shell sees
# 130 for SIGINT, 143 for SIGTERM). The slow load: an s1-micro with --q8 (seconds of int8
# calibration). No timing assertion: how long the stop took is printed.
# Usage: decide_load_cancel.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
SRC=$2
BIN=$3
T=$(mktemp -d "$BIN/cli_decide_load_cancel.XXXXXX")
trap 'rm -rf "$T"' EXIT
passed=0
failed=0
skipped=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

"$CLI" random s1-micro "$T/micro.gguf" >/dev/null || { echo "FAIL: random s1-micro"; echo "decide_load_cancel: 0 passed, 1 failed"; exit 1; }
REQ=$SRC/examples/flappy-drone.json
tr -d '\n' < "$REQ" > "$T/req.jsonl"
echo >> "$T/req.jsonl"
ms() { date +%s%3N; }

# The load has begun: 0.5 s in for a model file given (the load then runs for seconds);
# for --random, once its model file is made (the name it is renamed to at the end), so that
# the signal never lands in the generation before the load, whatever the machine's speed.
load_begun() {
  if [ -z "${WAIT_FOR_MODEL_IN:-}" ]; then sleep 0.5; return; fi
  local i
  for i in $(seq 600); do
    if [ -n "$(find "$WAIT_FOR_MODEL_IN" -name '*.gguf' 2>/dev/null)" ]; then
      sleep 0.3 # past the few statements between the rename and the load's own handler
      return
    fi
    sleep 0.05
  done
}

# SIGNAL LABEL COMMAND...: run it, send SIGNAL once the load has begun, and check the exit
# status, the message, and that nothing was answered.
stop_load() {
  local sig=$1 label=$2; shift 2
  local want=$((128 + $(kill -l "$sig")))
  "$@" >"$T/out" 2>"$T/err" &
  local pid=$! t0 rc took
  load_begun
  t0=$(ms)
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$?
  took=$(($(ms) - t0))
  if [ "$rc" -eq 0 ]; then
    echo "SKIP: $label: the load finished before SIG$sig"
    skipped=$((skipped + 1))
    return
  fi
  if [ "$rc" -eq "$want" ]; then ok; else bad "$label: SIG$sig during the load: exit $rc, want $want ($(cat "$T/err"))"; fi
  if grep -qx "skycmd decide: SIG$sig: interrupted while loading the model" "$T/err"; then ok; else
    bad "$label: SIG$sig: no 'interrupted while loading the model' line on stderr: $(cat "$T/err")"
  fi
  if [ ! -s "$T/out" ]; then ok; else bad "$label: an answer after SIG$sig: $(head -c 200 "$T/out")"; fi
  echo "$label: SIG$sig during the model load: exit $rc after $took ms"
}
for sig in INT TERM; do
  stop_load "$sig" "decide --q8" "$CLI" decide "$T/micro.gguf" "$REQ" --q8
  stop_load "$sig" "decide --batch --q8" "$CLI" decide "$T/micro.gguf" --batch "$T/req.jsonl" --q8
done
# --random: the temporary model is removed too (TMPDIR points into $T)
mkdir -p "$T/tmp"
TMPDIR="$T/tmp" WAIT_FOR_MODEL_IN="$T/tmp" stop_load INT "decide --random --q8" "$CLI" decide --random s1-micro "$REQ" --q8
if [ -z "$(ls -A "$T/tmp")" ]; then ok; else bad "decide --random left a temporary model: $(ls -AR "$T/tmp")"; fi
echo "decide_load_cancel: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || exit 1
[ "$passed" -gt 1 ] || exit 77 # nothing could be interrupted here: a skip, not a pass
exit 0
