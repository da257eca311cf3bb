// worker-model.js - WorkerModel: Model's API with the model in a worker of its own (a Web
// Worker in browsers, a worker_threads Worker in Node), every call a Promise, so the page's
// main thread never blocks on a load or a decision. worker.js is the other side.
//
//   import { WorkerModel } from '@skycmd/wasm/worker';
//   const m = await WorkerModel.fromUrl('s1-pico-flappy.gguf', { onProgress });
//   const answer = await m.decide(request);   // decideBatch, decideEach, tokenize, info()
//   await m.close();                          // ends the worker
//
// Each WorkerModel owns one worker (one module instance, one thread): open several for
// parallel answers. Calls run in the order made. Errors are SkycmdError, as with Model.
import { SkycmdError, Status, _args } from './skycmd.js';

const isNode = typeof process !== 'undefined' && !!(process.versions && process.versions.node);
const WORKER_URL = new URL('./worker.js', import.meta.url);

// The argument checks are Model's (skycmd.js), made here on the calling side: a wrong
// argument throws (TypeError) or rejects (SkycmdError) as Model's call would.
const { requestText, requestsArg, textArg, urlArg, optionsArg, nameOption } = _args;

/** The worker behind one WorkerModel, the same shape in browsers and Node. */
async function startWorker() {
  if (isNode && typeof globalThis.Worker === 'undefined') {
    const { Worker } = await import(/* @vite-ignore */ /* webpackIgnore: true */ 'node:worker_threads');
    const w = new Worker(WORKER_URL);
    return {
      post: (m, transfer) => w.postMessage(m, transfer),
      onMessage: (fn) => w.on('message', fn),
      onFailure: (fn) => { w.on('error', fn); w.on('exit', (code) => fn(new Error(`the worker exited (${code})`))); },
      terminate: () => w.terminate(),
    };
  }
  const w = new Worker(WORKER_URL, { type: 'module' });
  return {
    post: (m, transfer) => w.postMessage(m, transfer),
    onMessage: (fn) => { w.onmessage = (e) => fn(e.data); },
    onFailure: (fn) => {
      w.onerror = (e) => { e.preventDefault(); fn(new Error(e.message || 'the worker failed')); };
      w.onmessageerror = () => fn(new Error('a message from the worker could not be read'));
    },
    terminate: () => w.terminate(),
  };
}

function rebuild(error) {
  if (error.name === 'TypeError' || error.name === 'RangeError') {
    const e = error.name === 'TypeError' ? new TypeError(error.message) : new RangeError(error.message);
    if (error.errorCode) e.code = error.errorCode;
    return e;
  }
  return new SkycmdError(error.code, error.message, error.op);
}

export class WorkerModel {
  constructor(token, worker) {
    if (token !== PRIVATE) throw new TypeError('use WorkerModel.fromUrl() or WorkerModel.fromBytes()');
    this._worker = worker;
    this._next = 1;
    this._pending = new Map(); // id -> {resolve, reject, onProgress}
    this._failed = null;
    this._closed = false;
    worker.onMessage((m) => this._receive(m));
    worker.onFailure((e) => this._fail(e));
  }

  /** Downloads (fetch, or a file in Node) and opens a GGUF model in a new worker.
   * options: onProgress(loaded, total), name, wasm (the module's URL; default skycmd.wasm
   * beside skycmd.js). A relative url is resolved against the page, as fetch would. */
  static async fromUrl(url, options) {
    url = urlArg('url', url);
    const { onProgress, name, wasm } = optionsArg('options', options);
    if (onProgress !== undefined && typeof onProgress !== 'function') throw _args.argTypeError('options.onProgress', 'a function', onProgress);
    nameOption(name);
    const base = globalThis.location && globalThis.location.href;
    const abs = (u) => (u === undefined || !base ? (u instanceof URL ? u.href : u) : new URL(u, base).href);
    return WorkerModel._open({ url: abs(url), name, wasm: abs(wasm) }, [], onProgress);
  }

  /** Opens a GGUF model from its bytes in a new worker. transfer: true moves the bytes'
   * buffer to the worker instead of copying it (it is then empty here). */
  static async fromBytes(bytes, options) {
    const { name, wasm, transfer = false } = optionsArg('options', options);
    if (bytes instanceof ArrayBuffer) bytes = new Uint8Array(bytes);
    if (!ArrayBuffer.isView(bytes)) throw new TypeError('WorkerModel.fromBytes: bytes must be a Uint8Array or an ArrayBuffer');
    nameOption(name);
    const base = globalThis.location && globalThis.location.href;
    const w = wasm !== undefined && base ? new URL(wasm, base).href : (wasm instanceof URL ? wasm.href : wasm);
    return WorkerModel._open({ bytes, name, wasm: w }, transfer ? [bytes.buffer] : [], undefined);
  }

  static async _open(args, transfer, onProgress) {
    const m = new WorkerModel(PRIVATE, await startWorker());
    try {
      m._info = await m._call('open', args, transfer, onProgress);
    } catch (e) {
      m._worker.terminate();
      m._closed = true;
      throw e;
    }
    return m;
  }

  /** The response object of one request (an object, a typed Request or JSON text). */
  decide(req) { return this._call('decide', () => ({ req: requestText(req, 'request') })); }

  /** The responses of requests answered together; one bad request rejects, naming it. */
  decideBatch(reqs) {
    return this._call('decideBatch', () => ({
      reqs: requestsArg(reqs).map((req, i) => {
        try {
          return requestText(req, `requests[${i}]`);
        } catch (e) {
          if (e instanceof SkycmdError) throw new SkycmdError(e.code, `request ${i}: ${e.message}`, 'decide');
          throw e;
        }
      }),
    }));
  }

  /** One item per request, {response} or {error: SkycmdError}. */
  async decideEach(reqs) {
    // an item that is no request fails only its own slot, as with Model
    const results = [];
    const texts = [];
    const slots = [];
    const items = await this._call('decideEach', () => {
      requestsArg(reqs).forEach((req, i) => {
        try {
          texts.push(requestText(req, 'request'));
          slots.push(i);
          results.push(undefined);
        } catch (e) {
          results.push({ error: e instanceof SkycmdError ? e : new SkycmdError(Status.INVALID_ARGUMENT, e.message, 'decide') });
        }
      });
      return { reqs: texts };
    });
    items.forEach((item, k) => { results[slots[k]] = item.error ? { error: rebuild(item.error) } : item; });
    return results;
  }

  /** The token ids of text (no special tokens). */
  tokenize(text) { return this._call('tokenize', () => ({ text: textArg('text', text) })); }

  /** The model's name, hyper-parameters and kernels (as Model.info). */
  info() { return this._call('info', {}); }

  /** True after close(). */
  get closed() { return this._closed; }

  /** Frees the model and ends the worker; idempotent. Calls made before it finish first. */
  async close() {
    if (this._closed) return;
    this._closed = true;
    try {
      if (!this._failed) await this._send('close', {}, [], undefined);
    } finally {
      this._worker.terminate();
    }
  }

  /** args: the message's arguments, or a function making them (after the closed check, as
   * Model checks that first; what it throws rejects the call). */
  _call(op, args, transfer = [], onProgress = undefined) {
    if (this._closed) return Promise.reject(new SkycmdError(Status.MISUSE, 'the model is closed', op));
    if (typeof args === 'function') {
      try {
        args = args();
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return this._send(op, args, transfer, onProgress);
  }

  _send(op, args, transfer, onProgress) {
    if (this._failed) return Promise.reject(this._failed);
    const id = this._next++;
    return new Promise((resolve, reject) => {
      this._pending.set(id, { resolve, reject, onProgress });
      this._worker.post({ id, op, args }, transfer);
    });
  }

  _receive(m) {
    const p = this._pending.get(m && m.id);
    if (!p) return;
    if (m.progress) {
      if (p.onProgress) p.onProgress(m.progress[0], m.progress[1]);
      return;
    }
    this._pending.delete(m.id);
    if (m.ok) p.resolve(m.value);
    else p.reject(rebuild(m.error));
  }

  _fail(e) {
    if (this._failed || this._closed) return;
    this._failed = new SkycmdError(Status.INTERNAL, `skycmd worker: ${e && e.message ? e.message : e}`, 'worker');
    for (const p of this._pending.values()) p.reject(this._failed);
    this._pending.clear();
  }
}

const PRIVATE = Symbol('WorkerModel');
