#!/usr/bin/env bash
# tokenize.sh - `skycmd tokenize` behaviour: help, usage errors, ids equal to HF tokenizers
# for a fixture string (expected ids from tests/fixtures/tokenizer/expected_vocab1024.txt,
# made by `tokenizers`), stdin input, and clean failures.
# usage: bash tokenize.sh <cli> <source_dir> <binary_dir>
set -u
cli=$1
src=$2
fix=$src/tests/fixtures/tokenizer
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }

out=$("$cli" tokenize --help); rc=$?
check "--help exits 0" "[ $rc -eq 0 ]"
check "--help shows usage" "grep -q 'usage: skycmd tokenize' <<<\"\$out\""
"$cli" tokenize >/dev/null 2>&1; rc=$?
check "no arguments is a usage error (2)" "[ $rc -eq 2 ]"
"$cli" tokenize --tokenizer-json >/dev/null 2>&1; rc=$?
check "--tokenizer-json without a path is a usage error (2)" "[ $rc -eq 2 ]"
"$cli" tokenize --tokenizer-json "$fix/vocab1024/tokenizer.json" --bogus x >/dev/null 2>&1; rc=$?
check "unknown option is a usage error (2)" "[ $rc -eq 2 ]"

# every corpus line whose text is plain printable ASCII without newlines: compare ids
n=0
while IFS= read -r hex && IFS= read -r exp <&3; do
  ids=${exp%%$'\t'*}
  text=$(printf '%s' "$hex" | xxd -r -p 2>/dev/null) || continue
  case "$text" in *[![:print:]]*|"" ) continue;; esac
  got=$("$cli" tokenize --tokenizer-json "$fix/vocab1024/tokenizer.json" --ids-only -- "$text" 2>&1)
  check "ids of '$text'" "[ \"\$got\" = \"\$ids\" ]"
  n=$((n + 1))
  [ $n -ge 40 ] && break
done < "$fix/corpus.txt" 3< <(tail -n +2 "$fix/expected_vocab1024.txt")
check "some strings were compared" "[ $n -ge 20 ]"

got=$(printf 'a  b' | "$cli" tokenize --tokenizer-json "$fix/vocab1024/tokenizer.json" --ids-only -)
check "stdin input: 'a  b' -> 102 1023 103" "[ \"\$got\" = '102 1023 103' ]"
got=$("$cli" tokenize --tokenizer-json "$fix/vocab1024/tokenizer.json" '[MASK]' | head -1)
check "piece output" "[ \"\$got\" = \$'4\t[MASK]' ]"
printf 'bad \377' | "$cli" tokenize --tokenizer-json "$fix/vocab1024/tokenizer.json" - >/dev/null 2>&1; rc=$?
check "invalid UTF-8 fails with 1" "[ $rc -eq 1 ]"
"$cli" tokenize --tokenizer-json /nonexistent/tokenizer.json x >/dev/null 2>&1; rc=$?
check "missing file fails with 1" "[ $rc -eq 1 ]"
# --json PATH: the old name of --tokenizer-json (elsewhere --json means JSON output), kept
# for a release: the same ids, and a warning on stderr that names the new option
errf=$(mktemp)
got=$("$cli" tokenize --json "$fix/vocab1024/tokenizer.json" --ids-only 'a  b' 2>"$errf"); rc=$?
err=$(cat "$errf"); rm -f "$errf"
check "deprecated --json: exit 0" "[ $rc -eq 0 ]"
check "deprecated --json: same ids" "[ \"\$got\" = '102 1023 103' ]"
check "deprecated --json: a warning naming --tokenizer-json" "grep -q 'deprecated, use --tokenizer-json' <<<\"\$err\""
"$cli" tokenize --json "$fix/vocab1024/tokenizer.json" --tokenizer-json "$fix/vocab1024/tokenizer.json" x >/dev/null 2>&1; rc=$?
check "--json with --tokenizer-json is a usage error (2)" "[ $rc -eq 2 ]"
exit $fail
