#!/usr/bin/env bash
# update.sh [LIB] - refresh the ABI records from the live header and a built library:
#   1. abi/symbols: every function the header declares gets a line; new ones are recorded
#      as introduced in the header's version (SKYCMD_VERSION_*) under the newest node of
#      abi/skycmd.map; existing lines (their history) are kept as they are; functions that
#      left the header are reported (removing one breaks the ABI: see docs/abi.md).
#   2. abi/libskycmd.abi: the abidw baseline, made reproducibly: a scratch RelWithDebInfo
#      build of the library only (unless LIB is given), and
#      abidw --drop-private-types --no-corpus-path --no-comp-dir-path --short-locs
#      --headers-dir include, so that only the public header's types are recorded and no
#      machine paths end up in the file. abi/libskycmd.abi.info records the toolchain.
# Run it from anywhere:  bash abi/update.sh           (about a minute on 2 cores)
#                        bash abi/update.sh build/libskycmd.so
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/abi/common.sh"
version=$(header_version "$src")
node=$(current_node "$src")
reg=$src/abi/symbols
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- 1. the register ----
header_symbols "$src" > "$tmp/header"
[ -s "$tmp/header" ] || { echo "no SKYCMD_API functions in include/skycmd.h"; exit 1; }
if [ -f "$reg" ]; then grep -v '^#' "$reg" | awk 'NF' > "$tmp/old" || true; else : > "$tmp/old"; fi
{
  echo "# abi/symbols - every function libskycmd exports: the library version and the version-"
  echo "# script node (abi/skycmd.map) that introduced it, then the versions that deprecated and"
  echo "# removed it ('-' = not). Maintained by abi/update.sh; checked against the header and the"
  echo "# library's exports by abi/check-register.sh (ctest abi_register_agrees). Policy: docs/abi.md."
  printf '# %-44s %-11s %-11s %-11s %s\n' symbol introduced node deprecated removed
  while read -r sym; do
    line=$(awk -v s="$sym" '$1 == s' "$tmp/old")
    if [ -n "$line" ]; then
      echo "$line" | awk '{printf "%-46s %-11s %-11s %-11s %s\n", $1, $2, $3, ($4 ? $4 : "-"), ($5 ? $5 : "-")}'
    else
      printf '%-46s %-11s %-11s %-11s %s\n' "$sym" "$version" "$node" - -
      echo "registered: $sym ($version, $node)" >&2
    fi
  done < "$tmp/header"
  # Keep the history of functions that are gone from the header.
  awk '{print $1}' "$tmp/old" | LC_ALL=C sort -u | LC_ALL=C comm -23 - "$tmp/header" | while read -r sym; do
    line=$(awk -v s="$sym" '$1 == s' "$tmp/old")
    removed=$(echo "$line" | awk '{print $5}')
    if [ -z "$removed" ] || [ "$removed" = "-" ]; then
      echo "WARNING: $sym left the header: recorded as removed in $version (an ABI break)" >&2
      echo "$line" | awk -v v="$version" '{printf "%-46s %-11s %-11s %-11s %s\n", $1, $2, $3, ($4 ? $4 : "-"), v}'
    else
      echo "$line" | awk '{printf "%-46s %-11s %-11s %-11s %s\n", $1, $2, $3, $4, $5}'
    fi
  done
} > "$tmp/symbols"
mv "$tmp/symbols" "$reg"
echo "abi/symbols: $(grep -vc '^#' "$reg") functions"

# ---- 2. the abidw baseline ----
lib=${1:-}
if [ -z "$lib" ]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$src" -B "$tmp/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
        -DSKYCMD_SANITIZE=OFF -DSKYCMD_FUZZ=OFF >/dev/null
  cmake --build "$tmp/build" --target skycmd >/dev/null
  lib=$tmp/build/libskycmd.so
fi
lib=$(readlink -f "$lib")
abidw "${ABIDW_FLAGS[@]}" --headers-dir "$src/include" --out-file "$src/abi/libskycmd.abi" "$lib"
{
  echo "baseline: abi/libskycmd.abi for libskycmd $version ($(basename "$lib"), soname libskycmd.so.$(header_abi_major "$src"))"
  echo "made by:  abi/update.sh -> abidw ${ABIDW_FLAGS[*]} --headers-dir include"
  echo "abidw:    $(abidw --version 2>&1 | head -n1)"
  echo "compiler: $(${CC:-cc} --version | head -n1)"
} > "$src/abi/libskycmd.abi.info"
echo "abi/libskycmd.abi: $(grep -c '<elf-symbol ' "$src/abi/libskycmd.abi") ELF symbols, $(wc -c < "$src/abi/libskycmd.abi") bytes"
bash "$src/abi/check-register.sh" "$src" "$lib"
