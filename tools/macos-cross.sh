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
#  - Then, per target that linked, the bindings' macOS build paths (each skipped, and
#    counted so, when its toolchain is not on the machine; run nothing either):
#      java: bindings/java/build-native.sh with SKYCMD_JNI_TARGET=darwin-<arch> and zig cc
#            (jni_md.h from $JAVA_HOME/include/linux: the same typedefs as darwin's for
#            these 64-bit targets) links native/darwin-<arch>/libskycmd_jni.dylib: a Mach-O
#            dylib needing only libSystem. zig ignores -exported_symbols_list, so the
#            wrapper is linked once more with LLVM's ld64.lld (Apple ld's options) and
#            jni.exports: exactly the Java_* functions exported.
#      go:   `go build ./...` and `go test -c` of bindings/go/skycmd (cgo, GOOS=darwin, zig
#            cc): a Mach-O test executable loading @rpath/libskycmd.<abi>.dylib. Go's
#            runtime links -lresolv and -framework CoreFoundation, absent from zig's
#            libSystem stubs: empty stand-ins (.tbd files, no symbols) let the link finish,
#            and no symbol was taken from them (the link would fail on any undefined one).
#      rust: `cargo test --no-run --features bundled --target <arch>-apple-darwin` (the
#            rustup target is added when missing; zig cc as compiler and linker): Mach-O
#            test executables, and skycmd-sys's libskycmd.a with only skycmd_* global.
#      node: binding.gyp through node-gyp's gyp with the mac flavor (make-mac; a stand-in
#            for the xcodebuild version probe): its flags keep C++ exceptions, C++17, the
#            rpath and -lskycmd; the wrapper compiled with them by zig c++ and linked
#            (-shared: zig's linker crashes on node-gyp's -bundle) into a Mach-O file.
#  - Prints one line per target and per binding and
#    `macos-cross: N passed, M failed; bindings: P passed, F failed, S skipped`; exits
#    non-zero when any failed.
# Usage: tools/macos-cross.sh [aarch64] [x86_64]   (default: both)
# Environment: SKYCMD_JOBS (default 2), SKYCMD_MACOS_BUILD, SKYCMD_MACOS_BINDINGS=0 (skip
# the bindings).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# Go where tools/setup.sh --all puts it (tools/toolchains.sh's places: Debian's golang-1.22
# is not on PATH), after everything else: toolchains.sh's own PATH would also put the CI
# venv's python3 first, under which node-gyp's Debian gyp cannot find its own package
export PATH="$PATH:/usr/local/go/bin:/usr/lib/go-1.22/bin"
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

# ---- the bindings per target --------------------------------------------------------------
# Each bind_* ARCH BUILD prints its problems and returns 0 (passed), 1 (failed) or 2
# (skipped: its toolchain is missing; the reason on stdout).
bind_java() {
  local arch=$1 b=$2 cpu out=$2/bindings/java
  case $arch in aarch64) cpu=arm64 ;; x86_64) cpu=x86_64 ;; esac
  command -v javac >/dev/null || { echo "  no javac"; return 2; }
  local jh=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
  [ -f "$jh/include/jni.h" ] || { echo "  no $jh/include/jni.h"; return 2; }
  rm -rf "$out" && mkdir -p "$out"
  JAVA_HOME=$jh SKYCMD_JNI_TARGET=darwin-$arch CC="$cc -target $arch-macos" \
    SKYCMD_JNI_MD_DIR="$jh/include/linux" SKYCMD_STATIC_LIB="$b/libskycmd.a" \
    SKYCMD_STATIC_DEPS_DIR="$root/.deps/macos-$arch" PKG_CONFIG_PATH="$b/pkgconfig" \
    PKG_CONFIG_LIBDIR="$root/.deps/macos-$arch/lib/pkgconfig" \
    bash "$root/bindings/java/build-native.sh" "$out" > "$out.log" 2>&1 || { tail -20 "$out.log"; return 1; }
  local lib=$out/classes/native/darwin-$arch/libskycmd_jni.dylib bad=0
  file "$lib" | grep -q "Mach-O 64-bit $cpu dynamically linked shared library" ||
    { echo "  $(file "$lib")"; bad=1; }
  local lld; lld=$(command -v ld64.lld || ls /usr/bin/ld64.lld-* 2>/dev/null | head -n 1 || true)
  if [ -z "$lld" ]; then
    echo "  (no ld64.lld: the export list not checked)"
  else
    # zig's libSystem stub as LLVM 14's TAPI reader takes it (no arm64e.x1, arm64 named
    # arm64); Apple's ld would take the SDK's.
    python3 - "$(dirname "$SKYCMD_ZIG")/lib/libc/darwin/libSystem.tbd" "$out/libSystem.tbd" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s = re.sub(r',\s*arm64e\.x1-(macos|maccatalyst)', '', s)
s = re.sub(r'arm64e\.x1-(macos|maccatalyst),\s*', '', s)
open(sys.argv[2], 'w').write(s.replace('arm64e-', 'arm64-'))
PY
    local ldarch=$cpu
    "$cc" -target "$arch-macos" -c -fPIC -O2 -fno-strict-aliasing -I"$jh/include" -I"$jh/include/linux" \
      -I"$root/include" "$root/bindings/java/src/generated/jni/skycmd_wrap.c" -o "$out/wrap.o" &&
    "$lld" -arch "$ldarch" -platform_version macos 15.0 15.0 -dylib -o "$out/lld.dylib" "$out/wrap.o" \
      "$b/libskycmd.a" "$root/.deps/macos-$arch/lib/libcjson.a" "$root/.deps/macos-$arch/lib/libutf8proc.a" \
      -L"$out" -lSystem -exported_symbols_list "$root/bindings/java/jni.exports" \
      -install_name @rpath/libskycmd_jni.dylib -dead_strip > "$out/lld.log" 2>&1 ||
      { grep -v 'newer than target minimum' "$out/lld.log" | head -10; return 1; }
    local exports others
    exports=$("$nm_tool" -gU --defined-only "$out/lld.dylib" | awk '{print $NF}')
    others=$(echo "$exports" | grep -v '^_Java_org_skycmd_' || true)
    [ -z "$others" ] && [ "$(echo "$exports" | wc -l)" -gt 100 ] ||
      { echo "  ld64.lld with jni.exports exports: $(echo $others | cut -c1-200) ($(echo "$exports" | wc -l) in all)"; bad=1; }
  fi
  return $bad
}

bind_go() {
  local arch=$1 b=$2 goarch cpu out=$2/bindings/go
  case $arch in aarch64) goarch=arm64 cpu=arm64 ;; x86_64) goarch=amd64 cpu=x86_64 ;; esac
  command -v go >/dev/null || { echo "  no go"; return 2; }
  rm -rf "$out" && mkdir -p "$out/stubs/CoreFoundation.framework"
  local t
  for t in "$out/stubs/libresolv.tbd:/usr/lib/libresolv.9.dylib" \
           "$out/stubs/CoreFoundation.framework/CoreFoundation.tbd:/System/Library/Frameworks/CoreFoundation.framework/Versions/A/CoreFoundation"; do
    printf -- "--- !tapi-tbd\ntbd-version:     4\ntargets:         [ x86_64-macos, arm64-macos, arm64e-macos ]\ninstall-name:    '%s'\n...\n" "${t#*:}" > "${t%%:*}"
  done
  local test=$out/skycmd.test
  (cd "$root/bindings/go" &&
   export CGO_ENABLED=1 GOOS=darwin GOARCH=$goarch CC="$cc -target $arch-macos" \
     PKG_CONFIG_PATH="$b/pkgconfig" PKG_CONFIG_LIBDIR="$root/.deps/macos-$arch/lib/pkgconfig" \
     GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off &&
   go build ./... &&
   CGO_LDFLAGS="-L$out/stubs -F$out/stubs" go test -c -ldflags=-w -o "$test" ./skycmd) > "$out.log" 2>&1 ||
    { tail -20 "$out.log"; return 1; }
  file "$test" | grep -q "Mach-O 64-bit $cpu executable" || { echo "  $(file "$test")"; return 1; }
  # (grep -c reads all: a grep -q leaving early would fail the pipeline under pipefail)
  [ "$("$nm_tool" -u "$test" | grep -c '^_skycmd_version_string$')" = 1 ] &&
    [ "$(llvm-objdump --macho --dylibs-used "$test" | grep -c "@rpath/libskycmd.$abi.dylib")" = 1 ] ||
    { echo "  the test executable does not load libskycmd.$abi.dylib"; return 1; }
}

bind_rust() {
  local arch=$1 b=$2 cpu triple=$1-apple-darwin out=$2/bindings/rust
  case $arch in aarch64) cpu=arm64 ;; x86_64) cpu=x86_64 ;; esac
  command -v cargo >/dev/null || { echo "  no cargo"; return 2; }
  if ! rustc --print target-libdir --target "$triple" 2>/dev/null | xargs -I{} test -d {}; then
    command -v rustup >/dev/null || { echo "  no std for $triple and no rustup"; return 2; }
    rustup target add "$triple" > /dev/null 2>&1 || { echo "  rustup target add $triple failed"; return 2; }
  fi
  mkdir -p "$out"
  # zig cc as one executable for cc-rs and as cargo's linker; both add a clang-style
  # --target=..., which zig does not take (it has -target <arch>-macos).
  cat > "$out/zcc" <<ZCC
#!/bin/sh
for a in "\$@"; do shift; case \$a in --target=*) ;; *) set -- "\$@" "\$a" ;; esac; done
exec "$cc" -target $arch-macos "\$@"
ZCC
  chmod +x "$out/zcc"
  local tu=${triple//-/_} TU; TU=$(echo "$tu" | tr a-z A-Z)
  (cd "$root/bindings/rust" &&
   env CARGO_TARGET_DIR="$out/target" "CC_$tu=$out/zcc" "AR_$tu=$root/tools/zig/ar" \
     "CARGO_TARGET_${TU}_LINKER=$out/zcc" PKG_CONFIG_ALLOW_CROSS=1 \
     PKG_CONFIG_LIBDIR="$root/.deps/macos-$arch/lib/pkgconfig" PKG_CONFIG_PATH= \
     cargo test --no-run -j "$jobs" -p skycmd --features bundled --target "$triple") > "$out.log" 2>&1 ||
    { grep -v 'rerun-if' "$out.log" | tail -20; return 1; }
  local exe archive bad=0
  exe=$(sed -n 's/.*Executable tests\/api.rs (\(.*\))$/\1/p' "$out.log" | tail -n 1)
  file "$exe" | grep -q "Mach-O 64-bit $cpu executable" || { echo "  $(file "$exe" 2>&1)"; bad=1; }
  archive=$(ls -t "$out/target/$triple"/debug/build/skycmd-sys-*/out/libskycmd.a | head -n 1)
  local globals
  globals=$("$nm_tool" -gU --defined-only "$archive" 2>/dev/null | awk 'NF >= 3 {print $NF}')
  if [ -z "$globals" ] || echo "$globals" | grep -v '^_skycmd_' | grep -q . ||
     grep -q 'could not localize' "$out.log"; then
    echo "  skycmd-sys's libskycmd.a: globals other than skycmd_*: $(echo "$globals" | grep -v '^_skycmd_' | head -5 | tr '\n' ' ')"; bad=1
  fi
  return $bad
}

bind_node() {
  local arch=$1 b=$2 cpu out=$2/bindings/node
  case $arch in aarch64) cpu=arm64 ;; x86_64) cpu=x86_64 ;; esac
  command -v node >/dev/null || { echo "  no node"; return 2; }
  local gyp="" d
  for d in "$(npm root -g 2>/dev/null)/npm/node_modules/node-gyp" /usr/share/nodejs/node-gyp; do
    [ -f "$d/gyp/gyp_main.py" ] && { gyp=$d; break; }
  done
  local nodedir; nodedir=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
  [ -n "$gyp" ] || { echo "  no node-gyp"; return 2; }
  [ -f "$nodedir/include/node/common.gypi" ] || { echo "  no Node headers in $nodedir/include/node"; return 2; }
  [ -d "$root/bindings/node/node_modules/node-addon-api" ] || { echo "  no node-addon-api (npm install in bindings/node)"; return 2; }
  rm -rf "$out" && mkdir -p "$out/bin"
  cp -r "$root/bindings/node/binding.gyp" "$root/bindings/node/src" "$out/"
  ln -s "$root/bindings/node/node_modules" "$out/node_modules"
  # gyp's mac flavor asks xcodebuild for the Xcode version and xcrun for the SDK
  printf '#!/bin/sh\nprintf "Xcode 15.0\\nBuild version 15A240d\\n"\n' > "$out/bin/xcodebuild"
  printf '#!/bin/sh\necho %s\n' "$out/no-sdk" > "$out/bin/xcrun"
  chmod +x "$out/bin/xcodebuild" "$out/bin/xcrun"
  # config.gypi as node-gyp writes it: the running node's process.config (read-only: a copy)
  # with node-gyp's own variables, booleans as strings
  node -e 'const c = JSON.parse(JSON.stringify(process.config));
           Object.assign(c.variables, {nodedir: process.argv[1], standalone_static_library: 1});
           console.log(JSON.stringify(c, (k, v) => typeof v === "boolean" ? String(v) : v, 1))' \
    "$nodedir" > "$out/config.gypi"
  (cd "$out" && PATH="$out/bin:$PATH" GYP_CROSSCOMPILE=1 PKG_CONFIG_PATH="$b/pkgconfig" \
     PKG_CONFIG_LIBDIR="$root/.deps/macos-$arch/lib/pkgconfig" \
     python3 "$gyp/gyp/gyp_main.py" binding.gyp -f make-mac -I "$out/config.gypi" -I "$gyp/addon.gypi" \
       -I "$nodedir/include/node/common.gypi" -Dlibrary=shared_library -Dvisibility=default \
       -Dnode_root_dir="$nodedir" -Dnode_gyp_dir="$gyp" '-Dnode_lib_file=$(Configuration)/node.lib' \
       -Dmodule_root_dir="$out" -Dnode_engine=v8 --depth=. --no-parallel --generator-output build \
       -Goutput_dir=.) > "$out.log" 2>&1 || {
    # Debian bookworm's gyp (package gyp 0.1+20220404, under node-gyp 9) cannot take the
    # stand-in: its GetStdoutQuiet strips xcodebuild's bytes with a str (a TypeError), and
    # it then looks for a real Mac's command line tools. npm's node-gyp (gyp-next) can.
    if grep -q "No Xcode or CLT version detected" "$out.log"; then
      echo "  this gyp ($gyp) cannot run its mac flavor without Xcode"; return 2
    fi
    tail -20 "$out.log"; return 1; }
  local mk=$out/build/skycmd.target.mk flags bad=0
  # mkvar NAME: the words of gyp's `NAME := \` block in the makefile
  mkvar() { awk -v n="$1" '$1 == n && $2 == ":=" {on = 1; next}
                          on {l = $0; c = sub(/\\$/, "", l); gsub(/^[ \t]+|[ \t]+$/, "", l);
                              if (l != "") print l; if (!c) on = 0}' "$mk" | tr '\n' ' '; }
  flags="$(mkvar CFLAGS_Release) $(mkvar CFLAGS_CC_Release) $(mkvar LDFLAGS_Release) $(mkvar LIBS)"
  for f in -std=c++17 -I"$root/include" "-Wl,-rpath,$b" -lskycmd "-undefined dynamic_lookup"; do
    case " $flags " in *" $f "*) ;; *) echo "  the mac flags lack $f"; bad=1 ;; esac
  done
  case " $flags " in *" -fno-exceptions "*) echo "  the mac flags turn C++ exceptions off"; bad=1 ;; esac
  [ $bad = 0 ] || return 1
  # compile and link with those flags (the compiler's from gyp; zig for the target)
  local cflags incs defs
  defs=$(mkvar DEFS_Release | tr -d "'")
  cflags="$(mkvar CFLAGS_Release) $(mkvar CFLAGS_CC_Release)"
  incs=$(mkvar INCS_Release | sed "s:\$(srcdir):$out:g")
  "$SKYCMD_ZIG" c++ -target "$arch-macos" $defs $incs $cflags -c "$out/src/skycmd_wrap.cxx" -o "$out/skycmd_wrap.o" \
    > "$out/compile.log" 2>&1 || { tail -20 "$out/compile.log"; return 1; }
  "$SKYCMD_ZIG" c++ -target "$arch-macos" -shared -undefined dynamic_lookup "-Wl,-rpath,$b" -o "$out/skycmd.node" \
    "$out/skycmd_wrap.o" -L"$b" -lskycmd > "$out/link.log" 2>&1 || { tail -20 "$out/link.log"; return 1; }
  file "$out/skycmd.node" | grep -q "Mach-O 64-bit $cpu" || { echo "  $(file "$out/skycmd.node")"; return 1; }
  [ "$(llvm-objdump --macho --dylibs-used "$out/skycmd.node" | grep -c "@rpath/libskycmd.$abi.dylib")" = 1 ] ||
    { echo "  the addon does not load libskycmd.$abi.dylib"; return 1; }
}

bpassed=0 bfailed=0 bskipped=0
bindings() {  # bindings ARCH BUILD
  local arch=$1 b=$2 name rc t0 msg
  for name in java go rust node; do
    t0=$(date +%s)
    set +e; msg=$("bind_$name" "$arch" "$b" 2>&1); rc=$?; set -e
    case $rc in
      0) bpassed=$((bpassed + 1)); log "$arch-macos $name: ok ($(( $(date +%s) - t0 )) s)" ;;
      2) bskipped=$((bskipped + 1)); log "$arch-macos $name: skipped:$(echo "$msg" | tr '\n' ' ')" ;;
      *) bfailed=$((bfailed + 1)); log "$arch-macos $name: FAILED"; echo "$msg" ;;
    esac
  done
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
    [ "${SKYCMD_MACOS_BINDINGS:-1}" = 0 ] || bindings "$arch" "$b"
  else
    failed=$((failed + 1)); log "$arch-macos: FAILED (log: $b/macos-cross.log)"
  fi
done
log "$(( $(date +%s) - t_start )) s"
echo "macos-cross: $passed passed, $failed failed; bindings: $bpassed passed, $bfailed failed, $bskipped skipped"
[ "$failed" = 0 ] && [ "$bfailed" = 0 ]
