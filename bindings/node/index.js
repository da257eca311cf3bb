'use strict';
/*
 * skycmd - Node.js binding of libskycmd (System One decision models in GGUF files).
 *
 * Contract:
 *  - The native part is the SWIG Node-API wrapper of ../swig/skycmd.i (src/skycmd_wrap.cxx,
 *    committed; built on `npm install` by node-gyp into build/Release/skycmd.node against
 *    the libskycmd that `pkg-config skycmd` finds; Node-API 8: one binary for every
 *    Node >= 18) plus its hand-written workers, which run on the libuv thread pool.
 *  - Every failure throws (or rejects with) a SkycmdError carrying the library's status
 *    (number), statusName (e.g. "SKYCMD_E_IO"), code and message. code is the status name,
 *    except for a file that does not exist (the library's errno ENOENT: a missing model
 *    file or tokenizer.json, the built-in model not installed), whose code is 'ENOENT' with
 *    errno and path as Node's fs errors have them.
 *  - Model.decide(), decideBatch(), convert(), quantize(), inspect(), randomModel(),
 *    Model.openAsync() and Model.openDefaultAsync() return Promises and never block the
 *    event loop; the *Sync variants and Model.open() / Model.openDefault() block. Both give
 *    identical answers (the same doubles). convert/quantize take {signal: AbortSignal,
 *    onProgress(done, total)}: an aborted signal makes them reject with SKYCMD_E_CANCELLED
 *    and leave no output.
 *  - Model.decideEach(iterable) is an async generator: one {response} or {error} per request,
 *    in order, read and answered 32 at a time (one skycmd_decide_each call on the pool).
 *  - response.answers is a read-only Map from question id to answer, in request order.
 *  - A noul answer has no confidence: its `confidence` is undefined (never NaN). A score
 *    answer has a `legend` (the criteria text of each level); the others have none.
 *  - close() is idempotent. With async calls in flight the model is marked closed at once
 *    and freed when the last one settles. A model dropped without close() is freed by a
 *    FinalizationRegistry (sessions first, then the model: the C library refuses to free a
 *    model that still has sessions).
 *  - On load, the binding checks that the running library is at least the header version it
 *    was built against; if not, every entry point throws SKYCMD_E_VERSION.
 */
const path = require('path');
const os = require('os');
const fs = require('fs');

function loadAddon() {
  const file = process.env.SKYCMD_NODE_ADDON || path.join(__dirname, 'build', 'Release', 'skycmd.node');
  try {
    return require(file);
  } catch (e) {
    e.message = `skycmd: cannot load the native addon ${file} (built by \`npm install\` against ` +
      `libskycmd found by pkg-config; at run time libskycmd.so.1 must be on the loader path, ` +
      `e.g. LD_LIBRARY_PATH for a prefix install): ${e.message}`;
    throw e;
  }
}
const native = loadAddon();

const Status = Object.freeze({
  OK: 0, INVALID_ARGUMENT: 1, MISUSE: 2, NOMEM: 3, IO: 4, FORMAT: 5, UNSUPPORTED: 6, BUSY: 7,
  JSON: 8, REQUEST: 9, TOO_LARGE: 10, VERSION: 11, NOT_FOUND: 12, INTERNAL: 13, CANCELLED: 14,
});

const ENOENT = os.constants.errno.ENOENT;

class SkycmdError extends Error {
  /** osError: the OS errno behind the failure (skycmd_error_errno; 0: none); file: the file
   * the call was given, the `path` of a file that does not exist. */
  constructor(op, status, libraryMessage, osError, file) {
    const statusName = native.skycmd_status_name(status);
    const msg = libraryMessage || native.skycmd_strerror(status);
    super(`skycmd ${op}: ${statusName}: ${msg}`);
    this.name = 'SkycmdError';
    this.op = op;
    this.status = status;
    this.statusName = statusName;
    this.code = osError === ENOENT ? 'ENOENT' : statusName;
    this.libraryMessage = libraryMessage || '';
    if (osError) this.errno = -osError; // negative, as in Node's system errors
    if (osError === ENOENT && file !== undefined) this.path = String(file);
  }
}

/** The failure of a native SkyCall (status, message, errno) about `file`. */
function callError(op, status, c, file) {
  return new SkycmdError(op, status, c.message(), c.osError(), file);
}

/** A rejection of a native worker ({status, libraryMessage, osError}) as a SkycmdError. */
function workerError(op, e, file) {
  if (e && typeof e.status === 'number') return new SkycmdError(op, e.status, e.libraryMessage, e.osError, file);
  return e;
}

// ------------------------------------------------------------------ argument checks ----
// A wrong type is a TypeError (code ERR_INVALID_ARG_TYPE), a string the C API would cut at
// an embedded NUL a TypeError (ERR_INVALID_ARG_VALUE), a number that is no valid integer a
// RangeError (ERR_OUT_OF_RANGE), as Node's own APIs report them: never a silent coercion.

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

/** A string argument that goes to C as a NUL-terminated string. */
function cString(name, v) {
  if (typeof v !== 'string') throw argTypeError(name, 'of type string', v);
  const i = v.indexOf('\0');
  if (i >= 0) {
    const e = new TypeError(`The "${name}" argument must be a string without null bytes ` +
      `(the C library would cut it at the one at index ${i})`);
    e.code = 'ERR_INVALID_ARG_VALUE';
    throw e;
  }
  return v;
}

/** An integer argument in [min, max]. */
function intArg(name, v, min, max) {
  if (typeof v !== 'number') throw argTypeError(name, 'of type number', v);
  if (!Number.isInteger(v) || v < min || v > max) {
    const e = new RangeError(`The value of "${name}" is out of range. It must be an integer >= ${min} and <= ${max}. Received ${v}`);
    e.code = 'ERR_OUT_OF_RANGE';
    throw e;
  }
  return v;
}

const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;

function check(op, status, message) {
  if (status !== 0) throw new SkycmdError(op, status, message);
}

const HEADER_VERSION_NUMBER = native.SKYCMD_HEADER_VERSION_NUMBER;

function versionError(n) {
  const c = new native.SkyCall();
  const st = c.checkVersion(n);
  return st === 0 ? null : new SkycmdError('check version', st, c.message());
}

const state = { loadError: versionError(HEADER_VERSION_NUMBER) };

function ensureUsable() {
  if (state.loadError) {
    throw new SkycmdError('load', state.loadError.status, state.loadError.libraryMessage);
  }
}

/** Throws SKYCMD_E_VERSION unless the running library is at least version n. */
function checkVersion(n) {
  const e = versionError(n);
  if (e) throw e;
}

const TYPES = { f32: 0, f16: 1, q8_0: 8, bf16: 30 };
const WEIGHTS = { f32: 0, q8: 1, q8_plain: 2, bf16x3: 3, q8_row: 4 };
const ACTIVATIONS = { q8x2: 0, q8: 1 };
const LAYOUTS = { gguf: 0, laya: 1 };

function enumValue(table, v, what) {
  if (typeof v === 'number') return intArg(what, v, INT32_MIN, INT32_MAX);
  if (typeof v !== 'string') throw argTypeError(what, 'a string or a number', v);
  const k = v.toLowerCase();
  if (!(k in table)) throw new SkycmdError('options', Status.INVALID_ARGUMENT, `unknown ${what} "${v}"`);
  return table[k];
}

// option name -> [C key, kind, table]; kind: 'int' | 'str' | 'session'
const OPTIONS = {
  threads: [native.SKYCMD_OPT_THREADS, 'session'],
  activations: [native.SKYCMD_OPT_ACTIVATIONS, 'session', ACTIVATIONS],
  weights: [native.SKYCMD_OPT_WEIGHTS, 'int', WEIGHTS],
  maxTokens: [native.SKYCMD_OPT_MAX_TOKENS, 'int'],
  type: [native.SKYCMD_OPT_TYPE, 'int', TYPES],
  headType: [native.SKYCMD_OPT_HEAD_TYPE, 'int', TYPES],
  seed: [native.SKYCMD_OPT_SEED, 'int'],
  massive: [native.SKYCMD_OPT_MASSIVE, 'int'],
  layout: [native.SKYCMD_OPT_LAYOUT, 'int', LAYOUTS],
  maxArray: [native.SKYCMD_OPT_MAX_ARRAY, 'int'],
  json: [native.SKYCMD_OPT_JSON, 'int'],
  name: [native.SKYCMD_OPT_NAME, 'str'],
  pre: [native.SKYCMD_OPT_PRE, 'str'],
  modelName: [native.SKYCMD_OPT_MODEL_NAME, 'str'],
};

/** Returns [SkyOptions box, flat session options [key, value, ...]]. */
function buildOptions(op, opts) {
  const box = new native.SkyOptions();
  const session = [];
  for (const [name, value] of Object.entries(opts || {})) {
    if (value === undefined) continue;
    const spec = OPTIONS[name];
    if (!spec) throw new SkycmdError(op, Status.INVALID_ARGUMENT, `unknown option "${name}"`);
    const [key, kind, table] = spec;
    if (kind === 'str') {
      check(op, box.setString(key, cString(name, value)), `option ${name} is invalid`);
      continue;
    }
    let v = typeof value === 'boolean' ? (value ? 1 : 0) : value;
    v = table ? enumValue(table, v, name) : intArg(name, v, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    if (kind === 'session') session.push(key, v);
    else check(op, box.setInt(key, v), `option ${name} is out of range`);
  }
  return [box, session];
}

// Options of the call itself, not of the C options bag.
const CALL_OPTIONS = new Set(['signal', 'onProgress']);

function optionsOnly(opts) {
  const out = {};
  for (const [k, v] of Object.entries(opts || {})) if (!CALL_OPTIONS.has(k)) out[k] = v;
  return out;
}

function handleLess(op, opts, fn, file) {
  ensureUsable();
  const [o] = buildOptions(op, optionsOnly(opts));
  const c = new native.SkyCall();
  const st = fn(c, o);
  if (st !== 0) throw callError(op, st, c, file);
  return c;
}

function cancelledError(op, signal, message = 'cancelled before it started') {
  const e = new SkycmdError(op, Status.CANCELLED, message);
  e.cause = signal.reason;
  return e;
}

/** What removes the output a call is about to write at file, should the call be cancelled
 * after it wrote it anyway (it finished before it saw the cancellation): a cancelled call
 * leaves no output. All of it when nothing was there before the call (a GGUF file, or a Laya
 * directory); else only a regular file, which the call replaced. A device, a FIFO, a symbolic
 * link or a directory that was there is never touched (the library writes a device or FIFO
 * in place and a link's target, as docs/compat.md says), as the Go binding does. */
function outputRemover(file) {
  if (!file) return () => {};
  let before = null;
  try { before = fs.lstatSync(file); } catch (_) { /* absent: the call creates it */ }
  return () => {
    try {
      if (!before) fs.rmSync(file, { recursive: true, force: true });
      else if (before.isFile()) fs.rmSync(file, { force: true });
    } catch (_) { /* nothing more to do */ }
  };
}

/** The SkycmdError of a rejected fileAsync/openModelAsync: an exception thrown by onProgress
 * cancelled the call (its cause), else an aborted signal's reason is the cause. */
function fileWorkerError(op, e, file, signal) {
  const err = workerError(op, e, file);
  if (!(err instanceof SkycmdError) || err.status !== Status.CANCELLED) return err;
  if (e.callbackError !== undefined) err.cause = e.callbackError;
  else if (signal && signal.aborted) err.cause = signal.reason;
  return err;
}

// The libuv-pool form of a handle-less call: fileAsync in skycmd.i. An AbortSignal raises
// the options box's cancel flag, which the C progress callback reads on the worker thread.
// An exception thrown by onProgress cancels the call too: the promise rejects with
// SKYCMD_E_CANCELLED whose cause is the exception, and no output is left. a and b are the
// checked strings (b: the output file, '' for inspect).
async function fileOp(op, nativeOp, a, b, opts) {
  ensureUsable();
  const signal = opts && opts.signal;
  const onProgress = opts && opts.onProgress;
  if (signal && signal.aborted) throw cancelledError(op, signal);
  const [o] = buildOptions(op, optionsOnly(opts));
  const removeOutput = outputRemover(nativeOp === 'inspect' ? null : b);
  const abort = () => o.cancel();
  if (signal) signal.addEventListener('abort', abort, { once: true });
  let result;
  try {
    result = await native.fileAsync(nativeOp, a, b, o, typeof onProgress === 'function' ? onProgress : undefined);
  } catch (e) {
    if (e && typeof e.status === 'number') {
      if (e.completed) removeOutput();
      throw fileWorkerError(op, e, a, signal);
    }
    throw e;
  } finally {
    if (signal) signal.removeEventListener('abort', abort);
  }
  // Aborted after the library's last progress report: the call finished anyway, but an
  // aborted signal means SKYCMD_E_CANCELLED and no output.
  if (signal && signal.aborted) {
    removeOutput();
    throw cancelledError(op, signal, 'cancelled');
  }
  return result;
}

/** Converts a Laya checkpoint directory to one GGUF file (type, headType, name, pre, signal,
 * onProgress) on the thread pool. */
async function convert(layaDir, outPath, opts) {
  return fileOp('convert', 'convert', cString('layaDir', layaDir), cString('outPath', outPath), opts);
}

/** Re-types the tensors of a GGUF file (type, headType, signal, onProgress) on the pool;
 * {weights: 'q8'} ('q8_row') stores the calibrated int8 that opening with weights 'q8'
 * ('q8_row') makes instead. */
async function quantize(inPath, outPath, opts) {
  return fileOp('quantize', 'quantize', cString('inPath', inPath), cString('outPath', outPath), opts);
}

/** Writes a deterministic random model of a preset (seed, massive, layout) on the pool. */
async function randomModel(preset, outPath, opts) {
  return fileOp('random model', 'random', cString('preset', preset), cString('outPath', outPath), opts);
}

/** Resolves to the printed header, metadata and tensor table of a GGUF file (maxArray, json). */
async function inspect(ggufPath, opts) {
  return fileOp('inspect', 'inspect', cString('ggufPath', ggufPath), '', opts);
}

/** convert() on the calling thread (blocks the event loop). */
function convertSync(layaDir, outPath, opts) {
  handleLess('convert', opts, (c, o) => c.convert(cString('layaDir', layaDir), cString('outPath', outPath), o));
}

/** randomModel() on the calling thread. */
function randomModelSync(preset, outPath, opts) {
  handleLess('random model', opts, (c, o) => c.randomModel(cString('preset', preset), cString('outPath', outPath), o));
}

/** quantize() on the calling thread. */
function quantizeSync(inPath, outPath, opts) {
  handleLess('quantize', opts, (c, o) => c.quantize(cString('inPath', inPath), cString('outPath', outPath), o));
}

/** inspect() on the calling thread. */
function inspectSync(ggufPath, opts) {
  return handleLess('inspect', opts, (c, o) => c.inspect(cString('ggufPath', ggufPath), o), ggufPath).takeOutput();
}

/** Where the library finds the built-in model s1-pico-flappy.gguf (skycmd_default_model_path):
 * $SKYCMD_DEFAULT_MODEL, else beside libskycmd (an installed prefix's share/skycmd/models, or
 * a build tree's), else the library's configured data directory. Throws SKYCMD_E_NOT_FOUND
 * with code 'ENOENT' when there is none. */
function defaultModelPath() {
  return handleLess('default model', {}, (c) => c.defaultModelPath(), 's1-pico-flappy.gguf').takeOutput();
}

const ANSWER_TYPES = ['choice', 'score', 'noul'];

/** How many requests Model.decideEach reads and answers together (one skycmd_decide_each). */
const DECIDE_EACH_GROUP = 32;

function freezeAnswer(a) {
  const type = ANSWER_TYPES[a.type];
  const answer = {
    id: a.id,
    type,
    choice: a.choice,
    value: a.value,
    confidence: Number.isNaN(a.confidence) ? undefined : a.confidence,
    probabilities: Object.freeze(a.probabilities.map((p) => Object.freeze({ key: p.key, p: p.p }))),
  };
  if (type === 'score') answer.legend = Object.freeze(a.legend ? a.legend.slice() : []);
  return Object.freeze(answer);
}

const MAP_SET = Map.prototype.set;

function readOnly() {
  throw new TypeError('the answers of a response are read-only');
}

/** The answers of a response: a Map from question id to answer, in request order (the
 * wire's "answers" object), that refuses set/delete/clear. */
class Answers extends Map {
  constructor(answers) {
    super();
    // Map's constructor would add the entries through this.set, which refuses them.
    for (const a of answers || []) MAP_SET.call(this, a.id, a);
    Object.freeze(this);
  }

  set() { return readOnly(); }
  delete() { return readOnly(); }
  clear() { return readOnly(); }

  /** {id: answer} in request order, as the wire JSON's "answers" has them keyed. */
  toJSON() { return Object.fromEntries(this); }
}

class Response {
  constructor(plain) {
    this.model = plain.model;
    this.answers = new Answers(plain.answers.map(freezeAnswer));
    this.inputTokens = plain.inputTokens;
    this.json = plain.json;
    Object.freeze(this);
  }

  /** The answer to question `id`, or undefined (this.answers.get(id)). */
  answer(id) {
    return this.answers.get(id);
  }

  /** Choice answers by question id, as the Jev SDK's ChoiceAnswer: {choice, confidence,
   * probabilities: {key: p}}. */
  get choices() {
    const out = {};
    for (const a of this.answers.values()) {
      if (a.type !== 'choice') continue;
      out[a.id] = Object.freeze({ choice: a.choice, confidence: a.confidence,
        probabilities: Object.freeze(Object.fromEntries(a.probabilities.map((p) => [p.key, p.p]))) });
    }
    return Object.freeze(out);
  }

  /** Score answers by question id, as the SDK's ScoreAnswer: {score, confidence, legend:
   * {level: text}, probabilities: {level: p}} (levels as keys "0", "1", ...). */
  get scores() {
    const out = {};
    for (const a of this.answers.values()) {
      if (a.type !== 'score') continue;
      out[a.id] = Object.freeze({ score: a.value, confidence: a.confidence,
        legend: Object.freeze(Object.fromEntries(a.legend.map((l, j) => [String(j), l]))),
        probabilities: Object.freeze(Object.fromEntries(a.probabilities.map((p) => [p.key, p.p]))) });
    }
    return Object.freeze(out);
  }

  /** Noul answers by question id, as the SDK's NoulAnswer: {noul: P(true)}. */
  get nouls() {
    const out = {};
    for (const a of this.answers.values()) if (a.type === 'noul') out[a.id] = Object.freeze({ noul: a.value });
    return Object.freeze(out);
  }
}

function plainFromBox(b) {
  const n = b.answerCount();
  const answers = [];
  for (let i = 0; i < n; i++) {
    const type = b.answerType(i);
    const probabilities = [];
    const m = b.optionCount(i);
    for (let j = 0; j < m; j++) probabilities.push({ key: b.optionKey(i, j), p: b.optionProbability(i, j) });
    const legend = [];
    if (type === 1) for (let j = 0; j < m; j++) legend.push(b.optionLegend(i, j));
    answers.push({
      id: b.answerId(i), type, choice: type === 0 ? b.answerChoice(i) : null,
      value: b.answerValue(i), confidence: b.answerConfidence(i), probabilities, legend,
    });
  }
  return { model: b.model(), answers, inputTokens: b.inputTokens(), json: b.json() };
}

// ------------------------------------------------------------------ typed requests ----
// Builders mirroring the Jev SDK (PyPI typesafe-sdk) Choice, Score and Noul. Content (a state,
// instructions, a criterion) is a string or any JSON value. Order is kept: choice labels and
// questions given as a Map (or as [key, value] pairs) keep their order even for keys that look
// like integers, which plain JS objects would move to the front.

function entriesOf(what, v) {
  if (v instanceof Map) return [...v.entries()];
  if (Array.isArray(v) && v.every((e) => Array.isArray(e) && e.length === 2)) return v;
  if (v && typeof v === 'object') return Object.entries(v);
  throw new SkycmdError('request', Status.REQUEST, `${what} must be an object, a Map or [key, value] pairs`);
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

class Choice {
  /** {instructions?, criteria: {label: description | null} | Map | [label, description][]} */
  constructor({ instructions, criteria } = {}) {
    this.type = 'choice';
    this.instructions = instructions;
    this.criteria = entriesOf('choice criteria', criteria);
    if (this.criteria.length === 0) throw new SkycmdError('request', Status.REQUEST, 'a choice needs at least one label');
    Object.freeze(this);
  }

  toJSONText() {
    const crit = orderedJSON(this.criteria.map(([k, v]) => [k, v === undefined ? null : v]));
    return orderedJSON([['type', 'choice'], ['instructions', this.instructions], ['criteria', new RawJSON(crit)]]);
  }

  toJSON() { return JSON.parse(this.toJSONText()); }
}

class Score {
  /** {instructions?, criteria: content[] (level 0 first)} */
  constructor({ instructions, criteria } = {}) {
    if (!Array.isArray(criteria) || criteria.length === 0) {
      throw new SkycmdError('request', Status.REQUEST, 'a score needs at least one level');
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

class Noul {
  /** {instructions?, criteria?: {true?, false?}}: instructions or a described outcome. */
  constructor({ instructions, criteria } = {}) {
    const c = criteria || {};
    if (instructions === undefined && c.true === undefined && c.false === undefined) {
      throw new SkycmdError('request', Status.REQUEST, 'a noul needs instructions or a described outcome');
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

class Request {
  /** {state, questions: {name: Choice | Score | Noul} | Map | [name, question][], model?} */
  constructor({ state, questions, model } = {}) {
    if (state === undefined) throw new SkycmdError('request', Status.REQUEST, 'the request has no state');
    this.state = state;
    this.questions = entriesOf('questions', questions);
    if (this.questions.length === 0) throw new SkycmdError('request', Status.REQUEST, 'the request asks no question');
    for (const [name, q] of this.questions) {
      if (!(q instanceof Choice || q instanceof Score || q instanceof Noul)) {
        throw new SkycmdError('request', Status.REQUEST, `questions.${name}: not a Choice, Score or Noul`);
      }
    }
    if (new Set(this.questions.map(([n]) => n)).size !== this.questions.length) {
      throw new SkycmdError('request', Status.REQUEST, 'a question name is used twice');
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

/** The requests of decideBatch: any iterable but a string (a string is one request). */
function requestsArg(requests) {
  if (requests === null || typeof requests !== 'object' || typeof requests[Symbol.iterator] !== 'function') {
    throw argTypeError('requests', 'an iterable of requests', requests);
  }
  return requests;
}

/** request({state, questions, model?}) is new Request(...). */
function request(fields) { return new Request(fields); }

/** The JSON text of a request: a string, a Buffer/Uint8Array holding the JSON (UTF-8), a
 * Request, or a plain request object. A raw NUL can never be part of JSON text (the C string
 * would end there): refused, as any other type. */
function requestText(request) {
  let text;
  if (typeof request === 'string') text = request;
  else if (request instanceof Request) return request.json();
  else if (request instanceof Uint8Array) text = Buffer.from(request.buffer, request.byteOffset, request.byteLength).toString('utf8');
  else if (request !== null && typeof request === 'object') return JSON.stringify(request);
  else throw argTypeError('request', 'a string, a Buffer, a Request or a request object', request);
  return cString('request', text);
}

// Native models open right now (for leak checks).
const live = { models: 0 };

function freeNative(res) {
  if (res.tokenizer) { res.tokenizer.close(); res.tokenizer = null; }
  for (const s of res.idle.splice(0)) s.close();
  if (res.box && res.box.isOpen() && res.box.close() === 0) live.models--;
}

// Frees models that were dropped without close(); the held value keeps the boxes alive.
const registry = new FinalizationRegistry(freeNative);

class Model {
  constructor(box, session) {
    this._res = { box, idle: [], tokenizer: null };
    live.models++;
    this._session = session;
    this._pending = 0;
    this._closed = false;
    registry.register(this, this._res, this);
  }

  /** Opens a GGUF decision model (weights, maxTokens, modelName, threads, activations) on the
   * calling thread (it blocks the event loop while the file loads: see openAsync). A file
   * that does not exist throws with code 'ENOENT' (statusName SKYCMD_E_IO). */
  static open(ggufPath, opts) {
    ensureUsable();
    const [o, session] = buildOptions('open', optionsOnly(opts));
    const c = new native.SkyCall();
    const box = new native.SkyModel();
    const st = c.openModel(cString('ggufPath', ggufPath), o, box);
    if (st !== 0) throw callError('open', st, c, ggufPath);
    return new Model(box, session);
  }

  /** Model.open on the libuv thread pool: resolves to the Model while the event loop keeps
   * turning. Besides open's options: {signal: AbortSignal, onProgress(done, total)}
   * (progress where the library reports the load's). An aborted signal rejects with
   * SKYCMD_E_CANCELLED: the load stops at the library's next progress report, and a model
   * that finished loading anyway is freed. */
  static async openAsync(ggufPath, opts) {
    ensureUsable();
    cString('ggufPath', ggufPath);
    const signal = opts && opts.signal;
    const onProgress = opts && opts.onProgress;
    if (signal && signal.aborted) throw cancelledError('open', signal);
    const [o, session] = buildOptions('open', optionsOnly(opts));
    const box = new native.SkyModel();
    const abort = () => o.cancel();
    if (signal) signal.addEventListener('abort', abort, { once: true });
    try {
      await native.openModelAsync(ggufPath, o, box,
                                  typeof onProgress === 'function' ? onProgress : undefined);
    } catch (e) {
      // onProgress threw (the cause; a model that loaded anyway is freed) or the signal aborted
      throw fileWorkerError('open', e, ggufPath, signal);
    } finally {
      if (signal) signal.removeEventListener('abort', abort);
    }
    if (signal && signal.aborted) { // aborted after the load finished: the model is not wanted
      if (box.close() !== 0) throw new SkycmdError('open', Status.INTERNAL, 'cannot free an aborted model');
      throw cancelledError('open', signal, 'cancelled');
    }
    return new Model(box, session);
  }

  /** Opens the built-in model (defaultModelPath()) with open's options, on the calling thread. */
  static openDefault(opts) {
    return Model.open(defaultModelPath(), opts);
  }

  /** openDefault on the libuv thread pool (openAsync's options). */
  static async openDefaultAsync(opts) {
    ensureUsable();
    return Model.openAsync(defaultModelPath(), opts);
  }

  /** Opens a model from the bytes of a GGUF file (a Buffer or Uint8Array; the same options
   * as open). The model keeps its own copy: the buffer may be reused at once. */
  static openBuffer(bytes, opts) {
    ensureUsable();
    if (!(bytes instanceof Uint8Array)) {
      throw new SkycmdError('open buffer', Status.INVALID_ARGUMENT, 'the model bytes must be a Buffer or Uint8Array');
    }
    const [o, session] = buildOptions('open buffer', opts);
    const c = new native.SkyCall();
    const box = new native.SkyModel();
    check('open buffer', native.skyOpenModelBuffer(c, bytes, o, box), c.message());
    return new Model(box, session);
  }

  get closed() { return this._closed; }

  _usable(op) {
    if (this._closed) throw new SkycmdError(op, Status.MISUSE, 'model is closed');
  }

  get name() { this._usable('name'); return this._res.box.name(); }

  /** A hyper-parameter by GGUF-style name ("embedding_length", "decision.max_tokens", ...). */
  intParameter(name) {
    this._usable('model int');
    const v = this._res.box.getInt(cString('name', name));
    if (v < 0) throw new SkycmdError('model int', Status.NOT_FOUND, `no hyper-parameter ${name}`);
    return v;
  }

  /** The model's tokenizer (the same object every time); unusable after close(). */
  tokenizer() {
    this._usable('tokenizer');
    if (!this._res.tokenizer) {
      const box = new native.SkyTokenizer();
      check('tokenizer', box.fromModel(this._res.box), box.message());
      this._res.tokenizer = box;
      this._tokenizer = new Tokenizer(box, this);
    }
    return this._tokenizer;
  }

  _takeSession() {
    let s = this._res.idle.pop();
    if (!s) {
      s = new native.SkySession();
      check('session', s.open(this._res.box), s.message());
      for (let i = 0; i < this._session.length; i += 2) {
        const st = s.setInt(this._session[i], this._session[i + 1]);
        if (st !== 0) { const m = s.message(); s.close(); check('session option', st, m); }
      }
    }
    return s;
  }

  /** Answers a request on the calling thread (blocks the event loop). */
  decideSync(request) {
    this._usable('decide');
    const s = this._takeSession();
    const r = new native.SkyResponse();
    try {
      check('decide', s.decide(requestText(request), r), s.message());
      return new Response(plainFromBox(r));
    } finally {
      r.close();
      this._res.idle.push(s);
    }
  }

  /** Answers a request on the libuv thread pool; resolves to a Response. */
  async decide(request) {
    this._usable('decide');
    this._pending++;
    try {
      return new Response(await native.decideAsync(this._res.box, requestText(request), this._session));
    } catch (e) {
      if (e && typeof e.status === 'number') throw new SkycmdError('decide', e.status, e.libraryMessage);
      throw e;
    } finally {
      if (--this._pending === 0 && this._closed) this._free();
    }
  }

  /** Answers several requests together (skycmd_decide_batch: their sequences share the
   * model's batches; each response is what decide() gives alone) on the libuv thread pool.
   * All or nothing: a failure names the request ("request 2: ..."). */
  async decideBatch(requests) {
    this._usable('decide batch');
    const texts = Array.from(requestsArg(requests), requestText);
    this._pending++;
    try {
      const plains = await native.decideBatchAsync(this._res.box, texts, this._session);
      return plains.map((p) => new Response(p));
    } catch (e) {
      if (e && typeof e.status === 'number') throw new SkycmdError('decide batch', e.status, e.libraryMessage);
      throw e;
    } finally {
      if (--this._pending === 0 && this._closed) this._free();
    }
  }

  /** Answers a stream of requests, each on its own account: an async generator over a sync
   * or async iterable of requests (Request objects, plain request objects or JSON strings)
   * that yields, in input order, {response} for each answered request and {error} (a
   * SkycmdError: statusName, libraryMessage, ...) for each bad one (malformed JSON, an
   * invalid request, a value that is no request); a bad item never ends the stream. It
   * reads DECIDE_EACH_GROUP (32) requests at a time and answers each group with one
   * skycmd_decide_each call on the libuv thread pool (the group's sequences share the
   * model's batches; each response is exactly what decide() gives), so it holds at most one
   * group. Breaking out of `for await` closes the input iterator. A model closed between
   * groups ends the stream with a SKYCMD_E_MISUSE rejection. */
  async *decideEach(requests) {
    this._usable('decide each');
    if (requests == null || (typeof requests[Symbol.asyncIterator] !== 'function' &&
                             typeof requests[Symbol.iterator] !== 'function')) {
      throw new SkycmdError('decide each', Status.INVALID_ARGUMENT, 'the requests must be an iterable or an async iterable');
    }
    let group = [];
    for await (const item of requests) {
      group.push(item);
      if (group.length === DECIDE_EACH_GROUP) {
        yield* await this._answerEach(group);
        group = [];
      }
    }
    if (group.length > 0) yield* await this._answerEach(group);
  }

  /** One group of decideEach: [{response} | {error}] in order. */
  async _answerEach(items) {
    this._usable('decide each');
    const out = new Array(items.length);
    const texts = [];
    const slots = []; // slots[k]: the item index of texts[k]
    items.forEach((item, i) => {
      let text;
      try {
        text = requestText(item);
      } catch (e) { // e.g. JSON.stringify of a cyclic object, a value that is no request
        const msg = e && e.code === 'ERR_INVALID_ARG_TYPE' ? `request ${typeof item} is not a request` : String(e && e.message);
        out[i] = { error: e instanceof SkycmdError ? e : new SkycmdError('decide each', Status.INVALID_ARGUMENT, msg) };
        return;
      }
      if (typeof text !== 'string') { // JSON.stringify of a value it leaves out
        out[i] = { error: new SkycmdError('decide each', Status.INVALID_ARGUMENT, `request ${typeof item} is not a request`) };
        return;
      }
      texts.push(text);
      slots.push(i);
    });
    if (texts.length > 0) {
      this._pending++;
      try {
        const results = await native.decideEachAsync(this._res.box, texts, this._session);
        results.forEach((r, k) => {
          out[slots[k]] = r.response ? { response: new Response(r.response) }
            : { error: new SkycmdError('decide each', r.status, r.libraryMessage) };
        });
      } catch (e) {
        // The call itself failed (no memory, ...): every request of the group has its error.
        if (!(e && typeof e.status === 'number')) throw e;
        for (const i of slots) out[i] = { error: new SkycmdError('decide each', e.status, e.libraryMessage) };
      } finally {
        if (--this._pending === 0 && this._closed) this._free();
      }
    }
    return out;
  }

  /** decideBatch() on the calling thread (blocks the event loop). */
  decideBatchSync(requests) {
    this._usable('decide batch');
    const batch = new native.SkyBatch();
    for (const r of requestsArg(requests)) check('decide batch', batch.add(requestText(r)), batch.message());
    const s = this._takeSession();
    try {
      check('decide batch', s.decideBatch(batch), s.message());
      const out = [];
      for (let i = 0; i < batch.count(); i++) {
        const r = new native.SkyResponse();
        try {
          check('decide batch', batch.takeResponse(i, r), batch.message());
          out.push(new Response(plainFromBox(r)));
        } finally {
          r.close();
        }
      }
      return out;
    } finally {
      this._res.idle.push(s);
    }
  }

  _free() {
    registry.unregister(this);
    freeNative(this._res);
  }

  /** Frees the model (after in-flight async calls settle). Idempotent. */
  close() {
    if (this._closed) return;
    this._closed = true;
    if (this._pending === 0) this._free();
  }

  [Symbol.for('nodejs.dispose')]() { this.close(); }
}
if (typeof Symbol.dispose === 'symbol') Model.prototype[Symbol.dispose] = Model.prototype.close;

const Special = Object.freeze({ CLS: 0, SEP: 1, MASK: 2, PAD: 3, UNK: 4 });

// Frees tokenizers loaded from a tokenizer.json that were dropped without close().
const tokenizerRegistry = new FinalizationRegistry((box) => box.close());

/** A byte-level BPE tokenizer: a model's (model.tokenizer()) or a tokenizer.json's
 * (Tokenizer.open). Synchronous calls (tokenizing is fast). */
class Tokenizer {
  constructor(box, model) {
    this._box = box;
    this._model = model || null;
    if (!model) tokenizerRegistry.register(this, box, this);
  }

  /** Loads a Hugging Face tokenizer.json (byte-level BPE). close() it when done. A file that
   * does not exist throws with code 'ENOENT' (statusName SKYCMD_E_IO). */
  static open(jsonPath) {
    ensureUsable();
    const box = new native.SkyTokenizer();
    const st = box.openJson(cString('jsonPath', jsonPath));
    // A file that does not exist: code 'ENOENT' with errno and path, as Model.open.
    if (st !== 0) throw new SkycmdError('open tokenizer', st, box.message(), box.osError(), jsonPath);
    return new Tokenizer(box, null);
  }

  _usable(op) {
    if ((this._model && this._model.closed) || !this._box.isOpen()) {
      throw new SkycmdError(op, Status.MISUSE, 'tokenizer is closed');
    }
    return this._box;
  }

  /** The ids of UTF-8 text, as HF tokenizers encodes it without special tokens (a string; one
   * with a NUL character is refused: the C call would end the text there). */
  encode(text) {
    const b = this._usable('encode');
    check('encode', b.encode(cString('text', text)), b.message());
    const n = b.idCount();
    const ids = new Int32Array(n);
    for (let i = 0; i < n; i++) ids[i] = b.tokenId(i);
    return ids;
  }

  /** How many ids encode(text) gives. */
  countTokens(text) {
    const b = this._usable('count tokens');
    check('count tokens', b.count(cString('text', text)), b.message());
    return b.tokenCount();
  }

  /** The UTF-8 text of ids (an array or Int32Array). */
  decode(ids) {
    const b = this._usable('decode');
    if (ids === null || typeof ids !== 'object' || typeof ids[Symbol.iterator] !== 'function') {
      throw argTypeError('ids', 'an array or an Int32Array of token ids', ids);
    }
    b.clearIds();
    for (const id of ids) check('decode', b.appendId(intArg('ids[]', id, INT32_MIN, INT32_MAX)), b.message());
    check('decode', b.decode(), b.message());
    return b.decodedText();
  }

  /** The vocabulary entry of an id (byte-level form, e.g. "Ġthe"), or undefined. */
  token(id) {
    const t = this._usable('token').token(intArg('id', id, INT32_MIN, INT32_MAX));
    return t === '' ? undefined : t;
  }

  get vocabSize() { return this._usable('vocab size').vocabSize(); }

  /** The id of a special token (Special.CLS, ... or "cls", ...), or undefined. */
  specialId(which) {
    const k = typeof which === 'string' ? Special[which.toUpperCase()] : which;
    if (k === undefined) throw new SkycmdError('special id', Status.INVALID_ARGUMENT, `unknown special token "${which}"`);
    const id = this._usable('special id').specialId(k);
    return id < 0 ? undefined : id;
  }

  /** Frees a tokenizer from Tokenizer.open (a model's goes with the model). Idempotent. */
  close() {
    if (this._model) return;
    tokenizerRegistry.unregister(this);
    this._box.close();
  }
}

module.exports = {
  Model, Response, Answers, SkycmdError, Status, Tokenizer, Special, DECIDE_EACH_GROUP,
  Choice, Score, Noul, Request, request,
  open: Model.open,
  openAsync: Model.openAsync,
  openBuffer: Model.openBuffer,
  openDefault: Model.openDefault,
  openDefaultAsync: Model.openDefaultAsync,
  defaultModelPath,
  convert, randomModel, quantize, inspect, checkVersion,
  convertSync, randomModelSync, quantizeSync, inspectSync,
  HEADER_VERSION_NUMBER,
  version: () => native.skycmd_version_string(),
  versionNumber: () => native.skycmd_version_number(),
  buildId: () => native.skycmd_build_id(),
  cpuFeatures: () => native.skycmd_cpu_features(),
  _native: native,
  _state: state,
  _live: live,
};
