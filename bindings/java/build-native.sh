#!/usr/bin/env bash
# build-native.sh TARGET_DIR - run by Maven in generate-sources: generates the SWIG Java
# proxies (TARGET_DIR/generated-sources/swig) and compiles the JNI glue into
# TARGET_DIR/classes/native/linux-x86_64/libskycmd_jni.so, next to a copy of libskycmd.so.N,
# so the jar (and the build tree's classes dir) carries both. The glue's rpath is $ORIGIN.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=${1:-$here/target}
swig=${SWIG:-swig}
gen=$target/generated-sources/swig/org/skycmd/internal
native=$target/classes/native/linux-x86_64
mkdir -p "$gen" "$native" "$target/native"
: "${JAVA_HOME:=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"

"$swig" -java -package org.skycmd.internal -I"$here/../../include" -outdir "$gen" \
    -o "$target/native/skycmd_wrap.c" "$here/../swig/skycmd.i"

cflags=$(pkg-config --cflags skycmd)
libs=$(pkg-config --libs skycmd)
${CC:-cc} -shared -fPIC -O2 -fno-strict-aliasing -Wall -Werror -Wno-unused-function \
    -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" $cflags \
    "$target/native/skycmd_wrap.c" -o "$native/libskycmd_jni.so" $libs '-Wl,-rpath,$ORIGIN'

# Bundle the library the glue was linked against (its soname file).
libdir=$(pkg-config --libs-only-L skycmd | tr ' ' '\n' | sed -n 's/^-L//p' | head -n1)
soname=$(objdump -p "$native/libskycmd_jni.so" | awk '/NEEDED/ && $2 ~ /^libskycmd\.so/ {print $2}')
if [ -n "$libdir" ] && [ -e "$libdir/$soname" ]; then
    cp -L "$libdir/$soname" "$native/$soname"
else
    # Installed library: resolve it the way the loader would.
    src=$(ldd "$native/libskycmd_jni.so" | awk -v s="$soname" '$1 == s {print $3}')
    [ -n "$src" ] && cp -L "$src" "$native/$soname"
fi
echo "$soname" > "$native/bundled.txt"
