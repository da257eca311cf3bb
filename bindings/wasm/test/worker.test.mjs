// worker.test.mjs - WorkerModel (worker-model.js + worker.js, in a worker_threads Worker):
// every call answers exactly what Model answers in this thread (the same module, so the same
// bytes), errors are SkycmdError with the library's status and message, a closed model
// rejects, and the main thread keeps running while the worker loads and decides.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { init, Model, SkycmdError, Status, request, choice } from '../skycmd.js';
import { WorkerModel } from '../worker-model.js';
import { wasmPath, flappyModel, flappyRequest, goldenRequests } from './helpers.mjs';

const wasm = pathToFileURL(wasmPath).href;
await init(readFileSync(wasmPath));
const local = Model.fromBytes(readFileSync(flappyModel));
const bodies = goldenRequests.filter((r) => !r.expect_error).map((r) => r.body).slice(0, 12);

test('a worker answers as the model in this thread, byte for byte', async () => {
  let progress = null;
  const m = await WorkerModel.fromUrl(flappyModel, { wasm, onProgress: (l, t) => { progress = [l, t]; } });
  try {
    assert.deepEqual(progress, [readFileSync(flappyModel).length, readFileSync(flappyModel).length]);
    assert.deepEqual(await m.info(), local.info);
    assert.equal(JSON.stringify(await m.decide(flappyRequest)), JSON.stringify(local.decide(flappyRequest)));
    const typed = request({ state: 'vy 0 dx 36', questions: { a: choice({ instructions: 'which?', criteria: { up: 'go up', down: 'go down' } }) } });
    assert.deepEqual(await m.decide(typed), local.decide(typed));
    assert.deepEqual(await m.decideBatch(bodies), local.decideBatch(bodies));
    assert.deepEqual(await m.tokenize('vy 0 dx 36 up 9'), local.tokenize('vy 0 dx 36 up 9'));
    // calls made together answer in order, each its own
    const many = await Promise.all(bodies.map((b) => m.decide(b)));
    assert.deepEqual(many, bodies.map((b) => local.decide(b)));
  } finally {
    await m.close();
  }
});

test('decideEach: a bad request fails only its own item, as in this thread', async () => {
  const m = await WorkerModel.fromBytes(readFileSync(flappyModel), { wasm });
  try {
    const reqs = [bodies[0], '{"state": ', bodies[1], '{"state": "x", "questions": {}}'];
    const got = await m.decideEach(reqs);
    const want = local.decideEach(reqs);
    assert.equal(got.length, want.length);
    for (let i = 0; i < got.length; i++) {
      if (want[i].error) {
        assert.ok(got[i].error instanceof SkycmdError, `item ${i} is a SkycmdError`);
        assert.equal(got[i].error.status, want[i].error.status);
        assert.equal(got[i].error.message, want[i].error.message);
      } else {
        assert.deepEqual(got[i], want[i]);
      }
    }
  } finally {
    await m.close();
  }
});

test('errors: a bad model, a bad request, a closed model', async () => {
  const text = new TextEncoder().encode('this is not a model\n');
  await assert.rejects(WorkerModel.fromBytes(text, { wasm }), (e) =>
    e instanceof SkycmdError && e.status === 'SKYCMD_E_FORMAT' && /not a GGUF file/.test(e.message));
  await assert.rejects(WorkerModel.fromUrl('/nonexistent/model.gguf', { wasm }), (e) =>
    e instanceof SkycmdError && e.code === Status.IO);
  const m = await WorkerModel.fromBytes(readFileSync(flappyModel), { wasm, transfer: true });
  let localError = null;
  try { local.decide('{"state": '); } catch (e) { localError = e; }
  await assert.rejects(m.decide('{"state": '), (e) =>
    e instanceof SkycmdError && e.code === localError.code && e.message === localError.message);
  await assert.rejects(m.decideBatch([bodies[0], '{"state": ']), (e) =>
    e instanceof SkycmdError && /^request 1: /.test(e.message));
  assert.ok((await m.decide(bodies[0])).answers, 'the worker answers after errors');
  await m.close();
  await m.close();
  assert.equal(m.closed, true);
  await assert.rejects(m.decide(bodies[0]), (e) => e instanceof SkycmdError && e.code === Status.MISUSE);
});

test('the main thread runs while the worker decides', async () => {
  const m = await WorkerModel.fromBytes(readFileSync(flappyModel), { wasm });
  try {
    let ticks = 0;
    const timer = setInterval(() => { ticks++; }, 1);
    const work = Promise.all(Array.from({ length: 200 }, () => m.decide(flappyRequest)));
    await work;
    clearInterval(timer);
    // 200 answers take tens of milliseconds at least; the main thread's timer fired meanwhile
    assert.ok(ticks > 0, 'no timer tick while the worker decided');
  } finally {
    await m.close();
  }
});

const typeErr = (name) => (e) => e instanceof TypeError && e.message.includes(`"${name}"`);

test('a download cut short is SKYCMD_E_IO (not SKYCMD_E_INTERNAL)', async () => {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-length': 1 << 20 });
    res.write(readFileSync(flappyModel).subarray(0, 70000), () => res.destroy());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await assert.rejects(WorkerModel.fromUrl(`http://127.0.0.1:${server.address().port}/m.gguf`, { wasm }),
      (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_IO' && /download failed/.test(e.message));
  } finally {
    server.close();
  }
});

test('argument errors as Model gives them', async () => {
  await assert.rejects(WorkerModel.fromUrl(undefined, { wasm }), typeErr('url'));
  await assert.rejects(WorkerModel.fromBytes(readFileSync(flappyModel), { wasm, name: 'a\u0000b' }), typeErr('options.name'));
  const m = await WorkerModel.fromBytes(readFileSync(flappyModel), { wasm });
  try {
    await assert.rejects(m.decide(undefined), typeErr('request'));
    await assert.rejects(m.decideBatch(5), typeErr('requests'));
    await assert.rejects(m.decideBatch(flappyRequest), typeErr('requests'));
    await assert.rejects(m.decideEach({}), typeErr('requests'));
    await assert.rejects(m.tokenize(undefined), typeErr('text'));
    const lone = `{"state": "\ud800", "questions": {}}`;
    await assert.rejects(m.decide(lone), (e) => e instanceof SkycmdError && e.status === 'SKYCMD_E_JSON');
    const got = await m.decideEach([bodies[0], undefined, '{', bodies[1]]);
    const want = local.decideEach([bodies[0], undefined, '{', bodies[1]]);
    assert.deepEqual(got[0], want[0]);
    assert.deepEqual(got[3], want[3]);
    for (const i of [1, 2]) {
      assert.ok(got[i].error instanceof SkycmdError, `item ${i}`);
      assert.equal(got[i].error.status, want[i].error.status);
      assert.equal(got[i].error.message, want[i].error.message);
    }
    assert.ok((await m.decide(bodies[0])).answers, 'the worker answers after them');
  } finally {
    await m.close();
  }
});
