// run-wasi.mjs WASM [ARGS...] - run a wasm32-wasi command under Node's WASI (node >= 18):
// the file system is the host's (preopen "/"), paths are passed as absolute, the exit
// status is the program's. Used by tests/wasm/run.sh, tests/wasm/bench.sh and docs/wasm.md.
//
// V8 flags: Node 20.20.2 crashed (SIGSEGV in V8, after the program's last output) at the
// end of long runs with V8's concurrent garbage collector: mmbert-tiny's 80 golden requests
// (tests/wasm/golden_wasi.c) crashed in 7 runs of 7, with or without dynamic tiering; never
// in 6 with --single-threaded-gc (or --single-threaded). So this script runs itself again
// with --single-threaded-gc when started without it (flags cannot be changed safely once V8
// runs: node:v8 setFlagsFromString's documentation), and --no-warnings (Node calls WASI
// experimental). proc_exit ends the process with the program's status (no returnOnExit:
// nothing to do after it; fd_write is synchronous, so the output is written).
import { WASI } from 'node:wasi';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

if (!process.execArgv.includes('--single-threaded-gc')) {
  const r = spawnSync(process.execPath,
                      ['--no-warnings', '--single-threaded-gc', ...process.execArgv,
                       fileURLToPath(import.meta.url), ...process.argv.slice(2)],
                      { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
const [file, ...args] = process.argv.slice(2);
if (!file) {
  console.error('usage: node run-wasi.mjs PROGRAM.wasm [ARGS...]');
  process.exit(2);
}
const wasi = new WASI({ version: 'preview1', args: [file, ...args], env: {},
                        preopens: { '/': '/' } });
const module = await WebAssembly.compile(readFileSync(resolve(file)));
// (wasi.getImportObject() is Node >= 19.8 only; wasiImport is in every Node with WASI)
const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.wasiImport });
process.exitCode = wasi.start(instance);
