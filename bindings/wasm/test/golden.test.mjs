// golden.test.mjs - the package's answers against the native library's, computed in the
// same run by the native CLI (exact f32 path): examples/flappy-drone.json and the 80 golden
// requests (tests/fixtures/golden/requests.json) on the built-in s1-pico-flappy and on the
// SentencePiece mmbert-tiny that tests/wasm/run.sh makes. Same answers, same token counts,
// every number within 1e-5; refused requests refused with the native status and message;
// token ids of every state and instruction text identical.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { init, Model, SkycmdError } from '../skycmd.js';
import { wasmPath, models, flappyModel, flappyRequest, goldenRequests, nativeAnswers, nativeTokens, compareResponses } from './helpers.mjs';

const TOL = 1e-5;
await init(readFileSync(wasmPath));

test('examples/flappy-drone.json on s1-pico-flappy: native answers within 1e-5', () => {
  const m = Model.fromBytes(readFileSync(flappyModel));
  try {
    const [native] = nativeAnswers(flappyModel, [JSON.stringify(JSON.parse(flappyRequest))]);
    const { max, problems } = compareResponses(m.decide(flappyRequest), native, TOL);
    assert.deepEqual(problems, []);
    console.log(`flappy-drone.json: max |dp| ${max.toExponential(2)}`);
  } finally {
    m.close();
  }
});

for (const [label, path] of models()) {
  test(`golden requests on ${label}: native answers within 1e-5, refusals alike`, { skip: path ? false : `${label}.gguf is missing (tests/wasm/run.sh makes it)` }, () => {
    const m = Model.fromBytes(readFileSync(path));
    try {
      const bodies = goldenRequests.map((r) => r.body);
      const native = nativeAnswers(path, bodies);
      let max = 0;
      let answered = 0;
      let refused = 0;
      bodies.forEach((body, i) => {
        const name = goldenRequests[i].name;
        let got;
        try {
          got = m.decide(body);
        } catch (e) {
          assert.ok(e instanceof SkycmdError, `${name}: ${e}`);
          assert.ok(native[i].error, `${name}: wasm refused (${e.status}: ${e.message}), native answered`);
          assert.equal(e.status, native[i].error.status, name);
          assert.equal(e.message, native[i].error.message, name);
          refused++;
          return;
        }
        assert.ok(!native[i].error, `${name}: wasm answered, native refused: ${JSON.stringify(native[i].error)}`);
        const r = compareResponses(got, native[i], TOL);
        assert.deepEqual(r.problems, [], name);
        max = Math.max(max, r.max);
        answered++;
      });
      assert.ok(answered >= 60, `only ${answered} answered`);
      console.log(`${label}: ${answered} answered, ${refused} refused, max |dp| ${max.toExponential(2)}`);
    } finally {
      m.close();
    }
  });

  test(`token ids on ${label}: identical to native`, { skip: path ? false : `${label}.gguf is missing` }, () => {
    const m = Model.fromBytes(readFileSync(path));
    try {
      const texts = new Set(['vy 0 dx 36 up 9 dn 7 nxt 10 alt 32', 'héllo wörld, 日本語のテキスト 🚁!', '  spaces\tand\nnewlines  ', '[MASK] [CLS] x']);
      for (const r of goldenRequests) {
        let body;
        try { body = JSON.parse(r.body); } catch { continue; }
        if (typeof body.state === 'string' && body.state.length > 0) texts.add(body.state);
        for (const q of Object.values(body.questions || {})) {
          if (q && typeof q.instructions === 'string' && q.instructions.length > 0) texts.add(q.instructions);
        }
      }
      for (const text of texts) assert.deepEqual(m.tokenize(text), nativeTokens(path, text), JSON.stringify(text));
      assert.deepEqual(m.tokenize(''), []);
      console.log(`${label}: ${texts.size} texts tokenized alike`);
    } finally {
      m.close();
    }
  });
}
