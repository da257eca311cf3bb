#!/usr/bin/env bash
# `skycmd decide --batch`: on a few hundred lines of varied requests (some bad: invalid
# requests, truncated JSON, an over-long question set, a blank line), every output line must
# equal what a single `skycmd decide` prints for that line, and every bad line must be
# reported with its line number and the single decide's own message, without stopping the
# run; the same output for --jobs 2 and small windows (the order is the input's whatever the
# length sort does); --fail-fast stops at the first bad line; usage errors exit 2.
# Usage: decide_batch.sh <cli> <src> <bin>
set -u
CLI=$1
SRC=$2
BIN=$3
T=$(mktemp -d "$BIN/cli_decide_batch.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CLI" random s1-pico "$T/pico.gguf" >/dev/null || fail "random s1-pico"

# 300 lines: the example requests with states of varied lengths, state lists, several
# question sets, and bad lines at known places. Written by awk from a fixed recipe (no Python).
EX="$SRC/examples/flappy-drone.json"
Q=$(tr -d '\n' < "$EX" | sed -E 's/^.*"questions"[[:space:]]*:[[:space:]]*//; s/\}[[:space:]]*$//')
[ -n "$Q" ] || fail "cannot take the questions of $EX"
awk -v Q="$Q" 'BEGIN {
  srand(7);
  for (i = 1; i <= 300; i++) {
    if (i % 41 == 5) { print "{\"state\": \"x\", \"questions\": {}}"; continue }
    if (i % 53 == 7) { print "{\"state\": "; continue }
    if (i % 67 == 9) { print ""; continue }
    if (i % 71 == 11) { print "{\"state\": \"s\", \"questions\": {\"a\": {\"type\": \"choice\", \"instructions\": \"i\", \"criteria\": {\"x\": \"y\"}}}}"; continue }
    s = "vy " i " dx " int(rand() * 100);
    n = int(rand() * 80);
    for (k = 0; k < n; k++) s = s " w" int(rand() * 1000);
    if (i % 5 == 0) printf "{\"state\": [\"%s\", \"t %d\"], \"questions\": %s}\n", s, i, Q;
    else if (i % 7 == 0) printf "{\"state\": \"%s\", \"questions\": {\"danger\": {\"type\": \"noul\", \"instructions\": \"Will it crash? %d\"}}}\n", s, i;
    else printf "{\"state\": \"%s\", \"questions\": %s}\n", s, Q;
  }
}' > "$T/in.jsonl"
[ "$(wc -l < "$T/in.jsonl")" -eq 300 ] || fail "the input has $(wc -l < "$T/in.jsonl") lines"

# the reference: one `skycmd decide` per line
: > "$T/want.jsonl"
: > "$T/want.err"
n=0
while IFS= read -r line; do
  n=$((n + 1))
  case "$line" in *[![:space:]]*) ;; *) continue ;; esac
  printf '%s' "$line" > "$T/one.json"
  if out=$("$CLI" decide "$T/pico.gguf" "$T/one.json" 2> "$T/one.err"); then
    printf '%s\n' "$out" >> "$T/want.jsonl"
  else
    msg=$(sed -E 's/^skycmd decide: //' "$T/one.err")
    printf 'ERROR %d %s\n' "$n" "$msg" >> "$T/want.jsonl"
    printf 'skycmd decide: %s:%d: %s\n' "$T/in.jsonl" "$n" "$msg" >> "$T/want.err"
  fi
done < "$T/in.jsonl"
bad=$(grep -c '^ERROR' "$T/want.jsonl")
[ "$bad" -ge 10 ] || fail "the recipe should give at least 10 bad lines (got $bad)"

# error objects -> "ERROR line message (STATUS)" for the comparison
normalize() {
  sed -E 's/^\{"error":\{"line":([0-9]+),"status":"([A-Z_]+)","message":"(.*)"\}\}$/ERROR \1 \3 (\2)/; s/\\"/"/g' "$1"
}

"$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" -o "$T/got.jsonl" 2> "$T/got.err"; rc=$?
[ $rc -eq 1 ] || fail "a batch with bad lines must exit 1 (got $rc)"
normalize "$T/got.jsonl" > "$T/got.norm"
cmp -s "$T/want.jsonl" "$T/got.norm" || { diff "$T/want.jsonl" "$T/got.norm" | head -5; fail "--batch differs from single decides"; }
# the summary is the shared meter's (src/cli/progress_meter.h), printed also off a terminal
grep -v '^skycmd decide: done: [0-9]* requests in ' "$T/got.err" > "$T/got.err.lines"
cmp -s "$T/want.err" "$T/got.err.lines" || { diff "$T/want.err" "$T/got.err.lines" | head -5; fail "stderr reports differ"; }
total=$(wc -l < "$T/want.jsonl")
good=$((total - bad))
grep -qE "^skycmd decide: done: $total requests in [0-9.]+ s \([0-9.]+/s\): $good answered, $bad failed \(first at line 5\)$" "$T/got.err" \
  || fail "summary: $(tail -1 "$T/got.err")"

# --jobs 2, a small window (the length sort reorders inside each), stdin in, stdout out
"$CLI" decide "$T/pico.gguf" --batch - --jobs 2 --batch-window 7 < "$T/in.jsonl" > "$T/got2.jsonl" 2>/dev/null
normalize "$T/got2.jsonl" > "$T/got2.norm"
cmp -s "$T/want.jsonl" "$T/got2.norm" || fail "--jobs 2 --batch-window 7 from stdin differs"

# --fail-fast: output up to and including the first bad line (line 5), then stop
"$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" --fail-fast --batch-window 3 > "$T/ff.jsonl" 2> "$T/ff.err"; rc=$?
[ $rc -eq 1 ] || fail "--fail-fast must exit 1 (got $rc)"
[ "$(wc -l < "$T/ff.jsonl")" -eq 5 ] || fail "--fail-fast wrote $(wc -l < "$T/ff.jsonl") lines, want 5"
grep -q 'stopped (--fail-fast)' "$T/ff.err" || fail "--fail-fast summary: $(cat "$T/ff.err")"

# all good: exit 0; the default model when no MODEL is given
grep -v '"questions": {}' "$T/in.jsonl" | grep -v '^{"state": $' | grep -v '"criteria": {"x"' > "$T/ok.jsonl"
"$CLI" decide "$T/pico.gguf" --batch "$T/ok.jsonl" -o "$T/ok.out" 2>/dev/null || fail "a clean batch must exit 0"
"$CLI" decide --batch "$T/ok.jsonl" 2>/dev/null | head -1 | grep -q '"model":"s1-pico-flappy"' || fail "default model"
# an empty file: nothing to answer, exit 0
: > "$T/empty.jsonl"
"$CLI" decide "$T/pico.gguf" --batch "$T/empty.jsonl" 2> "$T/e.err" > "$T/e.out" || fail "empty file must exit 0"
[ ! -s "$T/e.out" ] || fail "empty file must write nothing"

# a NUL byte inside a line: that line is refused (JSON forbids the byte) and stays one line;
# the last line needs no newline
printf '{"state":"a\0b","questions":{"n":{"type":"noul","instructions":"x?"}}}\n{"state":"ok","questions":{"n":{"type":"noul","instructions":"x?"}}}\n{"state":"z","questions":{"n":{"type":"noul","instructions":"x?"}}}' > "$T/nul.jsonl"
"$CLI" decide "$T/pico.gguf" --batch "$T/nul.jsonl" > "$T/nul.out" 2>/dev/null
[ "$(wc -l < "$T/nul.out")" -eq 3 ] || fail "a line with a NUL byte must stay one line ($(wc -l < "$T/nul.out") output lines for 3)"
head -1 "$T/nul.out" | grep -q '"line":1,"status":"SKYCMD_E_JSON"' || fail "the NUL line must be refused as malformed JSON"
sed -n 2,3p "$T/nul.out" | grep -c '"answers"' | grep -qx 2 || fail "the lines after a NUL line must be answered"

# usage errors (2) and a missing file (1)
"$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" --pretty >/dev/null 2>&1; [ $? -eq 2 ] || fail "--pretty with --batch must exit 2"
"$CLI" decide "$T/pico.gguf" "$EX" -o x >/dev/null 2>&1; [ $? -eq 2 ] || fail "-o without --batch must exit 2"
"$CLI" decide "$T/pico.gguf" "$EX" --batch "$T/in.jsonl" >/dev/null 2>&1; [ $? -eq 2 ] || fail "a request with --batch must exit 2"
"$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" --batch-window 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--batch-window 0 must exit 2"
"$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" --jobs -1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--jobs -1 must exit 2"
"$CLI" decide "$T/pico.gguf" --batch "$T/nope.jsonl" >/dev/null 2>&1; [ $? -eq 1 ] || fail "a missing file must exit 1"
echo "PASS: decide --batch ($good answered, $bad bad lines) equals single decides"
