#!/usr/bin/env bash
# CLI behaviour of `skycmd calibrate` and `skycmd decide --min-confidence`: help, usage
# errors, a labelled run on a random model (written file decides with its new
# temperatures, the report is JSON with the documented fields), a bad labelled line that
# names its line and leaves no file, and the gate's fields on the CLI. The figures against
# laya are tests/test_calibrate.c. Usage: calibrate.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
SRC=$2
BIN=$3
T=$(mktemp -d "$BIN/cli_calibrate.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
REQ=$SRC/examples/flappy-drone.json

"$CLI" calibrate --help | grep -q "usage: skycmd calibrate" || fail "calibrate --help"
"$CLI" calibrate >/dev/null 2>&1; [ $? -eq 2 ] || fail "no arguments must exit 2"
"$CLI" calibrate a b >/dev/null 2>&1; [ $? -eq 2 ] || fail "no -o / --dry-run must exit 2"
"$CLI" calibrate a b -o c --dry-run >/dev/null 2>&1; [ $? -eq 2 ] || fail "-o with --dry-run must exit 2"
"$CLI" calibrate a b -o c --target-error 0.1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--target-error without --abstention"
"$CLI" calibrate a b -o c --abstention --target-error 2 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--target-error 2"
"$CLI" calibrate a a -o a >/dev/null 2>&1; [ $? -eq 2 ] || fail "output = input must exit 2"

"$CLI" random s1-pico "$T/m.gguf" >/dev/null || fail "random"
head -n 200 "$SRC/tests/fixtures/flappy/test.jsonl" > "$T/l.jsonl"
"$CLI" calibrate "$T/m.gguf" "$T/l.jsonl" -o "$T/c.gguf" --json --abstention > "$T/r.json" 2>"$T/err" ||
  fail "calibrate: $(cat "$T/err")"
python3 - "$T/r.json" <<'PY' || fail "report"
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("temperature", "temperature_by_options", "n_by_bucket", "temperature_clamped", "previous", "ece",
          "abstention_thresholds", "records", "lines"):
    assert k in r, k
assert r["records"] == 600 and r["lines"] == 200, r
assert r["temperature_by_options"] == {}, r   # 200 per bucket: under the 2000 floor
assert set(r["ece"]) == {"all", "choice", "score", "noul"}, r["ece"]
PY
"$CLI" inspect "$T/c.gguf" | grep -q 'decision.temperature.choice (f32)' || fail "no temperature key in the output"
"$CLI" decide "$T/c.gguf" "$REQ" >/dev/null || fail "the calibrated model does not decide"
"$CLI" calibrate "$T/m.gguf" "$T/l.jsonl" --dry-run | grep -q "ECE (15 bins)" || fail "text report"
# the labelled lines from stdin ('-') fit the same temperatures as from the file
"$CLI" calibrate "$T/m.gguf" - -o "$T/c2.gguf" --abstention < "$T/l.jsonl" >/dev/null 2>"$T/err" ||
  fail "calibrate - (stdin): $(cat "$T/err")"
cmp -s "$T/c.gguf" "$T/c2.gguf" || fail "calibrate from stdin wrote another model than from the file"
# the input model by another name (./path, a link) is refused as the output, and left as it was
cp "$T/m.gguf" "$T/m-keep.gguf"
ln -s m.gguf "$T/m-link.gguf"
for o in "$T/./m.gguf" "$T/m-link.gguf"; do
  "$CLI" calibrate "$T/m.gguf" "$T/l.jsonl" -o "$o" >/dev/null 2>"$T/err"; rc=$?
  [ $rc -eq 2 ] && grep -q "must not be the input model" "$T/err" || fail "calibrate -o $o (the input): exit $rc"
  cmp -s "$T/m.gguf" "$T/m-keep.gguf" || fail "calibrate -o $o changed the input model"
done

printf '%s\n' '{"state":"a","questions":{"q":{"type":"noul","instructions":"i"}},"expected":{"q":true}}' \
  '{"state":"a","questions":{"q":{"type":"noul","instructions":"i"}}}' > "$T/bad.jsonl"
"$CLI" calibrate "$T/m.gguf" "$T/bad.jsonl" -o "$T/bad.gguf" 2>"$T/err"; [ $? -eq 1 ] || fail "bad line must exit 1"
grep -q "bad.jsonl:2" "$T/err" || fail "bad line not named: $(cat "$T/err")"
[ -z "$(ls "$T" | grep -e bad.gguf)" ] || fail "a failed run left $(ls "$T")"

out=$("$CLI" decide "$T/m.gguf" "$REQ") || fail "decide"
case $out in *abstention*) fail "abstention fields without a gate" ;; esac
out=$("$CLI" decide "$T/m.gguf" "$REQ" --min-confidence 1) || fail "decide --min-confidence 1"
case $out in *'"abstention":"abstained","abstention_threshold":1.0'*) ;; *) fail "gate 1: $out" ;; esac
out=$("$CLI" decide "$T/m.gguf" "$REQ" --min-confidence '{"default":0}') || fail "decide map"
case $out in *'"abstention":"passed","abstention_threshold":0.0'*) ;; *) fail "gate map: $out" ;; esac
"$CLI" decide "$T/m.gguf" "$REQ" --min-confidence '{"choice:1":0.5}' 2>"$T/err"; [ $? -eq 2 ] || fail "bad key must exit 2"
grep -q "min_confidence map keys must be a bucket" "$T/err" || fail "message: $(cat "$T/err")"
"$CLI" decide "$T/m.gguf" "$REQ" --min-confidence 'x' 2>/dev/null; [ $? -eq 2 ] || fail "bad JSON must exit 2"
echo "calibrate: ok"
