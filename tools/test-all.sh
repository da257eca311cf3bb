#!/usr/bin/env bash
# Run every test of the project: the Criterion/CTest suite (release build), the same suite
# under AddressSanitizer + UBSan, the HTTP server tests, the bindings (Go, Java, Node, Rust),
# the Debian packages with a pkg-config consumer, and the ABI check. Expects tools/setup.sh --all
# to have run. Exits non-zero on the first failing stage.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$root/.venv-ci/bin:/usr/local/go/bin:$HOME/.cargo/bin:$PATH"
jobs=$(nproc)

stage() { printf '\n===== %s =====\n' "$*"; }

stage "build (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build

stage "ctest (RelWithDebInfo)"
ctest --test-dir build --output-on-failure -j"$jobs"

stage "ctest (ASan + UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSKYCMD_SANITIZE=ON >/dev/null
cmake --build build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

for script in bindings/run-tests.sh packaging/test-debs.sh abi/check.sh; do
  if [ -f "$script" ]; then
    stage "$script"
    bash "$script" "$root/build"
  fi
done

stage "all test stages passed"
