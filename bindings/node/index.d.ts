// Type declarations of the skycmd Node.js binding (index.js).

/** libskycmd status codes (pinned C values). */
export declare const Status: Readonly<{
  OK: 0; INVALID_ARGUMENT: 1; MISUSE: 2; NOMEM: 3; IO: 4; FORMAT: 5; UNSUPPORTED: 6; BUSY: 7;
  JSON: 8; REQUEST: 9; TOO_LARGE: 10; VERSION: 11; NOT_FOUND: 12; INTERNAL: 13; CANCELLED: 14;
}>;

/** A failed libskycmd call. */
export declare class SkycmdError extends Error {
  constructor(op: string, status: number, libraryMessage?: string);
  readonly name: 'SkycmdError';
  /** The operation, e.g. "open", "decide". */
  readonly op: string;
  /** The C status value. */
  readonly status: number;
  /** The C status name, e.g. "SKYCMD_E_IO". */
  readonly code: string;
  /** The library's message ("" if none). */
  readonly libraryMessage: string;
}

export type TensorType = 'f32' | 'f16' | 'q8_0' | 'bf16' | number;

/** Options of a call (skycmd_option keys); a call ignores options it does not use. */
export interface Options {
  /** Open: how matrices are kept. */
  weights?: 'f32' | 'q8' | 'q8_plain' | number;
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
  /** Confidence of choice/score; NaN for noul. */
  readonly confidence: number;
  readonly probabilities: readonly Probability[];
}

export declare class Response {
  readonly answers: readonly Answer[];
  readonly inputTokens: number;
  /** The library's wire JSON: {"model", "answers", "usage"}. */
  readonly json: string;
  answer(id: string): Answer | undefined;
}

/** A /v1/systemone request: JSON text or an object (serialized with JSON.stringify). */
export type Request = string | { state: unknown; questions: Record<string, unknown>; model?: string };

export declare class Model {
  /** Opens a GGUF decision model. Throws SkycmdError. */
  static open(ggufPath: string, options?: Options): Model;
  /** True after close(). */
  readonly closed: boolean;
  /** The model name reported in responses. */
  readonly name: string;
  /** A hyper-parameter by GGUF-style name ("embedding_length", "decision.max_tokens", ...). */
  intParameter(name: string): number;
  /** Answers a request on the libuv thread pool. Rejects with SkycmdError. */
  decide(request: Request): Promise<Response>;
  /** Answers a request on the calling thread (blocks the event loop). Throws SkycmdError. */
  decideSync(request: Request): Response;
  /** Frees the model (after in-flight async calls settle). Idempotent. */
  close(): void;
  [Symbol.dispose](): void;
}

export declare function open(ggufPath: string, options?: Options): Model;
export declare function convert(layaDir: string, outPath: string, options?: Options): void;
export declare function randomModel(preset: string, outPath: string, options?: Options): void;
export declare function quantize(inPath: string, outPath: string, options?: Options): void;
export declare function inspect(ggufPath: string, options?: Options): string;
/** Throws SKYCMD_E_VERSION unless the running library is at least version n. */
export declare function checkVersion(n: number): void;
/** SKYCMD_VERSION_NUMBER of the header the addon was built against. */
export declare const HEADER_VERSION_NUMBER: number;
export declare function version(): string;
export declare function versionNumber(): number;
export declare function buildId(): string;
export declare function cpuFeatures(): string;
