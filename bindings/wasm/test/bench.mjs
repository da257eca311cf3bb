// bench.mjs [REPEAT] - a benchmark, not a test (nothing asserted): one s1-pico question
// (examples/flappy-drone.json on models/s1-pico-flappy.gguf) answered REPEAT times (default
// 1000) through this package, and in the same run by the WASI driver of the same library
// (build-wasm-simd/skycmd-wasi.wasm under node:wasi, tests/wasm/run-wasi.mjs) and by the
// native library (SKYCMD_NATIVE_BENCH: a native build of tests/wasm/skycmd_wasi.c, as
// tests/wasm/bench.sh makes it; left out when absent), one thread each. Prints the mean
// time per answer and the ratios. Run after test/run.sh (it builds what this needs).
import { readFileSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { init, Model, kernels } from '../skycmd.js';
import { root, wasmPath, flappyModel, flappyRequest } from './helpers.mjs';

const repeat = Number(process.argv[2] || 1000);
const requestPath = join(root, 'examples', 'flappy-drone.json');
await init(readFileSync(wasmPath));
const m = Model.fromBytes(readFileSync(flappyModel));
const timePackage = () => {
  for (let i = 0; i < 50; i++) m.decide(flappyRequest);
  const t0 = performance.now();
  for (let i = 0; i < repeat; i++) m.decide(flappyRequest);
  return ((performance.now() - t0) * 1000) / repeat;
};
const timeDriver = (cmd, args) => {
  const r = spawnSync(cmd, [...args, 'decide', flappyModel, requestPath, String(repeat)], { encoding: 'utf8' });
  const time = /([\d.]+) us per answer/.exec(r.stderr);
  if (!time) throw new Error(`${cmd}: ${r.stderr}`);
  return Number(time[1]);
};
const wasi = join(root, 'build-wasm-simd', 'skycmd-wasi.wasm');
const native = process.env.SKYCMD_NATIVE_BENCH || join(root, 'build-h1', 'skycmd-wasi-native');
const rows = [];
// interleaved rounds, medians: a change of load falls on all alike
const rounds = { package: [], 'WASI driver': [], native: [] };
for (let r = 0; r < 3; r++) {
  rounds.package.push(timePackage());
  rounds['WASI driver'].push(timeDriver(process.execPath, ['--no-warnings', join(root, 'tests', 'wasm', 'run-wasi.mjs'), wasi]));
  if (existsSync(native)) rounds.native.push(timeDriver(native, []));
}
const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
for (const [what, t] of Object.entries(rounds)) if (t.length) rows.push([what, median(t)]);
const base = rows.find(([w]) => w === 'native')?.[1];
console.log(`node ${process.version}, ${kernels()}, ${repeat} answers x 3 rounds (median)`);
for (const [what, us] of rows) console.log(`${what.padEnd(12)} ${us.toFixed(0).padStart(6)} us per answer${base ? `  ${(us / base).toFixed(2)}x native` : ''}`);
m.close();
