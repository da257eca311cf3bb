#!/usr/bin/env bash
# check.sh [LIB|BUILD_DIR] - compare a built libskycmd.so with the committed ABI baseline
# (abi/libskycmd.abi, made by abi/update.sh) using abidiff.
#
#   abidiff --no-added-syms: added symbols are filtered out (exit 0), so ANY non-zero exit
#   means a symbol was removed or a function, variable or type of the stable ABI changed
#   (libabigail reports C signature changes as exit 4, removals as 12) -> this script fails.
#   Added symbols are then listed for information.
# When the header's SKYCMD_ABI_VERSION (the soname major) differs from the baseline's, the
# break is intended: the script says so and asks for a new baseline instead of failing.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/abi/common.sh"
# LIB may be the library or a build directory holding libskycmd.so.
lib=${1:-$src/build}
[ -d "$lib" ] && lib=$lib/libskycmd.so
baseline=$src/abi/libskycmd.abi
command -v abidiff >/dev/null || { echo "abidiff not found (apt-get install abigail-tools)"; exit 1; }
[ -f "$lib" ] || { echo "no library at $lib"; exit 1; }
[ -f "$baseline" ] || { echo "no baseline $baseline: run abi/update.sh"; exit 1; }
base_soname=$(grep -oE "soname='[^']+'" "$baseline" | head -n1 | sed -E "s/soname='(.*)'/\1/")
want_soname="libskycmd.so.$(header_abi_major "$src")"
if [ "$base_soname" != "$want_soname" ]; then
  echo "ABI major changed ($base_soname -> $want_soname): incompatible changes are allowed;"
  echo "record a new baseline with abi/update.sh and note the break in docs/abi.md."
  exit 0
fi
out=$(abidiff --no-added-syms --suppressions "$src/abi/suppressions.ini" \
              --headers-dir2 "$src/include" "$baseline" "$lib" 2>&1)
rc=$?
echo "$out"
added=$(abidiff --suppressions "$src/abi/suppressions.ini" --headers-dir2 "$src/include" \
                "$baseline" "$lib" 2>&1 | grep -E "^\s+\[A\]" || true)
if [ -n "$added" ]; then
  echo "added since the baseline (compatible; register them with abi/update.sh):"
  echo "$added"
fi
if [ $rc -ne 0 ]; then
  echo "ABI CHECK FAILED: abidiff exit $rc (removed or changed symbols/types above)."
  echo "Keep the old function and add a new one instead (see docs/abi.md), or bump SKYCMD_ABI_VERSION."
  exit 1
fi
echo "ABI check passed: nothing removed or changed against $(basename "$baseline") ($base_soname)"
