#!/usr/bin/env bash
# CLI behaviour of `skycmd bench`: help, usage errors, a short run on a random s1-pico model
# whose JSON report agrees with `skycmd decide` on the same request (token counts), and
# --tokens/--questions shaping the request. No timing is asserted.
# Usage: bench.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
BIN=$3
T=$(mktemp -d "$BIN/cli_bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# the value of a top-level numeric key of a one-line JSON document
num() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1" | head -1; }

"$CLI" bench --help | grep -q "usage: skycmd bench" || fail "bench --help"
"$CLI" bench >/dev/null 2>&1; [ $? -eq 2 ] || fail "bench without a model must exit 2"
"$CLI" bench --random nope >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown preset must exit 2"
"$CLI" bench x.gguf --random s1-pico >/dev/null 2>&1; [ $? -eq 2 ] || fail "file and --random must exit 2"
"$CLI" bench x.gguf --q8 --q8-fast >/dev/null 2>&1; [ $? -eq 2 ] || fail "--q8 with --q8-fast must exit 2"
"$CLI" bench x.gguf --iters 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--iters 0 must exit 2"
"$CLI" bench "$T/missing.gguf" >/dev/null 2>&1; [ $? -eq 1 ] || fail "missing file must exit 1"
echo "not a gguf" > "$T/bad.gguf"
"$CLI" bench "$T/bad.gguf" >/dev/null 2>"$T/err"; [ $? -eq 1 ] || fail "bad file must exit 1"
grep -q "skycmd bench:" "$T/err" || fail "bad file: no message"

"$CLI" random s1-pico "$T/p.gguf" --type f32 || fail "random"
"$CLI" bench "$T/p.gguf" --iters 4 --warmup 1 --peak-ms 5 --json > "$T/b.json" || fail "bench --json"
[ "$(wc -l < "$T/b.json")" -eq 1 ] || fail "--json is not one line"
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/b.json" || fail "invalid JSON"
fi
for k in load_ms peak_rss_bytes request per_question single_question questions_per_s \
         tokens_per_s gflops gflops_1_thread loadavg_start; do
  grep -q "\"$k\"" "$T/b.json" || fail "JSON lacks $k"
done
grep -q '"request":{"n":4,' "$T/b.json" || fail "--iters 4 not honoured"
# the resident set after the load and a second session's buffers (Linux: numbers; each
# below the peak, the buffers more than nothing)
if [ "$(uname -s)" = Linux ] && command -v python3 >/dev/null; then
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
loaded, scratch, peak = d["rss_after_load_bytes"], d["session_scratch_bytes"], d["peak_rss_bytes"]
assert 0 < loaded <= peak, (loaded, peak)
assert 0 < scratch < peak, (scratch, peak)' "$T/b.json" || fail "resident figures: $(grep -oE '"(rss_after_load|session_scratch|peak_rss)_bytes":[^,]*' "$T/b.json" | tr '\n' ' ')"
fi
grep -q '"gguf_bytes":'"$(stat -c %s "$T/p.gguf")"',' "$T/b.json" || fail "gguf_bytes is not the file size"

# the kernels that ran: named for this CPU's architecture, and the scalar reference when
# SKYCMD_KERNELS caps them
grep -qE '"kernels":"f32=(scalar|avx2|avx512|neon) int8=(scalar|avx2|vnni|amx|dotprod|i8mm)"' "$T/b.json" ||
  fail "kernels: $(grep -o '"kernels":"[^"]*"' "$T/b.json")"
SKYCMD_KERNELS=scalar "$CLI" bench "$T/p.gguf" --iters 1 --warmup 0 --peak-ms 0 --no-single --json > "$T/s.json" ||
  fail "bench scalar"
grep -q '"kernels":"f32=scalar int8=scalar"' "$T/s.json" || fail "scalar kernels: $(grep -o '"kernels":"[^"]*"' "$T/s.json")"
"$CLI" --version | grep -qE '^kernels: f32=' || fail "--version lacks the kernels line"
# the best f32 level of the CPU the program runs on (an emulated one included)
features=$("$CLI" --version | sed -n 's/^cpu features: //p')
case " $features " in
  *" neon "*) best=neon ;; *" avx512f "*) best=avx512 ;; *" avx2 "*) best=avx2 ;; *) best=scalar ;;
esac
grep -q "\"kernels\":\"f32=$best " "$T/b.json" || fail "features '$features' but $(grep -o '"kernels":"[^"]*"' "$T/b.json")"
# an int8 model is held against the peak of the products its int8 kernel runs: with the
# kernels capped at AVX2, the AVX2 sequence (maddubs), not the CPU's best dot product
case " $features " in
  *" avx2 "*)
    SKYCMD_KERNELS=avx2 "$CLI" bench "$T/p.gguf" --int8 --iters 1 --warmup 0 --peak-ms 5 --no-single \
      --json > "$T/i.json" || fail "bench --int8 with SKYCMD_KERNELS=avx2"
    grep -q '"kernels":"f32=avx2 int8=avx2"' "$T/i.json" || fail "avx2 int8: $(grep -o '"kernels":"[^"]*"' "$T/i.json")"
    grep -q '"int8_isa":"maddubs"' "$T/i.json" || fail "avx2 int8 peak: $(grep -o '"int8_isa":"[^"]*"' "$T/i.json")" ;;
esac

# the mode that ran: the default is bf16x3 where the AMX-BF16 tiles are usable, else f32
# (arm64 BFMMLA only when --bf16x3 asks); --f32 is f32 everywhere, and so is the default with
# the kernels capped below AMX
"$CLI" bench x.gguf --f32 --bf16x3 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--f32 with --bf16x3 must exit 2"
grep -qE '"mode":"(bf16x3|f32)"' "$T/b.json" || fail "default mode: $(grep -o '"mode":"[^"]*"' "$T/b.json")"
"$CLI" bench "$T/p.gguf" --f32 --iters 1 --warmup 0 --peak-ms 0 --no-single --json > "$T/f.json" || fail "bench --f32"
grep -q '"mode":"f32"' "$T/f.json" || fail "--f32 mode: $(grep -o '"mode":"[^"]*"' "$T/f.json")"
SKYCMD_KERNELS=avx512 "$CLI" bench "$T/p.gguf" --iters 1 --warmup 0 --peak-ms 0 --no-single --json > "$T/c.json" ||
  fail "bench capped"
grep -q '"mode":"f32"' "$T/c.json" || fail "capped default mode: $(grep -o '"mode":"[^"]*"' "$T/c.json")"
# --bf16x3 runs on a BF16 matrix unit wherever the CPU has one (arm64 FEAT_BF16: "bf16")
"$CLI" bench "$T/p.gguf" --bf16x3 --iters 1 --warmup 0 --peak-ms 0 --no-single --json > "$T/x.json" ||
  fail "bench --bf16x3"
case " $features " in *" amx-bf16 "*|*" bf16 "*) want=bf16x3 ;; *) want=f32 ;; esac
grep -q "\"mode\":\"$want\"" "$T/x.json" || fail "--bf16x3 with '$features': $(grep -o '"mode":"[^"]*"' "$T/x.json")"
# --int8 runs the row-scaled int8 with single-pass activations (--q8-row --q8-fast), alone
"$CLI" bench "$T/p.gguf" --int8 --iters 1 --warmup 0 --peak-ms 0 --no-single --json > "$T/i.json" ||
  fail "bench --int8"
grep -q '"mode":"q8-row-fast"' "$T/i.json" || fail "--int8 mode: $(grep -o '"mode":"[^"]*"' "$T/i.json")"
"$CLI" bench x.gguf --int8 --q8 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--int8 with --q8 must exit 2"

# the request bench times is the one it saves; decide must count the same tokens
"$CLI" bench "$T/p.gguf" --save-request "$T/req.json" || fail "--save-request"
"$CLI" decide "$T/p.gguf" "$T/req.json" > "$T/resp.json" || fail "decide on the saved request"
want=$(sed -n 's/.*"input_tokens":\([0-9]*\).*/\1/p' "$T/resp.json")
[ -n "$want" ] && [ "$want" = "$(num "$T/b.json" request_tokens)" ] ||
  fail "bench request_tokens $(num "$T/b.json" request_tokens) != decide input_tokens $want"

# --questions N gives N questions; --tokens N makes sequences of about N tokens
"$CLI" bench "$T/p.gguf" --questions 5 --tokens 160 --save-request "$T/req5.json" || fail "--questions/--tokens"
[ "$(grep -o '"type":' "$T/req5.json" | wc -l)" -eq 5 ] || fail "--questions 5 did not give 5 questions"
"$CLI" decide "$T/p.gguf" "$T/req5.json" > "$T/resp5.json" || fail "decide --tokens request"
n5=$(sed -n 's/.*"input_tokens":\([0-9]*\).*/\1/p' "$T/resp5.json")
[ "$n5" -ge $((5 * 140)) ] && [ "$n5" -le $((5 * 180)) ] || fail "--tokens 160: $n5 tokens for 5 questions"

# --compute-threads N sets the session's threads (JSON "threads"); --threads is its old name
"$CLI" bench "$T/p.gguf" --compute-threads 2 --iters 1 --warmup 0 --peak-ms 0 --no-single --json > "$T/t.json" ||
  fail "bench --compute-threads 2"
grep -q '"threads":2,' "$T/t.json" || fail "--compute-threads 2: $(grep -o '"threads":[0-9]*' "$T/t.json")"
"$CLI" bench "$T/p.gguf" --threads 2 --iters 1 --warmup 0 --peak-ms 0 --no-single --json > "$T/t.json" ||
  fail "bench --threads 2 (alias)"
grep -q '"threads":2,' "$T/t.json" || fail "--threads 2: $(grep -o '"threads":[0-9]*' "$T/t.json")"

# text report
"$CLI" bench "$T/p.gguf" --iters 2 --warmup 0 --peak-ms 0 --no-single > "$T/b.txt" || fail "bench text"
grep -q "per question" "$T/b.txt" && grep -q "peak RSS" "$T/b.txt" || fail "text report"
echo "ok"
