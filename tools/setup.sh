#!/usr/bin/env bash
# Install everything libskycmd needs on a fresh Debian (bookworm) machine, as root, and
# build it into ./build. Idempotent: a second run only rebuilds what changed.
#   tools/setup.sh            # system packages + C build
#   tools/setup.sh --all      # also the Python test venv and the binding toolchains' deps
set -euo pipefail
cd "$(dirname "$0")/.."

want_all=0
[ "${1:-}" = "--all" ] && want_all=1

apt_pkgs=(build-essential cmake ninja-build pkg-config git ca-certificates
          libcjson-dev libutf8proc-dev libmicrohttpd-dev libcriterion-dev
          libzstd-dev zlib1g-dev zstd
          python3 python3-venv)
if [ "$want_all" = 1 ]; then
  apt_pkgs+=(clang libclang-rt-14-dev abigail-tools wrk ruby valgrind dpkg-dev file lintian python3-dev)
fi
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "$want_all" = 1 ]; then
  # Python packages used by the HTTP tests (wire compatibility with the real client)
  # and SWIG >= 4.2 for the Node-API bindings; versions pinned in tools/requirements-ci.txt.
  if [ ! -x .venv-ci/bin/python ]; then python3 -m venv .venv-ci; fi
  .venv-ci/bin/pip install -q --disable-pip-version-check -r tools/requirements-ci.txt
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
