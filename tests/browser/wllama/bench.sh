#!/usr/bin/env bash
# bench.sh [OUT_DIR] - a benchmark, not a test: wllama 3.8.1 (the pinned npm package
# @wllama/wllama, llama.cpp in WebAssembly) against our package @skycmd/wasm on
# models/s1-pico-flappy.gguf and examples/flappy-drone.json (plus its `action` question
# alone), in one headless Chromium run; bench.mjs beside this script says what is timed and
# compared, and prints the table. Exit 1 when an engine fails or the answers differ by more
# than 1e-3; 2 when something it needs is missing.
#
# It uses what tests/browser/run.sh uses, and builds nothing of the library:
#   - Debian's /usr/bin/chromium (run.sh installs it when missing);
#   - Node >= 20 (on an older Node, the Node 20.20.2 that run.sh unpacks into
#     tests/browser/.node/) with playwright-core from tests/browser/package-lock.json
#     (npm ci there when it is missing) and @wllama/wllama 3.8.1 from
#     tests/browser/wllama/package-lock.json (npm ci here when it is missing);
#   - the native CLI SKYCMD_NATIVE_BUILD/skycmd (default build/), a Release build;
#   - the reactor module SKYCMD_WASM_BUILD/skycmd.wasm (default build-wasm-simd/, made by
#     tools/build-wasm.sh --simd, as run.sh makes it).
# Knobs (environment): WLLAMA_BENCH_ROUNDS (40), WLLAMA_BENCH_ROUND_OURS (10 answers),
# WLLAMA_BENCH_ROUND_WLLAMA (3), WLLAMA_BENCH_WARMUP_OURS (300), WLLAMA_BENCH_WARMUP_WLLAMA (20),
# WLLAMA_BENCH_TOLERANCE (1e-3), WLLAMA_BENCH_LOAD_TIMEOUT_MS (60000: wllama's load; a worker
# that dies while loading leaves its promise pending), WLLAMA_DIR (another @wllama/wllama).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
browser=$(dirname "$here")
root=$(cd "$here/../../.." && pwd)
native=${SKYCMD_NATIVE_BUILD:-$root/build}
case $native in /*) ;; *) native=$root/$native ;; esac
wasm=${SKYCMD_WASM_BUILD:-$root/build-wasm-simd}
case $wasm in /*) ;; *) wasm=$root/$wasm ;; esac
out=$(mkdir -p "${1:-$native/browser-artifacts}" && cd "${1:-$native/browser-artifacts}" && pwd)
die() { echo "bench.sh: $*" >&2; exit 2; }

[ -x /usr/bin/chromium ] || [ -n "${CHROMIUM:-}" ] || die "/usr/bin/chromium is missing (tests/browser/run.sh installs it as root)"
[ -x "$native/skycmd" ] || die "$native/skycmd is missing (a Release build: cmake --build $native --target skycmd_cli)"
[ -s "$wasm/skycmd.wasm" ] || die "$wasm/skycmd.wasm is missing (tools/build-wasm.sh --simd $wasm)"

command -v node >/dev/null || die "node is needed (and npm)"
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  node20=$(ls -d "$browser"/.node/node-linux-*-20.20.2/package/bin 2>/dev/null | head -1)
  [ -n "$node20" ] || die "Node $(node --version) is too old for playwright-core: run tests/browser/run.sh once (it unpacks Node 20.20.2)"
  export PATH=$node20:$PATH
fi

# The pinned packages, installed with npm ci when the installed version is not the locked one.
ensure() { # DIR PACKAGE
  local want have
  want=$(node -p 'require(process.argv[1]).packages["node_modules/" + process.argv[2]].version' "$1/package-lock.json" "$2")
  have=$(node -p 'try { require(process.argv[1]).version } catch { "" }' "$1/node_modules/$2/package.json" 2>/dev/null)
  if [ "$want" != "$have" ]; then
    (cd "$1" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >"$out/npm-$(basename "$1").log" 2>&1) ||
      { cat "$out/npm-$(basename "$1").log" >&2; die "npm ci in $1 failed"; }
  fi
}
ensure "$browser" playwright-core
ensure "$here" @wllama/wllama

echo "chromium --version: $(${CHROMIUM:-/usr/bin/chromium} --version 2>/dev/null)" >&2
SKYCMD_ROOT=$root SKYCMD_NATIVE=$native/skycmd SKYCMD_WASM_MODULE=$wasm/skycmd.wasm SKYCMD_ARTIFACTS=$out \
  exec node "$here/bench.mjs"
