#!/usr/bin/env bash
# test-release.sh - the release tarball and what a user builds from it, without root:
#   1. tools/release-tarball.sh makes skycmd-X.Y.Z.tar.gz, the same bytes twice, and
#      the Homebrew formula for it (packaging/homebrew/skycmd.rb.in with its url and
#      sha256 filled in; the steps below use that filled formula);
#   2. the formula's `install` commands on the unpacked tarball, with pkg-config seeing
#      only the formula's dependencies (cjson, libmicrohttpd, utf8proc, zstd, zlib and what their .pc
#      files require; Criterion hidden): -DBUILD_TESTING=OFF configures no test and
#      builds the library, the CLI and the server;
#   3. the installed prefix is moved elsewhere (relocatable install): a consumer compiles
#      with only PKG_CONFIG_PATH=<moved>/lib/pkgconfig, and <moved>/bin/skycmd runs with
#      no LD_LIBRARY_PATH through its $ORIGIN-relative RUNPATH;
#   4. the commands of the formula's `test do` block, with its own consumer.c and request.
# Homebrew cannot be installed here; the commands below are the formula's, and this script
# fails if the formula's install lines change without it. Exit 0 when every check passed.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-release-test.XXXXXX")
formula=$work/skycmd.rb # filled by tools/release-tarball.sh below
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH
start=$(date +%s)
version=$(awk '/^#define SKYCMD_VERSION_STRING /{gsub(/"/, "", $3); print $3}' "$src/include/skycmd.h")

echo "== release tarball (twice: the same bytes)"
"$src/tools/release-tarball.sh" --formula "$formula" "$work/dist1" > "$work/r1"
"$src/tools/release-tarball.sh" --formula "$work/skycmd2.rb" "$work/dist2" > "$work/r2"
tarball=$work/dist1/skycmd-$version.tar.gz
sha=$(sha256sum "$tarball" | cut -d' ' -f1)
cmp "$tarball" "$work/dist2/skycmd-$version.tar.gz" || { echo "the tarball is not deterministic"; exit 1; }
grep -q "^  sha256 \"$sha\"" "$formula" || { echo "the filled formula lacks sha256 $sha"; exit 1; }
cmp -s "$formula" "$work/skycmd2.rb" || { echo "the filled formula is not deterministic"; exit 1; }
echo "-- $(basename "$tarball"): $(tar -tzf "$tarball" | wc -l) entries, sha256 $sha"
tar -tzf "$tarball" > "$work/entries"
if grep -q 'homebrew/skycmd.rb$' "$work/entries"; then echo "a filled formula is inside the tarball"; exit 1; fi
grep -qx "skycmd-$version/LICENSE" "$work/entries" || { echo "the tarball has no LICENSE"; exit 1; }
# the changelogs describe this version (CHANGELOG.md and the Debian packages' entry)
grep -q "^## $version " "$src/CHANGELOG.md" || { echo "CHANGELOG.md has no entry for $version"; exit 1; }
[ "$(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -S Version 2>/dev/null ||
     sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$src/packaging/debian/changelog")" = "$version" ] ||
  { echo "packaging/debian/changelog's newest entry is not $version"; exit 1; }

echo "== pkg-config with the formula's dependencies only"
pcdir=$work/pkgconfig
mkdir -p "$pcdir"
# (libzstd: the formula's zstd; zlib: the system's, which Homebrew does not list)
pending=(libcjson libutf8proc libmicrohttpd libzstd zlib)
while [ ${#pending[@]} -gt 0 ]; do
  mod=${pending[0]}; pending=("${pending[@]:1}")
  [ -e "$pcdir/$mod.pc" ] && continue
  ln -s "$(pkg-config --variable=pcfiledir "$mod")/$mod.pc" "$pcdir/$mod.pc"
  for req in $(pkg-config --print-requires --print-requires-private "$mod" | awk '{print $1}'); do
    pending+=("$req")
  done
done
export PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_PATH=
echo "-- visible: $(cd "$pcdir" && ls | sed 's/\.pc$//' | tr '\n' ' ')"
if pkg-config --exists criterion; then echo "Criterion is still visible to pkg-config"; exit 1; fi

echo "== the formula's install (cmake -DBUILD_TESTING=OFF + std_cmake_args)"
# The formula must still say exactly this (std_cmake_args is what Homebrew adds).
for line in 'system "cmake", "-S", ".", "-B", "build", "-DBUILD_TESTING=OFF", "-DSKYCMD_SERVE=ON", *std_cmake_args' \
            'system "cmake", "--build", "build"' 'system "cmake", "--install", "build"'; do
  grep -qF "    $line" "$formula" || { echo "the formula no longer runs: $line"; exit 1; }
done
mkdir -p "$work/unpack"
tar -xzf "$tarball" -C "$work/unpack"
cellar=$work/Cellar/skycmd/$version
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
# std_cmake_args on Linux, minus what only matters on macOS
std_cmake_args=(-DCMAKE_INSTALL_PREFIX="$cellar" -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_BUILD_TYPE=Release
                -DCMAKE_FIND_FRAMEWORK=LAST -DCMAKE_VERBOSE_MAKEFILE=OFF -Wno-dev -DBUILD_TESTING=OFF)
(
  cd "$work/unpack/skycmd-$version"
  cmake -S . -B build -DBUILD_TESTING=OFF -DSKYCMD_SERVE=ON "${std_cmake_args[@]}" "${gen[@]}" > "$work/configure.log"
  nice cmake --build build > "$work/build.log"
  cmake --install build > "$work/install.log"
  ctest --test-dir build -N > "$work/ctest-N.log"
  grep -q "^Total Tests: 0$" "$work/ctest-N.log" || { echo "tests are configured:"; cat "$work/ctest-N.log"; exit 1; }
  find build -name 'test_*' -type f -perm -u+x > "$work/test-programs"
  [ ! -s "$work/test-programs" ] || { echo "test programs were built:"; cat "$work/test-programs"; exit 1; }
  grep -q "libmicrohttpd" build/CMakeCache.txt
)
echo "-- configured without Criterion; ctest -N: $(grep '^Total Tests' "$work/ctest-N.log")"
for f in lib/libskycmd.so lib/libskycmd.a lib/pkgconfig/skycmd.pc include/skycmd.h bin/skycmd \
         lib/cmake/skycmd/skycmdConfig.cmake share/man/man1/skycmd-serve.1.gz \
         share/bash-completion/completions/skycmd; do
  [ -e "$cellar/$f" ] || { echo "the install lacks $f"; exit 1; }
done
"$cellar/bin/skycmd" serve --help > "$work/serve-help.txt"   # the server is built in
grep -q "usage: skycmd serve" "$work/serve-help.txt"
# with libmicrohttpd >= 1.0.1 (--help prints without a server: --version names the library)
"$cellar/bin/skycmd" --version | grep -E "HTTP: libmicrohttpd 1\.[0-9]" ||
  { echo "the installed skycmd has no server on libmicrohttpd >= 1.0.1:"; "$cellar/bin/skycmd" --version; exit 1; }

echo "== the prefix moved elsewhere"
moved=$work/elsewhere/opt/skycmd
mkdir -p "$(dirname "$moved")"
mv "$cellar" "$moved"
rm -rf "$work/Cellar" "$work/unpack"
export PKG_CONFIG_PATH=$moved/lib/pkgconfig
echo "-- pkg-config: $(pkg-config --cflags --libs skycmd)"
[ "$(pkg-config --variable=prefix skycmd)" -ef "$moved" ] || { echo "the .pc does not follow the move"; exit 1; }
readelf -d "$moved/bin/skycmd" | grep -E 'RUNPATH|RPATH' | sed 's/^ */-- /'
env -u LD_LIBRARY_PATH "$moved/bin/skycmd" --version | tee "$work/version"
grep -q "library $version" "$work/version"
ldd "$moved/bin/skycmd" > "$work/ldd"
grep -q "$moved/bin/../lib/libskycmd.so" "$work/ldd" ||
  { echo "bin/skycmd does not load the moved library:"; cat "$work/ldd"; exit 1; }

echo "== the formula's test block (its consumer.c and request.json)"
testpath=$work/testpath
mkdir -p "$testpath"
# the heredocs of `test do`: <<~C ... C and <<~JSON ... JSON, indentation removed and
# Ruby's double-quote escape '\\' read as '\' (these heredocs interpolate)
heredoc() {
  awk -v tag="$1" '$0 ~ "<<~"tag"$" {on=1; next} on && $1 == tag {exit} on' "$formula" |
    sed -E -e 's/^      //' -e 's/\\\\/\\/g'
}
heredoc C > "$testpath/consumer.c"
heredoc JSON > "$testpath/request.json"
[ -s "$testpath/consumer.c" ] && [ -s "$testpath/request.json" ]
# Homebrew's compiler shim adds an rpath for each -L directory; here the .pc's libdir.
cd "$testpath"
cc consumer.c -o consumer $(pkgconf --cflags --libs skycmd) -Wl,-rpath,"$(pkgconf --variable=libdir skycmd)"
[ "$(env -u LD_LIBRARY_PATH ./consumer)" = "$version" ] || { echo "consumer did not print $version"; exit 1; }
echo "-- consumer: $(./consumer)"
bin=$moved/bin
"$bin/skycmd" random s1-pico "$testpath/pico.gguf"
# (outputs go to files first: grep -q closing a pipe early would trip pipefail)
"$bin/skycmd" inspect "$testpath/pico.gguf" > "$testpath/inspect.txt"
grep -q "GGUF v3" "$testpath/inspect.txt"
"$bin/skycmd" decide "$testpath/pico.gguf" "$testpath/request.json" > "$testpath/out.json"
grep -q '"answers"' "$testpath/out.json"
grep -q '"action"' "$testpath/out.json"
"$bin/skycmd" --version > "$testpath/version.txt"
grep -q "$version" "$testpath/version.txt"
echo "test-release.sh: all checks passed ($(( $(date +%s) - start )) s)"
