#!/usr/bin/env bash
# build-native.sh TARGET_DIR - run by Maven in generate-sources: compiles the committed SWIG
# JNI wrapper (src/generated/jni/skycmd_wrap.c, made by generate.sh; no SWIG needed here)
# into ONE self-contained library, TARGET_DIR/classes/native/linux-$(uname -m)/libskycmd_jni.so,
# which the jar carries. libskycmd (libskycmd.a), cJSON and utf8proc are linked into it
# statically, so at run time it needs only the C library: no libskycmd.so, libcjson.so.1 or
# libutf8proc.so.2. Only the JNI entry points are exported (jni.map, --exclude-libs), and the
# library is stripped.
#
# libskycmd.a is found in the -L directories of `pkg-config --libs skycmd` (a build tree's
# PKG_CONFIG_PATH=BUILD/pkgconfig, or an installed prefix/libskycmd-dev), or given as
# SKYCMD_STATIC_LIB. The static cJSON and utf8proc come from build-static-deps.sh (cJSON
# compiled from Debian's source package) into TARGET_DIR/static-deps, or from
# SKYCMD_STATIC_DEPS_DIR if set (a directory that script already filled, to reuse it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=$(realpath -m "${1:-$here/target}")
native=$target/classes/native/linux-$(uname -m)
work=$target/native
mkdir -p "$native" "$work"
: "${JAVA_HOME:=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"

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
bash "$here/build-static-deps.sh" "$deps"

${CC:-cc} -shared -fPIC -O2 -fno-strict-aliasing -Wall -Werror -Wno-unused-function \
    -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" $(pkg-config --cflags skycmd) \
    "$wrap" -o "$work/libskycmd_jni.so" \
    "$static_lib" "$deps/lib/libcjson.a" "$deps/lib/libutf8proc.a" -lpthread -lm \
    -Wl,--exclude-libs,ALL -Wl,--version-script="$here/jni.map" -Wl,--no-undefined \
    -Wl,-z,relro,-z,now -Wl,--as-needed -s

# Refuse a library that would need anything but the C runtime.
needed=$(readelf -d "$work/libskycmd_jni.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for n in $needed; do
    case "$n" in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
        *) echo "build-native.sh: libskycmd_jni.so needs $n (only the C runtime is allowed)"; exit 1 ;;
    esac
done
cp "$work/libskycmd_jni.so" "$native/libskycmd_jni.so"
rm -f "$native/bundled.txt" "$native"/libskycmd.so.*
echo "build-native.sh: $native/libskycmd_jni.so ($(stat -c %s "$native/libskycmd_jni.so") bytes; NEEDED:" $needed")"
