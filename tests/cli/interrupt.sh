#!/usr/bin/env bash
# A signal (SIGINT, SIGTERM, SIGHUP) while `skycmd random`/`convert`/`quantize` writes its
# output cancels the write: the process ends by that signal, no output appears and no
# temporary file (<out>.skycmd-partial.<hex>) is left behind; an existing output survives.
# A signal while `skycmd decide` loads its model (an s1-micro with --q8: seconds of int8
# calibration) cancels the load within 1 s with a message, ending by that signal (130, 143), and
# leaves no temporary model (--random) behind.
# Usage: interrupt.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
BIN=$3
T=$(mktemp -d "$BIN/cli_interrupt.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A large model takes long enough to write (hundreds of MB) that the signal lands mid-way;
# the helper retries with a longer delay when the write finished first.
interrupt() { # SIGNAL OUT COMMAND...
  local sig=$1 out=$2; shift 2
  local delay
  for delay in 0.2 0.1 0.05 0.02; do
    rm -f "$out"
    "$@" >/dev/null 2>"$T/err" &
    local pid=$!
    sleep "$delay"
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid"
    local rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "$rc"
      return 0
    fi
  done
  echo "finished"
}

for sig in INT TERM HUP; do
  rc=$(interrupt "$sig" "$T/base.gguf" "$CLI" random base "$T/base.gguf")
  [ "$rc" = finished ] && fail "random base finished before SIG$sig every time"
  want=$((128 + $(kill -l "$sig")))
  [ "$rc" -eq "$want" ] || fail "random after SIG$sig exited $rc, want $want ($(cat "$T/err"))"
  [ ! -e "$T/base.gguf" ] || fail "SIG$sig left an output"
  left=$(ls -A "$T" | grep -c 'skycmd-partial' || true)
  [ "$left" -eq 0 ] || fail "SIG$sig left a temporary file: $(ls -A "$T")"
done

# quantize of an existing output: the old file survives an interrupted rewrite
"$CLI" random base "$T/src.gguf" >/dev/null || fail "random base"
echo old > "$T/q.gguf"
rc=$(interrupt TERM "$T/q.gguf.unused" "$CLI" quantize "$T/src.gguf" "$T/q.gguf" --type q8_0)
if [ "$rc" != finished ]; then
  [ "$(cat "$T/q.gguf")" = old ] || fail "an interrupted quantize changed the existing output"
  [ "$(ls -A "$T" | grep -c 'skycmd-partial' || true)" -eq 0 ] || fail "quantize left a temporary file"
fi
# decide: a signal during the model load (--q8's calibration of an s1-micro takes seconds)
"$CLI" random s1-micro "$T/micro.gguf" >/dev/null || fail "random s1-micro"
REQ=$(dirname "$0")/../../examples/flappy-drone.json
ms() { date +%s%3N; }
stop_load() { # SIGNAL COMMAND...: prints "<exit status> <ms from the signal to the exit>"
  local sig=$1; shift
  "$@" >"$T/out" 2>"$T/err" &
  local pid=$! t0 rc
  sleep 0.5
  t0=$(ms)
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$?
  echo "$rc $(($(ms) - t0))"
}
for sig in INT TERM; do
  want=$((128 + $(kill -l "$sig")))
  read -r rc took < <(stop_load "$sig" "$CLI" decide "$T/micro.gguf" "$REQ" --q8)
  [ "$rc" -eq "$want" ] || fail "decide --q8 after SIG$sig during the load exited $rc, want $want ($(cat "$T/err"))"
  [ "$took" -lt 1000 ] || fail "decide --q8 took $took ms to stop after SIG$sig"
  grep -q "SIG$sig: interrupted while loading the model" "$T/err" || fail "no message after SIG$sig: $(cat "$T/err")"
  [ ! -s "$T/out" ] || fail "decide printed an answer after SIG$sig"
  echo "decide --q8: SIG$sig during the model load: exit $rc after $took ms"
done
# --random: the temporary model is removed too (TMPDIR points into $T)
mkdir -p "$T/tmp"
read -r rc took < <(TMPDIR="$T/tmp" stop_load INT "$CLI" decide --random s1-micro "$REQ" --q8)
[ "$rc" -eq 130 ] || fail "decide --random --q8 after SIGINT exited $rc ($(cat "$T/err"))"
[ -z "$(ls -A "$T/tmp")" ] || fail "decide --random left a temporary model: $(ls -AR "$T/tmp")"
echo "interrupt: all checks passed"
