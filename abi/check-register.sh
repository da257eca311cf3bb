#!/usr/bin/env bash
# check-register.sh SRC LIB - the live public header, the register abi/symbols and the
# library's exports must list exactly the same functions. After adding a public function,
# run abi/update.sh to record it.
set -euo pipefail
src=$(cd "$1" && pwd)
lib=$2
. "$src/abi/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
header_symbols "$src" > "$tmp/header"
register_symbols "$src" > "$tmp/register"
export_symbols "$lib" > "$tmp/exports"
[ -s "$tmp/header" ] || { echo "no SKYCMD_API functions found in include/skycmd.h"; exit 1; }
rc=0
report() { # a b label
  local d
  d=$(LC_ALL=C comm -23 "$tmp/$1" "$tmp/$2")
  if [ -n "$d" ]; then echo "in $1 but not in $2 ($3):"; echo "$d" | sed 's/^/  /'; rc=1; fi
}
report header register "run abi/update.sh to register new functions"
report register header "a registered function left the header: that breaks the ABI"
report header exports "declared but not exported: missing definition or SKYCMD_API"
report exports header "exported but not declared in the header"
if [ $rc = 0 ]; then echo "header, abi/symbols and $(basename "$lib") agree on $(wc -l < "$tmp/header") functions"; fi
# Every register line is well formed: symbol, version, node[, deprecated, removed].
if awk '!/^#/ && NF>0 && (NF < 3 || $2 !~ /^[0-9]+\.[0-9]+\.[0-9]+$/ || $3 !~ /^SKYCMD_/) {print; bad=1} END {exit !bad}' "$src/abi/symbols"; then
  echo "malformed lines in abi/symbols (above)"; rc=1
fi
exit $rc
