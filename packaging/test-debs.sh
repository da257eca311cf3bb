#!/usr/bin/env bash
# test-debs.sh [BUILD_DIR] - build the Debian packages with CPack (in BUILD_DIR/deb, its own
# /usr-prefixed build tree, so a development build given here is left alone; default
# ./build-deb): libskycmd<ABI>, libskycmd-dev, skycmd and the -dbgsym packages of the first
# and the last. Then:
#   - lintian on all of them: its output is printed, and any error or warning fails;
#   - their contents and control files (copyright, changelog.gz, symbols == the library's
#     exports, ldconfig trigger and no ldconfig maintainer scripts, conffiles, no RUNPATH);
#   - dpkg -i; a consumer with `pkg-config --cflags --libs skycmd` and with
#     find_package(skycmd); `skycmd --version` and a random model end to end; ldconfig,
#     man pages, the debug symbols found by build id; the systemd unit (systemd-analyze
#     verify and security) and the server started with its command line and the options of
#     /etc/default/skycmd; the bash completion;
#   - the conffile /etc/default/skycmd kept when edited across a reinstall and a remove,
#     gone after a purge; dpkg -P of everything (also on failure).
# Needs root (dpkg) and: cmake, ninja or make, dpkg-dev (dpkg-shlibdeps), file, binutils,
# lintian, pkg-config, libcjson-dev, libutf8proc-dev, libmicrohttpd >= 1.0.1 (tools/build-mhd.sh's
# .deps/mhd, used when present; bookworm's libmicrohttpd-dev 0.9.75 is refused), libzstd-dev,
# zlib1g-dev, python3; systemd
# (systemd-analyze) is used when present. Slow-ish (a full build), so it is not a ctest
# test; tools/test-all.sh calls it. Exit 0 when every check passed.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${1:-}" ]; then build=$(cd "$1" && pwd)/deb; else build=$src/build-deb; fi
start=$(date +%s)
pkgs=(skycmd libskycmd-dev)
[ "$(id -u)" = 0 ] || { echo "test-debs.sh: needs root for dpkg -i"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-debs.XXXXXX")
cleanup() {
  dpkg -P skycmd-dbgsym "libskycmd$abi-dbgsym" skycmd libskycmd-dev "libskycmd$abi" >/dev/null 2>&1 || true
  rm -rf "$work"
}
abi=$(awk '/^#define SKYCMD_ABI_VERSION /{print $3}' "$src/include/skycmd.h")
pkgs+=("libskycmd$abi" skycmd-dbgsym "libskycmd$abi-dbgsym")
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
# Debian's build flags (what debhelper passes a package build), with every hardening
# feature: fortified functions, stack protector, relro and bindnow.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cflags="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
ldflags=$(dpkg-buildflags --get LDFLAGS)
# The server needs libmicrohttpd >= 1.0.1 (Debian bookworm has only 0.9.75, which stalls under
# load): the one tools/build-mhd.sh builds into .deps/mhd (static, so the package does not
# depend on libmicrohttpd12), found first as tools/toolchains.sh finds it; SKYCMD_SERVE=ON
# makes the configure fail, naming the fix, rather than package a skycmd without its server.
if [ -f "$src/.deps/mhd/lib/pkgconfig/libmicrohttpd.pc" ]; then
  export PKG_CONFIG_PATH="$src/.deps/mhd/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi
echo "-- libmicrohttpd $(pkg-config --modversion libmicrohttpd 2>/dev/null || echo none) ($(pkg-config --variable=libdir libmicrohttpd 2>/dev/null))"
cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKYCMD_SERVE=ON \
      -DBUILD_TESTING=OFF -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cflags" \
      -DCMAKE_EXE_LINKER_FLAGS="$ldflags" -DCMAKE_SHARED_LINKER_FLAGS="$ldflags" >/dev/null
nice cmake --build "$build" >/dev/null
echo "== cpack"
rm -f "$build"/*.deb "$build"/*.ddeb
# (CPack warns about the two absent control extras that keep it from writing ldconfig
# maintainer scripts, see packaging/CMakeLists.txt; its log is kept for a failure)
(cd "$build" && cpack -G DEB > "$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
version=$(awk '/^#define SKYCMD_VERSION_STRING /{gsub(/"/, "", $3); print $3}' "$src/include/skycmd.h")
arch=$(dpkg --print-architecture)
debs=("$build/libskycmd${abi}_${version}_${arch}.deb" "$build/libskycmd-dev_${version}_${arch}.deb"
      "$build/skycmd_${version}_${arch}.deb")
ddebs=("$build/libskycmd${abi}-dbgsym_${version}_${arch}.ddeb" "$build/skycmd-dbgsym_${version}_${arch}.ddeb")
# The first line of a package's Description (its synopsis). Not `dpkg-deb ... | head -n 1`:
# under pipefail, head leaving early can kill dpkg-deb with SIGPIPE (exit 141, seen in a
# fresh-machine run).
synopsis() { local t; t=$(dpkg-deb -f "$1" Description); printf '%s\n' "${t%%$'\n'*}"; }
for d in "${debs[@]}" "${ddebs[@]}"; do
  [ -f "$d" ] || { echo "missing package $d"; ls "$build"/*.deb "$build"/*.ddeb; exit 1; }
  echo "-- $(basename "$d"): $(synopsis "$d"); depends: $(dpkg-deb -f "$d" Depends)"
done
# Every package has its own synopsis.
for d in "${debs[@]}"; do synopsis "$d"; done | sort | uniq -d > "$work/dupes"
[ ! -s "$work/dupes" ] || { echo "shared synopsis: $(cat "$work/dupes")"; exit 1; }

echo "== lintian (errors and warnings fail; overrides: none)"
# --fail-on error,warning: exit non-zero on any E: or W: tag; info tags are shown, not fatal.
if lintian --tag-display-limit 0 --display-info --fail-on error,warning \
     "${debs[@]}" "${ddebs[@]}" > "$work/lintian.log" 2>&1; then lintian_rc=0; else lintian_rc=$?; fi
grep -v '^running with root privileges' "$work/lintian.log" || true
errors=$(grep -c '^E: ' "$work/lintian.log" || true)
warnings=$(grep -c '^W: ' "$work/lintian.log" || true)
echo "-- lintian $(lintian --version | awk '{print $2}'): $errors errors, $warnings warnings (exit $lintian_rc)"
[ "$lintian_rc" = 0 ] && [ "$errors" = 0 ] && [ "$warnings" = 0 ] || exit 1
# (listings go to files first: grep -q closing a pipe early would trip pipefail)
echo "== contents and control files"
for i in 0 1 2; do dpkg-deb -c "${debs[$i]}" > "$work/list$i"; done
grep -q "libskycmd.so.$abi " "$work/list0"   # the soname link
names=("libskycmd$abi" libskycmd-dev skycmd)
for i in 0 1 2; do
  for f in copyright changelog.gz; do
    grep -q " ./usr/share/doc/${names[$i]}/$f$" "$work/list$i" || { echo "${names[$i]} lacks $f"; exit 1; }
  done
done
dpkg-deb --fsys-tarfile "${debs[0]}" | tar -xO "./usr/share/doc/libskycmd$abi/changelog.gz" | gzip -dc > "$work/changelog"
[ "$(dpkg-parsechangelog -l "$work/changelog" -S Version)" = "$version" ] ||
  { echo "the Debian changelog's version is not $version"; exit 1; }
dpkg-deb -e "${debs[0]}" "$work/ctrl"
grep -q "^libskycmd $abi libskycmd$abi" "$work/ctrl/shlibs"
grep -qx "activate-noawait ldconfig" "$work/ctrl/triggers"
for script in postinst postrm; do
  [ ! -e "$work/ctrl/$script" ] || { echo "libskycmd$abi has a $script (the trigger does its work)"; exit 1; }
done
# the symbols file lists exactly what the packaged library exports, with its version nodes
head -n 1 "$work/ctrl/symbols" | grep -qx "libskycmd.so.$abi libskycmd$abi #MINVER#"
dpkg-deb -x "${debs[0]}" "$work/root0"
lib=$(find "$work/root0" -name "libskycmd.so.$abi" -type l)
# (nm names a function name@@NODE and the node itself, an absolute symbol, just NODE)
nm -D --defined-only "$lib" | awk '{s = $3; if (s ~ /@@/) sub(/@@/, "@", s); else s = s "@" s; print s}' |
  sort > "$work/exports"
awk '/^ /{print $1}' "$work/ctrl/symbols" | sort > "$work/symbols"
diff "$work/exports" "$work/symbols" || { echo "symbols file != the library's exports"; exit 1; }
echo "-- symbols: $(wc -l < "$work/symbols") entries (== nm -D of the library)"
dpkg-deb -e "${debs[2]}" "$work/ctrl2"
grep -qx "/etc/default/skycmd" "$work/ctrl2/conffiles"
dpkg-deb -x "${debs[2]}" "$work/root2"
readelf -d "$work/root2/usr/bin/skycmd" > "$work/dynamic"
if grep -qE 'RPATH|RUNPATH' "$work/dynamic"; then
  echo "/usr/bin/skycmd has a RUNPATH"; exit 1
fi
grep -q "usr/include/skycmd.h" "$work/list1"
grep -q "pkgconfig/skycmd.pc" "$work/list1"
grep -q "cmake/skycmd/skycmdConfig.cmake" "$work/list1"
grep -q "libskycmd.a" "$work/list1"
grep -q "usr/bin/skycmd" "$work/list2"
grep -q "man1/skycmd-inspect.1.gz" "$work/list2"
grep -q " ./usr/lib/systemd/system/skycmd.service$" "$work/list2"
grep -q " ./etc/default/skycmd$" "$work/list2"
grep -q " ./usr/share/bash-completion/completions/skycmd$" "$work/list2"
grep -q " ./usr/share/skycmd/models/s1-pico-flappy.gguf$" "$work/list2"

echo "== dpkg -i"
dpkg -i "${debs[@]}" "${ddebs[@]}" >/dev/null
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
# the built-in model is installed with the CLI and answers when no model is given
[ -f /usr/share/skycmd/models/s1-pico-flappy.gguf ] || { echo "the built-in model is not installed"; exit 1; }
/usr/bin/skycmd decide "$work/req.json" > "$work/builtin.json"
grep -q '"model":"s1-pico-flappy"' "$work/builtin.json" ||
  { echo "the built-in model did not answer: $(cat "$work/builtin.json")"; exit 1; }
grep -q '"answers"' "$work/answer.json"
man -w skycmd-inspect >/dev/null 2>&1 || [ -f /usr/share/man/man1/skycmd-inspect.1.gz ]

echo "== debug symbols by build id"
for f in /usr/bin/skycmd "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libskycmd.so.$abi"; do
  id=$(readelf -n "$f" | awk '/Build ID/{print $3}')
  dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  [ -f "$dbg" ] || { echo "no $dbg for $f"; exit 1; }
  readelf -S "$dbg" > "$work/sections.dbg" 2>/dev/null
  readelf -S "$f" > "$work/sections"
  grep -q '\.debug_info' "$work/sections.dbg" || { echo "$dbg has no DWARF"; exit 1; }
  if grep -q '\.debug_info' "$work/sections"; then echo "$f is not stripped"; exit 1; fi
  echo "-- $f: stripped, DWARF in $dbg"
done

echo "== systemd unit"
unit=/usr/lib/systemd/system/skycmd.service
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify --man=no "$unit"   # (the man page is checked above)
  systemd-analyze security --offline=true "$unit" | tail -n 1
else
  echo "-- systemd-analyze not installed: unit not verified"
fi
# The unit's command line with the options of /etc/default/skycmd, the model and the port
# replaced (the shipped default names /var/lib/skycmd/model.gguf and port 8080): the server
# starts, answers /health and stops with status 0 on SIGTERM, as systemd stops it.
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
# shellcheck source=/dev/null
. /etc/default/skycmd
opts=${SKYCMD_SERVE_OPTIONS/\/var\/lib\/skycmd\/model.gguf/$work/pico.gguf}
opts=${opts/--port 8080/--port 0}
cmdline=${exec_start/\$SKYCMD_SERVE_OPTIONS/$opts}
echo "-- $cmdline"
$cmdline > "$work/serve.log" 2>&1 &
server=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/serve.log")
  [ -n "$port" ] && grep -q "ready" "$work/serve.log" && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/serve.log"; kill "$server"; exit 1; }
python3 -c 'import sys, urllib.request
print("-- GET /health:", urllib.request.urlopen("http://127.0.0.1:%s/health" % sys.argv[1]).read().decode())' "$port"
kill -TERM "$server"
wait "$server" || { echo "the server did not exit 0 on SIGTERM"; cat "$work/serve.log"; exit 1; }

echo "== bash completion"
cmp /usr/share/bash-completion/completions/skycmd "$src/packaging/bash-completion/skycmd"
bash "$src/tests/cli/bash_completion.sh" /usr/bin/skycmd "$src" "$work"

echo "== the conffile: kept when edited and reinstalled, kept on remove, gone on purge"
echo "# edited by test-debs.sh" >> /etc/default/skycmd
dpkg -i "${debs[2]}" >/dev/null
grep -q "edited by test-debs.sh" /etc/default/skycmd || { echo "reinstalling lost the edit"; exit 1; }
dpkg -r skycmd-dbgsym skycmd >/dev/null
[ ! -e /usr/bin/skycmd ] && grep -q "edited by test-debs.sh" /etc/default/skycmd
dpkg -P skycmd >/dev/null
[ ! -e /etc/default/skycmd ] || { echo "purge left /etc/default/skycmd"; exit 1; }

echo "== dpkg -P (remove and purge)"
dpkg -P "libskycmd$abi-dbgsym" libskycmd-dev "libskycmd$abi" >/dev/null   # (skycmd: above)
[ ! -e /usr/bin/skycmd ] && [ ! -e /usr/include/skycmd.h ] && [ ! -e /etc/default/skycmd ]
[ ! -e /usr/lib/systemd/system/skycmd.service ]
if pkg-config --exists skycmd 2>/dev/null; then echo "skycmd.pc still installed"; exit 1; fi
echo "test-debs.sh: all checks passed ($(( $(date +%s) - start )) s; lintian: $errors errors, $warnings warnings)"
