'use strict';
// node --test suite of what issue 14 added: typed request builders, decideBatch, openBuffer,
// the tokenizer, convert/quantize on the thread pool with progress and AbortSignal.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const sky = require('..');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skycmd-node-features-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const modelPath = process.env.SKYCMD_TEST_MODEL || path.join(tmp, 's1-pico.gguf');
if (!process.env.SKYCMD_TEST_MODEL) sky.randomModelSync('s1-pico', modelPath);
const requestPath = process.env.SKYCMD_EXAMPLE_REQUEST ||
  path.join(__dirname, '..', '..', '..', 'examples', 'flappy-drone.json');
const request = () => fs.readFileSync(requestPath, 'utf8');

function bits(v) {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(v);
  return b.toString('hex');
}
const dump = (r) => JSON.stringify([...r.answers.values()].map((a) => [a.id, a.choice, bits(a.value),
  a.confidence === undefined ? 'none' : bits(a.confidence), a.probabilities.map((p) => [p.key, bits(p.p)])])) +
  ` ${r.inputTokens}`;

// examples/flappy-drone.json made with the builders.
function builtExample(model) {
  return sky.request({
    state: 'vy 0 dx 36 up 9 dn 7 nxt 10 alt 32',
    questions: {
      action: new sky.Choice({
        instructions: 'Which input keeps the drone flying through the next gap?',
        criteria: { thrust: 'fire the rotors for an upward impulse', glide: 'let gravity pull the drone down' },
      }),
      danger: new sky.Noul({ instructions: 'Will the drone crash within the next half second if it keeps gliding?' }),
      margin: new sky.Score({
        instructions: 'How much room is left above and below the drone?',
        criteria: ['none', 'tight', 'comfortable'],
      }),
    },
    model,
  });
}

test('typed request builders answer like the JSON file', async () => {
  const m = sky.Model.open(modelPath);
  try {
    const want = m.decideSync(request());
    const got = await m.decide(builtExample());
    assert.equal(dump(got), dump(want));
    assert.equal(dump(m.decideSync(builtExample().toJSON())), dump(want));
    // The request's "model" is sent (a server routes by it); the response names the model
    // that answered.
    assert.ok(builtExample('my-drone').json().startsWith('{"model":"my-drone","state":'));
    const named = await m.decide(builtExample('my-drone'));
    assert.equal(named.model, 's1-pico');
    assert.equal(dump(named), dump(want));
    assert.equal(got.model, 's1-pico');
    // Order is kept for Maps even with integer-like keys; null describes nothing.
    const q = sky.request({ state: { vy: 0 }, questions: new Map([
      ['b', new sky.Choice({ instructions: 'Which?', criteria: new Map([['2', 'two'], ['1', null]]) })],
      ['a', new sky.Noul({ instructions: 'Crash?', criteria: { true: 'it crashes' } })],
    ]) });
    assert.equal(q.json(), '{"state":{"vy":0},"questions":{"b":{"type":"choice","instructions":"Which?","criteria":{"2":"two","1":null}},' +
      '"a":{"type":"noul","instructions":"Crash?","criteria":{"true":"it crashes"}}}}');
    // Described outcomes alone make a noul (as in the SDK); the library answers it as Jev
    // does, reading it with empty instructions (docs/compat.md).
    const bare = sky.request({ state: 'x', questions: { a: new sky.Noul({ criteria: { false: 'it flies on' } }) } });
    const ba = m.decideSync(bare).answer('a');
    assert.ok(ba.type === 'noul' && ba.value >= 0 && ba.value <= 1, JSON.stringify(ba));
    const r = m.decideSync(q);
    assert.deepEqual([...r.answers.keys()], ['b', 'a']);
    assert.deepEqual(r.answer('b').probabilities.map((p) => p.key), ['2', '1']);
    for (const bad of [() => new sky.Choice({ criteria: {} }), () => new sky.Score({ criteria: [] }),
      () => new sky.Noul({}), () => sky.request({ state: 'x', questions: {} }),
      () => sky.request({ questions: { a: new sky.Noul({ instructions: '?' }) } }),
      () => sky.request({ state: 'x', questions: { a: { type: 'choice', criteria: { x: null, y: null } } } })]) {
      assert.throws(bad, (e) => e instanceof sky.SkycmdError && e.code === 'SKYCMD_E_REQUEST');
    }
  } finally {
    m.close();
  }
});

test('decideBatch answers each request as decide does alone', async () => {
  const m = sky.Model.open(modelPath);
  try {
    const small = sky.request({ state: 'alt 3', questions: { danger: new sky.Noul({ instructions: 'Crash?' }) } });
    const ref = m.decideSync(request());
    const one = m.decideSync(small);
    const rs = await m.decideBatch([request(), small, request()]);
    assert.deepEqual(rs.map(dump), [dump(ref), dump(one), dump(ref)]);
    assert.deepEqual(m.decideBatchSync([request(), small, request()]).map(dump), rs.map(dump));
    assert.deepEqual(await m.decideBatch([]), []);
    await assert.rejects(m.decideBatch([request(), request(), '{"state": "x"']),
      (e) => e.code === 'SKYCMD_E_JSON' && e.libraryMessage.startsWith('request 2: '));
    assert.throws(() => m.decideBatchSync([request(), request(), '{"state": "x"']),
      (e) => e.code === 'SKYCMD_E_JSON' && e.libraryMessage.startsWith('request 2: '));
  } finally {
    m.close();
  }
});

test('openBuffer: the model keeps its own copy of the bytes', async () => {
  const bytes = fs.readFileSync(modelPath);
  const m = sky.Model.openBuffer(bytes, { modelName: 'from-memory' });
  bytes.fill(0xaa);
  const r = await m.decide(request());
  assert.equal(r.model, 'from-memory');
  const f = sky.Model.open(modelPath);
  assert.equal(dump(r), dump(f.decideSync(request())));
  f.close();
  m.close();
  assert.throws(() => sky.Model.openBuffer(Buffer.from('not a gguf file, certainly not')), { code: 'SKYCMD_E_FORMAT' });
  assert.throws(() => sky.Model.openBuffer('a string'), { code: 'SKYCMD_E_INVALID_ARGUMENT' });
  const u8 = new Uint8Array(fs.readFileSync(modelPath));
  sky.openBuffer(u8).close();
});

test('quantize {weights: q8}: the calibrated int8 stored, answering as q8 at load', async () => {
  const out = path.join(tmp, 'int8-stored.gguf');
  await sky.quantize(modelPath, out, { weights: 'q8' });
  assert.match(sky.inspectSync(out), /skycmd\.int8\.version/);
  const a = sky.Model.open(modelPath, { weights: 'q8' });
  const b = sky.Model.open(out, { weights: 'q8' });
  try {
    assert.equal(dump(await b.decide(request())), dump(await a.decide(request())));
  } finally {
    a.close();
    b.close();
  }
  await assert.rejects(sky.quantize(out, path.join(tmp, 'again.gguf'), { weights: 'q8' }),
    (e) => e.code === 'SKYCMD_E_INVALID_ARGUMENT' && /already stores a calibrated int8 model/.test(e.message));
});

test('tokenizer: encode, count, decode, vocabulary, special ids; a tokenizer.json', async () => {
  const m = sky.Model.open(modelPath);
  const tok = m.tokenizer();
  assert.equal(m.tokenizer(), tok);
  const text = 'vy 0 dx 36 up 9 dn 7 nxt 10 alt 32 — ünïcode';
  const ids = tok.encode(text);
  assert.ok(ids instanceof Int32Array && ids.length > 0);
  assert.equal(tok.countTokens(text), ids.length);
  assert.equal(tok.decode(ids), text);
  assert.equal(tok.decode(Array.from(ids)), text);
  assert.equal(tok.vocabSize, m.intParameter('vocab_size'));
  for (const id of ids) assert.ok(tok.token(id));
  assert.equal(tok.token(-1), undefined);
  const cls = tok.specialId('cls');
  assert.ok(cls >= 0 && cls < tok.vocabSize);
  assert.equal(tok.specialId(sky.Special.CLS), cls);
  assert.throws(() => tok.specialId('nope'), { code: 'SKYCMD_E_INVALID_ARGUMENT' });
  assert.throws(() => tok.decode([1 << 30]), sky.SkycmdError);
  m.close(); // the model's tokenizer goes with it
  assert.throws(() => tok.encode('x'), { code: 'SKYCMD_E_MISUSE' });

  const dir = path.join(tmp, 'laya');
  await sky.randomModel('s1-pico', dir, { layout: 'laya' });
  const jt = sky.Tokenizer.open(path.join(dir, 'tokenizer', 'tokenizer.json'));
  assert.deepEqual(Array.from(jt.encode(text)), Array.from(ids));
  jt.close();
  jt.close();
  assert.throws(() => jt.countTokens('x'), { code: 'SKYCMD_E_MISUSE' });
  assert.throws(() => sky.Tokenizer.open(path.join(tmp, 'nope.json')), { code: 'ENOENT', statusName: 'SKYCMD_E_IO' });
});

test('convert and quantize run on the pool: progress, an open event loop, AbortSignal', async () => {
  // s1-micro (26 MB of f32) takes long enough that the loop turns many times meanwhile.
  const micro = path.join(tmp, 's1-micro.gguf');
  await sky.randomModel('s1-micro', micro);
  let ticks = 0;
  let running = true;
  const spin = () => { ticks++; if (running) setImmediate(spin); };
  setImmediate(spin);
  const reports = [];
  await sky.quantize(micro, path.join(tmp, 'micro-q8.gguf'), { type: 'q8_0', onProgress: (d, t) => reports.push([d, t]) });
  running = false;
  assert.ok(ticks > 1, `the event loop turned ${ticks} times during quantize`);
  assert.ok(reports.length > 0, 'no progress reported');
  const [done, total] = reports[reports.length - 1];
  assert.ok(total > 0 && done <= total);
  for (let i = 1; i < reports.length; i++) assert.ok(reports[i][0] >= reports[i - 1][0], 'progress went back');

  // Aborted while running: SKYCMD_E_CANCELLED from the library, no output left.
  const dir = path.join(tmp, 'laya-micro');
  await sky.randomModel('s1-micro', dir, { layout: 'laya' });
  for (const [op, run] of [
    ['quantize', (out, signal) => sky.quantize(micro, out, { type: 'q8_0', signal })],
    ['convert', (out, signal) => sky.convert(dir, out, { signal })],
  ]) {
    const out = path.join(tmp, `aborted-${op}.gguf`);
    const ac = new AbortController();
    const pr = run(out, ac.signal);
    ac.abort(new Error('user gave up'));
    await assert.rejects(pr, (e) => e instanceof sky.SkycmdError && e.code === 'SKYCMD_E_CANCELLED' &&
      e.op === op && /cancel/.test(e.libraryMessage) && e.cause && e.cause.message === 'user gave up');
    assert.ok(!fs.existsSync(out), `${op} left ${out}`);
  }
  // Aborted before the start: rejected at once.
  await assert.rejects(sky.quantize(micro, path.join(tmp, 'never.gguf'), { signal: AbortSignal.abort() }),
    { code: 'SKYCMD_E_CANCELLED' });
  // The native flag alone cancels (what the signal raises).
  const o = new sky._native.SkyOptions();
  o.cancel();
  await assert.rejects(sky._native.fileAsync('quantize', micro, path.join(tmp, 'flag.gguf'), o), (e) => e.status === sky.Status.CANCELLED);
  assert.ok(o.cancelled() && o.progressCalls() >= 1);
  // A convert that runs to the end gives what the CLI-equivalent sync call gives.
  const a = path.join(tmp, 'conv-async.gguf');
  const b = path.join(tmp, 'conv-sync.gguf');
  await sky.convert(dir, a, { onProgress: () => {} });
  sky.convertSync(dir, b);
  assert.ok(fs.readFileSync(a).equals(fs.readFileSync(b)));
});
