// api.test.mjs - the package's API contract: loading (every kind of source, idempotent, every
// WASI import answered), decideBatch/decideEach against decide one by one, bad input as
// SkycmdError (never a trap), close semantics, wasm memory flat over repeated calls, the
// typed request builders, Model.fromUrl with progress.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import * as sky from '../skycmd.js';
import { wasmPath, flappyModel, flappyRequest, goldenRequests, root } from './helpers.mjs';

const { init, Model, SkycmdError, Status, choice, score, noul, request, Choice, Score, Noul, Request } = sky;
const wasmBytes = readFileSync(wasmPath);
const modelBytes = readFileSync(flappyModel);
const first = init(wasmBytes);
await first;
const goodBodies = goldenRequests.filter((r) => !r.expect_error).map((r) => r.body);

test('init is idempotent and version() answers', async () => {
  assert.equal(init(), first);
  assert.equal(init(new URL('file:///nonexistent.wasm')), first);
  await init();
  assert.match(sky.version(), /^\d+\.\d+\.\d+$/);
  assert.match(sky.kernels(), /^f32=\S+ int8=\S+$/);
});

test('every kind of init source loads the module', async () => {
  const sources = {
    Uint8Array: () => new Uint8Array(wasmBytes),
    ArrayBuffer: () => wasmBytes.buffer.slice(wasmBytes.byteOffset, wasmBytes.byteOffset + wasmBytes.length),
    'WebAssembly.Module': () => new WebAssembly.Module(wasmBytes),
    'file URL': () => pathToFileURL(wasmPath),
    'file URL string': () => pathToFileURL(wasmPath).href,
    'path string': () => wasmPath,
    Response: () => new Response(wasmBytes, { headers: { 'content-type': 'application/wasm' } }),
    'Response (no wasm type)': () => new Response(wasmBytes),
  };
  let n = 0;
  for (const [kind, make] of Object.entries(sources)) {
    // a fresh instance of the package per source (another module URL)
    const fresh = await import(`../skycmd.js?source=${n++}`);
    await fresh.init(make());
    const m = fresh.Model.fromBytes(modelBytes);
    assert.equal(m.decide(flappyRequest).answers.action.choice, 'thrust', kind);
    m.close();
  }
  const fresh = await import('../skycmd.js?source=bad');
  await assert.rejects(fresh.init(new Uint8Array([0, 97, 115, 109, 9, 9])), WebAssembly.CompileError);
  await fresh.init(wasmBytes); // a failed init may be retried
});

test('every import of the module is answered by the WASI shim', () => {
  const imports = WebAssembly.Module.imports(new WebAssembly.Module(wasmBytes));
  assert.ok(imports.length > 0);
  for (const imp of imports) {
    assert.equal(imp.module, 'wasi_snapshot_preview1', imp.name);
    assert.ok(sky.WASI_IMPORTS.includes(imp.name), `${imp.name} is not answered`);
  }
  for (const name of ['fd_write', 'clock_time_get', 'random_get', 'proc_exit', 'environ_get']) {
    assert.ok(sky.WASI_IMPORTS.includes(name), name);
  }
});

test('status names are the library\'s pinned values', () => {
  for (let code = 0; code <= 14; code++) {
    const name = sky.statusName(code);
    assert.equal(new SkycmdError(code).status, name);
    if (code) assert.equal(Status[name.replace('SKYCMD_E_', '')], code);
  }
});

test('info and the model name option', () => {
  const m = Model.fromBytes(modelBytes, { name: 'drone-pilot' });
  try {
    assert.equal(m.info.name, 'drone-pilot');
    assert.equal(m.info.vocabSize, 1024);
    assert.equal(m.info.embeddingLength, 64);
    assert.ok(m.info.maxTokens > 0 && m.info.parameters > 0);
    assert.equal(m.decide(flappyRequest).model, 'drone-pilot');
  } finally {
    m.close();
  }
  const plain = Model.fromBytes(modelBytes.buffer.slice(modelBytes.byteOffset, modelBytes.byteOffset + modelBytes.length));
  assert.equal(plain.info.name, 's1-pico-flappy');
  plain.close();
});

test('decideBatch and decideEach equal decide one by one', () => {
  const m = Model.fromBytes(modelBytes);
  try {
    const bodies = [flappyRequest, ...goodBodies.slice(0, 30)];
    const single = bodies.map((b) => m.decide(b));
    assert.deepEqual(m.decideBatch(bodies), single);
    assert.deepEqual(m.decideBatch([]), []);
    // decideEach: bad requests in between fail only their own slot, as decide fails
    const bad = ['{', '{"state": "x", "questions": {}}', '[]'];
    const mixed = [bad[0], ...bodies.slice(0, 10), bad[1], ...bodies.slice(10), bad[2]];
    const each = m.decideEach(mixed);
    assert.equal(each.length, mixed.length);
    mixed.forEach((body, i) => {
      let want;
      try {
        want = { response: m.decide(body) };
      } catch (e) {
        want = { error: e };
      }
      if (want.response) {
        assert.deepEqual(each[i], want, `item ${i}`);
      } else {
        assert.ok(each[i].error instanceof SkycmdError, `item ${i}`);
        assert.equal(each[i].error.status, want.error.status);
        assert.equal(each[i].error.code, want.error.code);
        assert.equal(each[i].error.message, want.error.message);
      }
    });
    assert.deepEqual(m.decideEach([]), []);
    // decideBatch is all or nothing and names the failing request
    assert.throws(() => m.decideBatch([flappyRequest, bad[1]]),
      (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_REQUEST' && /^request 1: /.test(e.message));
    assert.throws(() => m.decideBatch([bad[0]]), (e) => e.status === 'SKYCMD_E_JSON' && e.code === 8);
  } finally {
    m.close();
  }
});

test('bad models are SkycmdError (never a trap), and the module keeps working', () => {
  const m = Model.fromBytes(modelBytes);
  const want = m.decide(flappyRequest);
  const cuts = [0, 3, 4, 8, 24, 100, 1000, 4096, modelBytes.length >> 1, modelBytes.length - 32];
  const cases = [
    ...cuts.map((n) => [`truncated to ${n} bytes`, modelBytes.subarray(0, n)]),
    ['a text file (README.md)', readFileSync(`${root}/README.md`)],
    ['a JSON request', new TextEncoder().encode(flappyRequest)],
    ['the module itself', wasmBytes],
  ];
  // a damaged tensor table: the header's tensor count made huge
  const huge = new Uint8Array(modelBytes);
  new DataView(huge.buffer).setBigUint64(8, 1n << 40n, true);
  cases.push(['a huge tensor count', huge]);
  for (const [what, bytes] of cases) {
    assert.throws(() => Model.fromBytes(bytes), (e) => {
      assert.ok(e instanceof SkycmdError, `${what}: ${e}`);
      assert.ok(['SKYCMD_E_FORMAT', 'SKYCMD_E_UNSUPPORTED', 'SKYCMD_E_TOO_LARGE'].includes(e.status), `${what}: ${e.status} ${e.message}`);
      assert.ok(e.message.length > 10, what);
      return true;
    }, what);
  }
  assert.throws(() => Model.fromBytes('not bytes'), TypeError);
  assert.deepEqual(m.decide(flappyRequest), want);
  m.close();
});

test('bad requests are SkycmdError with the library\'s message', () => {
  const m = Model.fromBytes(modelBytes);
  try {
    const cases = [
      ['', 'SKYCMD_E_JSON'],
      ['{"state": "x", ', 'SKYCMD_E_JSON'],
      ['{"state": "x", "questions": {}}', 'SKYCMD_E_REQUEST'],
      ['{"state": "x", "questions": {"q": {"type": "choice", "criteria": {}}}}', 'SKYCMD_E_REQUEST'],
      [{ state: 'x', questions: { q: { type: 'bogus', instructions: 'y' } } }, 'SKYCMD_E_REQUEST'],
      // valid, but its option markers do not fit the sequence budget: the plan fails
      [{ state: 'x', questions: { q: { type: 'choice', instructions: 'pick', criteria: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`option${i}`, 'a long description of this option '.repeat(3)])) } }, max_len: 64 }, 'SKYCMD_E_REQUEST', /option markers fit in max_len=64/],
    ];
    for (const [body, status, message] of cases) {
      assert.throws(() => m.decide(body), (e) => {
        assert.ok(e instanceof SkycmdError, String(e));
        assert.equal(e.status, status, e.message);
        if (message) assert.match(e.message, message);
        assert.equal(typeof e.code, 'number');
        assert.ok(e.message.length > 5);
        return true;
      }, JSON.stringify(body).slice(0, 60));
    }
    // the golden requests meant to fail fail alike one by one and in decideEach
    const refused = goldenRequests.filter((r) => r.expect_error).map((r) => r.body);
    const each = m.decideEach(refused);
    refused.forEach((body, i) => {
      try {
        assert.deepEqual(each[i], { response: m.decide(body) });
      } catch (e) {
        if (!(e instanceof SkycmdError)) throw e;
        assert.equal(each[i].error.message, e.message);
      }
    });
  } finally {
    m.close();
  }
});

test('close is idempotent; a closed model throws SKYCMD_E_MISUSE', () => {
  const m = Model.fromBytes(modelBytes);
  assert.equal(m.closed, false);
  m.close();
  m.close();
  assert.equal(m.closed, true);
  const misuse = (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_MISUSE' && e.code === 2;
  assert.throws(() => m.decide(flappyRequest), misuse);
  assert.throws(() => m.decideBatch([flappyRequest]), misuse);
  assert.throws(() => m.decideEach([flappyRequest]), misuse);
  assert.throws(() => m.tokenize('x'), misuse);
  assert.throws(() => m.info, misuse);
  assert.throws(() => new Model(), TypeError);
});

test('wasm memory stays flat over 1000 decides and repeated opens', () => {
  const m = Model.fromBytes(modelBytes);
  const batch = goodBodies.slice(0, 3);
  const round = () => {
    m.decide(flappyRequest);
    try { m.decide('{"state": 1'); } catch { /* expected */ }
    m.tokenize('vy 0 dx 36 up 9 dn 7 nxt 10 alt 32');
  };
  for (let i = 0; i < 50; i++) round();
  m.decideBatch(batch);
  m.decideEach([...batch, '{']);
  Model.fromBytes(modelBytes).close();
  const before = sky.memoryBytes();
  for (let i = 0; i < 1000; i++) round();
  for (let i = 0; i < 100; i++) {
    m.decideBatch(batch);
    m.decideEach([...batch, '{']);
  }
  for (let i = 0; i < 20; i++) Model.fromBytes(modelBytes, { name: `m${i}` }).close();
  assert.equal(sky.memoryBytes(), before, 'wasm memory grew');
  m.close();
});

test('typed request builders: the Node binding\'s names and JSON', () => {
  const req = request({
    state: 'vy 0 dx 36 up 9 dn 7 nxt 10 alt 32',
    questions: new Map([
      ['action', choice({ instructions: 'Which input keeps the drone flying through the next gap?', criteria: [['thrust', 'fire the rotors for an upward impulse'], ['glide', 'let gravity pull the drone down']] })],
      ['danger', noul({ instructions: 'Will the drone crash within the next half second if it keeps gliding?' })],
      ['margin', score({ instructions: 'How much room is left above and below the drone?', criteria: ['none', 'tight', 'comfortable'] })],
    ]),
  });
  assert.ok(req instanceof Request);
  assert.equal(req.json(), JSON.stringify(JSON.parse(flappyRequest)));
  const m = Model.fromBytes(modelBytes);
  assert.deepEqual(m.decide(req), m.decide(flappyRequest));
  m.close();
  // integer-like labels keep their order given as pairs
  assert.equal(new Choice({ criteria: [['2', 'b'], ['1', null]] }).toJSONText(), '{"type":"choice","criteria":{"2":"b","1":null}}');
  assert.equal(new Noul({ criteria: { true: 'yes' } }).toJSONText(), '{"type":"noul","criteria":{"true":"yes"}}');
  assert.ok(new Score({ criteria: ['a'] }) instanceof Score);
  const reqErr = (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_REQUEST';
  assert.throws(() => choice({ criteria: {} }), reqErr);
  assert.throws(() => score({ criteria: [] }), reqErr);
  assert.throws(() => noul({}), reqErr);
  assert.throws(() => request({ questions: { a: noul({ instructions: 'x' }) } }), reqErr);
  assert.throws(() => request({ state: 'x', questions: { a: { type: 'noul' } } }), reqErr);
});

test('typed request builders give the Node binding\'s JSON (when its addon is built)', async (t) => {
  let node;
  try {
    const { createRequire } = await import('node:module');
    node = createRequire(import.meta.url)(`${root}/bindings/node/index.js`);
  } catch (e) {
    t.skip(`the Node binding does not load here: ${e.message.split('\n')[0]}`);
    return;
  }
  const make = (lib) => lib.request({
    state: { x: 1, list: [1, 'two'] }, model: 'm',
    questions: [['b', new lib.Choice({ instructions: 'i', criteria: new Map([['10', 'ten'], ['2', null]]) })],
      ['a', new lib.Score({ criteria: ['lo', { hi: true }] })], ['c', new lib.Noul({ criteria: { false: 'no', true: 'yes' } })]],
  }).json();
  assert.equal(make(sky), make(node));
});

test('Model.fromUrl: file: URLs and HTTP with download progress', async () => {
  const m1 = await Model.fromUrl(pathToFileURL(flappyModel));
  assert.equal(m1.decide(flappyRequest).answers.action.choice, 'thrust');
  m1.close();
  const server = createServer((req, res) => {
    if (req.url !== '/model.gguf') { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': modelBytes.length });
    // in pieces, so that progress has steps
    let at = 0;
    const next = () => {
      if (at >= modelBytes.length) { res.end(); return; }
      res.write(modelBytes.subarray(at, at + 65536), next);
      at += 65536;
    };
    next();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const base = `http://127.0.0.1:${server.address().port}`;
    const seen = [];
    const m2 = await Model.fromUrl(`${base}/model.gguf`, { onProgress: (loaded, total) => seen.push([loaded, total]) });
    assert.ok(seen.length >= 2, `${seen.length} progress calls`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i][0] >= seen[i - 1][0]);
    assert.deepEqual(seen.at(-1), [modelBytes.length, modelBytes.length]);
    assert.ok(seen.every(([, total]) => total === modelBytes.length));
    assert.equal(m2.decide(flappyRequest).answers.action.choice, 'thrust');
    m2.close();
    await assert.rejects(Model.fromUrl(`${base}/missing.gguf`), (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_IO');
  } finally {
    server.close();
  }
});
