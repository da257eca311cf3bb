#!/usr/bin/env bash
# bench.sh [REPEAT] - one s1-pico question (examples/flappy-drone.json on the built-in
# models/s1-pico-flappy.gguf), wasm under Node against native, one compute thread each, in
# the same run: the same program (tests/wasm/skycmd_wasi.c) built for both, answering the
# request once and then REPEAT times (default 2000) more. A benchmark, not a test: prints
# the two times and their ratio. Builds as tests/wasm/run.sh (SKYCMD_NATIVE_BUILD,
# SKYCMD_WASM_BUILD, SKYCMD_WASM_SIMD; both builds must exist: run run.sh first).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
native=${SKYCMD_NATIVE_BUILD:-$root/build}
simd=-simd
[ "${SKYCMD_WASM_SIMD:-1}" = 1 ] || simd=
wasm=${SKYCMD_WASM_BUILD:-$root/build-wasm$simd}
repeat=${1:-2000}
model=$root/models/s1-pico-flappy.gguf
req=$root/examples/flappy-drone.json
"$root/tools/build-wasm.sh" ${simd:+--simd} "$wasm" >/dev/null 2>&1
# shellcheck disable=SC2046
cc -std=c11 -O2 -I"$root/include" "$root/tests/wasm/skycmd_wasi.c" "$native/libskycmd.a" \
  $(pkg-config --cflags --libs libcjson libutf8proc) -lpthread -lm -o "$native/skycmd-wasi-native"
w=$(node --no-warnings "$root/tests/wasm/run-wasi.mjs" "$wasm/skycmd-wasi.wasm" decide "$model" "$req" "$repeat" 2>&1 >/dev/null)
n=$("$native/skycmd-wasi-native" decide "$model" "$req" "$repeat" 2>&1 >/dev/null)
echo "wasm   (node $(node --version)): $w"
echo "native (one thread):         $n"
awk -v w="$w" -v n="$n" 'BEGIN { split(w, a, " "); split(n, b, " ");
  printf "wasm / native: %.2fx\n", a[3] / b[3] }'
