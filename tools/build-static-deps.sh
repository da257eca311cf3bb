#!/usr/bin/env bash
# build-static-deps.sh OUTDIR - static, position-independent cJSON and utf8proc for the
# packages that carry libskycmd inside them (the Java jar's JNI library, the Python wheel's
# extension), so they need neither libcjson.so.1 nor libutf8proc.so.2 at run time.
#
#   OUTDIR/lib/libcjson.a, OUTDIR/lib/libutf8proc.a
#   OUTDIR/include/cjson/cJSON.h, OUTDIR/include/utf8proc.h   the headers they were built from
#
# The sources are Debian bookworm's source packages (the versions libskycmd is built and
# tested against), fetched and unpacked by tools/debian-source.sh: as any user, nothing on
# the system changed, no root. Compiled as Debian builds them (dpkg-buildflags) with symbols
# hidden, so a library linking them exports none of their functions. Nothing of it is ever
# committed; OUTDIR is a build directory, and an OUTDIR built with the same sources and flags
# is reused.
# env: CC (default cc); SKYCMD_DEPS_SOURCE_DIR: a directory already holding the unpacked
# cjson-*/ and utf8proc-*/ trees (a machine without apt).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:?usage: build-static-deps.sh OUTDIR}")
mkdir -p "$out/lib" "$out/include/cjson" "$out/obj"
log() { echo "build-static-deps: $*" >&2; }

srcdir=${SKYCMD_DEPS_SOURCE_DIR:-$out/src}
[ -n "${SKYCMD_DEPS_SOURCE_DIR:-}" ] || bash "$here/debian-source.sh" "$srcdir" cjson/bookworm utf8proc/bookworm
srcof() {
  local d; d=$(ls -d "$srcdir/$1"-[0-9]*/ 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] || { log "no $1 source in $srcdir"; exit 1; }
  echo "${d%/}"
}
cjson=$(srcof cjson)
utf8proc=$(srcof utf8proc)

flags="$(dpkg-buildflags --get CPPFLAGS 2>/dev/null || true) $(dpkg-buildflags --get CFLAGS 2>/dev/null || echo -O2)"
flags="$flags -fPIC -fvisibility=hidden"
# archive NAME SOURCE.c EXTRA_FLAGS...: OUTDIR/lib/libNAME.a from one C file, rebuilt only
# when the source tree or the flags change.
archive() {
  local name=$1 src=$2; shift 2
  local a=$out/lib/lib$name.a want
  want="$src $flags $*"
  if [ -f "$a" ] && [ "$(cat "$a.stamp" 2>/dev/null)" = "$want" ]; then
    log "reusing $a"
    return 0
  fi
  log "compiling $(basename "$(dirname "$src")") into $a"
  ${CC:-cc} -c $flags "$@" -o "$out/obj/$name.o" "$src"
  rm -f "$a"
  ar rcs "$a" "$out/obj/$name.o"
  echo "$want" > "$a.stamp"
}
# Upstream CMake's definitions for a static cJSON: locales on, symbols hidden.
archive cjson "$cjson/cJSON.c" -std=c89 -DENABLE_LOCALES -DCJSON_HIDE_SYMBOLS
# UTF8PROC_STATIC: no dllexport decoration (upstream's definition for a static build).
archive utf8proc "$utf8proc/utf8proc.c" -std=c99 -DUTF8PROC_STATIC
cp "$cjson/cJSON.h" "$out/include/cjson/cJSON.h"
cp "$utf8proc/utf8proc.h" "$out/include/utf8proc.h"
log "ready: $out/lib/libcjson.a ($(basename "$cjson")), $out/lib/libutf8proc.a ($(basename "$utf8proc"))"
