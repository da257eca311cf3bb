#!/usr/bin/env bash
# run.sh - the golden suite in WebAssembly under Node's WASI, against the Python reference
# and against native. Prints one summary line, "wasm: N passed, M failed", and exits 1 on
# any failure (2 when something it needs is missing).
#
# For each model of SKYCMD_WASM_GOLDEN (default "s1-pico mmbert-tiny"; any model of
# tests/fixtures/golden/manifest.json):
#   1. its F32 GGUF, made once with the native CLI as tests/test_golden.c makes it (random
#      presets regenerated from their seed as a Laya directory, the model.safetensors
#      digest checked against the manifest, the temperature rewrite applied; committed
#      checkpoints read in place) into <wasm build>/golden/;
#   2. golden-wasi.wasm (tests/wasm/golden_wasi.c) under Node: token ids and markers
#      identical to laya's, usage.input_tokens equal, every probability within 1e-4 of
#      laya's (test_golden's F32 bound), laya's refusals refused  -> one check;
#   3. the same program built natively on the same GGUF: every response identical in its
#      answers and token counts, probabilities and values within 1e-5 -> one check.
# With SIMD128 (the default) also kernels-wasi.wasm (tests/wasm/kernels_wasi.c): every
# SIMD128 kernel against the scalar reference (bit for bit where exact) -> one check.
# Environment: SKYCMD_NATIVE_BUILD (default build/: a native build with the `skycmd` program
# and libskycmd.a), SKYCMD_WASM_BUILD (default build-wasm/, made by tools/build-wasm.sh),
# SKYCMD_WASM_SIMD (1, the default: SIMD128, build dir build-wasm-simd/; 0: the plain
# wasm32 build, build-wasm/).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
native=${SKYCMD_NATIVE_BUILD:-$root/build}
simd=()
[ "${SKYCMD_WASM_SIMD:-1}" = 1 ] && simd=(--simd)
wasm=${SKYCMD_WASM_BUILD:-$root/build-wasm$([ ${#simd[@]} -gt 0 ] && echo -simd)}
models=${SKYCMD_WASM_GOLDEN:-s1-pico mmbert-tiny}
golden=$root/tests/fixtures/golden
prefix=$root/.deps/wasm32-wasi
passed=0
failed=0
die() { echo "run.sh: $*" >&2; echo "wasm: $passed passed, $((failed + 1)) failed"; exit 2; }

for t in "$native/skycmd" "$native/libskycmd.a"; do
  [ -e "$t" ] || die "$t is missing: build the native tree first (cmake --build $native)"
done
command -v node >/dev/null || die "node (>= 18) is needed"

# ---- the programs ------------------------------------------------------------------------
mkdir -p "$wasm"
"$root/tools/build-wasm.sh" "${simd[@]}" "$wasm" >/dev/null 2>"$wasm/build-wasm.log" ||
  { cat "$wasm/build-wasm.log" >&2; die "tools/build-wasm.sh failed"; }
simd_flag=()
[ ${#simd[@]} -gt 0 ] && simd_flag=(-msimd128)
wasm_prog() {  # wasm_prog NAME: tests/wasm/NAME_wasi.c -> $wasm/NAME-wasi.wasm (internal headers too)
  local src=$root/tests/wasm/$1_wasi.c out=$wasm/$1-wasi.wasm
  [ "$out" -nt "$src" ] && [ "$out" -nt "$wasm/libskycmd.a" ] && return 0
  clang-14 --target=wasm32-wasi --sysroot="$prefix/sysroot" "${simd_flag[@]}" -std=c11 -O2 \
    -Wall -Wextra -Werror -I"$root/include" -I"$root/src" -I"$prefix/include" "$src" \
    "$wasm/libskycmd.a" "$prefix/lib/libcjson.a" "$prefix/lib/libutf8proc.a" -lm \
    -Wl,--strip-all,--stack-first,-z,stack-size=8388608 -o "$out"
}
wasm_prog golden || die "cannot build golden-wasi.wasm"
if [ ${#simd[@]} -gt 0 ]; then wasm_prog kernels || die "cannot build kernels-wasi.wasm"; fi
src=$root/tests/wasm/golden_wasi.c
if [ ! "$native/golden-wasi-native" -nt "$src" ] || [ "$native/libskycmd.a" -nt "$native/golden-wasi-native" ]; then
  # shellcheck disable=SC2046
  cc -std=c11 -O2 -Wall -Wextra -Werror -I"$root/include" -I"$root/src" "$src" "$native/libskycmd.a" \
    $(pkg-config --cflags --libs libcjson libutf8proc) -lpthread -lm -o "$native/golden-wasi-native" ||
    die "cannot build the native golden-wasi"
fi

# ---- the models ---------------------------------------------------------------------------
mkdir -p "$wasm/golden"
model_field() {  # model_field NAME FIELD: a field of the manifest's entry (JSON)
  python3 -c 'import json,sys
m=[m for m in json.load(open(sys.argv[1]))["models"] if m["model"]==sys.argv[2]]
print(json.dumps(m[0].get(sys.argv[3])) if m else "")' "$golden/manifest.json" "$1" "$2"
}
make_model() {  # make_model NAME -> $wasm/golden/NAME.gguf (F32)
  local name=$1 out=$wasm/golden/$1.gguf dir
  [ -s "$out" ] && return 0
  [ -n "$(model_field "$name" model)" ] || { echo "run.sh: $name is not in the manifest" >&2; return 1; }
  local ckpt; ckpt=$(model_field "$name" checkpoint | tr -d '"')
  if [ -n "$ckpt" ] && [ "$ckpt" != null ]; then
    dir=$golden/$ckpt
  else
    dir=$wasm/golden/$name
    rm -rf "$dir"
    "$native/skycmd" random "$(model_field "$name" preset | tr -d '"')" "$dir" --layout laya -q \
      --seed "$(model_field "$name" seed)" --massive "$(model_field "$name" massive)" || return 1
    local ov; ov=$(model_field "$name" temperature_overrides)
    if [ "$ov" != null ]; then
      python3 -c 'import json,sys
p=sys.argv[1]; c=json.load(open(p)); c.update(json.loads(sys.argv[2])); json.dump(c,open(p,"w"),indent=2)' \
        "$dir/rl_agent_config.json" "$ov" || return 1
    fi
  fi
  local want have
  want=$(model_field "$name" model_safetensors_sha256 | tr -d '"')
  have=$(sha256sum "$dir/model.safetensors" | cut -d' ' -f1)
  [ "$want" = "$have" ] || { echo "run.sh: $name: model.safetensors is $have, the fixtures were made from $want" >&2; return 1; }
  "$native/skycmd" convert "$dir" "$out.tmp" --type f32 -q && mv "$out.tmp" "$out"
}

# ---- the checks ---------------------------------------------------------------------------
check() {  # check WHAT COMMAND...: one pass or failure
  local what=$1
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what" >&2; fi
}
if [ ${#simd[@]} -gt 0 ]; then
  check "SIMD128 kernels against the scalar reference" \
    node --no-warnings "$root/tests/wasm/run-wasi.mjs" "$wasm/kernels-wasi.wasm" >&2
fi
for name in $models; do
  if ! make_model "$name"; then
    failed=$((failed + 2))
    echo "FAILED: $name: cannot make its GGUF" >&2
    continue
  fi
  fixture=$golden/$(model_field "$name" fixture | tr -d '"')
  t0=$(date +%s.%N)
  check "$name: wasm against laya" node --no-warnings "$root/tests/wasm/run-wasi.mjs" \
    "$wasm/golden-wasi.wasm" "$wasm/golden/$name.gguf" "$golden/requests.json" "$fixture" \
    > "$wasm/golden/$name.wasm.jsonl"
  t1=$(date +%s.%N)
  "$native/golden-wasi-native" "$wasm/golden/$name.gguf" "$golden/requests.json" "$fixture" \
    > "$wasm/golden/$name.native.jsonl" 2>/dev/null
  t2=$(date +%s.%N)
  awk -v n="$name" -v a="$t0" -v b="$t1" -v c="$t2" \
    'BEGIN { printf "%s: %d requests in %.2f s in wasm, %.2f s native\n", n, 80, b - a, c - b }' >&2
  check "$name: wasm against native" python3 "$root/tests/wasm/compare.py" \
    "$wasm/golden/$name.wasm.jsonl" "$wasm/golden/$name.native.jsonl" 1e-5 >&2
done
echo "wasm: $passed passed, $failed failed"
[ "$failed" = 0 ]
