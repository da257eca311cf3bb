#!/usr/bin/env bash
# Install everything libskycmd needs on a fresh Debian (bookworm) machine, as root, and
# build it into ./build. Idempotent: a second run installs nothing and only rebuilds what changed.
#   tools/setup.sh            # system packages + C build
#   tools/setup.sh --all      # also everything tools/test-all.sh needs: sanitizer/fuzz clang,
#                             # valgrind, wrk, packaging tools, the pinned Python test venv and
#                             # the binding toolchains
#
# The binding toolchains are taken from Debian when missing; one that is present is used as it
# is (this is what tools/toolchains.sh puts on PATH) and must be new enough:
#   Go    >= 1.22   bindings/go/go.mod says `go 1.22`; Debian main has 1.19, so golang-1.22
#                   from bookworm-backports (a private sources file is added only then)
#   Rust  >= 1.78   cargo: bindings/rust/Cargo.lock is lock format v4; Debian's rustc/cargo
#                   1.63 are too old, so rustc-web + cargo-web (1.96 in bookworm-security)
#   Java  >= 17     javac (maven.compiler.release 17): openjdk-17-jdk-headless;
#                   Maven >= 3.6.3 (Surefire 3): Debian maven 3.8.7
#   Node  >= 18     package.json engines, Node-API 8: Debian nodejs 18 + npm 9 + node-gyp 9
#   Python 3 with venv and headers (python3-dev, python3-venv); pip packages pinned in
#                   tools/requirements-ci.txt (typesafe-sdk, and SWIG >= 4.2, which Debian
#                   bookworm does not have)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

want_all=0
[ "${1:-}" = "--all" ] && want_all=1

die() { echo "tools/setup.sh: $*" >&2; exit 1; }
# version_at_least HAVE NEED: true when HAVE >= NEED (dotted numbers)
version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_refresh() {  # apt-get update, once per run (or again after a sources change)
  if [ "$apt_updated" = 0 ]; then apt-get -o DPkg::Lock::Timeout=600 update -qq; apt_updated=1; fi
}
native_arch=$(dpkg --print-architecture)
apt_install() {  # install the given Debian packages that are not installed yet
  local missing=() p q
  for p in "$@"; do
    # a name without an architecture means this machine's own: on a multiarch machine (arm64
    # -dev packages for tools/test-arm64.sh) the bare name may answer for the foreign one
    # -dev packages for tools/test-arm64.sh) the bare name may answer for the foreign one
    q=$p; case "$p" in *:*) ;; *) q="$p:$native_arch" ;; esac
    dpkg-query -W -f='${Status}|${Architecture}\n' "$q" "$p" 2>/dev/null |
      grep -q -E "^install ok installed\|($native_arch|all)\$" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "tools/setup.sh: installing ${missing[*]}"
  apt_refresh
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
}

apt_install build-essential cmake ninja-build pkg-config git ca-certificates \
            libcjson-dev libutf8proc-dev libmicrohttpd-dev libcriterion-dev \
            libzstd-dev zlib1g-dev zstd \
            python3 python3-venv

# The server's HTTP library: libmicrohttpd 1.0.1 built from Debian's source package when the
# system's is older than 1.0 (bookworm: 0.9.75 cannot refuse obsolete line folding).
if ! pkg-config --atleast-version=1.0 libmicrohttpd 2>/dev/null; then
  tools/build-mhd.sh
fi

if [ "$want_all" = 1 ]; then
  # sanitizers and fuzzing (clang's runtimes), the ABI check, the load test, the HTTP SDK's
  # interpreter, the valgrind leak loop, the Debian packages and their lint, the systemd unit's
  # check (systemd-analyze, in package systemd; nothing is started), tests/cli/tokenize.sh
  # (xxd), the Python binding
  apt_install clang libclang-rt-14-dev abigail-tools wrk ruby valgrind dpkg-dev file lintian xxd \
              systemd python3-dev python3-venv

  . tools/toolchains.sh

  # Go: Debian's 1.22 when there is no Go or one too old (it lives in /usr/lib/go-1.22/bin,
  # ahead of /usr/bin on tools/toolchains.sh's PATH, so it also wins over golang-go 1.19)
  go_version() { local v; v=$(go env GOVERSION 2>/dev/null) || v=go0; echo "${v#go}"; }
  if ! command -v go >/dev/null || ! version_at_least "$(go_version)" 1.22; then
    apt_refresh
    if ! apt-cache show golang-1.22-go >/dev/null 2>&1; then
      . /etc/os-release
      [ "${VERSION_CODENAME:-}" = bookworm ] ||
        die "Go >= 1.22 is needed and this is not Debian bookworm (${PRETTY_NAME:-unknown}): install Go >= 1.22"
      echo "tools/setup.sh: adding bookworm-backports (for golang-1.22) in /etc/apt/sources.list.d/skycmd-bookworm-backports.sources"
      cat > /etc/apt/sources.list.d/skycmd-bookworm-backports.sources <<'SRC'
# Added by libskycmd's tools/setup.sh --all: Debian's Go 1.22 (bookworm has only 1.19).
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
      apt_updated=0
    fi
    apt_install golang-1.22-go
  fi
  hash -r
  go_version=$(go_version)
  version_at_least "$go_version" 1.22 ||
    die "Go $go_version ($(command -v go)) is too old: bindings/go needs Go >= 1.22 (Debian: golang-1.22 from bookworm-backports)"

  # Rust: Debian's rustc-web/cargo-web when there is no cargo, or when the cargo is Debian's
  # own too old one (package cargo, 1.63: cargo-web replaces it); a rustup one is left alone
  cargo_version() { cargo --version 2>/dev/null | awk '{print $2}'; }
  if ! command -v cargo >/dev/null ||
     { ! version_at_least "$(cargo_version)" 1.78 &&
       dpkg-query -S "$(command -v cargo)" 2>/dev/null | grep -q '^cargo:'; }; then
    apt_install rustc-web cargo-web
    hash -r
  fi
  cargo_version=$(cargo_version)
  version_at_least "$cargo_version" 1.78 ||
    die "cargo $cargo_version ($(command -v cargo)) is too old: bindings/rust needs cargo >= 1.78 (Cargo.lock v4; Debian: rustc-web + cargo-web from bookworm-security)"

  # Java
  command -v javac >/dev/null || apt_install openjdk-17-jdk-headless
  command -v mvn >/dev/null || apt_install maven
  javac_version=$(javac -version 2>&1 | awk '{print $2}')
  version_at_least "$javac_version" 17 ||
    die "javac $javac_version ($(command -v javac)) is too old: bindings/java needs a JDK >= 17 (Debian: openjdk-17-jdk-headless)"
  mvn_version=$(mvn -B -v 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' | awk '/^Apache Maven/ {print $3}')
  version_at_least "${mvn_version:-0}" 3.6.3 ||
    die "Maven ${mvn_version:-?} ($(command -v mvn)) is too old: bindings/java needs Maven >= 3.6.3 (Debian: maven)"

  # Node
  if ! command -v node >/dev/null; then
    apt_install nodejs npm node-gyp
  fi
  node_version=$(node --version); node_version=${node_version#v}
  version_at_least "$node_version" 18 ||
    die "Node $node_version ($(command -v node)) is too old: bindings/node needs Node >= 18 (Debian: nodejs)"
  command -v npm >/dev/null ||
    die "npm is missing beside Node $node_version ($(command -v node)): install the npm of that Node"

  # Python packages used by the HTTP tests (wire compatibility with the real client)
  # and SWIG >= 4.2 for the bindings; versions pinned in tools/requirements-ci.txt.
  if [ ! -x .venv-ci/bin/python ]; then python3 -m venv .venv-ci; fi
  .venv-ci/bin/pip install -q --disable-pip-version-check -r tools/requirements-ci.txt

  # The client generators of serve_openapi_clients (tests/serve/test_openapi_clients.py), kept
  # in .tools/ (git-ignored) so that the test needs no network: openapi-python-client is in the
  # venv above; openapi-generator's CLI jar from Maven (sha256 checked) for Java 17; the npm
  # packages openapi-typescript and typescript, exactly as tests/serve/openapi_clients/
  # package-lock.json pins them.
  oag_version=7.25.0
  oag_sha256=41ce4f6b07f196676439d710759fa1ced7a08066d06ff1bf314681470289efae
  oag_jar=.tools/openapi-generator/openapi-generator-cli-$oag_version.jar
  if ! echo "$oag_sha256  $oag_jar" | sha256sum -c --status 2>/dev/null; then
    echo "tools/setup.sh: fetching openapi-generator-cli $oag_version into .tools/openapi-generator"
    rm -f "$oag_jar"
    mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
      -Dartifact=org.openapitools:openapi-generator-cli:$oag_version -DoutputDirectory=.tools/openapi-generator
    echo "$oag_sha256  $oag_jar" | sha256sum -c --status ||
      die "$oag_jar: sha256 is not $oag_sha256"
  fi
  if ! cmp -s tests/serve/openapi_clients/package-lock.json .tools/npm/package-lock.json ||
     [ ! -x .tools/npm/node_modules/.bin/openapi-typescript ] || [ ! -x .tools/npm/node_modules/.bin/tsc ]; then
    echo "tools/setup.sh: installing openapi-typescript and typescript into .tools/npm"
    mkdir -p .tools/npm
    cp tests/serve/openapi_clients/package.json tests/serve/openapi_clients/package-lock.json .tools/npm/
    (cd .tools/npm && npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
  fi
fi

. tools/toolchains.sh   # (again: PKG_CONFIG_PATH for tools/build-mhd.sh's libmicrohttpd)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKYCMD_WERROR=ON >/dev/null
cmake --build build
