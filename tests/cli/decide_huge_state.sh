#!/usr/bin/env bash
# `skycmd decide` (not --batch) on 2 MB states: the warning of a cut state is printed, its
# "at least N tokens were not read" is a true lower bound (the exact count comes from
# --report-truncation, which tokenizes the whole state as laya does), and the answer is
# byte for byte the one `decide --batch` gives the same request, whose plain path reads
# only what a sequence can hold. States: ordinary words, one base64-like word, one run of
# digits (cut inside the run, sk_cut_rules), a list state (keeps its end), and one that fits
# (no warning). No timing here: the cost is measured by the benchmark in the report.
# Usage: decide_huge_state.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
BIN=$3
T=$(mktemp -d "$BIN/cli_decide_huge_state.XXXXXX")
trap 'rm -rf "$T"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

"$CLI" random s1-pico "$T/pico.gguf" >/dev/null || { echo "FAIL: random s1-pico"; echo "decide_huge_state: 0 passed, 1 failed"; exit 1; }
Q='"questions":{"n":{"type":"noul","instructions":"Will the drone crash?"},"c":{"type":"choice","instructions":"Pick","criteria":{"a":"up","b":"down","c":"hold"}}}'
MB2=2097152
# deterministic 2 MB states, written as a stream (no Python needed): ordinary words; one
# word of 4096 pseudo-random base64 characters repeated; one run of pseudo-random digits
# repeated; a list of short rows
yes 'vy 0 dx 36 up 9 dn 7 nxt 10 alt 32' | tr '\n' ' ' | head -c $MB2 > "$T/words.txt"
chunk() { # ALPHABET SEED: 4096 pseudo-random characters of ALPHABET
  awk -v a="$1" -v x="$2" 'BEGIN { for (i = 0; i < 4096; i++) {
    x = (x * 1103515245 + 12345) % 2147483648; printf "%s", substr(a, int(x / 65536) % length(a) + 1, 1) } }'
}
chunk 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/' 12345 > "$T/c64"
chunk '0123456789' 7 > "$T/c10"
for i in $(seq 1 512); do cat "$T/c64"; done > "$T/b64.txt"
for i in $(seq 1 512); do cat "$T/c10"; done > "$T/digits.txt"
for s in words b64 digits; do
  { printf '{"state":"'; cat "$T/$s.txt"; printf '",%s}\n' "$Q"; } > "$T/$s.json"
done
# a list state of 2 MB (a list keeps its end)
{ printf '{"state":["row 0"'
  awk -v n=$MB2 'BEGIN { for (i = 1; b < n; i++) { r = ",\"row " i "\""; printf "%s", r; b += length(r) } }'
  printf '],%s}\n' "$Q"; } > "$T/list.json"
printf '{"state":"vy 0 dx 36 up 9",%s}\n' "$Q" > "$T/fits.json"

warning_re='^skycmd decide: warning: the state was cut: at least ([1-9][0-9]*) of its tokens were not read \(questions: n c\); --long reads all of it$'
for s in words b64 digits list fits; do
  if ! "$CLI" decide "$T/pico.gguf" "$T/$s.json" >"$T/$s.out" 2>"$T/$s.err"; then
    bad "$s: decide failed: $(head -c 300 "$T/$s.err")"
    continue
  fi
  if ! "$CLI" decide "$T/pico.gguf" --batch "$T/$s.json" -q >"$T/$s.batch" 2>"$T/$s.batch.err"; then
    bad "$s: decide --batch failed: $(head -c 300 "$T/$s.batch.err")"
    continue
  fi
  if cmp -s "$T/$s.out" "$T/$s.batch"; then ok; else
    bad "$s: decide and decide --batch answer differently: $(head -c 300 "$T/$s.out") vs $(head -c 300 "$T/$s.batch")"
  fi
  if [ "$s" = fits ]; then
    if [ -s "$T/$s.err" ]; then bad "fits: a warning for a state that fits: $(cat "$T/$s.err")"; else ok; fi
    continue
  fi
  line=$(cat "$T/$s.err")
  if [[ $line =~ $warning_re ]]; then
    ok
    at_least=${BASH_REMATCH[1]}
    # the exact count: laya's usage.state_tokens_dropped from the whole state's tokens
    exact=$("$CLI" decide "$T/pico.gguf" "$T/$s.json" --report-truncation 2>/dev/null |
            grep -o '"state_tokens_dropped":[0-9]*' | cut -d: -f2)
    if [ -n "$exact" ] && [ "$exact" -ge "$at_least" ]; then ok; else
      bad "$s: the warning says at least $at_least tokens were not read, the state has $exact unread"
    fi
    echo "$s: warning 'at least $at_least' of $exact tokens not read; answer equal to --batch"
  else
    bad "$s: no truncation warning (stderr: $(head -c 300 "$T/$s.err"))"
  fi
done
echo "decide_huge_state: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
