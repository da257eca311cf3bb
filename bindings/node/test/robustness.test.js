'use strict';
// node --test suite of the audit's Node defects: a terminated worker_threads Worker during an
// async decide, an onProgress callback that throws, a signal aborted at the last progress
// report, strings with a NUL character, arguments of the wrong type, an empty model buffer.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const sky = require('..');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skycmd-node-robust-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const modelPath = process.env.SKYCMD_TEST_MODEL || path.join(tmp, 's1-pico.gguf');
if (!process.env.SKYCMD_TEST_MODEL) sky.randomModelSync('s1-pico', modelPath);
const body = { state: 'vy 0 dx 36', questions: { a: { type: 'noul', instructions: 'x' } } };

const isTypeError = (name, code = 'ERR_INVALID_ARG_TYPE') => (e) =>
  e instanceof TypeError && e.code === code && e.message.includes(`"${name}"`);
const isRangeError = (name) => (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE' && e.message.includes(`"${name}"`);

test('terminating a Worker while its async decide runs ends the worker, not the process', () => {
  const script = `
    const { Worker, isMainThread, parentPort } = require('worker_threads');
    const sky = require(${JSON.stringify(path.join(__dirname, '..'))});
    if (isMainThread) {
      let done = 0;
      const run = () => {
        const w = new Worker(__filename);
        w.on('message', () => w.terminate());
        w.on('exit', () => { if (++done < 3) run(); else setTimeout(() => console.log('main alive'), 200); });
      };
      run();
    } else {
      const m = sky.Model.open(${JSON.stringify(modelPath)});
      m.decide({ state: 'word '.repeat(300000), questions: { a: { type: 'noul', instructions: 'x' } } }).catch(() => {});
      parentPort.postMessage('go');
    }`;
  const file = path.join(tmp, 'terminate.js');
  fs.writeFileSync(file, script);
  const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 300000 });
  assert.equal(r.signal, null, `the process died: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /main alive/);
  assert.doesNotMatch(r.stderr, /terminate called/);
});

for (const policy of [[], ['--force-node-api-uncaught-exceptions-policy=true']]) {
  test(`an exception in onProgress cancels quantize: SKYCMD_E_CANCELLED with it as cause, no output ${policy.join(' ')}`, () => {
    const out = path.join(tmp, `thrown${policy.length}.gguf`);
    const script = `
      const sky = require(${JSON.stringify(path.join(__dirname, '..'))});
      const fs = require('fs');
      const boom = new Error('boom');
      sky.quantize(${JSON.stringify(modelPath)}, ${JSON.stringify(out)}, { type: 'q8_0', onProgress: () => { throw boom; } })
        .then(() => console.log('resolved'),
              (e) => console.log(JSON.stringify({ code: e.code, cause: e.cause === boom, exists: fs.existsSync(${JSON.stringify(out)}) })));`;
    const file = path.join(tmp, `progress${policy.length}.js`);
    fs.writeFileSync(file, script);
    const r = spawnSync(process.execPath, ['--throw-deprecation', ...policy, file], { encoding: 'utf8', timeout: 300000 });
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /DEP0168/);
    assert.deepEqual(JSON.parse(r.stdout.trim()), { code: 'SKYCMD_E_CANCELLED', cause: true, exists: false });
  });
}

test('an exception in onProgress cancels openAsync with it as cause', async () => {
  const boom = new Error('boom');
  await assert.rejects(sky.Model.openAsync(modelPath, { onProgress: () => { throw boom; } }),
    (e) => e.code === 'SKYCMD_E_CANCELLED' && e.cause === boom);
});

test('a signal aborted at the last progress report makes quantize reject and leaves no output', async () => {
  // aborted when done === total: the library has nothing left to cancel and writes the file
  const out = path.join(tmp, 'aborted.gguf');
  const ac = new AbortController();
  const last = (d, t) => { if (d === t) ac.abort(); };
  await assert.rejects(sky.quantize(modelPath, out, { type: 'q8_0', signal: ac.signal, onProgress: last }),
    (e) => e.code === 'SKYCMD_E_CANCELLED' && e.cause === ac.signal.reason);
  assert.equal(fs.existsSync(out), false);
  const out2 = path.join(tmp, 'aborted-random.gguf');
  const ac2 = new AbortController();
  await assert.rejects(sky.randomModel('s1-pico', out2, { signal: ac2.signal, onProgress: (d, t) => { if (d === t) ac2.abort(); } }),
    (e) => e.code === 'SKYCMD_E_CANCELLED');
  assert.equal(fs.existsSync(out2), false);
});

test('a late abort removes only what the call made: a link and a device stay', async () => {
  // the output named through a symbolic link: the library writes the link's target; the
  // cancelled call must not delete the user's link (nor /dev/null, written in place)
  const target = path.join(tmp, 'late-target.gguf');
  const link = path.join(tmp, 'late-link.gguf');
  fs.writeFileSync(target, 'old');
  fs.symlinkSync(target, link);
  for (const out of [link, '/dev/null']) {
    const ac = new AbortController();
    await assert.rejects(sky.quantize(modelPath, out, { type: 'q8_0', signal: ac.signal, onProgress: (d, t) => { if (d === t) ac.abort(); } }),
      (e) => e.code === 'SKYCMD_E_CANCELLED');
  }
  assert.ok(fs.lstatSync(link).isSymbolicLink(), 'the link is still a link');
  assert.ok(fs.statSync('/dev/null').isCharacterDevice(), '/dev/null is still a device');
});

test('a string with a NUL character is refused, never cut', async () => {
  const nul = (name) => isTypeError(name, 'ERR_INVALID_ARG_VALUE');
  assert.throws(() => sky.Model.open(`${modelPath}\0xyz`), nul('ggufPath'));
  await assert.rejects(sky.Model.openAsync(`${modelPath}\0xyz`), nul('ggufPath'));
  assert.throws(() => sky.Model.open(modelPath, { modelName: 'a\0b' }), nul('modelName'));
  await assert.rejects(sky.inspect(`${modelPath}\0`), nul('ggufPath'));
  await assert.rejects(sky.quantize(modelPath, path.join(tmp, 'q.gguf\0x')), nul('outPath'));
  const m = sky.Model.open(modelPath);
  try {
    const text = JSON.stringify(body);
    assert.throws(() => m.decideSync(`${text}\0garbage`), nul('request'));
    await assert.rejects(m.decide(`${text}\0garbage`), nul('request'));
    await assert.rejects(m.decideBatch([text, `${text}\0`]), nul('request'));
    const tok = m.tokenizer();
    assert.throws(() => tok.encode('ab\0cd'), nul('text'));
    assert.throws(() => tok.countTokens('ab\0cd'), nul('text'));
    assert.throws(() => m.intParameter('embedding_length\0'), nul('name'));
    const items = [];
    for await (const r of m.decideEach([`${text}\0`, text])) items.push(r);
    assert.equal(items[0].error.code, 'SKYCMD_E_INVALID_ARGUMENT');
    assert.ok(items[1].response);
  } finally {
    m.close();
  }
});

test('arguments of the wrong type are TypeErrors / RangeErrors naming the argument', async () => {
  assert.throws(() => sky.Model.open(undefined), isTypeError('ggufPath'));
  await assert.rejects(sky.randomModel(undefined, path.join(tmp, 'u.gguf')), isTypeError('preset'));
  assert.throws(() => sky.randomModelSync('s1-pico', undefined), isTypeError('outPath'));
  assert.throws(() => sky.Model.open(modelPath, { threads: 'abc' }), isTypeError('threads'));
  assert.throws(() => sky.Model.open(modelPath, { maxTokens: NaN }), isRangeError('maxTokens'));
  assert.throws(() => sky.Model.open(modelPath, { threads: 1.5 }), isRangeError('threads'));
  assert.throws(() => sky.Model.open(modelPath, { weights: {} }), isTypeError('weights'));
  assert.throws(() => sky.Tokenizer.open(42), isTypeError('jsonPath'));
  const m = sky.Model.open(modelPath);
  try {
    const tok = m.tokenizer();
    assert.throws(() => tok.encode(undefined), isTypeError('text'));
    assert.throws(() => tok.countTokens(12), isTypeError('text'));
    assert.throws(() => tok.token(2 ** 40), isRangeError('id'));
    assert.throws(() => tok.token('x'), isTypeError('id'));
    assert.throws(() => tok.decode([NaN]), isRangeError('ids[]'));
    assert.throws(() => tok.decode(7), isTypeError('ids'));
    assert.throws(() => m.decideSync(undefined), isTypeError('request'));
    assert.throws(() => m.decideSync(42), isTypeError('request'));
    await assert.rejects(m.decide(null), isTypeError('request'));
    await assert.rejects(m.decideBatch(5), isTypeError('requests'));
    assert.throws(() => m.decideBatchSync(5), isTypeError('requests'));
    assert.throws(() => m.intParameter(undefined), isTypeError('name'));
    // a Buffer holding the JSON is the request body, as its text
    const want = m.decideSync(JSON.stringify(body)).json;
    assert.equal((await m.decide(Buffer.from(JSON.stringify(body)))).json, want);
    assert.equal(m.decideSync(new TextEncoder().encode(JSON.stringify(body))).json, want);
  } finally {
    m.close();
  }
});

test('openBuffer of an empty buffer is SKYCMD_E_FORMAT "only 0 bytes", as in the other bindings', () => {
  assert.throws(() => sky.Model.openBuffer(Buffer.alloc(0)),
    (e) => e.code === 'SKYCMD_E_FORMAT' && /only 0 bytes/.test(e.libraryMessage));
  assert.throws(() => sky.Model.openBuffer(new Uint8Array(0)), (e) => e.code === 'SKYCMD_E_FORMAT');
});
