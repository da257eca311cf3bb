#!/usr/bin/env bash
# test-debs.sh [BUILD_DIR] - build the three Debian packages with CPack (in BUILD_DIR/deb, its
# own /usr-prefixed build tree, so a development build given here is left alone; default
# ./build-deb), install them into this machine with dpkg -i, build and run a consumer with `pkg-config --cflags --libs skycmd`
# and with find_package(skycmd), run `skycmd --version` and a random model end to end, check
# ldconfig and the man pages, then remove the packages again (also on failure).
# Needs root (dpkg) and: cmake, ninja or make, dpkg-dev (dpkg-shlibdeps), pkg-config,
# libcjson-dev, libutf8proc-dev, libmicrohttpd-dev, libzstd-dev, zlib1g-dev. Slow-ish (a full Release build), so it
# is not a ctest test; .ci/run calls it. Exit 0 when every check passed.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${1:-}" ]; then build=$(cd "$1" && pwd)/deb; else build=$src/build-deb; fi
pkgs=(skycmd libskycmd-dev)
[ "$(id -u)" = 0 ] || { echo "test-debs.sh: needs root for dpkg -i"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-debs.XXXXXX")
cleanup() {
  dpkg -P skycmd libskycmd-dev "libskycmd$abi" >/dev/null 2>&1 || true
  rm -rf "$work"
}
abi=$(awk '/^#define SKYCMD_ABI_VERSION /{print $3}' "$src/include/skycmd.h")
pkgs+=("libskycmd$abi")
for p in "${pkgs[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    echo "test-debs.sh: $p is already installed; remove it first"; rm -rf "$work"; exit 1
  fi
done
# Only now: packages this script installs are the ones it removes.
trap cleanup EXIT

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
echo "== configure + build ($build)"
cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" >/dev/null
echo "== cpack"
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB >/dev/null)
version=$(awk '/^#define SKYCMD_VERSION_STRING /{gsub(/"/, "", $3); print $3}' "$src/include/skycmd.h")
arch=$(dpkg --print-architecture)
debs=("$build/libskycmd${abi}_${version}_${arch}.deb" "$build/libskycmd-dev_${version}_${arch}.deb"
      "$build/skycmd_${version}_${arch}.deb")
for d in "${debs[@]}"; do
  [ -f "$d" ] || { echo "missing package $d"; ls "$build"/*.deb; exit 1; }
  echo "-- $(basename "$d"): $(dpkg-deb -f "$d" Depends)"
done
# (listings go to files first: grep -q closing a pipe early would trip pipefail)
for i in 0 1 2; do dpkg-deb -c "${debs[$i]}" > "$work/list$i"; done
grep -q "libskycmd.so.$abi " "$work/list0"   # the soname link
dpkg-deb -e "${debs[0]}" "$work/ctrl"
grep -q "^libskycmd $abi libskycmd$abi" "$work/ctrl/shlibs"
grep -q "usr/include/skycmd.h" "$work/list1"
grep -q "pkgconfig/skycmd.pc" "$work/list1"
grep -q "cmake/skycmd/skycmdConfig.cmake" "$work/list1"
grep -q "libskycmd.a" "$work/list1"
grep -q "usr/bin/skycmd" "$work/list2"
grep -q "man1/skycmd-inspect.1" "$work/list2"

echo "== dpkg -i"
dpkg -i "${debs[@]}" >/dev/null
ldconfig -p > "$work/ldconfig"
grep -q "libskycmd.so.$abi " "$work/ldconfig"

echo "== consumer via pkg-config: $(pkg-config --cflags --libs skycmd)"
cc -std=c99 -Wall -Werror "$src/tests/consumer/consumer.c" -o "$work/consumer" $(pkg-config --cflags --libs skycmd)
"$work/consumer"
"$work/consumer" "$src/tests/fixtures/gguf/basic.gguf" > "$work/inspect.txt"
tail -n 1 "$work/inspect.txt"
grep -q '^total: 302 parameters, 550 bytes of tensor data$' "$work/inspect.txt"
ldd "$work/consumer" > "$work/ldd"
grep -q "/libskycmd.so.$abi" "$work/ldd"

echo "== consumer via find_package(skycmd)"
cmake -S "$src/tests/consumer" -B "$work/cm" >/dev/null
cmake --build "$work/cm" >/dev/null
"$work/cm/consumer" >/dev/null

echo "== skycmd --version"
/usr/bin/skycmd --version | tee "$work/version"
grep -q "library $version, ABI $abi" "$work/version"
/usr/bin/skycmd random s1-pico "$work/pico.gguf"
/usr/bin/skycmd inspect "$work/pico.gguf" | tail -n 1
printf '%s' '{"state": "vy 0 dx 36", "questions": {"action": {"type": "choice",
  "instructions": "Which input?", "criteria": {"thrust": "go up", "glide": "go down"}}}}' > "$work/req.json"
/usr/bin/skycmd decide "$work/pico.gguf" "$work/req.json" > "$work/answer.json"
grep -q '"answers"' "$work/answer.json"
man -w skycmd-inspect >/dev/null 2>&1 || [ -f /usr/share/man/man1/skycmd-inspect.1 ]

echo "== dpkg -P (remove and purge)"
dpkg -P skycmd libskycmd-dev "libskycmd$abi" >/dev/null
[ ! -e /usr/bin/skycmd ] && [ ! -e /usr/include/skycmd.h ]
if pkg-config --exists skycmd 2>/dev/null; then echo "skycmd.pc still installed"; exit 1; fi
echo "test-debs.sh: all checks passed"
