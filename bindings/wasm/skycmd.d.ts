// Type declarations of skycmd.js: libskycmd in WebAssembly for web pages and Node >= 18.
// (No DOM lib or @types/node needed: the few platform types used are declared loosely.)

/** libskycmd status codes (pinned C values). */
export declare const Status: Readonly<{
  OK: 0; INVALID_ARGUMENT: 1; MISUSE: 2; NOMEM: 3; IO: 4; FORMAT: 5; UNSUPPORTED: 6; BUSY: 7;
  JSON: 8; REQUEST: 9; TOO_LARGE: 10; VERSION: 11; NOT_FOUND: 12; INTERNAL: 13; CANCELLED: 14;
}>;

export type StatusName =
  | 'SKYCMD_OK' | 'SKYCMD_E_INVALID_ARGUMENT' | 'SKYCMD_E_MISUSE' | 'SKYCMD_E_NOMEM' | 'SKYCMD_E_IO'
  | 'SKYCMD_E_FORMAT' | 'SKYCMD_E_UNSUPPORTED' | 'SKYCMD_E_BUSY' | 'SKYCMD_E_JSON' | 'SKYCMD_E_REQUEST'
  | 'SKYCMD_E_TOO_LARGE' | 'SKYCMD_E_VERSION' | 'SKYCMD_E_NOT_FOUND' | 'SKYCMD_E_INTERNAL'
  | 'SKYCMD_E_CANCELLED';

/** A failed call: bad model bytes, a malformed or invalid request, misuse. */
export declare class SkycmdError extends Error {
  constructor(code: number, message?: string, op?: string);
  readonly name: 'SkycmdError';
  /** The library's status name, e.g. 'SKYCMD_E_JSON'. */
  readonly status: StatusName | 'unknown status';
  /** The same as status (the Node binding's name for it). */
  readonly statusName: StatusName | 'unknown status';
  /** The status number (Status). */
  readonly code: number;
  /** What was being done: 'open', 'decide', 'tokenize', 'request', 'fetch', ... */
  readonly op: string;
}

/** A URL (the DOM's or Node's). */
export interface URLLike { readonly href: string }

/** What init() accepts: a URL (or URL string; in Node also a file path), a fetch Response,
 * the module's bytes or a compiled WebAssembly.Module (typed `object` here, so that the
 * declarations need no DOM lib). */
export type ModuleSource =
  | string
  | URLLike
  | { readonly ok: boolean; arrayBuffer(): Promise<ArrayBuffer> } // a Response
  | ArrayBuffer
  | ArrayBufferView
  | object;

export interface InitOptions {
  /** Lines the library writes to stdout (default console.log). */
  stdout?: (line: string) => void;
  /** Lines the library writes to stderr (default console.error). */
  stderr?: (line: string) => void;
}

/** Loads skycmd.wasm (default: beside skycmd.js). Idempotent: later calls return the first
 * call's promise (whatever their source); a failed load may be retried. */
export declare function init(source?: ModuleSource, options?: InitOptions): Promise<void>;

/** The library's version, e.g. "0.1.0". */
export declare function version(): string;
/** The kernels the module runs, e.g. "f32=simd128 int8=scalar". */
export declare function kernels(): string;
/** The library's name of a status number. */
export declare function statusName(code: number): string;
/** Bytes of wasm memory now (it only grows). */
export declare function memoryBytes(): number;
/** The WASI preview1 functions the package's shim answers. */
export declare const WASI_IMPORTS: readonly string[];

/** One option of a choice, a score level or a noul outcome and its probability. */
export type Probabilities = Readonly<Record<string, number>>;

export interface ChoiceAnswer {
  readonly type: 'choice';
  readonly choice: string;
  readonly probabilities: Probabilities;
  readonly confidence: number;
  readonly [field: string]: unknown;
}

export interface ScoreAnswer {
  readonly type: 'score';
  /** The expected level. */
  readonly score: number;
  /** Level ("0", "1", ...) -> the request's description of it. */
  readonly legend?: Readonly<Record<string, unknown>>;
  readonly probabilities: Probabilities;
  readonly confidence: number;
  readonly [field: string]: unknown;
}

export interface NoulAnswer {
  readonly type: 'noul';
  /** P(true). */
  readonly noul: number;
  readonly [field: string]: unknown;
}

export type Answer = ChoiceAnswer | ScoreAnswer | NoulAnswer;

/** The /v1/systemone response, as the native library writes it. */
export interface Response {
  readonly model: string;
  /** Question id -> answer, in request order. */
  readonly answers: Readonly<Record<string, Answer>>;
  readonly usage: {
    readonly input_tokens: number;
    readonly output_tokens: number;
    readonly [field: string]: unknown;
  };
  readonly [field: string]: unknown;
}

/** One item of Model.decideEach. */
export type EachResult =
  | { readonly response: Response; readonly error?: undefined }
  | { readonly response?: undefined; readonly error: SkycmdError };

/** What the library reports about a model (fields it does not know are absent). */
export interface ModelInfo {
  readonly name: string;
  readonly embeddingLength?: number;
  readonly blockCount?: number;
  readonly encoderBlockCount?: number;
  readonly decisionBlockCount?: number;
  readonly headCount?: number;
  readonly decisionHeadCount?: number;
  readonly feedForwardLength?: number;
  /** The architecture's context length (GGUF <arch>.context_length). */
  readonly contextLength?: number;
  /** The sequence budget of a decision (decision.max_tokens). */
  readonly maxTokens?: number;
  readonly maxHeadTokens?: number;
  readonly slidingWindow?: number;
  readonly vocabSize?: number;
  readonly parameters?: number;
  /** The kernels the module runs, e.g. "f32=simd128 int8=scalar". */
  readonly kernels: string;
}

export interface OpenOptions {
  /** The "model" reported in responses (default: the file's general.name). */
  name?: string;
}

export interface UrlOptions extends OpenOptions {
  /** After each downloaded chunk; total is 0 when the server does not give a length. */
  onProgress?: (loaded: number, total: number) => void;
}

/** A /v1/systemone request: a typed Request, JSON text, or an object (JSON.stringify). */
export type RequestInput = Request | string | { readonly state: unknown; readonly questions: unknown; readonly [field: string]: unknown };

export declare class Model {
  private constructor();
  /** Opens a GGUF model from its bytes (copied into wasm memory). Needs init(). A name
   * that is no string or holds a NUL: TypeError; 4 GiB or more: SKYCMD_E_NOMEM. */
  static fromBytes(bytes: ArrayBufferView | ArrayBuffer, options?: OpenOptions): Model;
  /** Downloads (fetch; in Node a file: URL is read from disk) and opens a GGUF model. */
  static fromUrl(url: string | URLLike, options?: UrlOptions): Promise<Model>;
  readonly info: ModelInfo;
  /** True after close(). */
  readonly closed: boolean;
  /** A request of another type (or an object JSON cannot write): TypeError. */
  decide(request: RequestInput): Response;
  /** All or nothing: a bad request throws, naming it ("request 2: ..."). requests: any
   * iterable but a string (TypeError). */
  decideBatch(requests: Iterable<RequestInput>): Response[];
  /** One item per request: its response or its error (also for an item of a wrong type). */
  decideEach(requests: Iterable<RequestInput>): EachResult[];
  /** Token ids of text (no special tokens). Not a string, or an unpaired surrogate: TypeError. */
  tokenize(text: string): number[];
  /** Frees the model; idempotent. Later calls throw SKYCMD_E_MISUSE. */
  close(): void;
}

// ---- typed request builders (the Node binding's) -------------------------------------

/** A state, instructions or a criterion: text or any JSON value. */
export type Content = string | number | boolean | null | readonly unknown[] | { readonly [k: string]: unknown };

/** Ordered key/value pairs: an object, a Map or [key, value] pairs (the last two keep the
 * order even of integer-like keys). */
export type Entries<V> = Readonly<Record<string, V>> | ReadonlyMap<string, V> | ReadonlyArray<readonly [string, V]>;

export interface ChoiceFields { instructions?: Content; criteria: Entries<Content> }
export interface ScoreFields { instructions?: Content; criteria: readonly Content[] }
export interface NoulFields { instructions?: Content; criteria?: { true?: Content; false?: Content } }
export interface RequestFields { state: Content; questions: Entries<Question>; model?: string }

/** The Jev SDK's Choice: named alternatives (a null description: the name alone). */
export declare class Choice {
  constructor(fields: ChoiceFields);
  readonly type: 'choice';
  toJSONText(): string;
  toJSON(): unknown;
}

/** The Jev SDK's Score: an ordered rubric, level 0 first. */
export declare class Score {
  constructor(fields: ScoreFields);
  readonly type: 'score';
  toJSONText(): string;
  toJSON(): unknown;
}

/** The Jev SDK's Noul: a yes/no question; instructions or a described outcome. */
export declare class Noul {
  constructor(fields: NoulFields);
  readonly type: 'noul';
  toJSONText(): string;
  toJSON(): unknown;
}

export type Question = Choice | Score | Noul;

/** A request built from typed questions. */
export declare class Request {
  constructor(fields: RequestFields);
  readonly model: string | undefined;
  /** The /v1/systemone body as text, questions in order. */
  json(): string;
  toJSON(): unknown;
}

export declare function request(fields: RequestFields): Request;
export declare function choice(fields: ChoiceFields): Choice;
export declare function score(fields: ScoreFields): Score;
export declare function noul(fields: NoulFields): Noul;
