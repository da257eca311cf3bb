// harness.mjs - what the browser test and the browser benchmark share: the static server
// with its mounts, Debian's Chromium driven by playwright-core (never a downloaded browser),
// and the native CLI as the reference.
//
// Configuration comes from the environment tests/browser/run.sh and bench.sh set:
//   SKYCMD_ROOT          the repository
//   SKYCMD_NATIVE        the native CLI (skycmd) of a Release build
//   SKYCMD_WASM_MODULE   the reactor module skycmd.wasm (tools/build-wasm.sh --simd)
//   SKYCMD_GOLDEN_GGUF   s1-pico of the golden suite as an F32 GGUF (run.sh makes it)
//   SKYCMD_ARTIFACTS     where the screenshot and the run's files go
//   CHROMIUM             the browser (default /usr/bin/chromium)
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';

const run = promisify(execFile);

export const env = {
  root: process.env.SKYCMD_ROOT || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..'),
  native: process.env.SKYCMD_NATIVE,
  wasmModule: process.env.SKYCMD_WASM_MODULE,
  goldenGguf: process.env.SKYCMD_GOLDEN_GGUF,
  artifacts: process.env.SKYCMD_ARTIFACTS || os.tmpdir(),
  chromium: process.env.CHROMIUM || '/usr/bin/chromium',
};

// The flags of the brief: headless, no sandbox (root in a container), no GPU, and nothing
// that reaches the network on its own (QUIC, component updates, sync, background fetches).
export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** Serves bindings/wasm at / plus the module, the built-in model and any extra files. */
export async function serve(extra = {}) {
  const files = {
    '/skycmd.wasm': env.wasmModule,
    '/s1-pico-flappy.gguf': path.join(env.root, 'models/s1-pico-flappy.gguf'),
    ...extra,
  };
  for (const [k, v] of Object.entries(files)) if (!v) delete files[k];
  return startServer({ root: path.join(env.root, 'bindings/wasm'), files });
}

/** Debian's Chromium with a fresh profile; close() removes the profile. */
export async function launch() {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'skycmd-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: env.chromium,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 1000 },
  });
  const browser = context.browser();
  return {
    context,
    version: browser ? browser.version() : '',
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A page that records its console errors and uncaught exceptions. */
export async function newPage(context) {
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  return { page, problems };
}

/** Waits for the demo page to finish loading; returns its phase ('ready' or 'failed'). */
export async function demoLoaded(page, timeoutMs = 60000) {
  await page.waitForFunction(() => window.skycmdDemo && window.skycmdDemo.phase !== 'loading',
    null, { timeout: timeoutMs });
  return page.evaluate(() => window.skycmdDemo.phase);
}

/**
 * The native CLI's answer to a request body: {response} or {error: {status, message}}.
 * --f32 is the exact path (the default on CPUs with AMX-BF16 would be bf16x3, within 1e-4).
 */
export async function nativeDecide(model, body, dir) {
  const file = path.join(dir, `request-${process.pid}-${nativeDecide.n = (nativeDecide.n || 0) + 1}.json`);
  writeFileSync(file, body);
  try {
    const { stdout } = await run(env.native, ['decide', model, file, '--f32', '--compute-threads', '1'],
      { maxBuffer: 1 << 26 });
    return { response: JSON.parse(stdout) };
  } catch (e) {
    if (e.code !== 1) throw e;
    const msg = String(e.stderr).trim();
    const m = /\((SKYCMD_E_[A-Z_]+)\)\s*$/.exec(msg);
    return { error: { status: m ? m[1] : null, message: msg } };
  } finally {
    rmSync(file, { force: true });
  }
}

/**
 * The native CLI's one-thread speed on a model (`skycmd bench --json`, 1000 iterations): the
 * whole request and its single choice question, median and minimum in ms, and the mode
 * and kernels it ran.
 */
export async function nativeBench(model) {
  const { stdout } = await run(env.native, ['bench', model, '--compute-threads', '1', '--json',
    '--peak-ms', '0', '--iters', '1000'], { maxBuffer: 1 << 24 });
  const j = JSON.parse(stdout);
  return {
    request: { median: j.request.median_ms, min: j.request.min_ms },
    single: { median: j.kinds.choice.single.median_ms, min: j.kinds.choice.single.min_ms },
    mode: j.mode,
    kernels: j.kernels,
  };
}

/**
 * Compares a wasm response with the native one as tests/wasm/compare.py does: the same
 * keys, strings, booleans and list lengths; token counts (keys ending in "_tokens" or
 * "tokens") identical; every other number within tol. Returns {bad: [...], maxDiff}.
 */
export function compareResponses(a, b, tol, where = '') {
  const bad = [];
  let maxDiff = 0;
  const walk = (x, y, p) => {
    if (x !== null && y !== null && typeof x === 'object' && typeof y === 'object') {
      if (Array.isArray(x) !== Array.isArray(y)) {
        bad.push(`${p}: array against object`);
        return;
      }
      if (Array.isArray(x)) {
        if (x.length !== y.length) {
          bad.push(`${p}: ${x.length} items != ${y.length}`);
          return;
        }
        x.forEach((v, i) => walk(v, y[i], `${p}[${i}]`));
        return;
      }
      const kx = Object.keys(x).sort();
      const ky = Object.keys(y).sort();
      if (kx.join('\u0000') !== ky.join('\u0000')) {
        bad.push(`${p}: keys ${JSON.stringify(kx)} != ${JSON.stringify(ky)}`);
        return;
      }
      for (const k of kx) walk(x[k], y[k], `${p}.${k}`);
      return;
    }
    if (typeof x === 'number' && typeof y === 'number') {
      if (/tokens$/.test(p)) {
        if (x !== y) bad.push(`${p}: ${x} != ${y}`);
        return;
      }
      const d = Math.abs(x - y);
      if (!(d <= tol)) bad.push(`${p}: ${x} vs ${y} (|d| ${d.toExponential(2)} > ${tol})`);
      if (d > maxDiff) maxDiff = d;
      return;
    }
    if (x !== y) bad.push(`${p}: ${JSON.stringify(x)} != ${JSON.stringify(y)}`);
  };
  walk(a, b, where);
  return { bad, maxDiff };
}

/** `python3 script args...` with JSON on stdin; parses the JSON it prints. */
export async function python(script, input) {
  const child = execFile('python3', [script], { maxBuffer: 1 << 26 });
  const out = new Promise((ok, fail) => {
    let text = '';
    let err = '';
    child.stdout.on('data', (d) => { text += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('close', (code) => (code === 0 ? ok(JSON.parse(text)) : fail(new Error(`${script}: exit ${code}: ${err}`))));
  });
  child.stdin.end(JSON.stringify(input));
  return out;
}
