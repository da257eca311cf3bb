// types-check.ts - compiled with `tsc --noEmit --strict` by test/run.sh: the declarations
// of skycmd.d.ts used as a page or a Node program uses them (never run). The @ts-expect-error
// lines must stay errors.
import { init, Model, SkycmdError, choice, score, noul, request, version, type Response, type EachResult } from '../skycmd.js';

async function main(bytes: Uint8Array): Promise<void> {
  await init();
  await init(new URL('https://example.org/skycmd.wasm'));
  await init(bytes);
  const v: string = version();
  const m: Model = Model.fromBytes(bytes, { name: 'pilot' });
  const m2 = await Model.fromUrl('models/s1-pico-flappy.gguf', { onProgress: (loaded: number, total: number) => void [loaded, total] });
  const req = request({
    state: 'vy 0 dx 36',
    questions: {
      action: choice({ instructions: 'Which input?', criteria: { thrust: 'up', glide: null } }),
      margin: score({ criteria: ['none', 'tight', 'comfortable'] }),
      danger: noul({ instructions: 'Crash?' }),
    },
  });
  const r: Response = m.decide(req);
  const a = r.answers.action;
  if (a.type === 'choice') { const c: string = a.choice; void c; }
  if (a.type === 'score') { const s: number = a.score; void s; }
  const n: number = r.usage.input_tokens;
  const batch: Response[] = m.decideBatch([req, '{"state": "x"}', { state: 'x', questions: {} }]);
  const each: EachResult[] = m.decideEach([req]);
  for (const e of each) {
    if (e.error) { const st: string = e.error.status; const code: number = e.error.code; void [st, code]; }
    else { const resp: Response = e.response; void resp; }
  }
  const ids: number[] = m.tokenize('vy 0');
  const ctx: number | undefined = m.info.contextLength;
  try { m.decide('{'); } catch (e) { if (e instanceof SkycmdError) { const s: string = e.status; void s; } }
  m.close();
  m2.close();
  // @ts-expect-error: a score's criteria are a list
  score({ criteria: { a: 1 } });
  // @ts-expect-error: the constructor is private
  new Model();
  void [v, n, batch, ids, ctx];
}
void main;

// WorkerModel: the same calls, as Promises
import { WorkerModel } from '../worker-model.js';
async function inWorker(bytes: Uint8Array): Promise<void> {
  const w: WorkerModel = await WorkerModel.fromUrl('s1-pico-flappy.gguf', { onProgress: (l: number, t: number) => void [l, t] });
  const w2 = await WorkerModel.fromBytes(bytes, { transfer: true, name: 'pilot' });
  const r: Response = await w.decide({ state: 'x', questions: {} });
  const each: EachResult[] = await w2.decideEach(['{}']);
  const ids: number[] = await w.tokenize('vy 0');
  const name: string = (await w.info()).name;
  void [r, each, ids, name];
  // @ts-expect-error decide answers a Promise, not a Response
  const wrong: Response = w.decide('{}');
  void wrong;
  await w.close();
}
void inWorker;
