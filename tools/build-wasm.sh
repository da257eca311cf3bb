#!/usr/bin/env bash
# build-wasm.sh [--simd] [BUILD_DIR] - libskycmd for WebAssembly (wasm32-wasi), single-
# threaded, the WASI driver program BUILD_DIR/skycmd-wasi.wasm (tests/wasm/skycmd_wasi.c) and
# the reactor module BUILD_DIR/skycmd.wasm of the npm package bindings/wasm.
#
#  - Toolchain: Debian bookworm's clang-14, lld-14 (wasm-ld), wasi-libc and
#    libclang-rt-14-dev-wasm32, installed with apt-get when missing (root only; otherwise
#    the script says what to install).
#  - cJSON and utf8proc: Debian's source packages (tools/debian-source.sh: apt checks them
#    against the signed Sources index), compiled for wasm32 into .deps/wasm32-wasi
#    (lib/libcjson.a, lib/libutf8proc.a, their headers and .pc files). Git-ignored, kept.
#  - The library: CMake with cmake/toolchains/wasm32-wasi.cmake, Release (-O3),
#    SKYCMD_THREADS=OFF, target skycmd_static only. --simd adds -msimd128 (SKYCMD_WASM_SIMD).
#  - The driver: linked with --strip-all; its size raw and gzipped is printed. The stack
#    (8 MiB, as a Linux main thread's) goes first in memory, so that running out of it
#    traps instead of silently overwriting the data after it (wasm-ld's default layout).
# Run it under Node: node --no-warnings tests/wasm/run-wasi.mjs BUILD_DIR/skycmd-wasi.wasm ...
# BUILD_DIR defaults to build-wasm (build-wasm-simd with --simd). Incremental.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
simd=OFF
if [ "${1:-}" = --simd ]; then simd=ON; shift; fi
build=$(realpath -m "${1:-$root/build-wasm$([ $simd = ON ] && echo -simd)}")
prefix=$root/.deps/wasm32-wasi
log() { echo "build-wasm.sh: $*" >&2; }

# ---- toolchain ------------------------------------------------------------------------
need=()
command -v clang-14 >/dev/null || need+=(clang-14)
command -v llvm-ar-14 >/dev/null || need+=(llvm-14)
[ -x /usr/lib/llvm-14/bin/wasm-ld ] || need+=(lld-14)
[ -f /usr/lib/wasm32-wasi/libc.a ] || need+=(wasi-libc)
[ -f /usr/lib/llvm-14/lib/clang/14.0.6/lib/wasi/libclang_rt.builtins-wasm32.a ] ||
  need+=(libclang-rt-14-dev-wasm32)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    log "missing Debian packages: ${need[*]} (apt-get install them as root)"
    exit 1
  fi
  log "apt-get install ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
sysroot=$prefix/sysroot
if [ ! -e "$sysroot/lib/wasm32-wasi" ]; then
  # Debian's clang also searches /usr/include (glibc's headers): a sysroot of wasi-libc alone
  mkdir -p "$sysroot/include" "$sysroot/lib"
  ln -sfn /usr/include/wasm32-wasi "$sysroot/include/wasm32-wasi"
  ln -sfn /usr/lib/wasm32-wasi "$sysroot/lib/wasm32-wasi"
fi
cc=(clang-14 --target=wasm32-wasi --sysroot="$sysroot")

# ---- cJSON and utf8proc from Debian's sources -------------------------------------------
src=$root/.deps/wasm-src
"$root/tools/debian-source.sh" "$src" cjson/bookworm utf8proc/bookworm
cjson=$(ls -d "$src"/cjson-*/ | head -1)
utf8proc=$(ls -d "$src"/utf8proc-*/ | head -1)
cjson_v=$(basename "$cjson" | sed 's/^cjson-//')
utf8proc_v=$(basename "$utf8proc" | sed 's/^utf8proc-//')
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include/cjson" "$prefix/obj"
stamp=$prefix/.deps-$cjson_v-$utf8proc_v
if [ ! -f "$stamp" ]; then
  log "compiling cJSON $cjson_v and utf8proc $utf8proc_v for wasm32-wasi"
  "${cc[@]}" -std=c99 -O2 -c "$cjson/cJSON.c" -o "$prefix/obj/cJSON.o"
  "${cc[@]}" -std=c99 -O2 -DUTF8PROC_STATIC -c "$utf8proc/utf8proc.c" -o "$prefix/obj/utf8proc.o"
  rm -f "$prefix/lib/libcjson.a" "$prefix/lib/libutf8proc.a"
  llvm-ar-14 rcs "$prefix/lib/libcjson.a" "$prefix/obj/cJSON.o"
  llvm-ar-14 rcs "$prefix/lib/libutf8proc.a" "$prefix/obj/utf8proc.o"
  cp "$cjson/cJSON.h" "$prefix/include/cjson/cJSON.h"
  cp "$utf8proc/utf8proc.h" "$prefix/include/utf8proc.h"
  cat > "$prefix/lib/pkgconfig/libcjson.pc" <<EOF
prefix=$prefix
Name: libcjson
Description: cJSON $cjson_v (Debian source package), wasm32-wasi
Version: $cjson_v
Libs: -L\${prefix}/lib -lcjson
Cflags: -I\${prefix}/include -I\${prefix}/include/cjson
EOF
  cat > "$prefix/lib/pkgconfig/libutf8proc.pc" <<EOF
prefix=$prefix
Name: libutf8proc
Description: utf8proc $utf8proc_v (Debian source package), wasm32-wasi
Version: $utf8proc_v
Libs: -L\${prefix}/lib -lutf8proc
Cflags: -I\${prefix}/include -DUTF8PROC_STATIC
EOF
  touch "$stamp"
fi

# ---- the library and the driver -------------------------------------------------------
# (-Wno-dev: CMake's note that the platform has no shared libraries, so that the unused
# SHARED target is made STATIC: only skycmd_static is built here)
if [ ! -f "$build/CMakeCache.txt" ]; then
  log "configuring $build (SIMD128 $simd)"
  cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/wasm32-wasi.cmake" \
        -DCMAKE_BUILD_TYPE=Release -DSKYCMD_THREADS=OFF -DBUILD_TESTING=OFF -DSKYCMD_SERVE=OFF \
        -DSKYCMD_WERROR=ON -DSKYCMD_WASM_SIMD=$simd -DSKYCMD_WASM_PREFIX="$prefix" -Wno-dev >/dev/null
fi
cmake --build "$build" --target skycmd_static -j "${SKYCMD_JOBS:-2}"
simd_flag=()
[ $simd = ON ] && simd_flag=(-msimd128)
out=$build/skycmd-wasi.wasm
"${cc[@]}" "${simd_flag[@]}" -std=c11 -O2 -Wall -Wextra -Werror -I"$root/include" -I"$prefix/include" \
  "$root/tests/wasm/skycmd_wasi.c" "$build/libskycmd.a" "$prefix/lib/libcjson.a" \
  "$prefix/lib/libutf8proc.a" -lm -Wl,--strip-all,--stack-first,-z,stack-size=8388608 -o "$out"
raw=$(stat -c %s "$out")
gz=$(gzip -9 -c "$out" | wc -c)
log "$out: $raw bytes, $gz gzipped (gzip -9)"

# ---- the reactor module for the npm package (bindings/wasm) -----------------------------
# BUILD_DIR/skycmd.wasm: a WASI *reactor* (no main; the host calls _initialize once, then
# the exports), what bindings/wasm/skycmd.js instantiates with its own small WASI shim in
# browsers and Node alike. Exports: malloc/free and the skycmd_* functions that package
# calls (keep this list and skycmd.js in step). Memory grows on demand (wasi-libc's malloc
# calls memory.grow); the stack goes first, as for the driver.
reactor_exports=(
  malloc free
  skycmd_version_string skycmd_kernels skycmd_build_id skycmd_status_name skycmd_strerror
  skycmd_string_free
  skycmd_error_new skycmd_error_free skycmd_error_status skycmd_error_message
  skycmd_options_new skycmd_options_free skycmd_options_set_string
  skycmd_model_open_buffer skycmd_model_free skycmd_model_name skycmd_model_get_int
  skycmd_model_tokenizer skycmd_tokenizer_encode skycmd_tokenizer_vocab_size
  skycmd_session_new skycmd_session_free skycmd_session_errmsg
  skycmd_request_parse skycmd_request_free skycmd_request_errmsg
  skycmd_decide_json skycmd_decide_batch skycmd_decide_each
  skycmd_response_json skycmd_response_free
)
export_flags=()
for name in "${reactor_exports[@]}"; do export_flags+=("-Wl,--export=$name"); done
reactor=$build/skycmd.wasm
if [ ! "$reactor" -nt "$build/libskycmd.a" ] || [ ! "$reactor" -nt "$0" ]; then
  "${cc[@]}" "${simd_flag[@]}" -mexec-model=reactor -O2 "$build/libskycmd.a" \
    "$prefix/lib/libcjson.a" "$prefix/lib/libutf8proc.a" -lm "${export_flags[@]}" \
    -Wl,--strip-all,--stack-first,-z,stack-size=8388608 -o "$reactor.tmp"
  mv "$reactor.tmp" "$reactor"
fi
raw=$(stat -c %s "$reactor")
gz=$(gzip -9 -c "$reactor" | wc -c)
log "$reactor: $raw bytes, $gz gzipped (gzip -9)"
