#!/usr/bin/env bash
# CLI behaviour of `skycmd decide --long / --window / --stride / --tournament-group /
# --report-truncation`: usage errors, the warning line on stderr whenever the state or the
# options are cut (and none when nothing is), windows and attribution on the output, the
# truncation report only when asked for, tournaments. Usage: long.sh <cli> <src> <bin>
set -u
CLI=$1
SRC=$2
BIN=$3
T=$(mktemp -d "$BIN/cli_long.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CLI" random s1-pico "$T/pico.gguf" >/dev/null || fail "random s1-pico"
words=$(for i in $(seq 1 400); do printf 'word%d is here. ' "$i"; done)
Q='"questions":{"n":{"type":"noul","instructions":"Is it?"},"c":{"type":"choice","instructions":"Pick","criteria":{"a":"x","b":"y","c":"z"}}}'
printf '{"state":"%s",%s}\n' "$words" "$Q" > "$T/long.json"
printf '{"state":"short",%s}\n' "$Q" > "$T/short.json"

"$CLI" decide "$T/pico.gguf" "$T/long.json" --window 10 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--window without --long must exit 2"
"$CLI" decide "$T/pico.gguf" "$T/long.json" --long --tournament-group 4 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--long with --tournament-group must exit 2"
"$CLI" decide "$T/pico.gguf" "$T/long.json" --tournament-group 1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--tournament-group 1 must exit 2"
"$CLI" decide "$T/pico.gguf" "$T/long.json" --tournament-group 101 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--tournament-group 101 must exit 2"
"$CLI" decide "$T/pico.gguf" "$T/long.json" --long --stride 0x >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad --stride must exit 2"
"$CLI" decide "$T/pico.gguf" "$T/long.json" --long --window 40 --stride 41 >/dev/null 2>"$T/err"; [ $? -eq 1 ] || fail "stride past the window must fail"
grep -q "stride=41 steps past the 40-token window" "$T/err" || fail "stride message: $(cat "$T/err")"

# a cut state: the default output is today's, the warning names the cut
out=$("$CLI" decide "$T/pico.gguf" "$T/long.json" 2>"$T/err") || fail "decide long.json"
case "$out" in *'"usage":{"input_tokens":'*',"output_tokens":0}}') ;; *) fail "default usage changed: $out" ;; esac
grep -q '^skycmd decide: warning: the state was cut: at least [1-9][0-9]* of its tokens were not read (questions: n c); --long reads all of it$' "$T/err" \
  || fail "no truncation warning: $(cat "$T/err")"
# with --report-truncation the warning gives the exact counts
"$CLI" decide "$T/pico.gguf" "$T/long.json" --report-truncation >/dev/null 2>"$T/err" || fail "decide long.json --report-truncation"
grep -q '^skycmd decide: warning: the state was cut: [1-9][0-9]* of its [1-9][0-9]* tokens were not read (questions: n c); --long reads all of it$' "$T/err" \
  || fail "no exact truncation warning: $(cat "$T/err")"
# nothing cut: no warning
"$CLI" decide "$T/pico.gguf" "$T/short.json" >/dev/null 2>"$T/err" || fail "decide short.json"
[ ! -s "$T/err" ] || fail "a warning for a state that fits: $(cat "$T/err")"
# --report-truncation puts laya's fields in the response
out=$("$CLI" decide "$T/pico.gguf" "$T/long.json" --report-truncation 2>/dev/null) || fail "--report-truncation"
echo "$out" | grep -q '"state_tokens_dropped":[1-9][0-9]*,"truncated":true,"truncated_questions":\["n","c"\]' \
  || fail "truncation report: $out"
# --long reads it all: windows, attribution, no warning
out=$("$CLI" decide "$T/pico.gguf" "$T/long.json" --long --window 64 --stride 32 2>"$T/err") || fail "--long"
[ ! -s "$T/err" ] || fail "a warning with --long: $(cat "$T/err")"
echo "$out" | grep -q '"window":{"index":[0-9]*,"token_start":[0-9]*,"token_end":[0-9]*,"count":[0-9]*}' || fail "no window: $out"
echo "$out" | grep -q '"windows":[0-9]*}}$' || fail "no usage.windows: $out"
# collapsed options: warned
opts=$(for i in $(seq 0 39); do printf '"same option %d":"x",' "$i"; done)
printf '{"state":"s","questions":{"c":{"type":"choice","instructions":"Pick","criteria":{%s"last":"y"}}}}\n' "$opts" > "$T/many.json"
"$CLI" decide "$T/pico.gguf" "$T/many.json" >/dev/null 2>"$T/err" || fail "decide many.json"
grep -q "^skycmd decide: warning: question c: its 41 options were cut" "$T/err" || fail "no options warning: $(cat "$T/err")"
# a tournament
out=$("$CLI" decide "$T/pico.gguf" "$T/many.json" --tournament-group 8 2>/dev/null) || fail "--tournament-group"
echo "$out" | grep -q '"x_tournament":{"finalists":\[' || fail "no x_tournament: $out"
echo "ok"
