#!/usr/bin/env bash
# CLI behaviour of `skycmd convert` and `skycmd random`: help, usage errors, a random model
# end to end (GGUF and Laya directory give the same bytes), and a failing conversion that
# names the problem and leaves no file. Usage: convert.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
BIN=$3
T=$(mktemp -d "$BIN/cli_convert.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CLI" convert --help | grep -q "usage: skycmd convert" || fail "convert --help"
"$CLI" random --help | grep -q "usage: skycmd random" || fail "random --help"
"$CLI" convert >/dev/null 2>&1; [ $? -eq 2 ] || fail "convert without arguments must exit 2"
"$CLI" convert x y --type q4 >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad --type must exit 2"
"$CLI" random s1-pico "$T/x" --layout zip >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad --layout must exit 2"

"$CLI" convert --random s1-pico "$T/a.gguf" || fail "convert --random"
"$CLI" random s1-pico "$T/s1-pico" --layout laya || fail "random --layout laya"
for f in model.safetensors rl_agent_config.json config.json encoder/config.json \
         tokenizer/tokenizer.json tokenizer/tokenizer_config.json tokenizer/special_tokens_map.json; do
  [ -s "$T/s1-pico/$f" ] || fail "laya layout lacks $f"
done
"$CLI" convert "$T/s1-pico" "$T/b.gguf" || fail "convert dir"
cmp -s "$T/a.gguf" "$T/b.gguf" || fail "random GGUF and converted Laya dir differ"
"$CLI" random s1-pico "$T/c.gguf" --seed 42 || fail "random gguf"
cmp -s "$T/a.gguf" "$T/c.gguf" || fail "random default seed is not 42"
"$CLI" convert "$T/s1-pico" "$T/q.gguf" --type q8_0 --name other || fail "convert q8_0"
[ "$(stat -c %s "$T/q.gguf")" -lt "$(stat -c %s "$T/a.gguf")" ] || fail "q8_0 not smaller"

out=$("$CLI" inspect "$T/a.gguf" 2>&1) || fail "inspect"
echo "$out" | grep -q 'modern-bert.block_count (u32) = 3' || fail "inspect: 3 blocks"
echo "$out" | grep -q 'modern-bert.decision.max_head_tokens' || fail "inspect: decision keys"
echo "$out" | grep -q 'tokenizer.ggml.mask_token_id' || fail "inspect: tokenizer"
echo "$out" | grep -q '202305 parameters' || fail "inspect: parameter count"

rm "$T/s1-pico/encoder/config.json"
err=$("$CLI" convert "$T/s1-pico" "$T/bad.gguf" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "damaged checkpoint must exit 1 (got $rc)"
echo "$err" | grep -q "encoder/config.json" || fail "message must name the file: $err"
[ ! -e "$T/bad.gguf" ] || fail "partial output left"
ls "$T" | grep -q '\.tmp\.' && fail "temporary file left"
echo "OK"
