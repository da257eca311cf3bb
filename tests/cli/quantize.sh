#!/usr/bin/env bash
# CLI behaviour of `skycmd quantize`: help, usage errors, F16 -> Q8_0 re-typing under the
# converter's policy (same bytes as `convert --type q8_0` from the same F16 weights is NOT
# expected; what is checked: the types, that Q8_0 -> Q8_0 copies, that metadata is kept) and
# a failing call that leaves no file. Usage: quantize.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
SRC=$2
BIN=$3
T=$(mktemp -d "$BIN/cli_quantize.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CLI" quantize --help | grep -q "usage: skycmd quantize" || fail "quantize --help"
"$CLI" quantize >/dev/null 2>&1; [ $? -eq 2 ] || fail "quantize without arguments must exit 2"
"$CLI" quantize a b --type q4 >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad --type must exit 2"
"$CLI" quantize a b --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option must exit 2"

"$CLI" convert --random s1-pico "$T/f16.gguf" --type f16 || fail "convert --random"
"$CLI" quantize "$T/f16.gguf" "$T/q8.gguf" 2>/dev/null || fail "quantize to q8_0"
out=$("$CLI" inspect "$T/q8.gguf") || fail "inspect q8"
echo "$out" | grep -Eq 'blk\.0\.attn_qkv\.weight +\[64, 192\] +Q8_0' || fail "encoder matrix not Q8_0"
echo "$out" | grep -Eq 'token_embd\.weight +\[64, [0-9]+\] +F16' || fail "token_embd must stay F16"
echo "$out" | grep -Eq 'blk\.2\.attn_qkv\.weight +\[64, 192\] +F32' || fail "head block must stay F32"
echo "$out" | grep -Eq 'token_embd_norm\.weight +\[64\] +F32' || fail "1-D tensor must stay F32"
echo "$out" | grep -q 'general.file_type (u32) = 7' || fail "general.file_type must say MOSTLY_Q8_0"
n_in=$("$CLI" inspect "$T/f16.gguf" | grep -c ' = ')
n_out=$(echo "$out" | grep -c ' = ')
[ "$n_in" -eq "$n_out" ] || fail "metadata keys: $n_in before, $n_out after"
"$CLI" quantize "$T/q8.gguf" "$T/q8b.gguf" 2>/dev/null || fail "quantize q8_0 again"
cmp -s "$T/q8.gguf" "$T/q8b.gguf" || fail "Q8_0 -> Q8_0 must copy the file's tensors unchanged"
"$CLI" quantize "$T/q8.gguf" "$T/back.gguf" --type f16 2>/dev/null || fail "quantize to f16"
"$CLI" inspect "$T/back.gguf" | grep -Eq 'blk\.0\.attn_qkv\.weight +\[64, 192\] +F16' || fail "f16 back"

err=$("$CLI" quantize "$T/missing.gguf" "$T/out.gguf" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "missing input must exit 1 (got $rc)"
echo "$err" | grep -q "missing.gguf" || fail "message must name the file: $err"
[ ! -e "$T/out.gguf" ] || fail "a failed quantize left its output"
head -c 100 "$T/f16.gguf" > "$T/trunc.gguf"
"$CLI" quantize "$T/trunc.gguf" "$T/out.gguf" >/dev/null 2>&1; [ $? -eq 1 ] || fail "truncated input must exit 1"
[ ! -e "$T/out.gguf" ] || fail "a failed quantize left its output"
# --calibrated: the int8 of decide --q8 stored once; --q8 / --q8-fast on it answer as on the
# source, byte for byte, and the types cannot be given with it
"$CLI" quantize "$T/f16.gguf" "$T/cal.gguf" --calibrated 2>/dev/null || fail "quantize --calibrated"
cal=$("$CLI" inspect "$T/cal.gguf") || fail "inspect cal"
echo "$cal" | grep -q 'skycmd.int8.version (u32) = 1' || fail "--calibrated must write skycmd.int8.version"
echo "$cal" | grep -Eq 'blk\.0\.attn_output\.weight +\[64, 64\] +Q8_0' || fail "an int8 matrix must be Q8_0"
echo "$cal" | grep -Eq 'token_embd\.weight +\[64, [0-9]+\] +F16' || fail "token_embd must keep its type"
for mode in --q8 --q8-fast; do
  a=$("$CLI" decide "$T/f16.gguf" "$SRC/examples/flappy-drone.json" $mode) || fail "decide $mode on the source"
  b=$("$CLI" decide "$T/cal.gguf" "$SRC/examples/flappy-drone.json" $mode) || fail "decide $mode on the stored file"
  [ "$a" = "$b" ] || fail "decide $mode: the stored file answers otherwise:
$a
$b"
done
"$CLI" quantize "$T/f16.gguf" "$T/x.gguf" --calibrated --type f16 >/dev/null 2>&1; [ $? -eq 2 ] ||
  fail "--calibrated with --type must exit 2"
err=$("$CLI" quantize "$T/cal.gguf" "$T/x.gguf" --calibrated 2>&1); rc=$?
[ $rc -eq 1 ] || fail "--calibrated of a stored file must exit 1 (got $rc)"
echo "$err" | grep -q "already stores a calibrated int8 model" || fail "message: $err"
[ ! -e "$T/x.gguf" ] || fail "a failed quantize left its output"
# --calibrated --q8-row: the int8 of decide --q8-row stored once, answering as --q8-row on the
# source (two passes and one); --q8-row alone is a usage error
"$CLI" quantize "$T/f16.gguf" "$T/rows.gguf" --calibrated --q8-row 2>/dev/null ||
  fail "quantize --calibrated --q8-row"
"$CLI" inspect "$T/rows.gguf" | grep -q 'skycmd.int8.row_scaled (bool) = true' ||
  fail "--calibrated --q8-row must write skycmd.int8.row_scaled"
for mode in --q8-row "--q8-row --q8-fast"; do
  a=$("$CLI" decide "$T/f16.gguf" "$SRC/examples/flappy-drone.json" $mode) || fail "decide $mode on the source"
  b=$("$CLI" decide "$T/rows.gguf" "$SRC/examples/flappy-drone.json" $mode) || fail "decide $mode on the stored file"
  [ "$a" = "$b" ] || fail "decide $mode: the stored row-scaled file answers otherwise:
$a
$b"
done
"$CLI" quantize "$T/f16.gguf" "$T/x.gguf" --q8-row >/dev/null 2>&1; [ $? -eq 2 ] ||
  fail "--q8-row without --calibrated must exit 2"
# --int8 is --calibrated --q8-row, byte for byte, and the file --int8 loads (decide --int8 on
# it answers as on the source); with either of those flags it is a usage error
"$CLI" quantize "$T/f16.gguf" "$T/int8.gguf" --int8 -q || fail "quantize --int8"
cmp -s "$T/int8.gguf" "$T/rows.gguf" || fail "quantize --int8 wrote another file than --calibrated --q8-row"
a=$("$CLI" decide "$T/f16.gguf" "$SRC/examples/flappy-drone.json" --int8) || fail "decide --int8 on the source"
b=$("$CLI" decide "$T/int8.gguf" "$SRC/examples/flappy-drone.json" --int8) || fail "decide --int8 on the stored file"
[ "$a" = "$b" ] || fail "decide --int8: the stored file answers otherwise"
for extra in --calibrated --q8-row; do
  "$CLI" quantize "$T/f16.gguf" "$T/x.gguf" --int8 $extra >/dev/null 2>&1; [ $? -eq 2 ] ||
    fail "quantize --int8 $extra must exit 2"
done
[ ! -e "$T/x.gguf" ] || fail "a refused quantize left its output"
echo "quantize CLI: ok"
