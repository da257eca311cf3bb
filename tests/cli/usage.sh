#!/usr/bin/env bash
# usage.sh - the exit-code conventions of every `skycmd` command (src/cli/cli.h):
#   --help/-h: usage on stdout, nothing on stderr, exit 0;
#   usage errors (unknown option, missing or bad value, missing or extra argument): exit 2,
#   a "skycmd <cmd>: ..." line and "try 'skycmd [<cmd> ]--help'" on stderr (not the whole
#   usage, which would scroll the error away), nothing on stdout;
#   library failures (missing files, directories, damaged input, unwritable output): exit 1
#   and "skycmd <cmd>: <message>" on stderr;
#   '-' reads standard input where a file is read.
# Then an argument fuzz over the file-handling commands: no run may crash (exit >= 128),
# hang, or exit with anything but 0, 1 or 2. bench and serve are checked for --help only
# (their own scripts cover the rest).
# Usage: bash usage.sh <cli> <source_dir> <binary_dir>
set -u
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
CLI=$(abs "$1")
SRC=$(cd "$2" && pwd)
BIN=$(cd "$3" && pwd)
T=$(mktemp -d "$BIN/cli_usage.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir "$T/tmp" "$T/cwd"
export TMPDIR=$T/tmp # temporary files of `-` inputs and decide --random land here
cd "$T/cwd" || exit 1
REQ=$SRC/examples/flappy-drone.json
TOKJSON=$SRC/tests/fixtures/tokenizer/vocab1024/tokenizer.json
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run [<stdin-file>] -- args...: sets rc, out, err (stdin is /dev/null unless given)
run() {
  local in=/dev/null
  if [ "$1" != -- ]; then in=$1; shift; fi
  shift
  timeout 60 "$CLI" "$@" <"$in" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(head -c 4000 "$T/out")
  err=$(head -c 4000 "$T/err")
}
show() { printf '%q ' "$@"; }
# expect CODE [<stdin-file>] -- args...
expect() {
  local want=$1; shift
  local in=(); if [ "$1" != -- ]; then in=("$1"); shift; fi
  run "${in[@]}" "$@"
  shift
  local cmd=${1:-}
  if [ $rc -ge 124 ]; then fail "crash or hang (exit $rc): skycmd $(show "$@")"; return; fi
  if [ $rc -ne "$want" ]; then
    fail "exit $rc, want $want: skycmd $(show "$@"): $(echo "$err" | head -2)"; return
  fi
  case $want in
    0) ;;
    1) [[ "$err" == "skycmd $cmd: "* ]] || fail "exit 1 without 'skycmd $cmd: ' message: skycmd $(show "$@"): $err" ;;
    2) [[ "$err" == "skycmd"* && "$err" == *"try 'skycmd "*"--help'"* && "$err" != *"usage: skycmd"* ]] ||
         fail "usage error without its message and the pointer to --help (alone) on stderr: skycmd $(show "$@"): $err"
       [ -z "$out" ] || fail "usage error wrote to stdout: skycmd $(show "$@")" ;;
  esac
}

# ---------------------------------------------------------------- help, every command
cmds=$("$CLI" --help | awk '/^commands:/{on=1; next} on && /^$/{on=0} on && /^  [a-z]/{print $1}')
for c in inspect convert random quantize decide tokenize bench serve; do
  echo "$cmds" | grep -qx "$c" || fail "skycmd --help does not list $c"
  for h in --help -h; do
    run -- "$c" $h
    [ $rc -eq 0 ] || fail "$c $h: exit $rc"
    [[ "$out" == "usage: skycmd $c"* ]] || fail "$c $h: stdout does not start with the usage"
    [ -z "$err" ] || fail "$c $h: wrote to stderr: $err"
  done
  run -- help "$c"
  [ $rc -eq 0 ] && [[ "$out" == "usage: skycmd $c"* ]] || fail "skycmd help $c"
done
[ "$(echo "$cmds" | wc -l)" -eq 9 ] || fail "skycmd --help lists $(echo "$cmds" | wc -l) commands, not 9"

# ---------------------------------------------------------------- top level
expect 2 --
expect 2 -- nope
expect 2 -- ''
expect 2 -- --version extra
expect 2 -- help nope
for h in --help -h help; do
  run -- $h; [ $rc -eq 0 ] && [[ "$out" == "usage: skycmd"* ]] && [ -z "$err" ] || fail "skycmd $h"
done
for v in --version -V; do
  run -- $v
  [ $rc -eq 0 ] || fail "skycmd $v: exit $rc"
  echo "$out" | grep -Eq '^skycmd [0-9]+\.[0-9]+\.[0-9]+ \(library [0-9]+\.[0-9]+\.[0-9]+, ABI [0-9]+\)$' ||
    fail "skycmd $v: no library/ABI version line: $out"
  echo "$out" | grep -q '^build: .' || fail "skycmd $v: no build line"
  echo "$out" | grep -q '^cpu features: ' || fail "skycmd $v: no cpu features line"
done

# ---------------------------------------------------------------- fixtures
"$CLI" random s1-pico "$T/pico.gguf" >/dev/null 2>&1 || { fail "random s1-pico"; exit 1; }
P=$T/pico.gguf
mkdir "$T/dir"
printf 'not a gguf file at all' > "$T/junk.gguf"

# ---------------------------------------------------------------- usage errors (2)
for c in inspect convert random quantize decide tokenize; do
  expect 2 -- $c                       # missing arguments
  expect 2 -- $c --bogus "$P"          # unknown option
  expect 2 -- $c -x "$P"               # unknown short option
done
expect 2 -- inspect "$P" "$P"
expect 2 -- inspect "$P" --max-array
expect 2 -- inspect "$P" --max-array abc
expect 2 -- inspect "$P" --max-array -1
expect 2 -- inspect "$P" --max-array 99999999999999999999999
expect 2 -- inspect "$P" --max-array=
expect 2 -- inspect ''
expect 2 -- convert "$T/dir" "$T/a.gguf" "$T/b.gguf"
expect 2 -- convert "$T/dir" "$T/a.gguf" --type q4
expect 2 -- convert "$T/dir" "$T/a.gguf" --seed 1
expect 2 -- convert --random s1-pico
expect 2 -- convert --random nope "$T/a.gguf"
expect 2 -- convert --random s1-pico "$T/a.gguf" --seed abc
expect 2 -- convert --random s1-pico "$T/a.gguf" --seed -1
expect 2 -- convert --random s1-pico "$T/a.gguf" --massive 99999999999999999999
expect 2 -- convert --random s1-pico "$T/a.gguf" --type
expect 2 -- convert '' ''
expect 2 -- random s1-pico
expect 2 -- random s1-pico "$T/a.gguf" extra
expect 2 -- random nope "$T/a.gguf"
expect 2 -- random '' "$T/a.gguf"
expect 2 -- random s1-pico ''
expect 2 -- random s1-pico "$T/a.gguf" --seed abc
expect 2 -- random s1-pico "$T/a.gguf" --seed 1.5
expect 2 -- random s1-pico "$T/a.gguf" --seed 99999999999999999999999
expect 2 -- random s1-pico "$T/a.gguf" --massive 65
expect 2 -- random s1-pico "$T/a.gguf" --layout zip
expect 2 -- random s1-pico "$T/a.gguf" --head-type int4
expect 2 -- quantize "$P"
expect 2 -- quantize "$P" "$T/a.gguf" extra
expect 2 -- quantize "$P" "$T/a.gguf" --type q4
expect 2 -- quantize "$P" "$T/a.gguf" --head-type
expect 2 -- decide "$P" "$REQ" extra
expect 2 -- decide "$P" "$REQ" --threads -1
expect 2 -- decide "$P" "$REQ" --threads abc
expect 2 -- decide "$P" "$REQ" --threads ''
expect 2 -- decide "$P" "$REQ" --threads 99999999999999999999999
expect 2 -- decide "$P" "$REQ" --threads
expect 2 -- decide "$P" "$REQ" --compute-threads -1
expect 2 -- decide "$P" "$REQ" --compute-threads
expect 2 -- decide "$P" "$REQ" --max-tokens abc
expect 2 -- decide "$P" "$REQ" --max-tokens -5
expect 2 -- decide "$P" "$REQ" --seed 3            # --seed only with --random
expect 2 -- decide "$P" "$REQ" --q8 --q8-fast
expect 2 -- decide "$P" ''
expect 2 -- decide --random nope "$REQ"
expect 2 -- decide --random s1-pico "$REQ" extra
expect 2 -- decide --random s1-pico "$REQ" --seed abc
expect 2 -- decide - "$REQ" extra
# (`decide -` alone reads the request from stdin for the built-in model: tests/cli/decide.sh)
expect 2 "$P" -- decide - -
expect 2 -- tokenize "$P" a b
expect 2 -- tokenize --tokenizer-json
expect 2 -- tokenize --tokenizer-json '' x
expect 2 -- tokenize --tokenizer-json "$TOKJSON" a b
expect 2 -- tokenize --json                        # the deprecated old name, the same rules
expect 2 -- tokenize --json "$TOKJSON" --tokenizer-json "$TOKJSON" x
expect 2 -- tokenize '' x
expect 2 "$P" -- tokenize - -

# ---------------------------------------------------------------- library failures (1)
expect 1 -- inspect "$T/missing.gguf"
expect 1 -- inspect "$T/dir"
expect 1 -- inspect "$T/junk.gguf"
expect 1 -- inspect -                              # empty stdin
expect 1 -- convert "$T/dir" "$T/a.gguf"
expect 1 -- convert "$T/missing" "$T/a.gguf"
expect 1 -- convert --random s1-pico /proc/x.gguf
expect 1 -- convert --random s1-pico "$T/dir"
expect 1 -- random s1-pico /proc/x.gguf
expect 1 -- random s1-pico /nonexistent/dir/x.gguf
expect 1 -- quantize "$T/missing.gguf" "$T/a.gguf"
expect 1 -- quantize "$T/dir" "$T/a.gguf"
expect 1 -- quantize "$T/junk.gguf" "$T/a.gguf"
expect 1 -- quantize "$P" /proc/x.gguf
expect 1 -- quantize - "$T/a.gguf"                 # empty stdin
[ ! -e "$T/a.gguf" ] || fail "a failed command left $T/a.gguf"
expect 1 -- decide "$T/missing.gguf" "$REQ"
expect 1 -- decide "$T/dir" "$REQ"
expect 1 -- decide "$T/junk.gguf" "$REQ"
expect 1 -- decide "$P" "$T/missing.json"
expect 1 -- decide "$P" "$T/dir"
expect 1 -- decide "$P" /dev/null                   # empty request: malformed JSON
expect 1 "$REQ" -- decide - "$REQ"                   # a request is not a model
expect 1 -- tokenize "$T/missing.gguf" x
expect 1 -- tokenize "$T/dir" x
expect 1 -- tokenize --tokenizer-json "$T/dir" x
expect 1 -- tokenize --tokenizer-json "$T/missing.json" x
expect 1 -- tokenize --tokenizer-json "$T/junk.gguf" x
expect 1 -- tokenize --json "$T/missing.json" x
run -- inspect "$P"; [ $rc -eq 0 ] || fail "inspect $P"
if [ -w /dev/full ]; then
  "$CLI" inspect "$P" >/dev/full 2>"$T/err"; rc=$?
  [ $rc -eq 1 ] && grep -q '^skycmd inspect: ' "$T/err" || fail "inspect > /dev/full: exit $rc"
  "$CLI" decide "$P" "$REQ" >/dev/full 2>"$T/err"; rc=$?
  [ $rc -eq 1 ] && grep -q '^skycmd decide: ' "$T/err" || fail "decide > /dev/full: exit $rc"
fi

# ---------------------------------------------------------------- '-' reads stdin (0)
expect 0 "$P" -- inspect -
[[ "$out" == "<stdin>: GGUF v3"* ]] || fail "inspect - names its input '<stdin>': $(echo "$out" | head -1)"
"$CLI" inspect "$P" | tail -n +2 > "$T/file.txt"
"$CLI" inspect - < "$P" | tail -n +2 > "$T/stdin.txt"
cmp -s "$T/file.txt" "$T/stdin.txt" || fail "inspect - and inspect FILE differ"
expect 0 "$P" -- quantize - "$T/q.gguf"
"$CLI" quantize "$P" "$T/q2.gguf" 2>/dev/null
cmp -s "$T/q.gguf" "$T/q2.gguf" || fail "quantize - and quantize FILE differ"
want=$("$CLI" decide "$P" "$REQ")
expect 0 "$REQ" -- decide "$P" -
[ "$out" = "$want" ] || fail "decide MODEL - differs from decide MODEL FILE"
expect 0 "$REQ" -- decide "$P"
[ "$out" = "$want" ] || fail "decide MODEL (request on stdin) differs"
expect 0 "$P" -- decide - "$REQ"
[ "$out" = "$want" ] || fail "decide - REQUEST (model on stdin) differs"
want_ids=$("$CLI" tokenize "$P" --ids-only 'vy 0 dx 36')
expect 0 "$P" -- tokenize - --ids-only 'vy 0 dx 36'
[ "$out" = "$want_ids" ] || fail "tokenize - TEXT (model on stdin): '$out' != '$want_ids'"
printf 'vy 0 dx 36' > "$T/text"
expect 0 "$T/text" -- tokenize "$P" --ids-only -
[ "$out" = "$want_ids" ] || fail "tokenize MODEL - (text on stdin): '$out' != '$want_ids'"
expect 0 "$TOKJSON" -- tokenize --tokenizer-json - --ids-only 'a  b'
[ "$out" = "102 1023 103" ] || fail "tokenize --tokenizer-json - : '$out'"
expect 0 -- tokenize "$P" ''
# '-' as an output path writes the GGUF file to stdout
"$CLI" random s1-pico - > "$T/r.gguf" 2>"$T/err"; rc=$?
[ $rc -eq 0 ] && cmp -s "$T/r.gguf" "$P" || fail "random s1-pico - (exit $rc) differs from the file"
"$CLI" random s1-pico - | "$CLI" quantize - - 2>/dev/null | cmp -s - "$T/q.gguf" ||
  fail "random - | quantize - - differs from quantize FILE"
"$CLI" convert --random s1-pico - | cmp -s - "$P" || fail "convert --random s1-pico - differs"
expect 2 -- random s1-pico - --layout laya
# the GGUF writer's options are refused with --layout laya, not ignored (nothing written)
for o in "--type q8_0" "--head-type f16" "--name x" "--pre gpt-2"; do
  # shellcheck disable=SC2086
  expect 2 -- random s1-pico "$T/laya-dir" --layout laya $o
  [ ! -e "$T/laya-dir" ] || fail "random --layout laya $o wrote $T/laya-dir"
done
expect 2 -- decide "$SRC/examples/flappy-drone.json" --model-name ""
expect 2 -- convert - "$T/a.gguf"
if command -v script >/dev/null; then # stdout a terminal: refuse to write binary there
  script -qec "'$CLI' random s1-pico -" /dev/null > "$T/tty.txt" 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "random s1-pico - on a terminal: exit $rc, want 2"
  grep -q 'terminal' "$T/tty.txt" || fail "random s1-pico - on a terminal: no message"
fi
expect 0 -- tokenize "$P" --ids-only -- --not-an-option

# ---------------------------------------------------------------- decide --random, int8 flags
expect 0 -- decide --random s1-pico "$REQ"
[ "$out" = "$want" ] || fail "decide --random s1-pico differs from decide on 'skycmd random s1-pico'"
expect 0 "$REQ" -- decide --random s1-pico
[ "$out" = "$want" ] || fail "decide --random s1-pico with the request on stdin differs"
"$CLI" random s1-pico "$T/s7.gguf" --seed 7 --massive 2 2>/dev/null
want7=$("$CLI" decide "$T/s7.gguf" "$REQ")
expect 0 -- decide --random s1-pico --seed 7 --massive 2 "$REQ"
[ "$out" = "$want7" ] || fail "decide --random --seed 7 --massive 2 differs from the file"
for mode in --q8 --q8-fast --no-calib "--q8 --no-calib" "--q8-fast --no-calib"; do
  expect 0 -- decide --random s1-pico $mode "$REQ"
  [[ "$out" == '{"model":"s1-pico","answers":{"action":'* ]] || fail "decide $mode: $out"
  expect 0 -- decide "$P" $mode "$REQ"
done
[ -z "$(ls -A "$T/tmp")" ] || fail "temporary files left behind: $(ls -A "$T/tmp")"
[ -z "$(ls -A "$T/cwd")" ] || fail "files written in the working directory: $(ls -A "$T/cwd")"

# ---------------------------------------------------------------- argument fuzz
# Values that have broken CLIs before, put in every option and argument slot of the
# commands that read or write files. Any exit but 0, 1, 2 (a crash is >= 128, a hang 124)
# fails. Runs in $T/cwd, so a junk output name cannot land anywhere else.
junk=('' '-' '--' '=' '--=' '-1' '0' '99999999999999999999999999' '9223372036854775807'
      '-9223372036854775808' '1e3' '0x10' ' 5' 'nan' "$T/dir" "$T/missing.gguf" /proc/x.gguf
      /dev/null "$T/junk.gguf" "$(printf 'x%.0s' {1..5000})" $'\xff\xfe' '%s%n%s%n')
declare -A shapes=(
  [inspect]='@ | @ --max-array @ | --json @ | --max-array=@ @'
  [convert]='@ @ | --random @ @ | --random s1-pico @ --seed @ | @ @ --type @ | --random s1-pico @ --massive @ | @ @ --name @ --pre @'
  [random]='@ @ | s1-pico @ --layout @ | s1-pico @ --seed @ | s1-pico @ --massive @ | @ @ --type @ --head-type @'
  [quantize]='@ @ | @ @ --type @ | @ @ --head-type @'
  [decide]="@ | @ @ | $P @ | $P $REQ --threads @ | $P $REQ --max-tokens @ | $P $REQ --model-name @ | --random @ $REQ | --random s1-pico $REQ --seed @ | @ $REQ --q8 | $P $REQ --min-confidence @"
  [calibrate]="@ @ -o @ | $P @ --dry-run | $P $REQ -o @ | $P @ --dry-run --abstention --target-error @ --min-bucket-n @"
  [tokenize]="@ | @ @ | --tokenizer-json @ @ | --json @ @ | $P @ | $P -- @ | --tokenizer-json @ --ids-only @"
)
n=0
for c in inspect convert random quantize decide tokenize calibrate; do
  IFS='|' read -ra forms <<<"${shapes[$c]}"
  for form in "${forms[@]}"; do
    read -ra words <<<"$form"
    for j in "${junk[@]}"; do
      args=()
      for w in "${words[@]}"; do if [ "$w" = @ ]; then args+=("$j"); else args+=("$w"); fi; done
      timeout 60 "$CLI" "$c" "${args[@]}" </dev/null >/dev/null 2>"$T/err"; rc=$?
      n=$((n + 1))
      case $rc in
        0|1|2) ;;
        *) fail "fuzz: exit $rc: skycmd $c $(show "${args[@]}"): $(head -c 300 "$T/err")" ;;
      esac
      rm -rf "${T:?}/cwd/"* "${T:?}/cwd/".[!.]* 2>/dev/null
    done
  done
done
[ $n -gt 500 ] || fail "fuzz ran only $n cases"
[ -z "$(ls -A "$T/tmp")" ] || fail "fuzz left temporary files: $(ls -A "$T/tmp")"

if [ $failures -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "usage: ok ($n fuzz runs)"
