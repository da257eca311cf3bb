#!/usr/bin/env bash
# consumer-test.sh WORKDIR - use the Node binding from a new project outside the repository,
# the documented way (docs/bindings.md, bindings/node/README.md): `npm pack` the binding,
# `npm init -y` a project, `npm install ./skycmd-X.Y.Z.tgz` (which builds the addon with
# node-gyp against the installed libskycmd found by pkg-config), then `require('skycmd')`,
# answer the example request and write the dump. The contract (env, dump format) is in
# bindings/run-consumers.sh. npm uses its normal cache (node-addon-api comes from it or the
# registry).
set -euo pipefail
work=$(realpath -m "$1")
mkdir -p "$work/consumer"
node --version
npm --version
cd "$work"
npm pack --silent --pack-destination "$work" "$SKYCMD_REPO/bindings/node" >/dev/null
tarball=$(ls "$work"/skycmd-*.tgz)
echo "packed $(basename "$tarball"): $(tar -tzf "$tarball" | tr '\n' ' ')"
cd "$work/consumer"
npm init -y >/dev/null
npm install --no-audit --no-fund --prefer-offline "$tarball"
addon=node_modules/skycmd/build/Release/skycmd.node
# The addon must find libskycmd through the loader path only: no absolute RPATH/RUNPATH.
if readelf -d "$addon" | grep -E '\((RPATH|RUNPATH)\)' | grep -q '\[/'; then
    echo "the addon carries an absolute rpath:"; readelf -d "$addon" | grep -E 'RPATH|RUNPATH'; exit 1
fi
cat > consumer.js <<'JS'
// A program of a downstream project: answer a request with the Node binding of libskycmd
// and write its typed answers in the cross-check's dump form.
const fs = require('fs');
const sky = require('skycmd');

function bits(v) {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(v);
  return b.toString('hex');
}

async function main() {
  const [modelPath, requestPath, dumpPath] = process.argv.slice(2);
  const m = sky.Model.open(modelPath);
  try {
    const text = fs.readFileSync(requestPath, 'utf8');
    const r = await m.decide(text);
    let s = `input_tokens ${r.inputTokens}\n`;
    for (const [, a] of r.answers) {
      const conf = a.confidence === undefined ? 'none' : bits(a.confidence);
      s += `answer ${a.id} ${a.type} choice=${a.choice ?? ''} value=${bits(a.value)} confidence=${conf}\n`;
      for (const p of a.probabilities) s += `option ${p.key} ${bits(p.p)}\n`;
    }
    fs.writeFileSync(dumpPath, s);
    console.log(`libskycmd ${sky.version()}, model ${r.model}: ${r.answers.size} answers, ${r.inputTokens} input tokens`);
    // The streaming batch: one result per request, in order; a bad one does not stop it.
    async function* requests() { yield text; yield '{"state": 1'; yield text; }
    const stream = [];
    for await (const { response, error } of m.decideEach(requests())) {
      if (error) stream.push(error.code);
      else if (response.json === r.json) stream.push('same');
      else throw new Error('decideEach answered differently from decide');
    }
    console.log(`stream: ${stream.join(' ')}`);
  } finally {
    m.close();
  }
  // The built-in model, found where the library is installed (on the thread pool).
  const d = await sky.Model.openDefaultAsync();
  console.log(`built-in model ${d.name}: ${sky.defaultModelPath()}`);
  d.close();
}
main().catch((e) => { console.error('consumer:', e); process.exit(1); });
JS
# A prefix install is not on the loader's path: say where it is, as its user would.
out=$(env -u SKYCMD_DEFAULT_MODEL LD_LIBRARY_PATH="$SKYCMD_PREFIX/lib" node consumer.js "$SKYCMD_CONSUMER_MODEL" "$SKYCMD_CONSUMER_REQUEST" "$SKYCMD_CONSUMER_DUMP")
echo "$out"
grep -qxF "stream: same SKYCMD_E_JSON same" <<<"$out" || { echo "decideEach did not stream per-request results"; exit 1; }
# the built-in model of the prefix, found beside the installed library
grep -qxF "built-in model s1-pico-flappy: $(realpath "$SKYCMD_PREFIX")/share/skycmd/models/s1-pico-flappy.gguf" <<<"$out" ||
    { echo "the built-in model was not found in the prefix"; exit 1; }
