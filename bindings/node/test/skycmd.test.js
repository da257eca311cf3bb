'use strict';
// node --test suite of the skycmd binding. Needs a random s1-pico model: $SKYCMD_TEST_MODEL,
// or one made through randomModel(); if the library cannot make one yet (UNSUPPORTED),
// model tests skip unless SKYCMD_REQUIRE_MODEL=1 (run-tests.sh sets it).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const v8 = require('node:v8');
const vm = require('node:vm');
const sky = require('..');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skycmd-node-test-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

let modelPath;
let modelError;
if (process.env.SKYCMD_TEST_MODEL) {
  modelPath = process.env.SKYCMD_TEST_MODEL;
} else {
  modelPath = path.join(tmp, 's1-pico.gguf');
  try { sky.randomModelSync('s1-pico', modelPath); } catch (e) { modelError = e; }
}

function model(t) {
  if (modelError) {
    if (modelError.status === sky.Status.UNSUPPORTED && process.env.SKYCMD_REQUIRE_MODEL !== '1') {
      t.skip(`no random model yet: ${modelError.message}`);
      return null;
    }
    throw modelError;
  }
  return modelPath;
}

const requestPath = process.env.SKYCMD_EXAMPLE_REQUEST ||
  path.join(__dirname, '..', '..', '..', 'examples', 'flappy-drone.json');
const request = () => fs.readFileSync(requestPath, 'utf8');

function bits(v) {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(v);
  return b.toString('hex');
}

// The cross-check form of run-tests.sh: every double as the hex digits of its bits, an
// absent confidence (noul) as "none".
function dump(r) {
  let s = `input_tokens ${r.inputTokens}\n`;
  for (const a of r.answers.values()) {
    const conf = a.confidence === undefined ? 'none' : bits(a.confidence);
    s += `answer ${a.id} ${a.type} choice=${a.choice ?? ''} value=${bits(a.value)} confidence=${conf}\n`;
    for (const p of a.probabilities) s += `option ${p.key} ${bits(p.p)}\n`;
  }
  return s;
}

function checkAnswers(r, modelName = 's1-pico') {
  // A read-only Map keyed by question id, in request order.
  assert.ok(r.answers instanceof Map);
  assert.equal(r.answers.size, 3, r.json);
  assert.equal(r.model, modelName);
  assert.ok(r.inputTokens > 0);
  assert.deepEqual([...r.answers].map(([id, a]) => [id, a.id, a.type]),
    [['action', 'action', 'choice'], ['danger', 'danger', 'noul'], ['margin', 'margin', 'score']]);
  assert.throws(() => r.answers.set('x', null), TypeError);
  assert.throws(() => r.answers.delete('action'), TypeError);
  assert.throws(() => r.answers.clear(), TypeError);
  assert.equal(r.answers.size, 3);
  assert.equal(r.answer('action'), r.answers.get('action'));
  assert.equal(r.answer('nope'), undefined);
  // JSON.stringify gives the wire's {id: answer} object, keys in request order.
  assert.deepEqual(Object.keys(JSON.parse(JSON.stringify(r)).answers), ['action', 'danger', 'margin']);
  for (const a of r.answers.values()) {
    const sum = a.probabilities.reduce((s, p) => s + p.p, 0);
    assert.ok(Math.abs(sum - 1) < 1e-6, `${a.id} sums to ${sum}`);
    for (const p of a.probabilities) assert.ok(p.p >= 0 && p.p <= 1);
  }
  const act = r.answer('action');
  assert.deepEqual(act.probabilities.map((p) => p.key), ['thrust', 'glide']);
  const best = act.probabilities[0].p >= act.probabilities[1].p ? act.probabilities[0] : act.probabilities[1];
  assert.equal(act.choice, best.key);
  assert.equal(act.value, best.p);
  assert.equal(typeof act.confidence, 'number');
  assert.ok(act.confidence >= 0 && act.confidence <= 1);
  assert.equal(act.legend, undefined);
  const dn = r.answer('danger');
  assert.deepEqual(dn.probabilities.map((p) => p.key), ['false', 'true']);
  assert.equal(dn.value, dn.probabilities[1].p);
  assert.equal(dn.confidence, undefined);
  assert.ok('confidence' in dn);
  assert.equal(dn.legend, undefined);
  assert.equal(dn.choice, null);
  const mg = r.answer('margin');
  assert.deepEqual(mg.probabilities.map((p) => p.key), ['0', '1', '2']);
  const exp = mg.probabilities.reduce((s, p, i) => s + i * p.p, 0);
  assert.ok(Math.abs(exp - mg.value) < 1e-9);
  assert.equal(typeof mg.confidence, 'number');
  assert.deepEqual(mg.legend, ['none', 'tight', 'comfortable']);
  // The typed views (the Jev SDK's answer types).
  assert.deepEqual(r.choices.action, { choice: act.choice, confidence: act.confidence,
    probabilities: { thrust: act.probabilities[0].p, glide: act.probabilities[1].p } });
  assert.deepEqual(r.scores.margin, { score: mg.value, confidence: mg.confidence,
    legend: { 0: 'none', 1: 'tight', 2: 'comfortable' },
    probabilities: { 0: mg.probabilities[0].p, 1: mg.probabilities[1].p, 2: mg.probabilities[2].p } });
  assert.deepEqual(r.nouls, { danger: { noul: dn.value } });
  const wire = JSON.parse(r.json);
  assert.equal(wire.usage.input_tokens, r.inputTokens);
  assert.equal(wire.answers.action.choice, act.choice);
  assert.ok(Math.abs(wire.answers.danger.noul - dn.value) < 1e-6);
}

test('status values match the header', () => {
  const n = sky._native;
  const pairs = [['OK', n.SKYCMD_OK], ['INVALID_ARGUMENT', n.SKYCMD_E_INVALID_ARGUMENT], ['MISUSE', n.SKYCMD_E_MISUSE],
    ['NOMEM', n.SKYCMD_E_NOMEM], ['IO', n.SKYCMD_E_IO], ['FORMAT', n.SKYCMD_E_FORMAT], ['UNSUPPORTED', n.SKYCMD_E_UNSUPPORTED],
    ['BUSY', n.SKYCMD_E_BUSY], ['JSON', n.SKYCMD_E_JSON], ['REQUEST', n.SKYCMD_E_REQUEST], ['TOO_LARGE', n.SKYCMD_E_TOO_LARGE],
    ['VERSION', n.SKYCMD_E_VERSION], ['NOT_FOUND', n.SKYCMD_E_NOT_FOUND], ['INTERNAL', n.SKYCMD_E_INTERNAL],
    ['CANCELLED', n.SKYCMD_E_CANCELLED]];
  for (const [k, v] of pairs) assert.equal(sky.Status[k], v, k);
  assert.equal(Object.keys(sky.Status).length, pairs.length);
});

test('version check refuses a library older than the header', async () => {
  assert.equal(sky._state.loadError, null);
  assert.ok(sky.HEADER_VERSION_NUMBER > 0);
  sky.checkVersion(sky.HEADER_VERSION_NUMBER);
  for (const newer of [sky.versionNumber() + 1, sky.versionNumber() + 100, sky.versionNumber() + 10000]) {
    assert.throws(() => sky.checkVersion(newer), (e) => e instanceof sky.SkycmdError && e.code === 'SKYCMD_E_VERSION' && e.libraryMessage !== '');
  }
  const saved = sky._state.loadError;
  sky._state.loadError = new sky.SkycmdError('check version', sky.Status.VERSION, 'simulated old library');
  try {
    assert.throws(() => sky.Model.open(path.join(tmp, 'x.gguf')), { code: 'SKYCMD_E_VERSION' });
    assert.throws(() => sky.randomModelSync('s1-pico', path.join(tmp, 'x.gguf')), { code: 'SKYCMD_E_VERSION' });
    await assert.rejects(sky.randomModel('s1-pico', path.join(tmp, 'x.gguf')), { code: 'SKYCMD_E_VERSION' });
  } finally {
    sky._state.loadError = saved;
  }
});

test('the example request is answered (async and sync agree bit for bit)', async (t) => {
  const p = model(t);
  if (!p) return;
  const m = sky.Model.open(p);
  try {
    const r = await m.decide(request());
    checkAnswers(r);
    const s = m.decideSync(JSON.parse(request()));
    assert.equal(dump(s), dump(r));
    assert.ok(m.intParameter('decision.max_head_tokens') > 0);
    assert.throws(() => m.intParameter('no.such.key'), { code: 'SKYCMD_E_NOT_FOUND' });
    if (process.env.SKYCMD_DUMP_DIR) fs.writeFileSync(path.join(process.env.SKYCMD_DUMP_DIR, 'node.txt'), dump(r));
  } finally {
    m.close();
  }
});

test('many async decides in flight on the thread pool; close while pending', async (t) => {
  const p = model(t);
  if (!p) return;
  const m = sky.Model.open(p);
  try {
    const rs = await Promise.all(Array.from({ length: 16 }, () => m.decide(request())));
    const want = dump(m.decideSync(request()));
    for (const r of rs) assert.equal(dump(r), want);
  } finally {
    m.close();
  }
  const pending = sky.Model.open(p);
  const pr = pending.decide(request());
  assert.ok(pr instanceof Promise);
  pending.close(); // freed once pr settles
  checkAnswers(await pr);
  assert.ok(pending.closed);
});

test('errors: bad path, bad JSON, invalid request, closed handle', async (t) => {
  // A file that does not exist: code 'ENOENT' as Node's fs errors, the status in statusName.
  assert.throws(() => sky.Model.open(path.join(tmp, 'does-not-exist.gguf')),
    (e) => e.code === 'ENOENT' && e.statusName === 'SKYCMD_E_IO' && e.status === sky.Status.IO &&
      e.libraryMessage.includes('does-not-exist'));
  const junk = path.join(tmp, 'junk.gguf');
  fs.writeFileSync(junk, 'this is not a gguf file at all');
  assert.throws(() => sky.Model.open(junk), { code: 'SKYCMD_E_FORMAT' });
  assert.throws(() => sky.inspectSync(path.join(tmp, 'nope.gguf')), { code: 'ENOENT', statusName: 'SKYCMD_E_IO' });
  await assert.rejects(sky.inspect(path.join(tmp, 'nope.gguf')), (e) => e instanceof sky.SkycmdError && e.code === 'ENOENT' &&
    e.statusName === 'SKYCMD_E_IO' && e.op === 'inspect');
  assert.throws(() => sky.randomModelSync('no-such-preset', path.join(tmp, 'p.gguf')), sky.SkycmdError);
  await assert.rejects(sky.randomModel('no-such-preset', path.join(tmp, 'p.gguf')), sky.SkycmdError);
  assert.throws(() => sky.convertSync(path.join(tmp, 'no-such-dir'), path.join(tmp, 'c.gguf')), sky.SkycmdError);
  await assert.rejects(sky.convert(path.join(tmp, 'no-such-dir'), path.join(tmp, 'c.gguf')), sky.SkycmdError);
  assert.ok(!fs.existsSync(path.join(tmp, 'c.gguf')));
  assert.throws(() => sky.Model.open(junk, { weights: 'bogus' }), { code: 'SKYCMD_E_INVALID_ARGUMENT' });
  const p = model(t);
  if (!p) return;
  const m = sky.Model.open(p);
  assert.throws(() => m.decideSync('{"state": "x", "questions": {'), (e) => e.code === 'SKYCMD_E_JSON' && e.libraryMessage !== '');
  await assert.rejects(m.decide('{"state": "x", "questions": {'), { code: 'SKYCMD_E_JSON' });
  const bad = '{"state": "x", "questions": {"a": {"type": "choice", "instructions": "?", "criteria": {}}}}';
  await assert.rejects(m.decide(bad), (e) => e.code === 'SKYCMD_E_REQUEST' && e.libraryMessage.includes('criteria'));
  assert.throws(() => m.decideSync(bad), { code: 'SKYCMD_E_REQUEST' });
  m.close();
  m.close();
  assert.throws(() => m.decideSync(request()), { code: 'SKYCMD_E_MISUSE' });
  await assert.rejects(m.decide(request()), { code: 'SKYCMD_E_MISUSE' });
  // The raw box refuses too (no crash on a closed handle).
  const box = new sky._native.SkyModel();
  assert.equal(box.close(), 0);
  const s = new sky._native.SkySession();
  assert.equal(s.open(box), sky.Status.MISUSE);
  await assert.rejects(sky._native.decideAsync(box, request()), (e) => e.status === sky.Status.MISUSE);
});

test('inspect, quantize and a seeded random model', async (t) => {
  const p = model(t);
  if (!p) return;
  assert.match(sky.inspectSync(p), /modern-bert/);
  assert.equal(await sky.inspect(p), sky.inspectSync(p));
  JSON.parse(await sky.inspect(p, { json: true }));
  const q = path.join(tmp, 'q8.gguf');
  await sky.quantize(p, q, { type: 'q8_0' });
  const qs = path.join(tmp, 'q8-sync.gguf');
  sky.quantizeSync(p, qs, { type: 'q8_0' });
  assert.ok(fs.readFileSync(q).equals(fs.readFileSync(qs)), 'async and sync quantize differ');
  const m = sky.Model.open(q);
  checkAnswers(await m.decide(request()));
  m.close();
  const seeded = path.join(tmp, 'seeded.gguf');
  await sky.randomModel('s1-pico', seeded, { seed: 7 });
  assert.ok(fs.statSync(seeded).size > 0);
});

// Leak check. Exact at the handle level: every model opened in the loop (every tenth one
// dropped unclosed, for the FinalizationRegistry) is freed again. At the process level:
// RSS between round 300 and round 600 must not grow by 32 MiB (a leaked model, ~1.5 MB,
// per round would be ~450 MiB); V8's own heap growth makes a tighter RSS bound meaningless.
test('open/decide/close loop frees every model (leak check)', async (t) => {
  const p = model(t);
  if (!p) return;
  const req = request();
  const live0 = sky._live.models;
  let rss300 = 0;
  for (let i = 0; i < 600; i++) {
    const m = sky.Model.open(p);
    m.decideSync(req);
    await m.decide(req);
    if (i % 10 !== 0) m.close(); // else left for the FinalizationRegistry
    if (i === 299) { gc(); rss300 = process.memoryUsage().rss; }
  }
  for (let k = 0; k < 200 && sky._live.models > live0; k++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  const rss600 = process.memoryUsage().rss;
  const growth = Math.round((rss600 - rss300) / 1024);
  t.diagnostic(`node loop: live native models ${sky._live.models} (before ${live0}); RSS after 300 rounds ${Math.round(rss300 / 1024)} KiB, after 600 ${Math.round(rss600 / 1024)} KiB, growth ${growth} KiB`);
  assert.equal(sky._live.models, live0, 'native models leaked');
  assert.ok(growth < 32768, `RSS grew by ${growth} KiB`);
});
