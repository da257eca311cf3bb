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
#     man pages, the debug symbols found by build id; the systemd unit: systemd-analyze
#     verify (no complaint) and security, a failure when systemd-analyze is missing under
#     SKYCMD_REQUIRE_SYSTEMD=1 or CI; the unit's ExecStart= with the variables of the
#     installed /etc/default/skycmd, run as nobody: the shipped configuration answers
#     /health (the built-in model), then a model of one's own in /var/lib/skycmd as
#     docs/packaging.md says, reloaded by SIGHUP; SIGTERM exits 0; the bash completion;
#   - the conffile /etc/default/skycmd kept when edited across a reinstall and a remove,
#     gone after a purge; dpkg -P of everything (also on failure).
# Needs root (dpkg) and: cmake, ninja or make, dpkg-dev (dpkg-shlibdeps), file, binutils,
# lintian, pkg-config, libcjson-dev, libutf8proc-dev, libmicrohttpd >= 1.0.1 (tools/build-mhd.sh's
# .deps/mhd, used when present; bookworm's libmicrohttpd-dev 0.9.75 is refused), libzstd-dev,
# zlib1g-dev, python3, util-linux (setpriv); systemd (systemd-analyze: required when
# SKYCMD_REQUIRE_SYSTEMD=1 or CI is set, else skipped with a note). Slow-ish (a full
# build), so it is not a ctest test; tools/test-all.sh calls it. Exit 0 when every check
# passed.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${1:-}" ]; then build=$(cd "$1" && pwd)/deb; else build=$src/build-deb; fi
start=$(date +%s)
pkgs=(skycmd libskycmd-dev)
[ "$(id -u)" = 0 ] || { echo "test-debs.sh: needs root for dpkg -i"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-debs.XXXXXX")
cleanup() {
  [ -z "${server:-}" ] || kill "$server" 2>/dev/null || true
  [ "${own_model:-0}" = 0 ] || rm -f /var/lib/skycmd/my-model.gguf
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
grep -q " ./var/lib/skycmd/$" "$work/list2"
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
# CI must verify the unit: there (SKYCMD_REQUIRE_SYSTEMD=1, set by tools/test-all.sh, or CI
# set to anything but false/0) a missing systemd-analyze is a failure, not a skip.
require_systemd=0
[ "${SKYCMD_REQUIRE_SYSTEMD:-}" = 1 ] && require_systemd=1
case "${CI:-}" in ""|false|0) ;; *) require_systemd=1 ;; esac
if command -v systemd-analyze >/dev/null; then
  # verify exits 0 on some complaints (an unknown key, a bad value: "ignoring"): any output fails
  systemd-analyze verify --man=no "$unit" > "$work/verify.log" 2>&1 || { cat "$work/verify.log"; exit 1; }
  [ ! -s "$work/verify.log" ] || { echo "systemd-analyze verify complained:"; cat "$work/verify.log"; exit 1; }
  echo "-- systemd-analyze verify: clean ($(systemd-analyze --version | awk 'NR == 1 {print $1, $2}'))"
  systemd-analyze security --offline=true "$unit" | tail -n 1
elif [ "$require_systemd" = 1 ]; then
  echo "systemd-analyze is not installed (Debian package systemd; tools/setup.sh --all installs it):"
  echo "the unit cannot be verified, and SKYCMD_REQUIRE_SYSTEMD=1 or CI=${CI:-} requires it"
  exit 1
else
  echo "-- systemd-analyze not installed: the unit is NOT verified (install systemd; CI fails here)"
fi
# The service as systemd would start it: the installed unit's ExecStart= with its variables
# taken from the installed EnvironmentFile=, in an environment of that file's variables only,
# from /, as an unprivileged user (the unit's DynamicUser=) without capabilities. First the
# configuration as shipped (the built-in model on 127.0.0.1:8080), then the documented steps
# for a model of one's own (docs/packaging.md): install it world-readable in /var/lib/skycmd,
# add --model, and after replacing the file a SIGHUP reloads it.
[ "$(grep -c '^ExecStart=' "$unit")" = 1 ] || { echo "$unit: not one ExecStart="; exit 1; }
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
env_file=$(sed -n 's/^EnvironmentFile=//p' "$unit")
[ "$env_file" = /etc/default/skycmd ] || { echo "$unit: EnvironmentFile=$env_file, expected /etc/default/skycmd"; exit 1; }
# (only the forms the unit uses are expanded, as systemd does; anything else fails here
# rather than being run differently from systemd)
case "$exec_start" in [-@:+!]*|*[\"\'\\\;]*) echo "ExecStart=$exec_start: prefix or quoting this test does not expand"; exit 1 ;; esac
id nobody >/dev/null && getent group nogroup >/dev/null || { echo "no user nobody or group nogroup"; exit 1; }
unit_env_read() {  # the EnvironmentFile= as systemd reads it: KEY=VALUE, "VALUE", comments
  local line k v
  unit_env=()
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in ""|"#"*|";"*) continue ;; esac
    [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || { echo "$env_file: unexpected line: $line"; return 1; }
    k=${BASH_REMATCH[1]} v=${BASH_REMATCH[2]}
    if [[ "$v" =~ ^\"([^\"\\]*)\"$ ]] || [[ "$v" =~ ^\'([^\'\\]*)\'$ ]]; then v=${BASH_REMATCH[1]}
    elif [[ "$v" == *[\"\'\\]* ]]; then echo "$env_file: quoting this test does not read: $line"; return 1; fi
    unit_env[$k]=$v
  done < "$env_file"
}
unit_argv() {  # ExecStart= expanded: $VAR = its words, ${VAR} = one word (systemd.service(5))
  local w more
  argv=()
  read -r -a words <<< "$exec_start"
  for w in "${words[@]}"; do
    if [[ "$w" =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
      read -r -a more <<< "${unit_env[${BASH_REMATCH[1]}]:-}"; argv+=("${more[@]}")
    elif [[ "$w" =~ ^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$ ]]; then argv+=("${unit_env[${BASH_REMATCH[1]}]:-}")
    elif [[ "$w" == *'$'* ]]; then echo "ExecStart=: cannot expand $w"; return 1
    else argv+=("$w"); fi
  done
}
http_get() {  # http_get URL: prints the status and the body (errors give their status too)
  python3 - "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=5)
    print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
except OSError as e:
    print(0, e)
PY
}
declare -A unit_env
service_up() {  # start the unit's command; sets $server and $base once /health answers 200
  local -a envv=()
  local k
  unit_env_read && unit_argv || exit 1
  for k in "${!unit_env[@]}"; do envv+=("$k=${unit_env[$k]}"); done
  # 127.0.0.1:8080 taken by something else on this machine: the same line with --port 0
  if python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8080), 1)' 2>/dev/null; then
    for k in "${!argv[@]}"; do [ "${argv[$k]}" = 8080 ] && [ "${argv[$((k - 1))]}" = --port ] && argv[$k]=0; done
    echo "-- (127.0.0.1:8080 is in use on this machine: --port 0 instead)"
  fi
  echo "-- as nobody: ${envv[*]//SKYCMD_API_KEY=*/SKYCMD_API_KEY=...} ${argv[*]}"
  (cd / && umask 0077 && exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin "${envv[@]}" \
     setpriv --reuid=nobody --regid=nogroup --clear-groups --no-new-privs --inh-caps=-all \
       --bounding-set=-all -- "${argv[@]}") > "$work/serve.log" 2>&1 &
  server=$!
  local port="" status=""
  for _ in $(seq 200); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/serve.log")
    if [ -n "$port" ]; then
      status=$(http_get "http://127.0.0.1:$port/health")
      [ "${status%% *}" = 200 ] && break
    fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  [ "${status%% *}" = 200 ] ||
    { echo "the service did not answer GET /health with 200 (${status:-no port}):"; cat "$work/serve.log"; kill "$server" 2>/dev/null; exit 1; }
  base=http://127.0.0.1:$port
  echo "-- GET /health: $status"
}
service_down() {  # SIGTERM, as systemctl stop sends it: exit status 0
  local rc=0
  kill -TERM "$server"
  wait "$server" || rc=$?
  [ "$rc" = 0 ] || { echo "the service exited $rc on SIGTERM, not 0:"; cat "$work/serve.log"; exit 1; }
  echo "-- SIGTERM: exit 0"
}
# 1. as installed: the built-in model
service_up
models=$(http_get "$base/v1/models")
[[ "$models" == *'"s1-pico-flappy"'* ]] || { echo "the installed service does not serve the built-in model: $models"; exit 1; }
service_down
# 2. a model of one's own, as docs/packaging.md says: the directory is there on a fresh install
[ "$(stat -c '%U:%G %a' /var/lib/skycmd)" = "root:root 755" ] ||
  { echo "/var/lib/skycmd: $(stat -c '%U:%G %a' /var/lib/skycmd 2>&1), expected root:root 755"; exit 1; }
cp /etc/default/skycmd "$work/default.orig"
own_model=1
install -m 644 "$work/pico.gguf" /var/lib/skycmd/my-model.gguf
sed -i 's|^SKYCMD_SERVE_OPTIONS="|&--model my=/var/lib/skycmd/my-model.gguf |' /etc/default/skycmd
service_up
models=$(http_get "$base/v1/models")
[[ "$models" == *'"my"'* ]] || { echo "the service does not serve /var/lib/skycmd/my-model.gguf: $models"; exit 1; }
# replace the file and reload (systemctl kill -s HUP skycmd): the new file is read as nobody
install -m 644 /usr/share/skycmd/models/s1-pico-flappy.gguf /var/lib/skycmd/my-model.gguf
kill -HUP "$server"
reloaded=""
for _ in $(seq 100); do
  reloaded=$(http_get "$base/metrics" | grep -c '^skycmd_reloads_total{result="ok"} 1$' || true)
  [ "$reloaded" = 1 ] && break
  sleep 0.1
done
[ "$reloaded" = 1 ] || { echo "SIGHUP did not reload the model:"; cat "$work/serve.log"; kill "$server"; exit 1; }
echo "-- SIGHUP: the replaced file reloaded"
service_down
server=""
rm /var/lib/skycmd/my-model.gguf
own_model=0
cp "$work/default.orig" /etc/default/skycmd

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
[ ! -e /var/lib/skycmd ] || { echo "purge left /var/lib/skycmd"; exit 1; }

echo "== dpkg -P (remove and purge)"
dpkg -P "libskycmd$abi-dbgsym" libskycmd-dev "libskycmd$abi" >/dev/null   # (skycmd: above)
[ ! -e /usr/bin/skycmd ] && [ ! -e /usr/include/skycmd.h ] && [ ! -e /etc/default/skycmd ]
[ ! -e /usr/lib/systemd/system/skycmd.service ]
if pkg-config --exists skycmd 2>/dev/null; then echo "skycmd.pc still installed"; exit 1; fi
echo "test-debs.sh: all checks passed ($(( $(date +%s) - start )) s; lintian: $errors errors, $warnings warnings)"
