#!/usr/bin/env bash
# macos-cross.sh - cross-compile and link libskycmd (the .dylib and the static library) and
# the `skycmd` program with its HTTP server for macOS, arm64 and x86-64, on a Linux host with
# `zig cc`; no Mac and no Apple SDK involved (zig carries the macOS libc headers and
# libSystem stubs). Proves that the tree compiles warning-free for macOS (-DSKYCMD_WERROR=ON)
# and links; it runs nothing it built (that needs a Mac).
#
# Contract:
#  - Runs on a fresh Debian bookworm machine as root: the Debian packages it needs are
#    installed with apt-get when missing; zig (PyPI's ziglang==0.17.0) goes into a private
#    venv, .deps/zig-venv. Idempotent: what an earlier run built is kept (a stamp per
#    dependency and architecture), skycmd's own build is incremental.
#  - Dependencies, static, built with zig for each target from Debian's source packages
#    (apt checks them against the signed Sources index; Debian's patches applied by
#    dpkg-source), never committed: cJSON, utf8proc, zlib and zstd from bookworm,
#    libmicrohttpd 1.0.1 from trixie (as tools/build-mhd.sh). Sources in .deps/macos-src,
#    each target's prefix in .deps/macos-<arch> (.deps/ is git-ignored).
#  - skycmd is configured with cmake/toolchains/zig-<arch>-macos.cmake, -DBUILD_TESTING=OFF
#    -DSKYCMD_WERROR=ON, in build-macos-<arch>/ (SKYCMD_MACOS_BUILD=DIR puts them under DIR).
#  - Checks per target: the .dylib, the static library's objects and the program are Mach-O
#    for the target's CPU (`file`), the .dylib's install name is @rpath/libskycmd.<abi>.dylib
#    and it exports skycmd_* functions only, every one abi/symbols registers among them; the
#    program was linked with the server (libmicrohttpd's symbols in it).
#  - Prints one line per target and `macos-cross: N passed, M failed`; exits non-zero when
#    any failed.
# Usage: tools/macos-cross.sh [aarch64] [x86_64]   (default: both)
# Environment: SKYCMD_JOBS (default 2), SKYCMD_MACOS_BUILD.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${SKYCMD_JOBS:-2}
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(aarch64 x86_64)
build_root=${SKYCMD_MACOS_BUILD:-$root}
zig_version=0.17.0
t_start=$(date +%s)
log() { echo "macos-cross: $*"; }

# ---- host packages ---------------------------------------------------------------------
need=()
for p in cmake ninja-build pkg-config make python3 python3-venv file dpkg-dev xz-utils bzip2 \
         debian-archive-keyring ca-certificates llvm; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  log "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
nm_tool=$(command -v llvm-nm || ls /usr/bin/llvm-nm-* 2>/dev/null | head -n 1)
otool=$(command -v llvm-otool || ls /usr/bin/llvm-otool-* 2>/dev/null | head -n 1 || true)

# ---- zig ---------------------------------------------------------------------------------
venv=$root/.deps/zig-venv
if ! "$venv/bin/python" -m ziglang version 2>/dev/null | grep -qx "$zig_version"; then
  log "installing ziglang==$zig_version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "ziglang==$zig_version"
fi
export SKYCMD_ZIG=$(ls "$venv"/lib/python3*/site-packages/ziglang/zig | head -n 1)
cc=$root/tools/zig/cc
log "zig $("$SKYCMD_ZIG" version)"

# ---- sources (Debian source packages, fetched once) -------------------------------------
srcdir=$root/.deps/macos-src
pkgs=(cjson/bookworm utf8proc/bookworm zlib/bookworm libzstd/bookworm libmicrohttpd=1.0.1-4)
bash "$root/tools/debian-source.sh" "$srcdir" "${pkgs[@]}"
srcof() { ls -d "$srcdir/$1"-[0-9]*/ | head -n 1 | sed 's:/$::'; }
verof() { basename "$(srcof "$1")" | sed "s/^$1-//"; }

# ---- dependencies per target --------------------------------------------------------------
# cmake_dep ARCH NAME SRC_SUBDIR CMAKE_ARGS...: a CMake project built static with the target's
# toolchain file and installed into the target's prefix.
cmake_dep() {
  local arch=$1 name=$2 sub=$3; shift 3
  local prefix=$root/.deps/macos-$arch stamp=$root/.deps/macos-$arch/.stamp-$name-$(verof "$name")
  [ -f "$stamp" ] && return 0
  local b=$root/.deps/macos-build/$arch/$name
  log "$arch: building $name $(verof "$name")"
  rm -rf "$b"
  cmake -S "$(srcof "$name")/$sub" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/zig-$arch-macos.cmake" \
        -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
        -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_C_FLAGS=-fvisibility=hidden "$@" > "$b.log" 2>&1 &&
    cmake --build "$b" -j "$jobs" >> "$b.log" 2>&1 &&
    cmake --install "$b" >> "$b.log" 2>&1 || { tail -30 "$b.log"; return 1; }
  touch "$stamp"
}

build_deps() {
  local arch=$1 prefix=$root/.deps/macos-$1 b
  mkdir -p "$prefix" "$root/.deps/macos-build/$arch"
  # Static and with hidden symbols (-fvisibility=hidden above, CJSON_HIDE_SYMBOLS): linked
  # into libskycmd.dylib, they must not be exported from it.
  cmake_dep "$arch" cjson . -DBUILD_SHARED_LIBS=OFF -DENABLE_CJSON_TEST=OFF -DENABLE_CJSON_UTILS=OFF \
    -DENABLE_TARGET_EXPORT=OFF -DENABLE_CUSTOM_COMPILER_FLAGS=OFF \
    -DENABLE_PUBLIC_SYMBOLS=OFF -DENABLE_HIDDEN_SYMBOLS=ON || return 1
  cmake_dep "$arch" utf8proc . -DBUILD_SHARED_LIBS=OFF -DUTF8PROC_ENABLE_TESTING=OFF || return 1
  cmake_dep "$arch" libzstd build/cmake -DZSTD_BUILD_SHARED=OFF -DZSTD_BUILD_STATIC=ON \
    -DZSTD_BUILD_PROGRAMS=OFF -DZSTD_BUILD_TESTS=OFF -DZSTD_MULTITHREAD_SUPPORT=OFF \
    -DZSTD_LEGACY_SUPPORT=OFF || return 1
  # zlib: its own configure, static only (its CMake build wants the win32/ files Debian's
  # tarball leaves out). -Dfdopen=fdopen: zlib 1.2.13's zutil.h defines fdopen away where
  # TARGET_OS_MAC is defined, which breaks against the macOS headers (fixed in zlib 1.3).
  local stamp=$prefix/.stamp-zlib-$(verof zlib)
  if [ ! -f "$stamp" ]; then
    log "$arch: building zlib $(verof zlib)"
    b=$root/.deps/macos-build/$arch/zlib
    rm -rf "$b" && mkdir -p "$b"
    (cd "$b" &&
     CHOST=$arch-apple-darwin CC="$cc -target $arch-macos" CFLAGS="-O2 -fPIC -Dfdopen=fdopen" \
       "$(srcof zlib)/configure" --static --prefix="$prefix" --libdir="$prefix/lib" > "$b.log" 2>&1 &&
     make -j"$jobs" libz.a AR="$root/tools/zig/ar" ARFLAGS=rc RANLIB="$root/tools/zig/ranlib" >> "$b.log" 2>&1 &&
     make install AR="$root/tools/zig/ar" ARFLAGS=rc RANLIB="$root/tools/zig/ranlib" >> "$b.log" 2>&1) || { tail -30 "$b.log"; return 1; }
    touch "$stamp"
  fi
  # libmicrohttpd: autotools, the same reduced configuration as tools/build-mhd.sh
  stamp=$prefix/.stamp-libmicrohttpd-$(verof libmicrohttpd)
  if [ ! -f "$stamp" ]; then
    log "$arch: building libmicrohttpd $(verof libmicrohttpd)"
    b=$root/.deps/macos-build/$arch/libmicrohttpd
    rm -rf "$b" && mkdir -p "$b"
    (cd "$b" &&
     "$(srcof libmicrohttpd)/configure" -q --host="$arch-apple-darwin" --prefix="$prefix" \
       CC="$cc -target $arch-macos" AR="$root/tools/zig/ar" RANLIB="$root/tools/zig/ranlib" \
       --enable-static --disable-shared --with-pic \
       --disable-https --disable-curl --disable-doc --disable-examples --disable-tools \
       --disable-dauth --disable-bauth --disable-postprocessor --disable-httpupgrade \
       > "$b.log" 2>&1 &&
     make -s -j"$jobs" -C src/microhttpd >> "$b.log" 2>&1 &&
     make -s -C src/microhttpd install >> "$b.log" 2>&1 &&
     make -s -C src/include install >> "$b.log" 2>&1 &&
     make -s install-pkgconfigDATA >> "$b.log" 2>&1) || { tail -30 "$b.log"; return 1; }
    install -m 644 "$(srcof libmicrohttpd)/COPYING" "$prefix/COPYING.libmicrohttpd"
    touch "$stamp"
  fi
}

# ---- skycmd per target ----------------------------------------------------------------------
abi=$(sed -n 's/^#define SKYCMD_ABI_VERSION \([0-9]*\).*/\1/p' include/skycmd.h)
check() {  # check ARCH BUILD: prints the problems, returns non-zero when any
  local arch=$1 b=$2 bad=0 cpu
  case $arch in aarch64) cpu=arm64 ;; x86_64) cpu=x86_64 ;; esac
  local dylib=$b/libskycmd.$abi.dylib
  file -L "$dylib" | grep -q "Mach-O 64-bit $cpu dynamically linked shared library" ||
    { echo "  not a Mach-O $cpu dylib: $(file -L "$dylib" 2>&1)"; bad=1; }
  [ -L "$b/libskycmd.dylib" ] || { echo "  no libskycmd.dylib link"; bad=1; }
  file "$b/skycmd" | grep -q "Mach-O 64-bit $cpu executable" ||
    { echo "  not a Mach-O $cpu executable: $(file "$b/skycmd" 2>&1)"; bad=1; }
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && "$root/tools/zig/ar" x "$b/libskycmd.a")
  local objs; objs=$(ls "$tmp" | wc -l)
  if [ "$objs" -lt 10 ] || file "$tmp"/* | grep -v "Mach-O 64-bit $cpu object" | grep -q .; then
    echo "  libskycmd.a: not all Mach-O $cpu objects ($objs members)"; bad=1
  fi
  rm -rf "$tmp"
  # exports: skycmd_* only (abi/skycmd.map's pattern, as on Linux), every function
  # abi/symbols registers among them; Mach-O's leading underscore. zig's Mach-O linker (0.17)
  # ignores -exported_symbols_list (Apple's ld applies it): here the exports come out right
  # through hidden visibility (skycmd's own and the static dependencies'), and zig adds its
  # two linker-made symbols, ___dso_handle and __mh_dylib_header, not counted.
  local got missing extra
  got=$("$nm_tool" -gU --defined-only "$dylib" | awk '{print $NF}' |
        grep -vx '___dso_handle\|__mh_dylib_header' | LC_ALL=C sort)
  extra=$(echo "$got" | grep -v '^_skycmd_' || true)
  missing=$(awk '!/^#/ && NF >= 2 && ($5 == "" || $5 == "-") {print "_" $1}' abi/symbols |
            LC_ALL=C sort | LC_ALL=C comm -23 - <(echo "$got"))
  if [ -n "$extra$missing" ]; then
    echo "  exports: not skycmd_*: $(echo $extra | cut -c1-200); missing: $(echo $missing | cut -c1-200)"
    bad=1
  fi
  if [ -n "$otool" ]; then
    "$otool" -D "$dylib" | grep -qx "@rpath/libskycmd.$abi.dylib" ||
      { echo "  install name: $("$otool" -D "$dylib" | tail -n 1)"; bad=1; }
  fi
  # (grep -c reads all: a grep -q leaving early would fail the pipeline under pipefail)
  [ "$("$nm_tool" "$b/skycmd" | grep -c ' T _MHD_start_daemon$')" = 1 ] ||
    { echo "  skycmd without the server"; bad=1; }
  return $bad
}

passed=0 failed=0
for arch in "${archs[@]}"; do
  case $arch in aarch64|x86_64) ;; *) echo "macos-cross: unknown architecture $arch" >&2; exit 2 ;; esac
  t0=$(date +%s)
  b=$build_root/build-macos-$arch
  ok=1
  build_deps "$arch" || ok=0
  if [ $ok = 1 ]; then
    log "$arch: building skycmd in $b"
    mkdir -p "$b"
    blog=$b/macos-cross.log
    { cmake -S "$root" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/zig-$arch-macos.cmake" \
        -DBUILD_TESTING=OFF -DSKYCMD_WERROR=ON > "$blog" 2>&1 &&
      cmake --build "$b" -j "$jobs" >> "$blog" 2>&1; } || { tail -40 "$blog"; ok=0; }
    # any warning at all (with -Werror they are errors; the linker's are not)
    if [ $ok = 1 ] && grep -i 'warning' "$blog" | grep -v '^-- ' | grep -q .; then
      grep -i 'warning' "$blog" | head -10; ok=0
    fi
  fi
  [ $ok = 1 ] && { check "$arch" "$b" || ok=0; }
  if [ $ok = 1 ]; then
    passed=$((passed + 1)); log "$arch-macos: ok ($(( $(date +%s) - t0 )) s): $(file -b -L "$b/libskycmd.$abi.dylib" | cut -c1-60); skycmd: $(file -b "$b/skycmd" | cut -c1-40)"
  else
    failed=$((failed + 1)); log "$arch-macos: FAILED (log: $b/macos-cross.log)"
  fi
done
log "$(( $(date +%s) - t_start )) s"
echo "macos-cross: $passed passed, $failed failed"
[ "$failed" = 0 ]
