# common.sh - shared by the abi/ scripts (sourced, not run).
# header_symbols SRC  : the functions the public header declares with SKYCMD_API, sorted.
# export_symbols LIB  : the skycmd_* symbols LIB exports (version suffix stripped), sorted.
# register_symbols SRC: the symbols abi/symbols lists as present (not removed), sorted.
header_symbols() {
  # Comments stripped by the preprocessor without expanding macros; declarations joined
  # so that multi-line ones read as one.
  ${CC:-cc} -fpreprocessed -dD -E -P "$1/include/skycmd.h" 2>/dev/null |
    grep -v "^[[:space:]]*#" | tr "\n" " " | grep -oE "SKYCMD_API[^;{]*;" |
    sed -E 's/^[^(]*[^A-Za-z0-9_](skycmd_[A-Za-z0-9_]+)[[:space:]]*\(.*/\1/' |
    grep -E '^skycmd_[A-Za-z0-9_]+$' | LC_ALL=C sort -u
}
export_symbols() {
  nm -D --defined-only "$1" | awk '{print $NF}' | grep '^skycmd_' | sed 's/@.*//' | LC_ALL=C sort -u
}
register_symbols() {
  awk '!/^#/ && NF >= 2 && ($5 == "" || $5 == "-") {print $1}' "$1/abi/symbols" | LC_ALL=C sort -u
}
header_version() {
  local maj min pat
  maj=$(awk '/^#define SKYCMD_VERSION_MAJOR /{print $3}' "$1/include/skycmd.h")
  min=$(awk '/^#define SKYCMD_VERSION_MINOR /{print $3}' "$1/include/skycmd.h")
  pat=$(awk '/^#define SKYCMD_VERSION_PATCH /{print $3}' "$1/include/skycmd.h")
  echo "$maj.$min.$pat"
}
header_abi_major() { awk '/^#define SKYCMD_ABI_VERSION /{print $3}' "$1/include/skycmd.h"; }
# The newest node of the version script (the one new symbols land in).
current_node() { grep -oE '^SKYCMD_[0-9]+\.[0-9]+' "$1/abi/skycmd.map" | tail -n1; }
ABIDW_FLAGS=(--drop-private-types --no-corpus-path --no-comp-dir-path --short-locs)
