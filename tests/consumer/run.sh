#!/usr/bin/env bash
# run.sh BUILD_DIR SOURCE_DIR - build and run tests/consumer against `cmake --install` of
# BUILD_DIR into a scratch prefix:
#   1. pkg-config --cflags --libs skycmd (shared), run with the installed library;
#   2. pkg-config --static (static library + Libs.private);
#   3. find_package(skycmd) with skycmd::skycmd and skycmd::skycmd_static;
#   4. a copy of the header claiming a newer minor version: the library must refuse it
#      with a clear message (skycmd_check_version).
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
fixture=$src/tests/fixtures/gguf/basic.gguf
libdir=$(dirname "$(find "$prefix" -name 'skycmd.pc' | head -n1)")
libdir=$(dirname "$libdir")
export PKG_CONFIG_PATH=$libdir/pkgconfig
# The .pc finds its prefix from its own location: no --define-variable=prefix needed.
pc() { pkg-config "$@"; }
[ "$(pc --variable=prefix skycmd)" -ef "$prefix" ] || { echo "skycmd.pc does not name $prefix"; exit 1; }
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cc=${CC:-cc}
# has PATTERN CMD...: CMD's whole output contains PATTERN. (Not `CMD | grep -q`: under
# pipefail, grep -q leaving at the first match can kill CMD with SIGPIPE and fail the line.)
has() { local pat=$1 out; shift; out=$("$@") || return 1; grep -q -- "$pat" <<<"$out"; }

echo "== pkg-config (shared): $(pc --cflags --libs skycmd)"
$cc -std=c99 -Wall -Werror "$src/tests/consumer/consumer.c" -o "$work/c_shared" $(pc --cflags --libs skycmd)
has '^total: 302 parameters, 550 bytes of tensor data$' "$work/c_shared" "$fixture"
has "$libdir/libskycmd.so" ldd "$work/c_shared"
# the installed library finds the built-in model of its prefix (skycmd_default_model_path)
has "^default model: $(realpath "$prefix")/share/skycmd/models/s1-pico-flappy.gguf\$" \
    env -u SKYCMD_DEFAULT_MODEL "$work/c_shared"

echo "== pkg-config (static): $(pc --static --libs skycmd)"
$cc -std=c99 -Wall -Werror "$src/tests/consumer/consumer.c" -o "$work/c_static" \
    $(pc --cflags skycmd) "$libdir/libskycmd.a" $(pc --static --libs-only-l skycmd | sed 's/-lskycmd//')
has '^total: 302 parameters' "$work/c_static" "$fixture"
if has libskycmd ldd "$work/c_static"; then echo "static consumer links libskycmd.so"; exit 1; fi

for mode in OFF ON; do
  echo "== find_package(skycmd), static=$mode"
  cmake -S "$src/tests/consumer" -B "$work/cm_$mode" -DCMAKE_PREFIX_PATH="$prefix" \
        -DSKYCMD_CONSUMER_STATIC=$mode >/dev/null
  cmake --build "$work/cm_$mode" >/dev/null
  has '^total: 302 parameters' "$work/cm_$mode/consumer" "$fixture"
done

echo "== find_package(skycmd) for the shared library, with no .pc of cJSON or utf8proc in sight"
# (the shared library links them privately: its consumers need neither; the static
# component, asked for, fails with a message that says why)
PKG_CONFIG_LIBDIR=$work/none PKG_CONFIG_PATH= \
  cmake -S "$src/tests/consumer" -B "$work/cm_nodeps" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cm_nodeps" >/dev/null
has '^total: 302 parameters' "$work/cm_nodeps/consumer" "$fixture"
if PKG_CONFIG_LIBDIR=$work/none PKG_CONFIG_PATH= cmake -S "$src/tests/consumer" -B "$work/cm_nodeps_static" \
     -DCMAKE_PREFIX_PATH="$prefix" -DSKYCMD_CONSUMER_STATIC=ON > "$work/nodeps_static.log" 2>&1; then
  echo "the static component was found without libcjson.pc"; exit 1
fi
grep -q "libcjson.pc" "$work/nodeps_static.log" || { cat "$work/nodeps_static.log"; exit 1; }

echo "== a newer header is refused"
mkdir -p "$work/newer"
perl -pe 's/^(#define SKYCMD_VERSION_MINOR )(\d+)/$1.($2+1)/e' \
    "$prefix/include/skycmd.h" > "$work/newer/skycmd.h"
if cmp -s "$prefix/include/skycmd.h" "$work/newer/skycmd.h"; then echo "could not bump the header"; exit 1; fi
$cc -std=c99 -I"$work/newer" "$src/tests/consumer/consumer.c" -o "$work/c_newer" -L"$libdir" -lskycmd
if "$work/c_newer" 2>"$work/newer.err"; then echo "a newer header was accepted"; exit 1; fi
cat "$work/newer.err"
grep -q "older than" "$work/newer.err"
echo "consumer: all checks passed"
