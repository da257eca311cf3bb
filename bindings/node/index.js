'use strict';
/*
 * skycmd - Node.js binding of libskycmd (System One decision models in GGUF files).
 *
 * Contract:
 *  - The native part is the SWIG Node-API wrapper of ../swig/skycmd.i (build/Release/
 *    skycmd.node, Node-API 8: one binary for every Node >= 18) plus its hand-written
 *    decideAsync, which runs on the libuv thread pool.
 *  - Every failure throws (or rejects with) a SkycmdError carrying the library's status
 *    (number), code (e.g. "SKYCMD_E_IO") and message.
 *  - Model.decide() returns a Promise and never blocks the event loop; decideSync() blocks.
 *    Both give identical answers (the same doubles).
 *  - close() is idempotent. With async calls in flight the model is marked closed at once
 *    and freed when the last one settles. A model dropped without close() is freed by a
 *    FinalizationRegistry (sessions first, then the model: the C library refuses to free a
 *    model that still has sessions).
 *  - On load, the binding checks that the running library is at least the header version it
 *    was built against; if not, every entry point throws SKYCMD_E_VERSION.
 */
const path = require('path');

const native = require(process.env.SKYCMD_NODE_ADDON ||
                       path.join(__dirname, 'build', 'Release', 'skycmd.node'));

const Status = Object.freeze({
  OK: 0, INVALID_ARGUMENT: 1, MISUSE: 2, NOMEM: 3, IO: 4, FORMAT: 5, UNSUPPORTED: 6, BUSY: 7,
  JSON: 8, REQUEST: 9, TOO_LARGE: 10, VERSION: 11, NOT_FOUND: 12, INTERNAL: 13, CANCELLED: 14,
});

class SkycmdError extends Error {
  constructor(op, status, libraryMessage) {
    const code = native.skycmd_status_name(status);
    const msg = libraryMessage || native.skycmd_strerror(status);
    super(`skycmd ${op}: ${code}: ${msg}`);
    this.name = 'SkycmdError';
    this.op = op;
    this.status = status;
    this.code = code;
    this.libraryMessage = libraryMessage || '';
  }
}

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
const WEIGHTS = { f32: 0, q8: 1, q8_plain: 2 };
const ACTIVATIONS = { q8x2: 0, q8: 1 };
const LAYOUTS = { gguf: 0, laya: 1 };

function enumValue(table, v, what) {
  if (typeof v === 'number') return v;
  const k = String(v).toLowerCase();
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
      check(op, box.setString(key, String(value)), `option ${name} is invalid`);
      continue;
    }
    let v = typeof value === 'boolean' ? (value ? 1 : 0) : value;
    v = table ? enumValue(table, v, name) : Number(v);
    if (kind === 'session') session.push(key, v);
    else check(op, box.setInt(key, v), `option ${name} is out of range`);
  }
  return [box, session];
}

function handleLess(op, opts, fn) {
  ensureUsable();
  const [o] = buildOptions(op, opts);
  const c = new native.SkyCall();
  check(op, fn(c, o), c.message());
  return c;
}

/** Converts a Laya checkpoint directory to one GGUF file (type, headType, name, pre). */
function convert(layaDir, outPath, opts) {
  handleLess('convert', opts, (c, o) => c.convert(String(layaDir), String(outPath), o));
}

/** Writes a deterministic random model of a preset (seed, massive, layout). */
function randomModel(preset, outPath, opts) {
  handleLess('random model', opts, (c, o) => c.randomModel(String(preset), String(outPath), o));
}

/** Re-types the tensors of a GGUF file (type, headType). */
function quantize(inPath, outPath, opts) {
  handleLess('quantize', opts, (c, o) => c.quantize(String(inPath), String(outPath), o));
}

/** The printed header, metadata and tensor table of a GGUF file (maxArray, json). */
function inspect(ggufPath, opts) {
  return handleLess('inspect', opts, (c, o) => c.inspect(String(ggufPath), o)).takeOutput();
}

const ANSWER_TYPES = ['choice', 'score', 'noul'];

class Response {
  constructor(plain) {
    this.answers = plain.answers.map((a) => Object.freeze({
      id: a.id,
      type: ANSWER_TYPES[a.type],
      choice: a.choice,
      value: a.value,
      confidence: a.confidence,
      probabilities: Object.freeze(a.probabilities.map((p) => Object.freeze({ key: p.key, p: p.p }))),
    }));
    Object.freeze(this.answers);
    this.inputTokens = plain.inputTokens;
    this.json = plain.json;
    Object.freeze(this);
  }

  /** The answer to question `id`, or undefined. */
  answer(id) {
    return this.answers.find((a) => a.id === id);
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
    answers.push({
      id: b.answerId(i), type, choice: type === 0 ? b.answerChoice(i) : null,
      value: b.answerValue(i), confidence: b.answerConfidence(i), probabilities,
    });
  }
  return { answers, inputTokens: b.inputTokens(), json: b.json() };
}

function requestText(request) {
  return typeof request === 'string' ? request : JSON.stringify(request);
}

// Native models open right now (for leak checks).
const live = { models: 0 };

function freeNative(res) {
  for (const s of res.idle.splice(0)) s.close();
  if (res.box && res.box.isOpen() && res.box.close() === 0) live.models--;
}

// Frees models that were dropped without close(); the held value keeps the boxes alive.
const registry = new FinalizationRegistry(freeNative);

class Model {
  constructor(box, session) {
    this._res = { box, idle: [] };
    live.models++;
    this._session = session;
    this._pending = 0;
    this._closed = false;
    registry.register(this, this._res, this);
  }

  /** Opens a GGUF decision model (weights, maxTokens, modelName, threads, activations). */
  static open(ggufPath, opts) {
    ensureUsable();
    const [o, session] = buildOptions('open', opts);
    const c = new native.SkyCall();
    const box = new native.SkyModel();
    check('open', c.openModel(String(ggufPath), o, box), c.message());
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
    const v = this._res.box.getInt(String(name));
    if (v < 0) throw new SkycmdError('model int', Status.NOT_FOUND, `no hyper-parameter ${name}`);
    return v;
  }

  /** Answers a request on the calling thread (blocks the event loop). */
  decideSync(request) {
    this._usable('decide');
    let s = this._res.idle.pop();
    if (!s) {
      s = new native.SkySession();
      check('session', s.open(this._res.box), s.message());
      for (let i = 0; i < this._session.length; i += 2) {
        const st = s.setInt(this._session[i], this._session[i + 1]);
        if (st !== 0) { const m = s.message(); s.close(); check('session option', st, m); }
      }
    }
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

module.exports = {
  Model, Response, SkycmdError, Status,
  open: Model.open,
  convert, randomModel, quantize, inspect, checkVersion,
  HEADER_VERSION_NUMBER,
  version: () => native.skycmd_version_string(),
  versionNumber: () => native.skycmd_version_number(),
  buildId: () => native.skycmd_build_id(),
  cpuFeatures: () => native.skycmd_cpu_features(),
  _native: native,
  _state: state,
  _live: live,
};
