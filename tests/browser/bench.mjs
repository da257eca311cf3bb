// bench.mjs - a benchmark, not a test: one s1-pico request (examples/flappy-drone.json on
// the built-in models/s1-pico-flappy.gguf; three questions) and one question alone (its
// `action` choice) answered by the WebAssembly package in headless Chromium, by the same
// package in Node, and by the native library on one thread (`skycmd bench
// --compute-threads 1`), all in the same run; prints the times and the ratios to native.
// Run by `tests/browser/run.sh --bench` (the environment of harness.mjs).
//
// Browsers coarsen performance.now() (to 100 us without cross-origin isolation), so the page
// times rounds of ROUND answers and takes the median of the per-answer means over ROUNDS
// rounds, after WARMUP untimed answers; Node times its rounds the same way. The native side
// is skycmd bench's median over single answers, run before and after the browser (both
// printed; the ratio uses their mean). The minimum of each (the best round against native's
// best answer) is printed too: on a loaded machine it is the steadier comparison.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { demoLoaded, env, launch, nativeBench as harnessNativeBench, newPage, serve } from './harness.mjs';

const WARMUP = 300;
const ROUND = 10;
const ROUNDS = Number(process.env.SKYCMD_BENCH_ROUNDS || 300);
const builtin = path.join(env.root, 'models/s1-pico-flappy.gguf');
const example = JSON.parse(readFileSync(path.join(env.root, 'examples/flappy-drone.json'), 'utf8'));
const bodies = {
  request: JSON.stringify(example),
  single: JSON.stringify({ state: example.state, questions: { action: example.questions.action } }),
};

// The timing loop, run in the page and in Node alike (a self-contained function).
function timeDecides(model, bodies, warmup, round, rounds, now) {
  const out = {};
  for (const [kind, body] of Object.entries(bodies)) {
    for (let i = 0; i < warmup; i++) model.decide(body);
    const perAnswer = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = now();
      for (let i = 0; i < round; i++) model.decide(body);
      perAnswer.push((now() - t0) / round);
    }
    perAnswer.sort((a, b) => a - b);
    out[kind] = { median: perAnswer[perAnswer.length >> 1], min: perAnswer[0] };
  }
  return out;
}

// the old shape of this script's report: medians at the top, minima under min
async function nativeBench() {
  const n = await harnessNativeBench(builtin);
  return {
    request: n.request.median, single: n.single.median,
    min: { request: n.request.min, single: n.single.min }, mode: n.mode, kernels: n.kernels,
  };
}

const cpu = (os.cpus()[0] || {}).model || 'unknown CPU';
const native1 = await nativeBench();

const srv = await serve();
const browser = await launch();
let chromium;
let kernels;
try {
  const { page } = await newPage(browser.context);
  await page.goto(`${srv.url}demo/?paused=1`);
  if ((await demoLoaded(page)) !== 'ready') throw new Error('the demo page did not load');
  kernels = await page.evaluate(() => (window.skycmdDemo.skycmd.kernels ? window.skycmdDemo.skycmd.kernels() : 'unknown'));
  chromium = await page.evaluate(
    ([src, b, w, r, n]) => {
      // eslint-disable-next-line no-new-func
      const fn = new Function(`return (${src})`)();
      return fn(window.skycmdDemo.model, b, w, r, n, () => performance.now());
    },
    [timeDecides.toString(), bodies, WARMUP, ROUND, ROUNDS],
  );
} finally {
  await browser.close();
  await srv.close();
}

// The same package in Node.
const pkg = await import(path.join(env.root, 'bindings/wasm/skycmd.js'));
await pkg.init(readFileSync(env.wasmModule));
const nodeModel = pkg.Model.fromBytes(readFileSync(builtin));
const { performance } = await import('node:perf_hooks');
const node = timeDecides(nodeModel, bodies, WARMUP, ROUND, ROUNDS, () => performance.now());
nodeModel.close();

const native2 = await nativeBench();
const fmt = (ms) => `${(ms * 1000).toFixed(0)} us`;
console.log(`rounds of ${ROUND} answers, ${ROUNDS} rounds after ${WARMUP} warm-up answers`);
console.log(`CPU: ${cpu} (${os.cpus().length} cores), load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
console.log(`Chromium ${browser.version}, Node ${process.version}; module kernels: ${kernels}; native: ${native1.mode}, ${native1.kernels}, one thread`);
for (const [kind, label] of [['request', 'one request, 3 questions'], ['single', 'one question (choice)']]) {
  const nat = (native1[kind] + native2[kind]) / 2;
  const natMin = Math.min(native1.min[kind], native2.min[kind]);
  const line = (name, t) => console.log(`  ${name} median ${fmt(t.median)} = ${(t.median / nat).toFixed(2)}x native; ` +
    `min ${fmt(t.min)} = ${(t.min / natMin).toFixed(2)}x native's min`);
  console.log(`${label}:`);
  console.log(`  native, one thread: median ${fmt(native1[kind])} before, ${fmt(native2[kind])} after; min ${fmt(natMin)}`);
  line('wasm in Chromium:', chromium[kind]);
  line('wasm in Node:    ', node[kind]);
}
