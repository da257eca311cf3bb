#!/usr/bin/env bash
# bench.sh [REPEAT] - one s1-pico question (examples/flappy-drone.json on the built-in
# models/s1-pico-flappy.gguf), wasm under Node against native, one compute thread each, in
# the same run: the same program (tests/wasm/skycmd_wasi.c) built for both, answering the
# request once and then REPEAT times (default 2000) more. A benchmark, not a test: prints
# the times and their ratios, nothing is asserted.
#
# Runs are interleaved: each of SKYCMD_BENCH_ROUNDS rounds (default 3) runs every program
# once per weights mode in turn, and the median over the rounds is reported, so that a
# change of load on a shared machine falls on all of them alike.
# Environment:
#   SKYCMD_BENCH_WEIGHTS  the driver's weights modes to time (default "f32 q8": f32, q8,
#                         q8-plain, q8-row; the q8 modes run the int8 GEMM)
#   SKYCMD_BENCH_BEFORE   a wasm32 libskycmd.a to time as well (e.g. a copy of
#                         BUILD/libskycmd.a from before a change, same --simd): the driver is
#                         linked with it into <wasm build>/skycmd-wasi-before.wasm
#   SKYCMD_NATIVE_BUILD, SKYCMD_WASM_BUILD, SKYCMD_WASM_SIMD: as tests/wasm/run.sh (both
#                         builds must exist: run run.sh first)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
native=${SKYCMD_NATIVE_BUILD:-$root/build}
simd=-simd
[ "${SKYCMD_WASM_SIMD:-1}" = 1 ] || simd=
wasm=${SKYCMD_WASM_BUILD:-$root/build-wasm$simd}
repeat=${1:-2000}
rounds=${SKYCMD_BENCH_ROUNDS:-3}
modes=${SKYCMD_BENCH_WEIGHTS:-f32 q8}
before=${SKYCMD_BENCH_BEFORE:-}
model=$root/models/s1-pico-flappy.gguf
req=$root/examples/flappy-drone.json
prefix=$root/.deps/wasm32-wasi
"$root/tools/build-wasm.sh" ${simd:+--simd} "$wasm" >/dev/null 2>&1
# shellcheck disable=SC2046
cc -std=c11 -O2 -I"$root/include" "$root/tests/wasm/skycmd_wasi.c" "$native/libskycmd.a" \
  $(pkg-config --cflags --libs libcjson libutf8proc) -lpthread -lm -o "$native/skycmd-wasi-native"
progs=(native wasm)
if [ -n "$before" ]; then
  clang-14 --target=wasm32-wasi --sysroot="$prefix/sysroot" ${simd:+-msimd128} -std=c11 -O2 \
    -I"$root/include" -I"$prefix/include" "$root/tests/wasm/skycmd_wasi.c" "$before" \
    "$prefix/lib/libcjson.a" "$prefix/lib/libutf8proc.a" -lm \
    -Wl,--strip-all,--stack-first,-z,stack-size=8388608 -o "$wasm/skycmd-wasi-before.wasm"
  progs+=(before)
fi

run() {  # run PROG MODE: "US KERNELS", the microseconds per answer and the kernels used
  local line
  case $1 in
    native) line=$("$native/skycmd-wasi-native" decide "$model" "$req" "$repeat" "$2" 2>&1 >/dev/null) ;;
    wasm) line=$(node --no-warnings "$root/tests/wasm/run-wasi.mjs" "$wasm/skycmd-wasi.wasm" \
                   decide "$model" "$req" "$repeat" "$2" 2>&1 >/dev/null) ;;
    before) line=$(node --no-warnings "$root/tests/wasm/run-wasi.mjs" "$wasm/skycmd-wasi-before.wasm" \
                     decide "$model" "$req" "$repeat" "$2" 2>&1 >/dev/null) ;;
  esac
  # "N answers, X us per answer (kernels f32=A int8=B)"
  echo "$line" | awk '/us per answer/ { k = $0; sub(/.*\(kernels /, "", k); sub(/\)$/, "", k);
                                        print $3, k; found = 1 }
                      END { if (!found) exit 1 }' || { echo "bench.sh: $1 $2: $line" >&2; exit 1; }
}

declare -A times kern
for ((r = 1; r <= rounds; r++)); do
  for m in $modes; do
    for p in "${progs[@]}"; do
      out=$(run "$p" "$m")  # (an assignment, so that set -e stops on a failed run)
      read -r us k <<< "$out"
      times[$p.$m]+="$us "
      kern[$p.$m]=$k
    done
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; node $(node --version);" \
     "$repeat answers per run, median of $rounds interleaved rounds"
for m in $modes; do
  n=$(echo "${times[native.$m]}" | median)
  w=$(echo "${times[wasm.$m]}" | median)
  printf '%-8s native %8.1f us (%s)\n' "$m" "$n" "${kern[native.$m]}"
  printf '%-8s wasm   %8.1f us (%s): wasm / native %.2fx\n' "$m" "$w" "${kern[wasm.$m]}" \
    "$(awk -v a="$w" -v b="$n" 'BEGIN { print a / b }')"
  if [ -n "$before" ]; then
    b=$(echo "${times[before.$m]}" | median)
    printf '%-8s before %8.1f us (%s): before / native %.2fx, wasm / before %.2f\n' "$m" "$b" \
      "${kern[before.$m]}" "$(awk -v a="$b" -v c="$n" 'BEGIN { print a / c }')" \
      "$(awk -v a="$w" -v c="$b" 'BEGIN { print a / c }')"
  fi
done
