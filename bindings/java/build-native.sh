#!/usr/bin/env bash
# build-native.sh TARGET_DIR - run by Maven in generate-sources: compiles the committed SWIG
# JNI wrapper (src/generated/jni/skycmd_wrap.c, made by generate.sh; no SWIG needed here)
# into ONE self-contained library, TARGET_DIR/classes/native/<os>-<arch>/<lib>, which the jar
# carries: linux-$(uname -m)/libskycmd_jni.so on Linux, darwin-<arch>/libskycmd_jni.dylib on
# macOS (arch aarch64 or x86_64: NativeLoader's names). libskycmd (libskycmd.a), cJSON and
# utf8proc are linked into it statically, so at run time it needs only the C library: no
# libskycmd.so, libcjson.so.1 or libutf8proc.so.2. Only the JNI entry points are exported
# (Linux: jni.map, --exclude-libs; macOS: jni.exports, -exported_symbols_list), and the
# library is stripped.
#
# libskycmd.a is found in the -L directories of `pkg-config --libs skycmd` (a build tree's
# PKG_CONFIG_PATH=BUILD/pkgconfig, or an installed prefix/libskycmd-dev), or given as
# SKYCMD_STATIC_LIB. The static cJSON and utf8proc come from tools/build-static-deps.sh
# (Debian bookworm's source packages, fetched with a private apt configuration: no root, no
# change to the system) into TARGET_DIR/static-deps, or from SKYCMD_STATIC_DEPS_DIR if set (a
# directory that script already filled, to reuse it). For macOS, which has no apt, set
# SKYCMD_STATIC_DEPS_DIR to a prefix holding lib/libcjson.a and lib/libutf8proc.a built for
# the target (used as it is; tools/macos-cross.sh's .deps/macos-<arch> is one), or
# SKYCMD_DEPS_SOURCE_DIR for the script.
#
# The target is the build machine's; SKYCMD_JNI_TARGET=darwin-aarch64 (darwin-x86_64,
# linux-<arch>) names another, with CC a cross compiler for it and SKYCMD_JNI_MD_DIR the
# directory of its jni_md.h (default $JAVA_HOME/include/<linux|darwin>). tools/macos-cross.sh
# links the macOS library so with `zig cc`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${1:-$here/target}
mkdir -p "$target"
target=$(cd "$target" && pwd -P)   # (macOS has no `realpath -m`)
platform=${SKYCMD_JNI_TARGET:-}
if [ -z "$platform" ]; then
    case $(uname -s) in
        Darwin) platform=darwin-$(uname -m | sed 's/^arm64$/aarch64/') ;;
        *) platform=linux-$(uname -m) ;;
    esac
fi
case $platform in
    linux-*) os=linux lib=libskycmd_jni.so ;;
    darwin-aarch64|darwin-x86_64) os=darwin lib=libskycmd_jni.dylib ;;
    *) echo "build-native.sh: unknown target $platform (linux-<arch>, darwin-aarch64, darwin-x86_64)"; exit 1 ;;
esac
native=$target/classes/native/$platform
work=$target/native
mkdir -p "$native" "$work"
if [ -z "${JAVA_HOME:-}" ]; then
    javac=$(command -v javac)
    javac=$(readlink -f "$javac" 2>/dev/null || echo "$javac")
    JAVA_HOME=$(dirname "$(dirname "$javac")")
fi
jni_md=${SKYCMD_JNI_MD_DIR:-$JAVA_HOME/include/$os}

# The committed wrapper must exist (a clone has it; generate.sh makes it).
wrap=$here/src/generated/jni/skycmd_wrap.c
[ -f "$wrap" ] || { echo "build-native.sh: no $wrap (run bindings/java/generate.sh)"; exit 1; }

static_lib=${SKYCMD_STATIC_LIB:-}
if [ -z "$static_lib" ]; then
    for d in $(pkg-config --libs-only-L skycmd | tr ' ' '\n' | sed -n 's/^-L//p'); do
        if [ -f "$d/libskycmd.a" ]; then static_lib=$d/libskycmd.a; break; fi
    done
fi
if [ -z "$static_lib" ] || [ ! -f "$static_lib" ]; then
    echo "build-native.sh: no libskycmd.a next to the library pkg-config names" \
         "($(pkg-config --libs skycmd 2>&1)); build the skycmd_static target or install the library"
    exit 1
fi

deps=${SKYCMD_STATIC_DEPS_DIR:-$target/static-deps}
if [ $os = darwin ] && [ -n "${SKYCMD_STATIC_DEPS_DIR:-}" ] &&
   [ -f "$deps/lib/libcjson.a" ] && [ -f "$deps/lib/libutf8proc.a" ]; then
    echo "build-native.sh: static cJSON and utf8proc from $deps (as they are)"
else
    bash "$root/tools/build-static-deps.sh" "$deps"
fi

common=(-shared -fPIC -O2 -fno-strict-aliasing -Wall -Werror -Wno-unused-function
        -I"$JAVA_HOME/include" -I"$jni_md" $(pkg-config --cflags skycmd)
        "$wrap" -o "$work/$lib"
        "$static_lib" "$deps/lib/libcjson.a" "$deps/lib/libutf8proc.a" -lpthread -lm)
if [ $os = linux ]; then
    ${CC:-cc} "${common[@]}" \
        -Wl,--exclude-libs,ALL -Wl,--version-script="$here/jni.map" -Wl,--no-undefined \
        -Wl,-z,relro,-z,now -Wl,--as-needed -s
    # Refuse a library that would need anything but the C runtime.
    needed=$(readelf -d "$work/$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    for n in $needed; do
        case "$n" in
            libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
            *) echo "build-native.sh: $lib needs $n (only the C runtime is allowed)"; exit 1 ;;
        esac
    done
else
    # Mach-O: the exports from an exported-symbols list (Apple's ld; no version scripts), the
    # static libraries' hidden symbols are not exported anyway, undefined symbols are errors
    # by default; -x -S strip the local symbols and the debug information (-s is obsolete
    # there). The install name is only a label for a library loaded with System.load.
    ${CC:-cc} "${common[@]}" \
        -Wl,-exported_symbols_list,"$here/jni.exports" -Wl,-install_name,@rpath/$lib \
        -Wl,-dead_strip -Wl,-x -Wl,-S
    # Refuse a library that would need anything but libSystem (the C runtime). (otool -L
    # and llvm-objdump list the library's own install name too.)
    if command -v otool >/dev/null; then
        needed=$(otool -L "$work/$lib")
    else
        needed=$(llvm-objdump --macho --dylibs-used "$work/$lib")
    fi
    needed=$(echo "$needed" | tail -n +2 | awk '{print $1}' | grep -vx "@rpath/$lib" || true)
    for n in $needed; do
        case "$n" in
            /usr/lib/libSystem.B.dylib|/usr/lib/libSystem.dylib) ;;
            *) echo "build-native.sh: $lib needs $n (only libSystem is allowed)"; exit 1 ;;
        esac
    done
fi
cp "$work/$lib" "$native/$lib"
rm -f "$native/bundled.txt" "$native"/libskycmd.so.*
echo "build-native.sh: $native/$lib ($(wc -c < "$native/$lib" | tr -d ' ') bytes; needs:" $needed")"
