'use strict';
// node --test suite of Model.decideEach: the streaming batch (one {response} or {error} per
// request, in order; read DECIDE_EACH_GROUP at a time from a sync or async iterable; each
// group answered by one skycmd_decide_each call on the libuv pool).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const sky = require('..');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skycmd-node-each-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const modelPath = process.env.SKYCMD_TEST_MODEL || path.join(tmp, 's1-pico.gguf');
if (!process.env.SKYCMD_TEST_MODEL) sky.randomModelSync('s1-pico', modelPath);
const requestPath = process.env.SKYCMD_EXAMPLE_REQUEST ||
  path.join(__dirname, '..', '..', '..', 'examples', 'flappy-drone.json');
const example = fs.readFileSync(requestPath, 'utf8');

const MALFORMED = '{"state": 1';
const INVALID = '{"state": "s", "questions": {"a": {"type": "choice", "instructions": "?"}}}';

const small = (i) => sky.request({
  state: `vy ${i} dx 36 up 9 dn 7 nxt 10 alt ${40 - (i % 30)}`,
  questions: { go: new sky.Choice({ instructions: 'Which input?', criteria: { thrust: 'fire', glide: 'fall' } }) },
});

async function collect(gen) {
  const out = [];
  for await (const item of gen) out.push(item);
  return out;
}

test('decideEach: one result per request, in order, bad ones in their own slot', async () => {
  const m = sky.Model.open(modelPath);
  try {
    assert.equal(sky.DECIDE_EACH_GROUP, 32);
    // 70 requests (three groups) of every input form, bad ones in the first and last group.
    const input = Array.from({ length: 70 }, (_, i) => small(i));
    input[1] = MALFORMED;
    input[5] = undefined;                        // not a request at all
    input[33] = example;                         // JSON text
    input[34] = JSON.parse(example);             // a plain object
    input[40] = INVALID;
    input[69] = MALFORMED;
    const out = await collect(m.decideEach(input));
    assert.equal(out.length, input.length);
    for (let i = 0; i < out.length; i++) {
      const { response, error } = out[i];
      if (i === 1 || i === 69) {
        assert.ok(error instanceof sky.SkycmdError && error.code === 'SKYCMD_E_JSON' && error.status === 8 &&
          error.op === 'decide each' && response === undefined, `${i}: ${error}`);
      } else if (i === 5) {
        assert.equal(error.code, 'SKYCMD_E_INVALID_ARGUMENT');
      } else if (i === 40) {
        assert.ok(error.code === 'SKYCMD_E_REQUEST' && error.libraryMessage.includes('criteria'), String(error));
      } else {
        assert.equal(error, undefined, `${i}: ${error}`);
        assert.ok(response instanceof sky.Response);
        // Exactly what decide() gives for the request alone (the wire JSON prints every
        // double to round-trip).
        assert.equal(response.json, m.decideSync(input[i]).json, `request ${i}`);
      }
    }
    assert.deepEqual([...out[33].response.answers.keys()], ['action', 'danger', 'margin']);
    assert.equal(out[34].response.json, out[33].response.json);
    // An empty stream, a Set, a generator: any iterable.
    assert.deepEqual(await collect(m.decideEach([])), []);
    const fromSet = await collect(m.decideEach(new Set([example])));
    assert.equal(fromSet[0].response.json, out[33].response.json);
    await assert.rejects(collect(m.decideEach(42)), (e) => e.code === 'SKYCMD_E_INVALID_ARGUMENT');
  } finally {
    m.close();
  }
});

test('decideEach reads an async iterable one group at a time, off the event loop', async () => {
  const m = sky.Model.open(modelPath);
  try {
    const G = sky.DECIDE_EACH_GROUP;
    let pulled = 0;
    let closed = false;
    async function* source() {
      try {
        for (let i = 0; i < 3 * G; i++) {
          pulled++;
          yield small(i).json();
        }
      } finally {
        closed = true;
      }
    }
    let ticks = 0;
    let spinning = true;
    const spin = () => { ticks++; if (spinning) setImmediate(spin); };
    setImmediate(spin);
    const it = m.decideEach(source());
    assert.equal(pulled, 0, 'nothing is read before the first item is asked for');
    assert.ok((await it.next()).value.response);
    assert.equal(pulled, G);
    spinning = false;
    assert.ok(ticks > 1, `the event loop turned ${ticks} times while the group was answered`);
    for (let i = 1; i < G; i++) assert.ok((await it.next()).value.response);
    assert.equal(pulled, G, 'the next group is read only when the first one is handed out');
    assert.ok((await it.next()).value.response);
    assert.equal(pulled, 2 * G);
    // Leaving the stream early closes the source.
    await it.return();
    assert.ok(closed);
    assert.equal(pulled, 2 * G);
  } finally {
    m.close();
  }
});

test('decideEach: a model closed between groups ends the stream with MISUSE', async () => {
  const m = sky.Model.open(modelPath);
  const it = m.decideEach(Array.from({ length: sky.DECIDE_EACH_GROUP + 1 }, (_, i) => small(i)));
  for (let i = 0; i < sky.DECIDE_EACH_GROUP; i++) assert.ok((await it.next()).value.response);
  m.close();
  await assert.rejects(it.next(), (e) => e.code === 'SKYCMD_E_MISUSE');
  await assert.rejects(collect(m.decideEach([example])), (e) => e.code === 'SKYCMD_E_MISUSE');
});
