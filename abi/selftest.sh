#!/usr/bin/env bash
# selftest.sh SRC "OBJ;OBJ;..." - prove that abi/check.sh catches breaks. From the library's
# object files it links three scratch copies of libskycmd.so.1 and runs check.sh on each:
#   control : same objects, same version script          -> must PASS
#   removed : skycmd_strerror made local (not exported)   -> must FAIL (abidiff exit 12)
#   changed : skycmd_abi_version(void) -> (int), rebuilt from a patched copy of core.c
#                                                          -> must FAIL (abidiff exit 4)
set -euo pipefail
src=$(cd "$1" && pwd)
IFS=';' read -r -a objs <<< "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
libs=$(pkg-config --libs libcjson libutf8proc)
link() { # out map objs...
  local out=$1 map=$2; shift 2
  mkdir -p "$(dirname "$out")"
  $cc -shared -o "$out" -Wl,-soname,libskycmd.so.1 "$@" -Wl,--version-script="$map" \
      -Wl,--no-undefined $libs -lpthread -lm
}
expect() { # pass|fail label lib
  if bash "$src/abi/check.sh" "$3" > "$tmp/$2.log" 2>&1; then got=pass; else got=fail; fi
  { grep -E "Removed|Changed|function|parameter|CHECK" "$tmp/$2.log" || true; } | head -n 6 | sed "s/^/    /"
  if [ "$got" != "$1" ]; then echo "selftest $2: expected $1, got $got"; cat "$tmp/$2.log"; exit 1; fi
  echo "selftest $2: $got as expected"
}

link "$tmp/control/libskycmd.so.1" "$src/abi/skycmd.map" "${objs[@]}"
expect pass control "$tmp/control/libskycmd.so.1"

sed 's/^\(  local:\)/    \n\1\n    skycmd_strerror;/' "$src/abi/skycmd.map" > "$tmp/removed.map"
grep -q 'skycmd_strerror;' "$tmp/removed.map"
link "$tmp/removed/libskycmd.so.1" "$tmp/removed.map" "${objs[@]}"
if nm -D --defined-only "$tmp/removed/libskycmd.so.1" | grep -q skycmd_strerror; then
  echo "selftest: could not hide skycmd_strerror"; exit 1
fi
expect fail removed "$tmp/removed/libskycmd.so.1"

mkdir -p "$tmp/inc" "$tmp/src/api"
sed 's/skycmd_abi_version(void)/skycmd_abi_version(int flags)/' "$src/include/skycmd.h" > "$tmp/inc/skycmd.h"
sed 's/unsigned skycmd_abi_version(void) {/unsigned skycmd_abi_version(int flags) { (void)flags;/' \
    "$src/src/api/core.c" > "$tmp/src/api/core.c"
grep -q 'skycmd_abi_version(int flags)' "$tmp/src/api/core.c"
cp "$src/src/api/"*.h "$tmp/src/api/"
mkdir -p "$tmp/src/util" && cp "$src/src/util/"*.h "$tmp/src/util/"
$cc -std=c11 -g -O2 -fPIC -fvisibility=hidden -DSKYCMD_BUILD -DSKYCMD_SHARED \
    -I"$tmp/inc" -I"$tmp/src" $(pkg-config --cflags libcjson) -c "$tmp/src/api/core.c" -o "$tmp/core.o"
others=()
for o in "${objs[@]}"; do case "$o" in */api/core.c.o) ;; *) others+=("$o") ;; esac; done
[ ${#others[@]} -lt ${#objs[@]} ] || { echo "selftest: core.c.o not among the objects"; exit 1; }
link "$tmp/changed/libskycmd.so.1" "$src/abi/skycmd.map" "${others[@]}" "$tmp/core.o"
expect fail changed "$tmp/changed/libskycmd.so.1"
echo "abi/check.sh catches a removed and a changed function"
