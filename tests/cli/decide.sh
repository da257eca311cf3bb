#!/usr/bin/env bash
# CLI behaviour of `skycmd decide`: help, usage errors, the example requests on a random
# s1-pico model (well-formed response, request order, usage), stdin input, --pretty,
# --model-name, and request errors that name the field. Usage: decide.sh <cli> <src> <bin>
set -u
CLI=$1
SRC=$2
BIN=$3
T=$(mktemp -d "$BIN/cli_decide.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CLI" decide --help | grep -q "usage: skycmd decide" || fail "decide --help"
"$CLI" decide >/dev/null 2>&1; [ $? -eq 2 ] || fail "decide without arguments must exit 2"
"$CLI" decide m.gguf --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option must exit 2"
"$CLI" decide m.gguf --threads x >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad --threads must exit 2"
# a usage error is one line and a pointer to --help (the help would scroll it away), with a
# "did you mean" for a near miss; an unknown command the same
err=$("$CLI" decide m.gguf --thread 2 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "--thread: exit $rc"
[ "$err" = "skycmd decide: unknown option '--thread' (did you mean '--threads'?)
try 'skycmd decide --help' for its options" ] || fail "--thread: $err"
err=$("$CLI" decide m.gguf --zzzzzzzz 2>&1 >/dev/null)
[ "$(echo "$err" | wc -l)" = 2 ] && ! echo "$err" | grep -q "did you mean" || fail "--zzzzzzzz: $err"
err=$("$CLI" deside 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q "unknown command 'deside' (did you mean 'decide'?)" || fail "deside: $err"
err=$("$CLI" serve --prot 9 2>&1 >/dev/null)
echo "$err" | grep -q "did you mean '--port'" || fail "serve --prot: $err"
# malformed JSON: the byte offset, and the line and column as jq gives them
printf '{\n  "state": "x",\n  oops' > "$T/bad.json"
err=$("$CLI" decide --random s1-pico "$T/bad.json" 2>&1 >/dev/null)
echo "$err" | grep -q "malformed JSON at byte 20 (line 3, column 3)" || fail "JSON error position: $err"
# convert names what the path is
err=$("$CLI" convert "$T/nope" "$T/o.gguf" 2>&1 >/dev/null)
echo "$err" | grep -q "nope: No such file or directory" || fail "convert of a missing path: $err"

"$CLI" random s1-pico "$T/pico.gguf" >/dev/null || fail "random s1-pico"
# --compute-threads N (and its old name --threads) answer as one thread does
one=$("$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --f32) || fail "decide --f32"
# a body's max_len above the token budget is refused (laya serve's message) until
# --max-token-budget raises the cap, for a single request and in a batch
sed 's/^{/{"max_len": 9000, /' "$SRC/examples/flappy-drone.json" > "$T/ml.json"
tr -d '\n' < "$T/ml.json" > "$T/ml.jsonl"; echo >> "$T/ml.jsonl"
err=$("$CLI" decide "$T/pico.gguf" "$T/ml.json" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] && echo "$err" | grep -q "max_len exceeds server limit (9000 > 8192)" || fail "max_len 9000: exit $rc: $err"
"$CLI" decide "$T/pico.gguf" "$T/ml.json" --max-token-budget 9000 | grep -q '"answers"' || fail "--max-token-budget 9000"
"$CLI" decide "$T/pico.gguf" --batch "$T/ml.jsonl" -q | grep -q "exceeds server limit" || fail "batch: max_len 9000 not refused"
"$CLI" decide "$T/pico.gguf" --batch "$T/ml.jsonl" -q --max-token-budget 9000 | grep -q '"answers"' ||
  fail "batch: --max-token-budget 9000"
for t in "--compute-threads 2" "--threads 2"; do
  [ "$("$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --f32 $t)" = "$one" ] || fail "decide $t differs"
done
out=$("$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json") || fail "decide flappy"
case "$out" in
  '{"model":"s1-pico","answers":{"action":{"type":"choice","choice":"'*) ;;
  *) fail "unexpected response start: $out" ;;
esac
echo "$out" | grep -q '"danger":{"type":"noul","noul":0\.[0-9]*}' || fail "noul answer: $out"
echo "$out" | grep -q '"margin":{"type":"score","score":[0-9.e-]*,"legend":{"0":"none","1":"tight","2":"comfortable"},"probabilities":{"0":' \
  || fail "score answer: $out"
echo "$out" | grep -qE '"usage":\{"input_tokens":[1-9][0-9]*,"output_tokens":0\}\}$' || fail "usage: $out"
# answers in request order
echo "$out" | grep -q '"action".*"danger".*"margin"' || fail "answers out of order"

for f in "$SRC"/examples/*.json; do
  "$CLI" decide "$T/pico.gguf" "$f" >/dev/null || fail "decide $f"
done
# stdin, --pretty, --model-name
same=$("$CLI" decide "$T/pico.gguf" - < "$SRC/examples/flappy-drone.json") || fail "decide from stdin"
[ "$same" = "$out" ] || fail "stdin and file answers differ"
"$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --pretty --model-name fd \
  | grep -q '^  "model": "fd",$' || fail "--pretty/--model-name"

# --bf16x3 (AMX-BF16 tiles or arm64 BFMMLA; plain f32 where there are neither) is the CLI's
# default where the AMX-BF16 tiles are usable (the same bytes as no flag), elsewhere the
# default is --f32's bytes; within the golden tolerance (1e-4) of --f32 (the exact path),
# every number of the response; each excludes the int8 modes and the other
"$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --bf16x3 --q8 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--bf16x3 with --q8 must exit 2"
"$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --f32 --q8-row >/dev/null 2>&1
[ $? -eq 2 ] || fail "--f32 with --q8-row must exit 2"
"$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --f32 --bf16x3 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--f32 with --bf16x3 must exit 2"
# --q8-row takes two-pass row activations, and one pass with --q8-fast (other answers);
# --q8 and --no-calib are other weights modes
"$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --q8-row --q8 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--q8-row with --q8 must exit 2"
"$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --q8-row --no-calib >/dev/null 2>&1
[ $? -eq 2 ] || fail "--q8-row with --no-calib must exit 2"
row2=$("$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --q8-row) || fail "decide --q8-row"
row1=$("$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --q8-row --q8-fast) \
  || fail "decide --q8-row --q8-fast"
[ "$row1" != "$row2" ] || fail "--q8-row --q8-fast (one pass) answered as --q8-row (two passes)"
# --int8, the recommended int8, is --q8-row --q8-fast, and takes no other compute flag
int8=$("$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --int8) || fail "decide --int8"
[ "$int8" = "$row1" ] || fail "--int8 answered otherwise than --q8-row --q8-fast"
for extra in --q8 --q8-fast --q8-row --no-calib --bf16x3 --f32; do
  err=$("$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --int8 $extra 2>&1 >/dev/null)
  [ $? -eq 2 ] || fail "--int8 with $extra must exit 2"
  echo "$err" | grep -q -- "--int8 excludes" || fail "--int8 $extra: $err"
done
x3=$("$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --bf16x3) || fail "decide --bf16x3"
f32=$("$CLI" decide "$T/pico.gguf" "$SRC/examples/flappy-drone.json" --f32) || fail "decide --f32"
if "$CLI" --version | grep -q '^cpu features:.* amx-bf16'; then
  [ "$x3" = "$out" ] || fail "the default is not --bf16x3 on AMX: $out vs $x3"
else
  [ "$f32" = "$out" ] || fail "the default is not --f32 without AMX-BF16: $out vs $f32"
fi
[ "$(echo "$x3" | sed 's/[-0-9.e]*//g')" = "$(echo "$f32" | sed 's/[-0-9.e]*//g')" ] || fail "--bf16x3 answers differ in shape: $x3"
paste <(echo "$f32" | grep -oE '[-0-9.]+(e-?[0-9]+)?') <(echo "$x3" | grep -oE '[-0-9.]+(e-?[0-9]+)?') |
  awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4) { print "differs: " $0; bad = 1 } } END { exit bad }' ||
  fail "--bf16x3 answers beyond 1e-4 of --f32: $x3"

# request errors name the field and exit 1
echo '{"state":"s","questions":{"act":{"type":"choice","instructions":"i","criteria":{}}}}' > "$T/bad.json"
err=$("$CLI" decide "$T/pico.gguf" "$T/bad.json" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "invalid request must exit 1 (got $rc)"
echo "$err" | grep -q 'questions.act: "criteria" must be a non-empty object' || fail "message: $err"
printf '{"state":' > "$T/trunc.json"
err=$("$CLI" decide "$T/pico.gguf" "$T/trunc.json" 2>&1 >/dev/null); [ $? -eq 1 ] || fail "bad JSON must exit 1"
echo "$err" | grep -q 'malformed JSON' || fail "bad JSON message: $err"
"$CLI" decide "$T/missing.gguf" "$SRC/examples/flappy-drone.json" >/dev/null 2>&1; [ $? -eq 1 ] || fail "missing model must exit 1"

# The built-in default model: a lone request argument is answered by s1-pico-flappy (found
# beside the program: <build>/share/skycmd/models); a lone GGUF argument is the model with
# the request on stdin; $SKYCMD_DEFAULT_MODEL overrides; a missing one is an error naming
# where it was looked for.
out=$("$CLI" decide "$SRC/examples/flappy-drone.json") || fail "decide with the built-in model"
case "$out" in *'"model":"s1-pico-flappy"'*) ;; *) fail "the built-in model did not answer: $out" ;; esac
same=$("$CLI" decide "$SRC/models/s1-pico-flappy.gguf" "$SRC/examples/flappy-drone.json") || fail "decide the model file"
[ "$out" = "$same" ] || fail "the built-in model and models/s1-pico-flappy.gguf answer differently"
viastdin=$("$CLI" decide "$T/pico.gguf" < "$SRC/examples/flappy-drone.json") || fail "decide MODEL with the request on stdin"
case "$viastdin" in *'"answers"'*) ;; *) fail "decide MODEL < request: $viastdin" ;; esac
override=$(SKYCMD_DEFAULT_MODEL="$T/pico.gguf" "$CLI" decide "$SRC/examples/flappy-drone.json") || fail "SKYCMD_DEFAULT_MODEL"
[ "$override" = "$viastdin" ] || fail "SKYCMD_DEFAULT_MODEL was not used"
err=$(SKYCMD_DEFAULT_MODEL="$T/none.gguf" "$CLI" decide "$SRC/examples/flappy-drone.json" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "a missing SKYCMD_DEFAULT_MODEL must exit 1 (got $rc)"
case "$err" in *"SKYCMD_DEFAULT_MODEL"*) ;; *) fail "missing default model: $err" ;; esac
alone=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-alone.XXXXXX")
cp "${SKYCMD_CLI_PROGRAM:-$CLI}" "$alone/skycmd"   # the program itself, not an emulator's wrapper
# Moved away from its model, the program still loads the build's libskycmd (its runpath),
# which finds the model beside itself (skycmd_default_model_path: <build>/share/...).
if [ -f "$BIN/libskycmd.so.1" ]; then
  moved=$("$alone/skycmd" decide "$SRC/examples/flappy-drone.json") || fail "a moved program: the model beside libskycmd"
  [ "$moved" = "$out" ] || fail "a moved program answered differently: $moved"
  cp -L "$BIN/libskycmd.so.1" "$alone/"   # and with a library away from it too: nothing is found
fi
err=$(LD_LIBRARY_PATH="$alone${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$alone/skycmd" decide "$SRC/examples/flappy-drone.json" 2>&1 >/dev/null); rc=$?
rm -rf "$alone"
if [ ! -f "$(dirname "$alone")/share/skycmd/models/s1-pico-flappy.gguf" ] &&
   [ ! -f /usr/local/share/skycmd/models/s1-pico-flappy.gguf ]; then
  [ $rc -eq 1 ] || fail "a program without its model must exit 1 (got $rc)"
  case "$err" in *"is not installed (looked in"*"libskycmd: "*) ;; *) fail "no built-in model: $err" ;; esac
fi

echo "ok"
