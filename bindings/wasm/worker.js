// worker.js - the worker side of WorkerModel (worker-model.js): one model in a Web Worker (or
// a Node worker_threads Worker), so a page's main thread never blocks on a decision.
//
// Protocol (structured-clone messages; the main side is the only client):
//   in:  {id, op, args}      op: 'open' {bytes?, url?, name?, wasm?} | 'decide' {req}
//                            | 'decideBatch' {reqs} | 'decideEach' {reqs} | 'tokenize' {text}
//                            | 'info' {} | 'close' {}
//   out: {id, ok: true, value} | {id, ok: false, error: {code, message, op}}
//        | {id, progress: [loaded, total]} (while 'open' downloads)
// Requests arrive as JSON text (the main side serializes typed requests), answers leave as
// the parsed response objects, errors as the SkycmdError's fields (rebuilt on the main side).
import { init, Model, SkycmdError, Status } from './skycmd.js';

const isNode = typeof process !== 'undefined' && !!(process.versions && process.versions.node);
let post;
let listen;
if (isNode) {
  const { parentPort } = await import(/* @vite-ignore */ /* webpackIgnore: true */ 'node:worker_threads');
  post = (m) => parentPort.postMessage(m);
  listen = (fn) => parentPort.on('message', fn);
} else {
  post = (m) => self.postMessage(m);
  listen = (fn) => { self.onmessage = (e) => fn(e.data); };
}

let model = null;

function errorFields(e, op) {
  if (e instanceof SkycmdError) return { code: e.code, message: e.message, op: e.op || op };
  // an argument error (Model's checks) stays what it is on the main side
  if (e instanceof TypeError || e instanceof RangeError) {
    return { name: e.name, errorCode: e.code, code: Status.INVALID_ARGUMENT, message: e.message, op };
  }
  return { code: Status.INTERNAL, message: `${op}: ${e && e.message ? e.message : String(e)}`, op };
}

function live(op) {
  if (!model) throw new SkycmdError(Status.MISUSE, model === null ? 'the model is not open' : 'the model is closed', op);
  return model;
}

const ops = {
  async open({ bytes, url, name, wasm }, id) {
    if (model) throw new SkycmdError(Status.MISUSE, 'this worker already holds a model', 'open');
    await init(wasm || undefined);
    model = bytes
      ? Model.fromBytes(bytes, { name })
      : await Model.fromUrl(url, { name, onProgress: (loaded, total) => post({ id, progress: [loaded, total] }) });
    return model.info;
  },
  decide: ({ req }) => live('decide').decide(req),
  decideBatch: ({ reqs }) => live('decide').decideBatch(reqs),
  decideEach: ({ reqs }) => live('decide').decideEach(reqs).map((item) =>
    (item.error ? { error: errorFields(item.error, 'decide') } : item)),
  tokenize: ({ text }) => live('tokenize').tokenize(text),
  info: () => live('info').info,
  close() {
    if (model) model.close();
    model = undefined;
    return null;
  },
};

// One message at a time, in order: the library's calls are synchronous, and an 'open' that
// downloads must finish before the next call reaches the model.
let queue = Promise.resolve();
listen((msg) => {
  queue = queue.then(async () => {
    const { id, op, args } = msg || {};
    try {
      if (!Object.prototype.hasOwnProperty.call(ops, op)) {
        throw new SkycmdError(Status.INVALID_ARGUMENT, `unknown operation ${JSON.stringify(op)}`, 'worker');
      }
      post({ id, ok: true, value: await ops[op](args || {}, id) });
    } catch (e) {
      post({ id, ok: false, error: errorFields(e, op) });
    }
  });
});
