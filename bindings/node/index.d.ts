// Type declarations of the skycmd Node.js binding (index.js).

/** libskycmd status codes (pinned C values). */
export declare const Status: Readonly<{
  OK: 0; INVALID_ARGUMENT: 1; MISUSE: 2; NOMEM: 3; IO: 4; FORMAT: 5; UNSUPPORTED: 6; BUSY: 7;
  JSON: 8; REQUEST: 9; TOO_LARGE: 10; VERSION: 11; NOT_FOUND: 12; INTERNAL: 13; CANCELLED: 14;
}>;

/** A failed libskycmd call. */
export declare class SkycmdError extends Error {
  constructor(op: string, status: number, libraryMessage?: string, osError?: number, file?: string);
  readonly name: 'SkycmdError';
  /** The operation, e.g. "open", "decide". */
  readonly op: string;
  /** The C status value. */
  readonly status: number;
  /** The C status name, e.g. "SKYCMD_E_IO". */
  readonly statusName: string;
  /** The status name, except 'ENOENT' for a file that does not exist (a missing model file,
   * the built-in model not installed), as Node's fs errors. */
  readonly code: string;
  /** The OS error behind the failure, negative as in Node's system errors (-2: ENOENT);
   * undefined when the failure had none. */
  readonly errno?: number;
  /** The file that does not exist (code 'ENOENT'). */
  readonly path?: string;
  /** The library's message ("" if none). */
  readonly libraryMessage: string;
}

export type TensorType = 'f32' | 'f16' | 'q8_0' | 'bf16' | number;

/** Options of a call (skycmd_option keys); a call ignores options it does not use. */
export interface Options {
  /** Open: how matrices are kept (default 'f32', exact; 'bf16x3': AMX-BF16 tiles or arm64 BFMMLA where usable, within 1e-4).
   *  Quantize: 'q8' ('q8_row') stores the calibrated int8 that opening with 'q8' ('q8_row') makes (no type/headType then). */
  weights?: 'f32' | 'q8' | 'q8_plain' | 'bf16x3' | 'q8_row' | number;
  /** Open: sequence budget instead of decision.max_tokens. */
  maxTokens?: number;
  /** Open: the "model" reported in responses. */
  modelName?: string;
  /** Open: compute threads of each session (0 = one per core). */
  threads?: number;
  /** Open: int8 activation mode of each session. */
  activations?: 'q8x2' | 'q8' | number;
  /** Convert, quantize: encoder matrix type. */
  type?: TensorType;
  /** Convert, quantize: decision head type. */
  headType?: TensorType;
  /** Random model: seed. */
  seed?: number;
  /** Random model: planted massive channels. */
  massive?: number;
  /** Random model: output layout. */
  layout?: 'gguf' | 'laya' | number;
  /** Inspect: array items shown. */
  maxArray?: number;
  /** Inspect: one JSON document. */
  json?: boolean;
  /** Convert: general.name. */
  name?: string;
  /** Convert: tokenizer.ggml.pre. */
  pre?: string;
}

export interface Probability {
  /** "0".."n-1" for score, "false"/"true" for noul, the criteria key for choice. */
  readonly key: string;
  readonly p: number;
}

export interface Answer {
  readonly id: string;
  readonly type: 'choice' | 'score' | 'noul';
  /** The chosen key (choice questions), otherwise null. */
  readonly choice: string | null;
  /** Expected level (score), P(true) (noul), the chosen key's probability (choice). */
  readonly value: number;
  /** Confidence of choice/score; undefined for noul (it has none; never NaN). */
  readonly confidence: number | undefined;
  readonly probabilities: readonly Probability[];
  /** Score answers: the criteria text of each level (legend[j] for level j). */
  readonly legend?: readonly string[];
}

/** The Jev SDK's ChoiceAnswer. */
export interface ChoiceAnswer {
  readonly choice: string;
  readonly confidence: number;
  readonly probabilities: Readonly<Record<string, number>>;
}

/** The Jev SDK's ScoreAnswer (levels "0", "1", ... as keys). */
export interface ScoreAnswer {
  readonly score: number;
  readonly confidence: number;
  readonly legend: Readonly<Record<string, string>>;
  readonly probabilities: Readonly<Record<string, number>>;
}

/** The Jev SDK's NoulAnswer: P(true). */
export interface NoulAnswer {
  readonly noul: number;
}

/** The answers of a response: question id -> answer, in request order (a Map whose set,
 * delete and clear throw; JSON.stringify gives the wire's {id: answer} object). */
export declare class Answers extends Map<string, Answer> implements ReadonlyMap<string, Answer> {
  private constructor();
  toJSON(): Record<string, Answer>;
}

export declare class Response {
  /** The name of the model that answered (the wire's "model": general.name or modelName). */
  readonly model: string;
  /** Keyed by question id, in request order. */
  readonly answers: ReadonlyMap<string, Answer>;
  readonly inputTokens: number;
  /** The library's wire JSON: {"model", "answers", "usage"}. */
  readonly json: string;
  answer(id: string): Answer | undefined;
  readonly choices: Readonly<Record<string, ChoiceAnswer>>;
  readonly scores: Readonly<Record<string, ScoreAnswer>>;
  readonly nouls: Readonly<Record<string, NoulAnswer>>;
}

/** A state, instructions or a criterion: text or any JSON value. */
export type Content = string | number | boolean | null | readonly unknown[] | { readonly [k: string]: unknown };

/** Ordered key/value pairs: an object, a Map or [key, value] pairs (the last two keep the
 * order even of integer-like keys). */
export type Entries<V> = Readonly<Record<string, V>> | ReadonlyMap<string, V> | ReadonlyArray<readonly [string, V]>;

/** The Jev SDK's Choice: named alternatives (a null description: the name alone). */
export declare class Choice {
  constructor(fields: { instructions?: Content; criteria: Entries<Content> });
  readonly type: 'choice';
}

/** The Jev SDK's Score: an ordered rubric, level 0 first. */
export declare class Score {
  constructor(fields: { instructions?: Content; criteria: readonly Content[] });
  readonly type: 'score';
}

/** The Jev SDK's Noul: a yes/no question; instructions or a described outcome. */
export declare class Noul {
  constructor(fields: { instructions?: Content; criteria?: { true?: Content; false?: Content } });
  readonly type: 'noul';
}

export type Question = Choice | Score | Noul;

/** A request built from typed questions. */
export declare class Request {
  constructor(fields: { state: Content; questions: Entries<Question>; model?: string });
  readonly model: string | undefined;
  /** The /v1/systemone body as text, questions in order. */
  json(): string;
}
export declare function request(fields: { state: Content; questions: Entries<Question>; model?: string }): Request;

/** A /v1/systemone request: a typed Request, JSON text, or an object (JSON.stringify). */
export type RequestInput = Request | string | Uint8Array | { state: unknown; questions: Record<string, unknown>; model?: string };

/** One item of Model.decideEach: the response, or the request's error. */
export type EachResult = { readonly response: Response; readonly error?: undefined } | { readonly response?: undefined; readonly error: SkycmdError };

/** How many requests Model.decideEach reads and answers together. */
export declare const DECIDE_EACH_GROUP: 32;

/** What convert() and quantize() use of an AbortSignal (declared here so that the types
 * need neither the DOM lib nor @types/node). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Options of convert(), quantize() and Model.openAsync(). */
export interface FileOptions extends Options {
  /** Aborting rejects the call with SKYCMD_E_CANCELLED (cause: signal.reason); no output is left. */
  signal?: AbortSignalLike;
  /** Progress in the call's units (bytes or tensors), on the main thread. */
  onProgress?: (done: number, total: number) => void;
}

export declare const Special: Readonly<{ CLS: 0; SEP: 1; MASK: 2; PAD: 3; UNK: 4 }>;
export type SpecialToken = 0 | 1 | 2 | 3 | 4 | 'cls' | 'sep' | 'mask' | 'pad' | 'unk';

/** A byte-level BPE tokenizer (synchronous calls). */
export declare class Tokenizer {
  /** Loads a Hugging Face tokenizer.json. close() it when done. Throws SkycmdError (code
   * 'ENOENT' for a file that does not exist). */
  static open(jsonPath: string): Tokenizer;
  encode(text: string): Int32Array;
  countTokens(text: string): number;
  decode(ids: ArrayLike<number> | Iterable<number>): string;
  /** The vocabulary entry of an id, or undefined. */
  token(id: number): string | undefined;
  readonly vocabSize: number;
  /** The id of a special token, or undefined. */
  specialId(which: SpecialToken): number | undefined;
  /** Frees a tokenizer from open(); a model's tokenizer goes with its model. */
  close(): void;
}

export declare class Model {
  /** Opens a GGUF decision model on the calling thread (blocks the event loop while it
   * loads). Throws SkycmdError (code 'ENOENT' for a file that does not exist). */
  static open(ggufPath: string, options?: Options): Model;
  /** open() on the libuv thread pool; an aborted signal rejects with SKYCMD_E_CANCELLED. */
  static openAsync(ggufPath: string, options?: FileOptions): Promise<Model>;
  /** Opens the built-in model (defaultModelPath()) on the calling thread. */
  static openDefault(options?: Options): Model;
  /** openDefault() on the libuv thread pool. */
  static openDefaultAsync(options?: FileOptions): Promise<Model>;
  /** Opens a model from GGUF bytes (copied: the buffer may be reused at once). */
  static openBuffer(bytes: Uint8Array, options?: Options): Model;
  /** True after close(). */
  readonly closed: boolean;
  /** The model name reported in responses. */
  readonly name: string;
  /** A hyper-parameter by GGUF-style name ("embedding_length", "decision.max_tokens", ...). */
  intParameter(name: string): number;
  /** Answers a request on the libuv thread pool. Rejects with SkycmdError. */
  decide(request: RequestInput): Promise<Response>;
  /** Answers a request on the calling thread (blocks the event loop). Throws SkycmdError. */
  decideSync(request: RequestInput): Response;
  /** Answers requests together (shared batches; each as decide() alone) on the pool. */
  decideBatch(requests: Iterable<RequestInput>): Promise<Response[]>;
  decideBatchSync(requests: Iterable<RequestInput>): Response[];
  /** Answers a stream of requests each on its own account, DECIDE_EACH_GROUP at a time on the
   * pool: one item per request, in order, {response} or {error}; a bad request never ends
   * the stream. */
  decideEach(requests: Iterable<RequestInput> | AsyncIterable<RequestInput>): AsyncGenerator<EachResult, void, undefined>;
  /** The model's tokenizer (unusable after close()). */
  tokenizer(): Tokenizer;
  /** Frees the model (after in-flight async calls settle). Idempotent. */
  close(): void;
  [Symbol.dispose](): void;
}

export declare function open(ggufPath: string, options?: Options): Model;
export declare function openAsync(ggufPath: string, options?: FileOptions): Promise<Model>;
export declare function openBuffer(bytes: Uint8Array, options?: Options): Model;
export declare function openDefault(options?: Options): Model;
export declare function openDefaultAsync(options?: FileOptions): Promise<Model>;
/** Where the library finds the built-in model s1-pico-flappy.gguf: $SKYCMD_DEFAULT_MODEL,
 * else beside libskycmd, else its configured data directory. Throws SkycmdError
 * (statusName SKYCMD_E_NOT_FOUND, code 'ENOENT') when there is none. */
export declare function defaultModelPath(): string;
/** On the libuv thread pool. */
export declare function convert(layaDir: string, outPath: string, options?: FileOptions): Promise<void>;
export declare function randomModel(preset: string, outPath: string, options?: Options): Promise<void>;
export declare function quantize(inPath: string, outPath: string, options?: FileOptions): Promise<void>;
export declare function inspect(ggufPath: string, options?: Options): Promise<string>;
/** The same on the calling thread (blocking). */
export declare function convertSync(layaDir: string, outPath: string, options?: Options): void;
export declare function randomModelSync(preset: string, outPath: string, options?: Options): void;
export declare function quantizeSync(inPath: string, outPath: string, options?: Options): void;
export declare function inspectSync(ggufPath: string, options?: Options): string;
/** Throws SKYCMD_E_VERSION unless the running library is at least version n. */
export declare function checkVersion(n: number): void;
/** SKYCMD_VERSION_NUMBER of the header the addon was built against. */
export declare const HEADER_VERSION_NUMBER: number;
export declare function version(): string;
export declare function versionNumber(): number;
export declare function buildId(): string;
export declare function cpuFeatures(): string;
