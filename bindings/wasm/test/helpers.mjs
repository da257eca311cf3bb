// helpers.mjs - what the package's tests share: where things are, the native reference
// (the native `skycmd` CLI, run at test time) and the comparison of two responses.
//
// Environment (test/run.sh sets them; the defaults are the repository's build dirs):
//   SKYCMD_WASM_MODULE   the reactor module (default: the package's skycmd.wasm)
//   SKYCMD_NATIVE_CLI    a native `skycmd` program (default: build-h1/skycmd)
//   SKYCMD_GOLDEN_MODELS the directory holding mmbert-tiny.gguf, made by tests/wasm/run.sh
//                        (default: build-wasm-simd/golden)
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const pkgDir = dirname(dirname(fileURLToPath(import.meta.url)));
export const root = dirname(dirname(pkgDir));
export const wasmPath = process.env.SKYCMD_WASM_MODULE || join(pkgDir, 'skycmd.wasm');
export const nativeCli = process.env.SKYCMD_NATIVE_CLI || join(root, 'build-h1', 'skycmd');
export const goldenModels = process.env.SKYCMD_GOLDEN_MODELS || join(root, 'build-wasm-simd', 'golden');
export const flappyModel = join(root, 'models', 's1-pico-flappy.gguf');
export const flappyRequest = readFileSync(join(root, 'examples', 'flappy-drone.json'), 'utf8');
/** tests/fixtures/golden/requests.json: [{name, body (text), expect_error}] */
export const goldenRequests = JSON.parse(readFileSync(join(root, 'tests', 'fixtures', 'golden', 'requests.json'), 'utf8'));

/** The models the answers are compared on: [label, path]; the built-in s1-pico-flappy,
 * and the golden suite's F32 s1-pico and SentencePiece mmbert-tiny (path null when
 * tests/wasm/run.sh has not made them). */
export function models() {
  const list = [['s1-pico-flappy', flappyModel]];
  for (const name of ['s1-pico', 'mmbert-tiny']) {
    const path = join(goldenModels, `${name}.gguf`);
    list.push([name, existsSync(path) ? path : null]);
  }
  return list;
}

/** Native answers of request bodies (one line each) with the exact f32 path: per body the
 * response object or {error: {status, message}}. */
export function nativeAnswers(model, bodies) {
  const dir = mkdtempSync(join(tmpdir(), 'skycmd-wasm-test-'));
  const input = join(dir, 'in.jsonl');
  const output = join(dir, 'out.jsonl');
  writeFileSync(input, bodies.map((b) => b.replace(/\n/g, ' ')).join('\n') + '\n');
  try {
    execFileSync(nativeCli, ['decide', model, '--batch', input, '-o', output, '--f32', '-q'], { stdio: ['ignore', 'ignore', 'ignore'] });
  } catch (e) {
    if (e.status !== 1) throw e; // 1: some line failed, which the golden set means to do
  }
  const lines = readFileSync(output, 'utf8').split('\n').filter((l) => l.length > 0);
  if (lines.length !== bodies.length) throw new Error(`native: ${lines.length} answers for ${bodies.length} requests`);
  return lines.map((l) => JSON.parse(l));
}

/** Native token ids of a text (no special tokens). */
export function nativeTokens(model, text) {
  const out = execFileSync(nativeCli, ['tokenize', model, '--ids-only', '--', text], { encoding: 'utf8' }).trim();
  return out === '' ? [] : out.split(/\s+/).map(Number);
}

/** Compares two responses: the same keys in the same order, the same strings, booleans and
 * integers of usage, probabilities and confidences within tol, a score answer's "score" (the
 * expected level, sum of j p_j over levels 0..n-1) within (n - 1) tol. Returns {max, problems}: the largest numeric
 * difference and the first disagreements (path: what). */
export function compareResponses(wasm, native, tol) {
  const problems = [];
  let max = 0;
  const walk = (a, b, path) => {
    if (problems.length > 10) return;
    if (typeof a === 'number' && typeof b === 'number') {
      const d = Math.abs(a - b);
      if (path.startsWith('usage.')) { // token counts: exact
        if (a !== b) problems.push(`${path}: ${a} != ${b}`);
        return;
      }
      let bound = tol;
      if (/^answers\.[^.]+\.score$/.test(path)) {
        const levels = Object.keys(scoreProbabilities(path) || {}).length;
        bound = tol * Math.max(1, levels - 1);
      } else {
        max = Math.max(max, d); // |dp|: probabilities, confidences, nouls
      }
      if (!(d <= bound)) problems.push(`${path}: |${a} - ${b}| = ${d} > ${bound}`);
      return;
    }
    if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
      if (a !== b) problems.push(`${path}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`);
      return;
    }
    if (Array.isArray(a) !== Array.isArray(b)) { problems.push(`${path}: array against object`); return; }
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.join('\u0000') !== kb.join('\u0000')) { problems.push(`${path}: keys [${ka}] != [${kb}]`); return; }
    for (const k of ka) walk(a[k], b[k], path ? `${path}.${k}` : k);
  };
  const scoreProbabilities = (path) => wasm.answers[path.split('.')[1]].probabilities;
  walk(wasm, native, '');
  return { max, problems };
}
