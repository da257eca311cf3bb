// bench.mjs - a benchmark, not a test: wllama 3.8.1 (llama.cpp compiled to WebAssembly,
// the pinned npm package @wllama/wllama, its createSystemOne()) against our WebAssembly
// package @skycmd/wasm (bindings/wasm with build-wasm-simd/skycmd.wasm) on the same GGUF
// (the built-in models/s1-pico-flappy.gguf) and the same requests (examples/flappy-drone.json,
// three questions, and its `action` question alone), in ONE headless Chromium run, one page
// (tests/browser/wllama/page.html), no COOP/COEP, so both run single-threaded. Prints a
// table: time per answer of each engine (median and minimum of the timed rounds, and the
// first, cold answer), the ratio wllama/ours, and the largest difference between the two
// engines' answers and against the native CLI (`skycmd decide --f32`, one thread); the
// native time (`skycmd bench --compute-threads 1`) is a column too. Run by
// tests/browser/wllama/bench.sh (the environment of ../harness.mjs, plus WLLAMA_DIR).
//
// Engines: ours on the page's thread (Model.decide, synchronous); ours in a Web Worker
// (WorkerModel, when bindings/wasm has worker-model.js), which pays the same postMessage
// round trips as wllama, whose createSystemOne() is always answered by its Web Worker; and
// wllama. A row times a call that does next to nothing in each worker: that floor.
//
// Timing: Chromium coarsens performance.now() to 100 us without cross-origin isolation, so
// each engine is timed over rounds of answers (ours ROUND_OURS, wllama ROUND_WLLAMA: a
// wllama answer is tens of ms) and each round gives a per-answer mean; the engines take
// turns round by round (starting with a different one each round), so all see the same
// load on the machine. Reported: the median and the minimum of the per-answer means.
//
// If wllama cannot load the model or answer, its error (and its last log lines) is
// printed instead of its figures; ours are still measured. Exit 1 when either engine
// fails, or when an answer pair differs by more than TOLERANCE (the issue's 1e-3) or in a
// token count.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { compareResponses, env, launch, nativeBench as harnessNativeBench, nativeDecide, newPage, serve } from '../harness.mjs';

const run = promisify(execFile);
const num = (name, dflt) => Number(process.env[name] || dflt);
const TOLERANCE = num('WLLAMA_BENCH_TOLERANCE', 1e-3);
const WARMUP_OURS = num('WLLAMA_BENCH_WARMUP_OURS', 300);
const WARMUP_WLLAMA = num('WLLAMA_BENCH_WARMUP_WLLAMA', 20);
const ROUND_OURS = num('WLLAMA_BENCH_ROUND_OURS', 10);
const ROUND_WLLAMA = num('WLLAMA_BENCH_ROUND_WLLAMA', 3);
const ROUNDS = num('WLLAMA_BENCH_ROUNDS', 40);
const LOAD_TIMEOUT_MS = num('WLLAMA_BENCH_LOAD_TIMEOUT_MS', 60000);

const here = path.dirname(new URL(import.meta.url).pathname);
const wllamaDir = process.env.WLLAMA_DIR || path.join(here, 'node_modules/@wllama/wllama');
const wllamaVersion = JSON.parse(readFileSync(path.join(wllamaDir, 'package.json'), 'utf8')).version;
const builtin = path.join(env.root, 'models/s1-pico-flappy.gguf');
const example = JSON.parse(readFileSync(path.join(env.root, 'examples/flappy-drone.json'), 'utf8'));
const requests = {
  request: example,
  single: { state: example.state, questions: { action: example.questions.action } },
};
const labels = { request: 'example request (3 questions)', single: 'one question (action)' };

// Runs in the page: the answers of every engine, then the interleaved timing. Engines:
// ours (Model, synchronous), oursWorker (WorkerModel, when the page has it) and wllama.
// Besides the requests, 'roundTrip' times a call that does next to nothing in each worker
// (ours: tokenize('a'); wllama: a no-op 'cancel'): the floor a worker call pays (postMessage
// both ways) whatever the model does. A createSystemOne() makes at least two such calls
// ('systemone', then 'get_result').
async function inPage([requests, cfg]) {
  const p = window.enginePage;
  const ours = p.model;
  let w = p.wllamaErrors.length ? null : p.wllama;
  const out = { answers: {}, first: {}, times: {}, wllamaError: null };
  for (const [kind, req] of Object.entries(requests)) {
    // each engine's first answer of each kind, cold (the example request comes first)
    let t0 = performance.now();
    out.answers[kind] = { ours: ours.decide(req) };
    out.first[kind] = { ours: performance.now() - t0 };
    if (p.workerModel) {
      t0 = performance.now();
      out.answers[kind].oursWorker = await p.workerModel.decide(req);
      out.first[kind].oursWorker = performance.now() - t0;
    }
    if (w) {
      try {
        t0 = performance.now();
        out.answers[kind].wllama = await w.createSystemOne(req);
        out.first[kind].wllama = performance.now() - t0;
      } catch (e) {
        out.wllamaError = `createSystemOne: ${e && e.name}: ${e && e.message || e}${e && e.type ? ` (type ${e.type})` : ''}`;
        w = null;
      }
    }
  }
  const engines = [{ name: 'ours', round: cfg.roundOurs, warmup: cfg.warmupOurs, sync: true,
    answer: (req) => ours.decide(req) }];
  if (p.workerModel) {
    engines.push({ name: 'oursWorker', round: cfg.roundOurs, warmup: cfg.warmupOurs,
      answer: (req) => p.workerModel.decide(req), tokenize: (t) => p.workerModel.tokenize(t) });
  }
  if (w) {
    engines.push({ name: 'wllama', round: cfg.roundWllama, warmup: cfg.warmupWllama,
      answer: (req) => w.createSystemOne(req),
      // wllama 3.8.1 has no public cheap call; its worker proxy's 'cancel' of a request that
      // does not exist is a no-op inside the worker (a private field: JavaScript reaches it)
      tokenize: () => w.proxy.wllamaAction('cancel', { _name: 'cncl_req', req_id: 2147483647 }) });
  }
  const kinds = { ...requests, roundTrip: 'a' };
  const call = (e, kind, x) => (kind === 'roundTrip' ? e.tokenize(x) : e.answer(x));
  const timeRound = async (e, kind, x) => {
    const n = kind === 'roundTrip' ? cfg.roundOurs : e.round;
    const t0 = performance.now();
    if (e.sync) for (let i = 0; i < n; i++) call(e, kind, x);
    else for (let i = 0; i < n; i++) await call(e, kind, x);
    return (performance.now() - t0) / n;
  };
  for (const [kind, x] of Object.entries(kinds)) {
    out.times[kind] = {};
    for (const e of engines) {
      if (kind === 'roundTrip' && !e.tokenize) continue;
      out.times[kind][e.name] = [];
      for (let i = 0; i < e.warmup; i++) await call(e, kind, x);
    }
  }
  for (let r = 0; r < cfg.rounds; r++) {
    for (const [kind, x] of Object.entries(kinds)) {
      // the engines in turn, starting with a different one each round
      for (let j = 0; j < engines.length; j++) {
        const e = engines[(r + j) % engines.length];
        if (out.times[kind][e.name]) out.times[kind][e.name].push(await timeRound(e, kind, x));
      }
    }
  }
  return out;
}

const nativeBench = () => harnessNativeBench(builtin);

const stats = (xs) => {
  if (!xs || !xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[s.length >> 1], min: s[0], n: s.length };
};

const cpu = (os.cpus()[0] || {}).model || 'unknown CPU';
let lscpuModel = cpu;
try {
  const { stdout } = await run('lscpu', []);
  const m = /^Model name:\s*(.+)$/m.exec(stdout);
  if (m) lscpuModel = m[1].trim();
} catch { /* os.cpus() names it */ }

const native = await nativeBench();
const nativeAnswers = {};
for (const [kind, req] of Object.entries(requests)) {
  const r = await nativeDecide(builtin, JSON.stringify(req), env.artifacts);
  if (!r.response) throw new Error(`native CLI refused the ${kind}: ${r.error.message}`);
  nativeAnswers[kind] = r.response;
}

const srv = await serve({
  '/wllama/index.html': path.join(here, 'page.html'),
  '/wllama/wllama.js': path.join(wllamaDir, 'esm/index.js'),
  '/wllama/wllama.wasm': path.join(wllamaDir, 'esm/wasm/wllama.wasm'),
});
const browser = await launch();
let result;
let info;
let problems;
let closing = false;
try {
  const opened = await newPage(browser.context);
  problems = opened.problems;
  const { page } = opened;
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`); });
  // a worker that ends before the browser does (wllama's, dying while it loads) is a problem
  page.on('worker', (wk) => {
    wk.on('close', () => { if (!closing) problems.push(`a worker closed: ${wk.url().slice(0, 80)}`); });
  });
  await page.goto(`${srv.url}wllama/index.html?loadTimeoutMs=${LOAD_TIMEOUT_MS}`);
  await page.waitForFunction(() => window.enginePage && window.enginePage.phase !== 'loading', null,
    { timeout: LOAD_TIMEOUT_MS + 60000 });
  info = await page.evaluate(() => {
    const p = window.enginePage;
    return { phase: p.phase, errors: p.errors, wllamaErrors: p.wllamaErrors, wllamaInfo: p.wllamaInfo,
      wllamaLogs: (p.wllamaLogs || []).slice(-25), kernels: p.kernels,
      crossOriginIsolated: p.crossOriginIsolated, workerError: p.workerError || null, version: p.skycmd ? p.skycmd.version() : null };
  });
  if (info.phase !== 'ready') throw new Error(`the page failed: ${info.errors.join('; ')}`);
  result = await page.evaluate(inPage, [requests, {
    warmupOurs: WARMUP_OURS, warmupWllama: WARMUP_WLLAMA, roundOurs: ROUND_OURS,
    roundWllama: ROUND_WLLAMA, rounds: ROUNDS,
  }]);
} finally {
  closing = true;
  await browser.close();
  await srv.close();
}

// ---- the report ----------------------------------------------------------------------------
const us = (ms) => (ms == null ? '-' : `${(ms * 1000).toLocaleString('en-US', { maximumFractionDigits: 0 })} us`);
const ratio = (a, b) => (a == null || b == null ? '-' : `${(a / b).toFixed(1)}x`);
const wllamaError = info.wllamaErrors.join('; ') || result.wllamaError;
let failed = false;

console.log(`CPU: ${lscpuModel} (${os.cpus().length} cores), load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
console.log(`Chromium ${browser.version}; Node ${process.version}; page cross-origin isolated: ${info.crossOriginIsolated}`);
console.log(`ours: @skycmd/wasm ${info.version}, module kernels ${info.kernels}, synchronous on the page's thread`);
if (info.wllamaInfo) {
  const wi = info.wllamaInfo;
  console.log(`wllama ${wllamaVersion} (libllama ${wi.libllama}): ${wi.multithread ? `multi-thread build, ${wi.threads} threads` : `single-thread (pthreads off; SharedArrayBuffer ${wi.sharedArrayBuffer ? 'present' : 'absent: not cross-origin isolated'})`}, ` +
    `${wi.compat ? 'compat build (no JSPI or Memory64)' : 'default build esm/wasm/wllama.wasm (JSPI + Memory64)'}, CPU only (n_gpu_layers 0), in its Web Worker`);
} else {
  console.log(`wllama ${wllamaVersion}: did not load`);
}
console.log(`native: skycmd bench --compute-threads 1 (${native.mode}, ${native.kernels}), median of 1000 answers`);
console.log(`agreement: every probability, score, confidence and noul within ${TOLERANCE}, token counts equal`);
console.log(`timing: ${ROUNDS} interleaved rounds per engine and request (ours ${ROUND_OURS} answers a round, wllama ${ROUND_WLLAMA}), ` +
  `after ${WARMUP_OURS} (ours) and ${WARMUP_WLLAMA} (wllama) warm-up answers`);
if (wllamaError) {
  failed = true;
  console.log(`wllama FAILED: ${wllamaError}`);
  if (info.wllamaLogs.length) console.log(`wllama's last log lines:\n  ${info.wllamaLogs.join('\n  ')}`);
}
console.log('');
console.log('| s1-pico-flappy, one thread | native | ours, page thread | ours, WorkerModel | wllama (its worker) | wllama / ours | wllama / ours WorkerModel | max abs d, wllama-ours | max abs d, ours-native | max abs d, wllama-native |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const kind of Object.keys(requests)) {
  const t = result.times[kind];
  const o = stats(t.ours);
  const ow = stats(t.oursWorker);
  const w = stats(t.wllama);
  const a = result.answers[kind];
  const diff = (x, y, what) => {
    if (!x || !y) return '-';
    const c = compareResponses(x.answers, y.answers, TOLERANCE, what);
    if (c.bad.length) {
      failed = true;
      console.error(`${kind}, ${what}: ${c.bad.join('; ')}`);
    }
    if (x.usage && y.usage && x.usage.input_tokens !== y.usage.input_tokens) {
      failed = true;
      console.error(`${kind}, ${what}: input_tokens ${x.usage.input_tokens} != ${y.usage.input_tokens}`);
    }
    return `${c.maxDiff.toExponential(1)}${c.bad.length ? ' (FAIL)' : ''}`;
  };
  const dWO = diff(a.wllama, a.ours, 'wllama-ours');
  const dON = diff(a.ours, nativeAnswers[kind], 'ours-native');
  const dWN = diff(a.wllama, nativeAnswers[kind], 'wllama-native');
  if (a.oursWorker && JSON.stringify(a.oursWorker) !== JSON.stringify(a.ours)) {
    failed = true;
    console.error(`${kind}: WorkerModel's answer differs from Model's`);
  }
  const n = native[kind];
  for (const stat of ['median', 'min']) {
    const g = (x) => x && x[stat];
    console.log(`| ${labels[kind]}, ${stat === 'min' ? 'minimum' : 'median'} | ${us(n[stat])} | ${us(g(o))} | ${us(g(ow))} | ${us(g(w))} | ` +
      `${ratio(g(w), g(o))} | ${ratio(g(w), g(ow))} | ${stat === 'median' ? `${dWO} | ${dON} | ${dWN}` : ' |  | '} |`);
  }
}
{
  const t = result.times.roundTrip;
  const ow = stats(t.oursWorker);
  const w = stats(t.wllama);
  for (const kind of Object.keys(requests)) {
    const f = result.first[kind];
    console.log(`| ${labels[kind]}, the first answer (cold) | | ${us(f.ours)} | ${us(f.oursWorker)} | ${us(f.wllama)} | ${ratio(f.wllama, f.ours)} | ${ratio(f.wllama, f.oursWorker)} |  |  |  |`);
  }
  console.log(`| one worker call that does next to nothing, median | | | ${us(ow && ow.median)} | ${us(w && w.median)} | | | | | |`);
}
console.log('');
for (const kind of Object.keys(requests)) {
  const a = result.answers[kind];
  const fmt = (r) => (r ? Object.entries(r.answers).map(([k, v]) =>
    `${k}=${v.type === 'choice' ? `${v.choice} p=${JSON.stringify(v.probabilities)}` : v.type === 'noul' ? v.noul : `${v.score} p=${JSON.stringify(v.probabilities)}`}`).join('; ') +
    (r.usage ? ` [input_tokens ${r.usage.input_tokens}]` : '') : '-');
  console.log(`${labels[kind]}:`);
  console.log(`  native: ${fmt(nativeAnswers[kind])}`);
  console.log(`  ours:   ${fmt(a.ours)}${a.oursWorker ? ' (WorkerModel: the same)' : ''}`);
  console.log(`  wllama: ${fmt(a.wllama)}`);
}
if (info.workerError) console.log(`ours in a WorkerModel: not measured (${info.workerError})`);
if (problems.length) console.log(`page problems: ${problems.join('; ')}`);
process.exit(failed ? 1 : 0);
