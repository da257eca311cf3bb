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

// ---- arguments: what a user gets wrong is a clear error, never a coercion or a crash ----

const typeErr = (name) => (e) => e instanceof TypeError && !(e instanceof SkycmdError) && e.message.includes(`"${name}"`);

test('wrong argument types are TypeErrors naming the argument, never a silent coercion', () => {
  const m = Model.fromBytes(modelBytes);
  try {
    const cyclic = {};
    cyclic.self = cyclic;
    // decide: undefined used to reach the library as "" (SKYCMD_E_JSON), null/5 as JSON
    for (const bad of [undefined, null, 5, true, () => 1, Symbol('s'), 10n, cyclic, { state: 'x', questions: 1n }]) {
      assert.throws(() => m.decide(bad), typeErr('request'), String(typeof bad));
    }
    // decideBatch/decideEach: a number or a plain object used to answer [] (Array.from), a
    // string was split into one-character requests
    for (const bad of [5, {}, { length: 2 }, 'abc', flappyRequest, null, undefined]) {
      assert.throws(() => m.decideBatch(bad), typeErr('requests'), String(bad).slice(0, 20));
      assert.throws(() => m.decideEach(bad), typeErr('requests'), String(bad).slice(0, 20));
    }
    assert.throws(() => m.decideBatch([flappyRequest, undefined]), typeErr('requests[1]'));
    assert.throws(() => m.decideBatch([flappyRequest, cyclic]), typeErr('requests[1]'));
    assert.deepEqual(m.decideBatch(new Set([flappyRequest])), [m.decide(flappyRequest)], 'any iterable');
    // tokenize: undefined used to be tokenized as the text "undefined"
    for (const bad of [undefined, null, 5, {}, ['a']]) assert.throws(() => m.tokenize(bad), typeErr('text'), String(bad));
    // the name option: coerced with String() and cut at a NUL before
    for (const bad of [5, null, 'drone\u0000pilot', 'drone\ud800']) {
      assert.throws(() => Model.fromBytes(modelBytes, { name: bad }), typeErr('options.name'), JSON.stringify(bad));
    }
    const noOptions = Model.fromBytes(modelBytes, null);
    assert.equal(noOptions.info.name, 's1-pico-flappy');
    noOptions.close();
    assert.equal(m.decide(flappyRequest).answers.action.choice, 'thrust', 'the model answers after them');
  } finally {
    m.close();
  }
});

test('text is never cut at a NUL nor silently re-encoded (unpaired surrogates)', () => {
  const m = Model.fromBytes(modelBytes);
  try {
    const body = JSON.parse(flappyRequest);
    const cut = m.decide({ ...body, state: 'vy 0 dx 36' });
    const whole = m.decide({ ...body, state: 'vy 0 dx 36\u0000up 9 dn 7' });
    assert.ok(whole.usage.input_tokens > cut.usage.input_tokens, 'the state was cut at its NUL');
    assert.notDeepEqual(m.tokenize('vy\u0000up'), m.tokenize('vy'));
    // a raw NUL in JSON text is malformed JSON, not the end of the text
    assert.throws(() => m.decide(`${flappyRequest}\u0000{`), (e) => e.status === 'SKYCMD_E_JSON' && /extra data/.test(e.message));
    // an unpaired surrogate: TextEncoder would make it U+FFFD and answer another request
    const text = `{"state": "vy \ud800 dx", "questions": ${JSON.stringify(body.questions)}}`;
    const json = (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_JSON' && /unpaired surrogate/.test(e.message);
    assert.throws(() => m.decide(text), json);
    assert.throws(() => m.decide({ ...body, state: 'vy \udc00 dx' }), json, 'as an object, as the library says');
    assert.throws(() => m.decideBatch([flappyRequest, text]), (e) => json(e) && /^request 1: /.test(e.message));
    assert.throws(() => m.tokenize('a\ud800b'), typeErr('text'));
    assert.ok(m.tokenize('a\ud83d\ude00b').length > 0, 'a surrogate pair is fine');
  } finally {
    m.close();
  }
});

test('decideEach: an item that is no request fails only its own slot', () => {
  const m = Model.fromBytes(modelBytes);
  try {
    const cyclic = {};
    cyclic.self = cyclic;
    const lone = `{"state": "\ud800", "questions": {}}`;
    const got = m.decideEach([flappyRequest, undefined, 5, cyclic, '{', lone, flappyRequest]);
    assert.equal(got.length, 7);
    const want = m.decide(flappyRequest);
    assert.deepEqual(got[0], { response: want });
    assert.deepEqual(got[6], { response: want });
    for (const i of [1, 2, 3]) {
      assert.ok(got[i].error instanceof SkycmdError, `item ${i}`);
      assert.equal(got[i].error.status, 'SKYCMD_E_INVALID_ARGUMENT', `item ${i}`);
      assert.match(got[i].error.message, /"request"/);
    }
    assert.equal(got[4].error.status, 'SKYCMD_E_JSON');
    assert.equal(got[5].error.status, 'SKYCMD_E_JSON');
    assert.deepEqual(m.decideEach([undefined]).map((r) => r.error.status), ['SKYCMD_E_INVALID_ARGUMENT']);
  } finally {
    m.close();
  }
});

test('a model larger than wasm32 memory can hold is SKYCMD_E_NOMEM', (t) => {
  let big;
  try {
    big = new Uint8Array(2 ** 32); // zero pages, never touched
  } catch (e) {
    t.skip(`no 4 GiB typed array here: ${e.message}`);
    return;
  }
  // 2^32 bytes used to wrap to malloc(0) and fail with a bare RangeError
  assert.throws(() => Model.fromBytes(big), (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_NOMEM' && /4 GiB/.test(e.message));
  big = null;
  const m = Model.fromBytes(modelBytes);
  assert.equal(m.decide(flappyRequest).answers.action.choice, 'thrust');
  m.close();
});

test('Model.fromUrl: a url that is no string or URL is a TypeError (not a file named "undefined")', async () => {
  await assert.rejects(Model.fromUrl(undefined), typeErr('url'));
  await assert.rejects(Model.fromUrl(5), typeErr('url'));
  await assert.rejects(Model.fromUrl(flappyModel, { name: 5 }), typeErr('options.name'));
  const m = await Model.fromUrl({ href: pathToFileURL(flappyModel).href }); // another realm's URL
  assert.equal(m.info.name, 's1-pico-flappy');
  m.close();
});

test('Model.fromUrl: a refused connection (with its reason) and a download cut short are SKYCMD_E_IO', async () => {
  // a port nobody listens on (one just freed)
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = probe.address().port;
  await new Promise((resolve) => probe.close(resolve));
  await assert.rejects(Model.fromUrl(`http://127.0.0.1:${port}/model.gguf`),
    (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_IO' && /ECONNREFUSED/.test(e.message));
  // the connection lost in the middle of the body: fetch's reader rejects with a TypeError
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-length': modelBytes.length });
    res.write(modelBytes.subarray(0, 70000), () => res.destroy());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${server.address().port}/model.gguf`;
    await assert.rejects(Model.fromUrl(url, { onProgress: () => {} }),
      (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_IO' && /download failed after \d+ bytes/.test(e.message));
    await assert.rejects(Model.fromUrl(url), (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_IO');
  } finally {
    server.close();
  }
});
