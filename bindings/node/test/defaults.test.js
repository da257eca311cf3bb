'use strict';
// The built-in model (defaultModelPath, Model.openDefault[Async]), Model.openAsync and the
// error naming (code = status name; 'ENOENT' for a file that does not exist). The C library
// reads the environment process.env writes, so SKYCMD_DEFAULT_MODEL is set per test.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const sky = require('..');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skycmd-node-defaults-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const modelPath = process.env.SKYCMD_TEST_MODEL || path.join(tmp, 's1-pico.gguf');
if (!process.env.SKYCMD_TEST_MODEL) sky.randomModelSync('s1-pico', modelPath);
const requestPath = process.env.SKYCMD_EXAMPLE_REQUEST ||
  path.join(__dirname, '..', '..', '..', 'examples', 'flappy-drone.json');
const request = fs.readFileSync(requestPath, 'utf8');

function withDefault(value, fn) {
  const saved = process.env.SKYCMD_DEFAULT_MODEL;
  if (value === undefined) delete process.env.SKYCMD_DEFAULT_MODEL;
  else process.env.SKYCMD_DEFAULT_MODEL = value;
  const restore = () => {
    if (saved === undefined) delete process.env.SKYCMD_DEFAULT_MODEL;
    else process.env.SKYCMD_DEFAULT_MODEL = saved;
  };
  let r;
  try { r = fn(); } catch (e) { restore(); throw e; }
  return Promise.resolve(r).finally(restore);
}

async function answers(m) {
  try { return (await m.decide(request)).json; } finally { m.close(); }
}

test('the default model answers like opening its path', async () => {
  const want = await answers(sky.open(modelPath));
  await withDefault(modelPath, async () => {
    assert.equal(sky.defaultModelPath(), modelPath);
    assert.equal(await answers(sky.Model.openDefault()), want);
    assert.equal(await answers(await sky.Model.openDefaultAsync({ threads: 1 })), want);
    assert.equal(await answers(await sky.openDefaultAsync()), want);
  });
  const missing = path.join(tmp, 'no-default.gguf');
  await withDefault(missing, async () => {
    const notFound = (e) => e instanceof sky.SkycmdError && e.code === 'ENOENT' &&
      e.statusName === 'SKYCMD_E_NOT_FOUND' && e.status === sky.Status.NOT_FOUND &&
      e.errno === -os.constants.errno.ENOENT && e.libraryMessage.includes(missing);
    assert.throws(() => sky.defaultModelPath(), notFound);
    assert.throws(() => sky.Model.openDefault(), notFound);
    await assert.rejects(sky.Model.openDefaultAsync(), notFound);
  });
  // Unset: the library looks beside itself (run-tests.sh: the build tree's copy).
  await withDefault(undefined, async () => {
    let p;
    try { p = sky.defaultModelPath(); } catch (e) {
      assert.equal(e.code, 'ENOENT');
      assert.match(e.libraryMessage, /looked in/);
      return;
    }
    assert.equal(path.basename(p), 's1-pico-flappy.gguf');
    const m = sky.Model.openDefault();
    assert.equal(m.name, 's1-pico-flappy');
    m.close();
  });
});

test('error codes: the status name, ENOENT for a missing file', async () => {
  const missing = path.join(tmp, 'does-not-exist.gguf');
  const enoent = (e) => e instanceof sky.SkycmdError && e.code === 'ENOENT' && e.statusName === 'SKYCMD_E_IO' &&
    e.status === 4 && e.errno === -os.constants.errno.ENOENT && e.path === missing &&
    e.message.startsWith('skycmd open: SKYCMD_E_IO: ') && e.libraryMessage.includes('does-not-exist');
  assert.throws(() => sky.open(missing), enoent);
  await assert.rejects(sky.Model.openAsync(missing), enoent);
  await assert.rejects(sky.inspect(missing), (e) => e.code === 'ENOENT' && e.op === 'inspect' && e.path === missing);
  assert.throws(() => sky.inspectSync(missing), (e) => e.code === 'ENOENT' && e.statusName === 'SKYCMD_E_IO');
  const junk = path.join(tmp, 'junk.gguf');
  fs.writeFileSync(junk, 'not a gguf file');
  for (const f of [() => sky.open(junk), () => sky.Model.openAsync(junk)]) {
    await assert.rejects(async () => f(), (e) => e.code === 'SKYCMD_E_FORMAT' && e.statusName === 'SKYCMD_E_FORMAT' &&
      e.status === 5 && e.errno === undefined && e.path === undefined);
  }
  const m = sky.open(modelPath);
  await assert.rejects(m.decide('{"state": "x", "questions": {'), (e) => e.code === 'SKYCMD_E_JSON' && e.status === 8);
  m.close();
  // A tokenizer.json that does not exist is the same not-found error; a junk one is not.
  const noTok = path.join(tmp, 'no-such-tokenizer.json');
  assert.throws(() => sky.Tokenizer.open(noTok), (e) => e instanceof sky.SkycmdError && e.code === 'ENOENT' &&
    e.statusName === 'SKYCMD_E_IO' && e.errno === -os.constants.errno.ENOENT && e.path === noTok &&
    e.op === 'open tokenizer' && e.libraryMessage.includes('no-such-tokenizer.json'));
  assert.throws(() => sky.Tokenizer.open(junk), (e) => e instanceof sky.SkycmdError && e.code !== 'ENOENT' &&
    e.code === e.statusName && e.errno === undefined && e.path === undefined);
});

test('openAsync: the same model, the event loop turns, AbortSignal', async () => {
  const want = await answers(sky.open(modelPath, { threads: 1 }));
  assert.equal(await answers(await sky.Model.openAsync(modelPath, { threads: 1 })), want);
  // s1-micro (16 MB) loads long enough for the loop to turn meanwhile.
  const micro = path.join(tmp, 's1-micro.gguf');
  await sky.randomModel('s1-micro', micro);
  let ticks = 0;
  let running = true;
  const spin = () => { ticks++; if (running) setImmediate(spin); };
  setImmediate(spin);
  const m = await sky.Model.openAsync(micro, { onProgress: () => {} });
  running = false;
  assert.ok(ticks > 1, `the event loop turned ${ticks} times during openAsync`);
  assert.equal(m.name, 's1-micro');
  m.close();
  await assert.rejects(sky.Model.openAsync(micro, { signal: AbortSignal.abort(new Error('no')) }),
    (e) => e.code === 'SKYCMD_E_CANCELLED' && e.cause && e.cause.message === 'no');
  // Aborted while it loads: rejected (the library stops at a progress report, or the model
  // that finished loading is freed); no model stays open.
  const before = sky._live.models;
  const ac = new AbortController();
  const pr = sky.Model.openAsync(micro, { signal: ac.signal });
  ac.abort(new Error('user gave up'));
  await assert.rejects(pr, (e) => e.code === 'SKYCMD_E_CANCELLED' && e.cause && e.cause.message === 'user gave up');
  assert.equal(sky._live.models, before);
});
