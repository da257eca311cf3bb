#!/usr/bin/env bash
# progress.sh - the long commands' one progress reporter (src/cli/progress_meter.h):
#  - stderr not a terminal: a successful convert, random, quantize or calibrate prints
#    nothing on stderr; decide --batch prints its summary line only (its result: answered,
#    failed), never a live line;
#  - stderr a terminal (a pseudo-terminal from util-linux `script`): a start line at once,
#    the live line redrawn at most ~10 times a second, and the summary
#    "skycmd <cmd>: done: <size> written in <t> s (<rate>/s)";
#  - --quiet/-q (decide: and its old name --no-progress): nothing, on a terminal too; an
#    error is still printed, on a line of its own.
# Usage: progress.sh <cli> <source_dir> <binary_dir>
set -u
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
CLI=$(abs "$1")
SRC=$(cd "$2" && pwd)
BIN=$(cd "$3" && pwd)
T=$(mktemp -d "$BIN/cli_progress.XXXXXX")
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
head -n 40 "$SRC/tests/fixtures/flappy/test.jsonl" > "$T/l.jsonl" # labelled requests: decide ignores the labels

# ---------------------------------------------------------------- stderr not a terminal
quiet_ok() { # NAME ARGS...: exit 0 and nothing on stderr
  local name=$1; shift
  "$CLI" "$@" >/dev/null 2>"$T/err" || fail "$name: exit $?: $(cat "$T/err")"
  [ ! -s "$T/err" ] || fail "$name wrote to stderr off a terminal: $(cat -A "$T/err" | head -3)"
}
quiet_ok "random" random s1-pico "$T/p.gguf"
quiet_ok "random --layout laya" random s1-pico "$T/lay" --layout laya
quiet_ok "convert --random" convert --random s1-pico "$T/c.gguf"
quiet_ok "convert DIR" convert "$T/lay" "$T/d.gguf"
quiet_ok "quantize" quantize "$T/p.gguf" "$T/q.gguf"
quiet_ok "calibrate" calibrate "$T/p.gguf" "$T/l.jsonl" --dry-run
quiet_ok "decide --random" decide --random s1-pico "$SRC/examples/flappy-drone.json"

"$CLI" decide "$T/p.gguf" --batch "$T/l.jsonl" -o "$T/o.jsonl" 2>"$T/err" || fail "decide --batch: $(cat "$T/err")"
[ "$(wc -l < "$T/err")" -eq 1 ] || fail "decide --batch off a terminal: not one summary line: $(cat -A "$T/err")"
grep -qE '^skycmd decide: done: 40 requests in [0-9.]+ s \([0-9.]+/s\): 40 answered, 0 failed$' "$T/err" ||
  fail "decide --batch summary: $(cat -A "$T/err")"
grep -q $'\r' "$T/err" && fail "decide --batch drew a live line off a terminal"
for q in -q --quiet --no-progress; do
  quiet_ok "decide --batch $q" decide "$T/p.gguf" --batch "$T/l.jsonl" -o "$T/o.jsonl" $q
done

# ---------------------------------------------------------------- stderr a terminal
if ! command -v script >/dev/null; then
  echo "SKIP: no 'script' (util-linux): the terminal cases"
  [ $failures -eq 0 ] || exit 1
  exit 0
fi
# on_tty ARGS...: run skycmd ARGS in $T on a pseudo-terminal; its output (stdout and stderr,
# \r and escapes kept) in $T/tty, the exit status in rc
on_tty() {
  script -qec "cd $(printf '%q' "$T") && $(printf '%q ' "$CLI" "$@")" /dev/null </dev/null >"$T/tty" 2>&1
  rc=$?
}
# the lines as a terminal shows them at the end (each \r-separated draw on a line of its own)
draws() { tr '\r' '\n' < "$T/tty" | sed 's/\x1b\[K//g' | grep -v '^$'; }

on_tty random s1-micro m.gguf
[ $rc -eq 0 ] || fail "random on a terminal: exit $rc: $(draws)"
draws | head -1 | grep -qx 'random *\.\.\.' || fail "random: no start line: $(draws | head -1)"
draws | grep -q '^random  *\[[#.]*\] *[0-9]*%' || fail "random: no live bar: $(draws | head -3)"
sum=$(draws | tail -1)
[[ $sum =~ ^skycmd\ random:\ done:\ [0-9.]+\ MB\ written\ in\ ([0-9.]+)\ s\ \([0-9.]+\ [kMG]?B/s\)$ ]] ||
  fail "random summary: '$sum'"
secs=${BASH_REMATCH[1]:-0}
# at most ~10 redraws a second: the start line, one per 0.1 s, and slack for rounding
n=$(draws | grep -c '^random ')
awk -v n="$n" -v s="$secs" 'BEGIN { exit !(n <= 10 * s + 3) }' ||
  fail "random drew its line $n times in $secs s (more than 10 a second)"
tail -c 200 "$T/tty" | grep -q $'\r\x1b\\[Kskycmd random: done' || fail "the live line is not erased before the summary"

on_tty quantize m.gguf mq.gguf
[ $rc -eq 0 ] || fail "quantize on a terminal: exit $rc"
draws | tail -1 | grep -qE '^skycmd quantize: done: [0-9.]+ MB written in [0-9.]+ s \([0-9.]+ [kMG]?B/s\)$' ||
  fail "quantize summary: '$(draws | tail -1)'"
on_tty convert --random s1-pico cp.gguf
draws | tail -1 | grep -qE '^skycmd convert: done: [0-9.]+ [kM]B written in ' || fail "convert summary: '$(draws | tail -1)'"
on_tty random s1-pico layd --layout laya
draws | tail -1 | grep -qE '^skycmd random: done: [0-9.]+ [kM]B written in ' || fail "random --layout laya summary: '$(draws | tail -1)'"
on_tty calibrate p.gguf l.jsonl --dry-run
draws | grep -qE '^skycmd calibrate: done: [0-9.]+ kB of labelled requests in ' || fail "calibrate summary: $(draws | tail -2)"
on_tty decide p.gguf --batch l.jsonl -o o2.jsonl
draws | tail -1 | grep -qE '^skycmd decide: done: 40 requests in [0-9.]+ s \([0-9.]+/s\): 40 answered, 0 failed$' ||
  fail "decide --batch summary on a terminal: '$(draws | tail -1)'"
cmp -s "$T/o.jsonl" "$T/o2.jsonl" || fail "decide --batch answers differ on a terminal"

# decide's model load (here --q8-row's calibration) draws a live line, erased before the answer
head -n 1 "$T/l.jsonl" > "$T/l1.json"
on_tty decide m.gguf l1.json --q8-row
[ $rc -eq 0 ] || fail "decide --q8-row on a terminal: exit $rc"
draws | grep -qE '^load +\[#*\.*\] +[0-9]+%' || fail "decide --q8-row: no load line: $(head -c 300 "$T/tty" | cat -A)"
draws | tail -1 | grep -q '^{"model"' || fail "decide --q8-row: the answer is not on a line of its own: $(draws | tail -1)"

# --quiet: nothing at all, on a terminal too
for args in "random s1-pico q1.gguf -q" "convert --random s1-pico q2.gguf --quiet" "quantize p.gguf q3.gguf -q" \
            "calibrate p.gguf l.jsonl -o q4.gguf -q" "decide p.gguf --batch l.jsonl -o q5.jsonl -q" \
            "decide p.gguf --batch l.jsonl -o q6.jsonl --no-progress"; do
  read -ra a <<<"$args"
  on_tty "${a[@]}"
  [ $rc -eq 0 ] || fail "$args: exit $rc"
  case $args in
    calibrate*) # its report and "wrote q4.gguf" are stdout's: no live line, no summary
      out=$(draws | grep -cE '^calibrate |done:') ;;
    *) out=$(wc -c < "$T/tty") ;;
  esac
  [ "$out" -eq 0 ] || fail "$args on a terminal printed: $(head -c 300 "$T/tty" | cat -A)"
done

# a failure: the line is erased, the error stands on its own line, no summary
on_tty random s1-micro /proc/x.gguf
[ $rc -eq 1 ] || fail "random to /proc: exit $rc"
draws | tail -1 | grep -q '^skycmd random: ' || fail "random to /proc: error not on its own line: $(draws | tail -1)"
draws | grep -q 'done:' && fail "a failed random printed a summary"

# a file that stores a calibrated int8 model, run without a weights flag: one note on a
# terminal (how to run it as int8); none with --q8, none with --quiet, none off a terminal
"$CLI" random s1-pico "$T/p16.gguf" --type f16 >/dev/null 2>&1 || fail "random p16"
"$CLI" quantize "$T/p16.gguf" "$T/p8.gguf" --calibrated 2>/dev/null || fail "quantize --calibrated"
req=$SRC/examples/flappy-drone.json
on_tty decide p8.gguf "$req"
[ $rc -eq 0 ] || fail "decide of a stored int8 file on a terminal: exit $rc"
draws | grep -q 'note: the model file stores a calibrated int8 model; --q8' || fail "no int8 note: $(draws | tail -3)"
on_tty decide p8.gguf "$req" --q8
draws | grep -q 'note:' && fail "a note with --q8: $(draws | tail -3)"
on_tty decide p8.gguf "$req" -q
draws | grep -q 'note:' && fail "a note with --quiet"
"$CLI" decide "$T/p8.gguf" "$req" 2>&1 >/dev/null | grep -q 'note:' && fail "a note off a terminal"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "progress: ok"
