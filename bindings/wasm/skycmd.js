// skycmd.js - libskycmd in WebAssembly, for web pages and Node >= 18 (ESM, no build step).
//
// Contract:
//  - init(source?) loads and instantiates skycmd.wasm (tools/build-wasm.sh: a wasm32-wasi
//    *reactor*, one thread, memory that grows on demand) once; later calls return the same
//    promise. source: a URL, a URL string, a Response, bytes (ArrayBuffer or a view) or a
//    WebAssembly.Module; default new URL('./skycmd.wasm', import.meta.url), fetched in
//    browsers and read from disk in Node when it is a file: URL. Everything else is
//    synchronous and needs init() to have resolved.
//  - The module's imports are WASI preview1 functions; this file answers them itself (the
//    same code in browsers and Node, no node:wasi): fd_write to the console (line by line),
//    clocks from performance.now()/Date.now(), random bytes from crypto.getRandomValues, no
//    arguments or environment, no files (models come from bytes: EBADF/ENOSYS for file
//    calls), proc_exit throws. WASI_IMPORTS lists the functions answered.
//  - Model.fromBytes copies the GGUF bytes into wasm memory once; the model keeps them
//    (skycmd_model_open_buffer does not copy) until close(). Every call frees what it
//    allocates in wasm memory before it returns, on success and on failure.
//  - Failures are SkycmdError: .status is the library's pinned status name (e.g.
//    'SKYCMD_E_JSON'), .code its number, .message the library's message. Bad input (a
//    damaged model, a malformed or invalid request) is the library's error, never a trap;
//    if the module ever traps (a library bug) the error is SKYCMD_E_INTERNAL and the module
//    refuses further calls, since its memory may be inconsistent.
//  - Answers are the library's wire JSON parsed ({model, answers: {id: {...}}, usage}),
//    exactly what the native library and the /v1/systemone server return.
//  - The request builders (Choice, Score, Noul, Request, request; and the factories choice,
//    score, noul) are the Node binding's (bindings/node/index.js), same names and shapes.

// ------------------------------------------------------------------ status and errors ----
// The library's pinned status values (include/skycmd.h); the tests check them against
// skycmd_status_name.
const STATUS_NAMES = [
  'SKYCMD_OK', 'SKYCMD_E_INVALID_ARGUMENT', 'SKYCMD_E_MISUSE', 'SKYCMD_E_NOMEM', 'SKYCMD_E_IO',
  'SKYCMD_E_FORMAT', 'SKYCMD_E_UNSUPPORTED', 'SKYCMD_E_BUSY', 'SKYCMD_E_JSON', 'SKYCMD_E_REQUEST',
  'SKYCMD_E_TOO_LARGE', 'SKYCMD_E_VERSION', 'SKYCMD_E_NOT_FOUND', 'SKYCMD_E_INTERNAL',
  'SKYCMD_E_CANCELLED',
];
export const Status = Object.freeze({
  OK: 0, INVALID_ARGUMENT: 1, MISUSE: 2, NOMEM: 3, IO: 4, FORMAT: 5, UNSUPPORTED: 6, BUSY: 7,
  JSON: 8, REQUEST: 9, TOO_LARGE: 10, VERSION: 11, NOT_FOUND: 12, INTERNAL: 13, CANCELLED: 14,
});

export class SkycmdError extends Error {
  /** code: the status number; message: the library's message (default: the status's
   * description); op: what was being done ("open", "decide", ...). */
  constructor(code, message, op = '') {
    const status = STATUS_NAMES[code] || 'unknown status';
    super(message || describe(code));
    this.name = 'SkycmdError';
    this.status = status;
    this.statusName = status; // the Node binding's name for the same thing
    this.code = code;
    this.op = op;
  }
}

function describe(code) {
  if (wasm && !wasm.broken) return readCString(wasm.x.skycmd_strerror(code));
  return STATUS_NAMES[code] || 'unknown status';
}

// ------------------------------------------------------------------ the WASI shim -------
const WASI_ESUCCESS = 0;
const WASI_EBADF = 8;
const WASI_ENOSYS = 52;
const WASI_ESPIPE = 70;
const WASI_FILETYPE_CHARACTER_DEVICE = 2;

/** Thrown by proc_exit (the library never exits; a reactor has no main). */
class WasiExit extends Error {
  constructor(code) {
    super(`the WebAssembly module called proc_exit(${code})`);
    this.exitCode = code;
  }
}

function wasiImports(state, printers) {
  const view = () => new DataView(state.memory.buffer);
  const bytes = () => new Uint8Array(state.memory.buffer);
  const pending = { 1: '', 2: '' };
  const decoders = { 1: new TextDecoder(), 2: new TextDecoder() };
  const stdio = (fd) => fd >= 0 && fd <= 2;
  return {
    args_get: () => WASI_ESUCCESS,
    args_sizes_get: (argc, bufSize) => {
      view().setUint32(argc, 0, true);
      view().setUint32(bufSize, 0, true);
      return WASI_ESUCCESS;
    },
    environ_get: () => WASI_ESUCCESS,
    environ_sizes_get: (count, bufSize) => {
      view().setUint32(count, 0, true);
      view().setUint32(bufSize, 0, true);
      return WASI_ESUCCESS;
    },
    clock_res_get: (id, out) => {
      view().setBigUint64(out, 1000n, true);
      return WASI_ESUCCESS;
    },
    clock_time_get: (id, precision, out) => {
      // 0 realtime; 1 monotonic (and the process/thread CPU clocks, which a page lacks)
      const ns = id === 0 ? Date.now() * 1e6 : (globalThis.performance ? performance.now() : Date.now()) * 1e6;
      view().setBigUint64(out, BigInt(Math.round(ns)), true);
      return WASI_ESUCCESS;
    },
    random_get: (ptr, len) => {
      // getRandomValues fills at most 65536 bytes a call; it cannot fill a view of a
      // growable wasm memory in some browsers, hence the copy
      for (let done = 0; done < len; done += 65536) {
        const chunk = new Uint8Array(Math.min(65536, len - done));
        state.crypto.getRandomValues(chunk);
        bytes().set(chunk, ptr + done);
      }
      return WASI_ESUCCESS;
    },
    fd_write: (fd, iovs, iovsLen, nwritten) => {
      if (fd !== 1 && fd !== 2) return WASI_EBADF;
      const v = view();
      let total = 0;
      for (let i = 0; i < iovsLen; i++) {
        const p = v.getUint32(iovs + 8 * i, true);
        const n = v.getUint32(iovs + 8 * i + 4, true);
        pending[fd] += decoders[fd].decode(bytes().subarray(p, p + n), { stream: true });
        total += n;
      }
      let nl;
      while ((nl = pending[fd].indexOf('\n')) >= 0) {
        printers[fd](pending[fd].slice(0, nl));
        pending[fd] = pending[fd].slice(nl + 1);
      }
      view().setUint32(nwritten, total, true);
      return WASI_ESUCCESS;
    },
    fd_read: (fd, iovs, iovsLen, nread) => {
      if (fd !== 0) return WASI_EBADF;
      view().setUint32(nread, 0, true); // standard input is empty
      return WASI_ESUCCESS;
    },
    fd_fdstat_get: (fd, out) => {
      if (!stdio(fd)) return WASI_EBADF;
      const v = view();
      for (let i = 0; i < 24; i++) v.setUint8(out + i, 0); // no rights: no seeking
      v.setUint8(out, WASI_FILETYPE_CHARACTER_DEVICE);
      return WASI_ESUCCESS;
    },
    fd_fdstat_set_flags: (fd) => (stdio(fd) ? WASI_ENOSYS : WASI_EBADF),
    fd_seek: (fd) => (stdio(fd) ? WASI_ESPIPE : WASI_EBADF),
    fd_close: () => WASI_EBADF,
    fd_filestat_get: () => WASI_EBADF,
    fd_pread: () => WASI_EBADF,
    fd_prestat_get: () => WASI_EBADF, // no preopened directories: no file system
    fd_prestat_dir_name: () => WASI_EBADF,
    path_filestat_get: () => WASI_EBADF,
    path_open: () => WASI_EBADF,
    poll_oneoff: () => WASI_ENOSYS,
    sched_yield: () => WASI_ESUCCESS,
    proc_exit: (code) => { throw new WasiExit(code); },
  };
}

/** The WASI preview1 functions this file answers. */
export const WASI_IMPORTS = Object.freeze(Object.keys(wasiImports({}, {})));

// ------------------------------------------------------------------ loading -------------
let wasm = null;       // {x: exports, memory, broken}
let loading = null;    // the promise of init()

const isNode = typeof process !== 'undefined' && !!(process.versions && process.versions.node);

// Node modules by a computed name, so that bundlers for the browser leave them alone.
function nodeImport(name) { return import(/* @vite-ignore */ /* webpackIgnore: true */ name); }

function toURL(source) {
  if (source instanceof URL) return source;
  if (isNode && /^[a-zA-Z]:[\\/]/.test(source)) return null; // a Windows path, not a URL scheme
  try {
    return new URL(source); // absolute
  } catch {
    if (isNode && !(globalThis.location && globalThis.location.href)) {
      return null; // a file path in Node
    }
    return new URL(source, globalThis.location ? globalThis.location.href : import.meta.url);
  }
}

/** The bytes (or a Response) at a URL or Node file path. */
async function open(source) {
  const url = toURL(source);
  if (isNode && (url === null || url.protocol === 'file:')) {
    const fs = await nodeImport('node:fs/promises');
    const path = url === null ? String(source) : url;
    try {
      return new Uint8Array(await fs.readFile(path));
    } catch (e) {
      throw new SkycmdError(Status.IO, `${path}: ${e.message}`, 'fetch');
    }
  }
  let resp;
  try {
    resp = await fetch(url);
  } catch (e) { // the network, CORS or a refused scheme: fetch gives a bare TypeError
    throw new SkycmdError(Status.IO, `${url}: ${fetchReason(e)}`, 'fetch');
  }
  if (!resp.ok) throw new SkycmdError(Status.IO, `${url}: HTTP ${resp.status} ${resp.statusText}`, 'fetch');
  return resp;
}

async function compile(source) {
  if (source === undefined || source === null) source = new URL('./skycmd.wasm', import.meta.url);
  if (source instanceof WebAssembly.Module) return source;
  if (typeof source === 'string' || source instanceof URL) source = await open(source);
  if (typeof Response !== 'undefined' && source instanceof Response) {
    if (!source.ok) throw new SkycmdError(Status.IO, `${source.url}: HTTP ${source.status}`, 'init');
    const type = source.headers.get('content-type') || '';
    if (WebAssembly.compileStreaming && type.startsWith('application/wasm')) {
      return WebAssembly.compileStreaming(source);
    }
    return WebAssembly.compile(await source.arrayBuffer());
  }
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return WebAssembly.compile(source);
  throw new TypeError('init: source must be a URL, a string, a Response, bytes or a WebAssembly.Module');
}

async function load(source, options) {
  const module = await compile(source);
  const state = { memory: null, crypto: globalThis.crypto };
  if (!state.crypto || !state.crypto.getRandomValues) state.crypto = (await nodeImport('node:crypto')).webcrypto; // Node 18
  const printers = {
    1: (options && options.stdout) || ((line) => console.log(line)),
    2: (options && options.stderr) || ((line) => console.error(line)),
  };
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasiImports(state, printers) });
  state.memory = instance.exports.memory;
  instance.exports._initialize(); // the C constructors (a reactor's entry)
  wasm = { x: instance.exports, memory: state.memory, broken: null };
}

/** Loads the module once (idempotent: later calls return the first call's promise; a
 * failed load may be retried). options: {stdout(line), stderr(line)} receive what the
 * library prints (default: console.log / console.error). */
export function init(source, options) {
  if (!loading) {
    loading = load(source, options).catch((e) => {
      loading = null;
      throw e;
    });
  }
  return loading;
}

function lib() {
  if (!wasm) throw new SkycmdError(Status.MISUSE, 'skycmd: call (and await) init() first', 'init');
  if (wasm.broken) throw new SkycmdError(Status.INTERNAL, `skycmd: the WebAssembly module trapped earlier (${wasm.broken}); load the page (or process) again`, 'init');
  return wasm.x;
}

/** Runs fn(exports); a trap becomes SKYCMD_E_INTERNAL and disables the module. */
function guarded(op, fn) {
  const x = lib();
  try {
    return fn(x);
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError || e instanceof WasiExit) {
      wasm.broken = e.message;
      throw new SkycmdError(Status.INTERNAL, `skycmd ${op}: the WebAssembly module trapped: ${e.message} (a library bug, please report)`, op);
    }
    throw e;
  }
}

// ------------------------------------------------------------------ argument checks ----
// As the Node binding (bindings/node/index.js) reports them, never a silent coercion: a
// wrong type is a TypeError (code ERR_INVALID_ARG_TYPE) naming the argument; a string the C
// library would cut (an embedded NUL where it takes a C string) or that has no UTF-8 form
// (an unpaired surrogate, which TextEncoder would silently replace by U+FFFD) a TypeError
// (ERR_INVALID_ARG_VALUE); request text with an unpaired surrogate is malformed JSON
// (SKYCMD_E_JSON, as the library says of an unpaired \u escape).

function received(v) {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (typeof v === 'function') return `function ${v.name || '<anonymous>'}`;
  if (typeof v === 'object') return v.constructor && v.constructor.name ? `an instance of ${v.constructor.name}` : 'an object';
  let shown = typeof v === 'bigint' ? `${v}n` : String(v);
  if (shown.length > 28) shown = `${shown.slice(0, 25)}...`;
  return `type ${typeof v} (${typeof v === 'string' ? JSON.stringify(shown) : shown})`;
}

function argTypeError(name, what, v) {
  const e = new TypeError(`The "${name}" argument must be ${what}. Received ${received(v)}`);
  e.code = 'ERR_INVALID_ARG_TYPE';
  return e;
}

function argValueError(name, why) {
  const e = new TypeError(`The "${name}" argument ${why}`);
  e.code = 'ERR_INVALID_ARG_VALUE';
  return e;
}

// An unpaired surrogate (UTF-16 code units, no u flag)
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** [index, 'U+XXXX'] of the first unpaired surrogate of s, or null. */
function loneSurrogate(s) {
  const m = LONE_SURROGATE.exec(s);
  return m ? [m.index, `U+${s.charCodeAt(m.index).toString(16).toUpperCase()}`] : null;
}

/** A string argument with a UTF-8 form (cString: also without NUL, for a C string). */
function textArg(name, v, cString = false) {
  if (typeof v !== 'string') throw argTypeError(name, 'of type string', v);
  const i = cString ? v.indexOf('\0') : -1;
  if (i >= 0) throw argValueError(name, `must be a string without null bytes (the C library would cut it at the one at index ${i})`);
  const lone = loneSurrogate(v);
  if (lone) throw argValueError(name, `must be well-formed Unicode: the unpaired surrogate ${lone[1]} at index ${lone[0]} has no UTF-8 form`);
  return v;
}

/** The requests of decideBatch/decideEach: any iterable but a string (a string is one request). */
function requestsArg(requests) {
  if (requests === null || typeof requests !== 'object' || typeof requests[Symbol.iterator] !== 'function') {
    throw argTypeError('requests', 'an iterable of requests (an array: a string is one request)', requests);
  }
  return Array.from(requests);
}

/** The JSON text of a request: a string, a typed Request or a request object. A wrong type
 * (or an object JSON cannot write) is a TypeError naming the argument; text with an
 * unpaired surrogate SKYCMD_E_JSON. */
function requestText(req, name = 'request') {
  let text;
  if (typeof req === 'string') {
    text = req;
  } else if (req instanceof Request) {
    return req.json();
  } else if (req !== null && typeof req === 'object') {
    try {
      text = JSON.stringify(req);
    } catch (e) { // a cycle, a BigInt
      throw argValueError(name, `cannot be written as JSON: ${String(e && e.message).split('\n')[0]}`);
    }
    if (typeof text !== 'string') throw argTypeError(name, 'a string, a Request or a request object', req);
    return text; // JSON.stringify escapes unpaired surrogates (\udxxx): the library refuses them
  } else {
    throw argTypeError(name, 'a string, a Request or a request object', req);
  }
  const lone = loneSurrogate(text);
  if (lone) {
    throw new SkycmdError(Status.JSON, `malformed JSON at index ${lone[0]} of the request text: unpaired surrogate ${lone[1]} (not Unicode, no UTF-8 form)`, 'decide');
  }
  return text;
}

/** A URL argument: a string, a URL, or an object with a string href (another realm's URL). */
function urlArg(name, url) {
  if (typeof url === 'string' || url instanceof URL) return url;
  if (url !== null && typeof url === 'object' && typeof url.href === 'string') return url.href;
  throw argTypeError(name, 'a string or a URL', url);
}

/** The options object of an opening call (undefined and null: none). */
function optionsArg(name, options) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw argTypeError(name, 'an object', options);
  return options;
}

/** The model name option: undefined or a string the C library takes whole. */
function nameOption(name) {
  return name === undefined ? undefined : textArg('options.name', name, true);
}

/** What a failed fetch says (Node's fetch gives "fetch failed" and the reason as cause). */
function fetchReason(e) {
  let msg = e && e.message ? e.message : String(e);
  const cause = e && e.cause;
  if (cause) msg += ` (${cause.code && !String(cause.message).includes(cause.code) ? `${cause.code}: ` : ''}${cause.message || cause})`;
  return msg;
}

/** Internal: the argument checks WorkerModel (worker-model.js) shares. Not part of the API. */
export const _args = Object.freeze({ requestText, requestsArg, textArg, urlArg, optionsArg, nameOption, argTypeError });

// wasm32 memory holds at most 4 GiB: a larger size cannot be allocated (and would wrap in
// the i32 argument of malloc)
const WASM32_MAX = 0xffffffff;

// ------------------------------------------------------------------ memory helpers ------
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const u8 = () => new Uint8Array(wasm.memory.buffer);   // views are re-made after every call:
const dv = () => new DataView(wasm.memory.buffer);     // memory.grow detaches the old buffer

function readCString(ptr) {
  if (!ptr) return '';
  const heap = u8();
  let end = ptr;
  while (heap[end] !== 0) end++;
  return decoder.decode(heap.subarray(ptr, end));
}

/** Allocations of one call, all freed by release() (in a finally). */
class Scratch {
  constructor(x) { this.x = x; this.ptrs = []; }
  alloc(n) {
    if (n > WASM32_MAX) throw new SkycmdError(Status.NOMEM, `out of WebAssembly memory (${n} bytes: more than wasm32's 4 GiB)`, 'alloc');
    const p = this.x.malloc(Math.max(1, n));
    if (!p) throw new SkycmdError(Status.NOMEM, `out of WebAssembly memory (${n} bytes)`, 'alloc');
    this.ptrs.push(p);
    return p;
  }
  /** UTF-8, NUL-terminated: [ptr, byte length without the NUL]. */
  string(s) {
    const b = encoder.encode(s);
    const p = this.alloc(b.length + 1);
    const heap = u8();
    heap.set(b, p);
    heap[p + b.length] = 0;
    return [p, b.length];
  }
  release() { for (const p of this.ptrs.splice(0)) this.x.free(p); }
}

/** A string the library allocated (char **): read, then skycmd_string_free. */
function takeString(x, ptr) {
  const s = readCString(ptr);
  x.skycmd_string_free(ptr);
  return s;
}

// ------------------------------------------------------------------ models --------------
const INFO_KEYS = [
  ['embeddingLength', 'embedding_length'], ['blockCount', 'block_count'],
  ['encoderBlockCount', 'encoder.block_count'], ['decisionBlockCount', 'decision.block_count'],
  ['headCount', 'attention.head_count'], ['decisionHeadCount', 'decision.head_count'],
  ['feedForwardLength', 'feed_forward_length'], ['contextLength', 'context_length'],
  ['maxTokens', 'decision.max_tokens'], ['maxHeadTokens', 'decision.max_head_tokens'],
  ['slidingWindow', 'attention.sliding_window'], ['vocabSize', 'vocab_size'],
  ['parameters', 'parameters'],
];
const SKYCMD_OPT_MODEL_NAME = 102;
const PRIVATE = Symbol('skycmd.Model');

// Models dropped without close(): freed when collected.
const registry = typeof FinalizationRegistry !== 'undefined' ? new FinalizationRegistry(freeHandles) : null;

function freeHandles(h) {
  if (!wasm || wasm.broken) return;
  const x = wasm.x;
  if (h.session) x.skycmd_session_free(h.session);
  if (h.model) x.skycmd_model_free(h.model);
  if (h.bytes) x.free(h.bytes);
  h.session = h.model = h.bytes = 0;
}

export class Model {
  constructor(token, handles) {
    if (token !== PRIVATE) throw new TypeError('use Model.fromBytes() or Model.fromUrl()');
    this._h = handles;
    this._info = null;
    if (registry) registry.register(this, handles, this);
  }

  /** Opens a GGUF model from its bytes (copied into wasm memory once). Needs init(). */
  static fromBytes(bytes, options) {
    if (bytes instanceof ArrayBuffer) bytes = new Uint8Array(bytes);
    if (!ArrayBuffer.isView(bytes)) throw new TypeError('Model.fromBytes: bytes must be a Uint8Array or an ArrayBuffer');
    const name = nameOption(optionsArg('options', options).name);
    const src = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (src.length > WASM32_MAX) {
      lib();
      throw new SkycmdError(Status.NOMEM, `out of WebAssembly memory for a ${src.length}-byte model (wasm32 memory holds at most 4 GiB)`, 'open');
    }
    return guarded('open', (x) => {
      const s = new Scratch(x);
      const h = { bytes: 0, model: 0, session: 0 };
      let err = 0;
      let opts = 0;
      try {
        h.bytes = x.malloc(Math.max(1, src.length));
        if (!h.bytes) throw new SkycmdError(Status.NOMEM, `out of WebAssembly memory for a ${src.length}-byte model`, 'open');
        u8().set(src, h.bytes);
        err = x.skycmd_error_new();
        if (!err) throw new SkycmdError(Status.NOMEM, '', 'open');
        if (name !== undefined) {
          opts = x.skycmd_options_new();
          if (!opts) throw new SkycmdError(Status.NOMEM, '', 'open');
          const st = x.skycmd_options_set_string(opts, SKYCMD_OPT_MODEL_NAME, s.string(name)[0]);
          if (st) throw new SkycmdError(st, 'invalid model name', 'open');
        }
        const out = s.alloc(4);
        let st = x.skycmd_model_open_buffer(h.bytes, src.length, opts, out, err);
        if (st) throw new SkycmdError(st, readCString(x.skycmd_error_message(err)), 'open');
        h.model = dv().getUint32(out, true);
        st = x.skycmd_session_new(h.model, out);
        if (st) throw new SkycmdError(st, 'cannot create a session', 'open');
        h.session = dv().getUint32(out, true);
        return new Model(PRIVATE, h);
      } catch (e) {
        if (!wasm.broken) freeHandles(h);
        throw e;
      } finally {
        if (!wasm.broken) {
          if (opts) x.skycmd_options_free(opts);
          if (err) x.skycmd_error_free(err);
          s.release();
        }
      }
    });
  }

  /** Downloads a GGUF model (fetch; a file: URL in Node is read from disk) and opens it.
   * onProgress(loaded, total) after each chunk; total is 0 when the server does not say. */
  static async fromUrl(url, options) {
    url = urlArg('url', url);
    const { onProgress, name } = optionsArg('options', options);
    if (onProgress !== undefined && typeof onProgress !== 'function') throw argTypeError('options.onProgress', 'a function', onProgress);
    nameOption(name);
    lib(); // fail before downloading when init() has not run
    const got = await open(url);
    let bytes;
    if (got instanceof Uint8Array) {
      bytes = got;
      if (onProgress) onProgress(bytes.length, bytes.length);
    } else {
      const total = Number(got.headers.get('content-length')) || 0;
      // a connection lost mid-body rejects with a bare TypeError ("terminated")
      const lost = (e, loaded) => new SkycmdError(Status.IO, `${got.url || url}: the download failed after ${loaded} bytes: ${fetchReason(e)}`, 'fetch');
      if (!got.body || !got.body.getReader) {
        try {
          bytes = new Uint8Array(await got.arrayBuffer());
        } catch (e) {
          throw lost(e, 0);
        }
        if (onProgress) onProgress(bytes.length, total || bytes.length);
      } else {
        const reader = got.body.getReader();
        const chunks = [];
        let loaded = 0;
        if (onProgress) onProgress(0, total);
        for (;;) {
          let chunk;
          try {
            chunk = await reader.read();
          } catch (e) {
            throw lost(e, loaded);
          }
          const { done, value } = chunk;
          if (done) break;
          chunks.push(value);
          loaded += value.length;
          // a compressed transfer's content-length counts the compressed bytes
          if (onProgress) onProgress(loaded, total && Math.max(total, loaded));
        }
        bytes = new Uint8Array(loaded);
        let at = 0;
        for (const c of chunks) { bytes.set(c, at); at += c.length; }
      }
    }
    return Model.fromBytes(bytes, { name });
  }

  _live(op) {
    if (!this._h.model) throw new SkycmdError(Status.MISUSE, 'the model is closed', op);
    return this._h;
  }

  /** True after close(). */
  get closed() { return !this._h.model; }

  /** The model's name and hyper-parameters (those the library reports). */
  get info() {
    const h = this._live('info');
    if (this._info) return this._info;
    this._info = guarded('info', (x) => {
      const s = new Scratch(x);
      try {
        const info = { name: readCString(x.skycmd_model_name(h.model)) };
        const out = s.alloc(8);
        for (const [field, key] of INFO_KEYS) {
          if (x.skycmd_model_get_int(h.model, s.string(key)[0], out) === 0) {
            info[field] = Number(dv().getBigInt64(out, true));
          }
        }
        info.kernels = readCString(x.skycmd_kernels());
        return Object.freeze(info);
      } finally {
        s.release();
      }
    });
    return this._info;
  }

  /** Answers one request (an object, a typed Request or JSON text): the response object. */
  decide(req) {
    const h = this._live('decide');
    const text = requestText(req, 'request');
    return guarded('decide', (x) => {
      const s = new Scratch(x);
      try {
        const [p, n] = s.string(text);
        const out = s.alloc(4);
        const st = x.skycmd_decide_json(h.session, p, n, out);
        if (st) throw new SkycmdError(st, readCString(x.skycmd_session_errmsg(h.session)), 'decide');
        return JSON.parse(takeString(x, dv().getUint32(out, true)));
      } finally {
        s.release();
      }
    });
  }

  /** Answers requests together (skycmd_decide_batch: shared batches, each answer what
   * decide() gives alone). All or nothing: one bad request throws, naming it. */
  decideBatch(reqs) {
    const h = this._live('decide');
    const texts = requestsArg(reqs).map((req, i) => {
      try {
        return requestText(req, `requests[${i}]`);
      } catch (e) {
        if (e instanceof SkycmdError) throw new SkycmdError(e.code, `request ${i}: ${e.message}`, 'decide');
        throw e;
      }
    });
    if (texts.length === 0) return [];
    return guarded('decide', (x) => this._withParsed(x, texts, (ptrs, s) => {
      const n = texts.length;
      const out = s.alloc(4 * n);
      const st = x.skycmd_decide_batch(h.session, ptrs, n, out);
      if (st) throw new SkycmdError(st, readCString(x.skycmd_session_errmsg(h.session)), 'decide');
      return takeResponses(x, out, n, null);
    }));
  }

  /** Answers requests each on its own account (skycmd_decide_each): one item per request,
   * {response} or {error: SkycmdError}; a bad request fails only its own item. */
  decideEach(reqs) {
    const h = this._live('decide');
    // an item that is no request (a wrong type, a cycle, not Unicode) fails only its own slot
    const items = requestsArg(reqs);
    const results = new Array(items.length);
    const texts = [];
    const slots = [];
    items.forEach((req, i) => {
      try {
        texts.push(requestText(req, 'request'));
        slots.push(i);
      } catch (e) {
        results[i] = { error: e instanceof SkycmdError ? e : new SkycmdError(Status.INVALID_ARGUMENT, e.message, 'decide') };
      }
    });
    if (texts.length === 0) return results;
    const each = (ptrs, s) => {
      const x = wasm.x;
      const n = texts.length;
      const out = s.alloc(4 * n);
      const status = s.alloc(4 * n);
      const msgs = s.alloc(4 * n);
      const st = x.skycmd_decide_each(h.session, ptrs, n, out, status, msgs);
      if (st) throw new SkycmdError(st, readCString(x.skycmd_session_errmsg(h.session)), 'decide');
      return takeResponses(x, out, n, { status, msgs });
    };
    each.each = true;
    guarded('decide', (x) => this._withParsed(x, texts, each)).forEach((r, k) => { results[slots[k]] = r; });
    return results;
  }

  /** Parses texts into skycmd_requests, runs fn(array of pointers, scratch), frees
   * everything. A request that does not parse throws, except with fn.each (decideEach:
   * skycmd_decide_each reports it in its own slot). */
  _withParsed(x, texts, fn) {
    const s = new Scratch(x);
    const n = texts.length;
    const ptrs = s.alloc(4 * n);
    for (let i = 0; i < n; i++) dv().setUint32(ptrs + 4 * i, 0, true);
    try {
      const one = s.alloc(4);
      for (let i = 0; i < n; i++) {
        const [p, len] = s.string(texts[i]);
        const st = x.skycmd_request_parse(p, len, one);
        const req = dv().getUint32(one, true);
        if (!req) throw new SkycmdError(Status.NOMEM, `request ${i}: out of memory`, 'decide');
        dv().setUint32(ptrs + 4 * i, req, true);
        if (st && !fn.each) {
          // all or nothing: the parse's own status and message, as the native bindings give
          throw new SkycmdError(st, `request ${i}: ${readCString(x.skycmd_request_errmsg(req))}`, 'decide');
        }
      }
      return fn(ptrs, s);
    } finally {
      if (!wasm.broken) {
        for (let i = 0; i < n; i++) x.skycmd_request_free(dv().getUint32(ptrs + 4 * i, true));
        s.release();
      }
    }
  }

  /** The token ids of text (no special tokens), as Hugging Face tokenizers gives them. */
  tokenize(text) {
    const h = this._live('tokenize');
    textArg('text', text); // a NUL is tokenized as any character: the length goes with it
    return guarded('tokenize', (x) => {
      const s = new Scratch(x);
      try {
        const tok = x.skycmd_model_tokenizer(h.model);
        const [p, len] = s.string(text);
        const count = s.alloc(4);
        let st = x.skycmd_tokenizer_encode(tok, p, len, 0, 0, count);
        if (st) throw new SkycmdError(st, 'cannot tokenize the text', 'tokenize');
        const n = dv().getUint32(count, true);
        const ids = s.alloc(4 * n);
        st = x.skycmd_tokenizer_encode(tok, p, len, ids, n, count);
        if (st) throw new SkycmdError(st, 'cannot tokenize the text', 'tokenize');
        return Array.from(new Int32Array(wasm.memory.buffer, ids, n));
      } finally {
        s.release();
      }
    });
  }

  /** Frees the model, its session and its bytes. Idempotent; later calls throw
   * SKYCMD_E_MISUSE. */
  close() {
    if (!this._h.model) return;
    if (registry) registry.unregister(this);
    freeHandles(this._h);
  }
}

/** Responses (and, for decide_each, statuses and messages) out of wasm arrays, freed. */
function takeResponses(x, out, n, each) {
  const results = [];
  for (let i = 0; i < n; i++) {
    const resp = dv().getUint32(out + 4 * i, true);
    let json = null;
    if (resp) {
      json = readCString(x.skycmd_response_json(resp));
      x.skycmd_response_free(resp);
    }
    if (!each) {
      results.push(JSON.parse(json));
      continue;
    }
    const st = dv().getInt32(each.status + 4 * i, true);
    const msg = dv().getUint32(each.msgs + 4 * i, true);
    const message = msg ? takeString(x, msg) : '';
    if (st === 0 && json !== null) results.push({ response: JSON.parse(json) });
    else results.push({ error: new SkycmdError(st || Status.NOMEM, message, 'decide') });
  }
  return results;
}

/** The library's version, e.g. "0.1.0". Needs init(). */
export function version() { return guarded('version', (x) => readCString(x.skycmd_version_string())); }

/** The kernels the module runs, e.g. "f32=simd128 int8=scalar". Needs init(). */
export function kernels() { return guarded('kernels', (x) => readCString(x.skycmd_kernels())); }

/** The library's name of a status number, e.g. statusName(8) === 'SKYCMD_E_JSON'. */
export function statusName(code) { return guarded('status', (x) => readCString(x.skycmd_status_name(code))); }

/** Bytes of wasm memory now (it only grows): for checking that repeated calls stay flat. */
export function memoryBytes() { lib(); return wasm.memory.buffer.byteLength; }

// ------------------------------------------------------------------ typed requests ----
// The Node binding's builders (bindings/node/index.js), mirroring the Jev SDK (PyPI
// typesafe-sdk) Choice, Score and Noul. Content (a state, instructions, a criterion) is a
// string or any JSON value. Order is kept: choice labels and questions given as a Map (or as
// [key, value] pairs) keep their order even for keys that look like integers, which plain
// JS objects would move to the front.

function entriesOf(what, v) {
  if (v instanceof Map) return [...v.entries()];
  if (Array.isArray(v) && v.every((e) => Array.isArray(e) && e.length === 2)) return v;
  if (v && typeof v === 'object') return Object.entries(v);
  throw new SkycmdError(Status.REQUEST, `${what} must be an object, a Map or [key, value] pairs`, 'request');
}

// JSON text of [key, value] entries in order, leaving out undefined values.
function orderedJSON(entries) {
  const parts = [];
  for (const [k, v] of entries) {
    if (v === undefined) continue;
    parts.push(`${JSON.stringify(String(k))}:${v instanceof RawJSON ? v.text : JSON.stringify(v)}`);
  }
  return `{${parts.join(',')}}`;
}

class RawJSON {
  constructor(text) { this.text = text; }
}

export class Choice {
  /** {instructions?, criteria: {label: description | null} | Map | [label, description][]} */
  constructor({ instructions, criteria } = {}) {
    this.type = 'choice';
    this.instructions = instructions;
    this.criteria = entriesOf('choice criteria', criteria);
    if (this.criteria.length === 0) throw new SkycmdError(Status.REQUEST, 'a choice needs at least one label', 'request');
    Object.freeze(this);
  }

  toJSONText() {
    const crit = orderedJSON(this.criteria.map(([k, v]) => [k, v === undefined ? null : v]));
    return orderedJSON([['type', 'choice'], ['instructions', this.instructions], ['criteria', new RawJSON(crit)]]);
  }

  toJSON() { return JSON.parse(this.toJSONText()); }
}

export class Score {
  /** {instructions?, criteria: content[] (level 0 first)} */
  constructor({ instructions, criteria } = {}) {
    if (!Array.isArray(criteria) || criteria.length === 0) {
      throw new SkycmdError(Status.REQUEST, 'a score needs at least one level', 'request');
    }
    this.type = 'score';
    this.instructions = instructions;
    this.criteria = Object.freeze(criteria.slice());
    Object.freeze(this);
  }

  toJSONText() {
    return orderedJSON([['type', 'score'], ['instructions', this.instructions], ['criteria', this.criteria]]);
  }

  toJSON() { return JSON.parse(this.toJSONText()); }
}

export class Noul {
  /** {instructions?, criteria?: {true?, false?}}: instructions or a described outcome. */
  constructor({ instructions, criteria } = {}) {
    const c = criteria || {};
    if (instructions === undefined && c.true === undefined && c.false === undefined) {
      throw new SkycmdError(Status.REQUEST, 'a noul needs instructions or a described outcome', 'request');
    }
    this.type = 'noul';
    this.instructions = instructions;
    this.criteria = criteria === undefined ? undefined : Object.freeze({ true: c.true, false: c.false });
    Object.freeze(this);
  }

  toJSONText() {
    const crit = this.criteria && new RawJSON(orderedJSON([['true', this.criteria.true], ['false', this.criteria.false]]));
    return orderedJSON([['type', 'noul'], ['instructions', this.instructions], ['criteria', crit]]);
  }

  toJSON() { return JSON.parse(this.toJSONText()); }
}

export class Request {
  /** {state, questions: {name: Choice | Score | Noul} | Map | [name, question][], model?} */
  constructor({ state, questions, model } = {}) {
    if (state === undefined) throw new SkycmdError(Status.REQUEST, 'the request has no state', 'request');
    this.state = state;
    this.questions = entriesOf('questions', questions);
    if (this.questions.length === 0) throw new SkycmdError(Status.REQUEST, 'the request asks no question', 'request');
    for (const [name, q] of this.questions) {
      if (!(q instanceof Choice || q instanceof Score || q instanceof Noul)) {
        throw new SkycmdError(Status.REQUEST, `questions.${name}: not a Choice, Score or Noul`, 'request');
      }
    }
    if (new Set(this.questions.map(([n]) => n)).size !== this.questions.length) {
      throw new SkycmdError(Status.REQUEST, 'a question name is used twice', 'request');
    }
    this.model = model;
    Object.freeze(this);
  }

  /** The /v1/systemone body as text, questions in order. */
  json() {
    const qs = orderedJSON(this.questions.map(([n, q]) => [n, new RawJSON(q.toJSONText())]));
    return orderedJSON([['model', this.model], ['state', this.state], ['questions', new RawJSON(qs)]]);
  }

  toJSON() { return JSON.parse(this.json()); }
}

/** request({state, questions, model?}) is new Request(...); choice/score/noul likewise. */
export function request(fields) { return new Request(fields); }
export function choice(fields) { return new Choice(fields); }
export function score(fields) { return new Score(fields); }
export function noul(fields) { return new Noul(fields); }
