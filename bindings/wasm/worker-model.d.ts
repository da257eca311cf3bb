// worker-model.d.ts - the types of worker-model.js (`@skycmd/wasm/worker`): Model's API with
// the model in a worker of its own, every call a Promise.
import type { ModelInfo, RequestInput, Response, EachResult, URLLike } from './skycmd.js';

export interface WorkerOpenOptions {
  /** The "model" reported in responses (default: the file's general.name). */
  name?: string;
  /** The module's URL (default: skycmd.wasm beside skycmd.js). */
  wasm?: string | URLLike;
}

export declare class WorkerModel {
  private constructor();
  /** Downloads (fetch; a file in Node) and opens a GGUF model in a new worker. */
  static fromUrl(url: string | URLLike, options?: WorkerOpenOptions & {
    onProgress?: (loaded: number, total: number) => void;
  }): Promise<WorkerModel>;
  /** Opens a GGUF model from its bytes in a new worker; transfer: true moves the buffer. */
  static fromBytes(bytes: Uint8Array | ArrayBuffer, options?: WorkerOpenOptions & {
    transfer?: boolean;
  }): Promise<WorkerModel>;
  decide(request: RequestInput): Promise<Response>;
  decideBatch(requests: Iterable<RequestInput>): Promise<Response[]>;
  decideEach(requests: Iterable<RequestInput>): Promise<EachResult[]>;
  tokenize(text: string): Promise<number[]>;
  info(): Promise<ModelInfo>;
  readonly closed: boolean;
  /** Frees the model and ends the worker; idempotent. */
  close(): Promise<void>;
}
