// Compiled by `npm run typecheck` (tsc --noEmit): the declarations in index.d.ts must type
// a realistic use of the API, and reject a wrong one.
import * as sky from '..';

declare const signal: sky.AbortSignalLike; // an AbortController's signal

function req0(): sky.Request {
  return sky.request({ state: 'vy 0', questions: { d: new sky.Noul({ instructions: 'Crash?' }) } });
}

async function main(): Promise<void> {
  const m: sky.Model = sky.Model.open('s1-pico.gguf', { weights: 'q8', threads: 1 });
  const r: sky.Response = await m.decide({ state: 'x', questions: {} });
  const a: sky.Answer | undefined = r.answer('action');
  const choice: string | null = a ? a.choice : null;
  const conf: number | undefined = a ? a.confidence : undefined;
  const legend: readonly string[] | undefined = a ? a.legend : undefined;
  const first: sky.Answer | undefined = r.answers.get('action');
  const p: number = first ? first.probabilities[0].p : 0;
  for (const [id, ans] of r.answers) void [id.length, ans.value];
  const ids0: string[] = [...r.answers.keys()];
  for await (const item of m.decideEach(['{}', req0(), { state: 'x', questions: {} }])) {
    if (item.error) void [item.error.code, item.error.statusName];
    else void item.response.answers.size;
  }
  async function* lines(): AsyncGenerator<string> { yield '{}'; }
  for await (const { response, error } of m.decideEach(lines())) void [response?.model, error?.message];
  const s: sky.Response = m.decideSync('{}');
  const model: string = s.model;
  const score: number = r.scores['margin'].score;
  const level: string = r.scores['margin'].legend['0'];
  const noul: number = r.nouls['danger'].noul;
  const picked: string = r.choices['action'].choice;
  const req: sky.Request = sky.request({
    state: 'vy 0',
    questions: new Map<string, sky.Question>([
      ['action', new sky.Choice({ instructions: 'Which?', criteria: { thrust: 'up', glide: null } })],
      ['danger', new sky.Noul({ instructions: 'Crash?' })],
      ['margin', new sky.Score({ criteria: ['none', 'tight'] })],
    ]),
    model: 'mine',
  });
  const batch: sky.Response[] = await m.decideBatch([req, '{}', { state: 'x', questions: {} }]);
  const tok: sky.Tokenizer = m.tokenizer();
  const ids: Int32Array = tok.encode('hello');
  const text: string = tok.decode(ids);
  const cls: number | undefined = tok.specialId('cls');
  const fromBytes: sky.Model = sky.openBuffer(new Uint8Array(0));
  const loaded: sky.Model = await sky.Model.openAsync('s1-pico.gguf', { threads: 1, signal, onProgress: (d: number, t: number) => void [d, t] });
  const builtIn: sky.Model = await sky.Model.openDefaultAsync({ weights: 'f32' });
  const builtInSync: sky.Model = sky.openDefault();
  const builtInPath: string = sky.defaultModelPath();
  void [loaded, builtIn, builtInSync, builtInPath];
  try {
    await sky.quantize('a.gguf', 'b.gguf', { type: 'q8_0', signal, onProgress: (d: number, t: number) => void [d, t] });
    const listing: string = await sky.inspect('a.gguf', { json: true });
    sky.convertSync('dir', 'out.gguf');
    void listing;
  } catch (e) {
    if (e instanceof sky.SkycmdError) void [e.code.length, e.status + 1, e.libraryMessage, choice, p, s.inputTokens,
                                            e.statusName.length, e.errno, e.path];
  }
  void [conf, legend, model, score, level, noul, picked, batch, text, cls, fromBytes, sky.DECIDE_EACH_GROUP];
  // @ts-expect-error: decideSync does not return a Promise
  await m.decideSync('{}').then(() => 0);
  // @ts-expect-error: unknown tensor type name
  await sky.quantize('a', 'b', { type: 'q4_k' });
  // @ts-expect-error: a score's criteria are a list
  new sky.Score({ criteria: { a: 'x' } });
  // @ts-expect-error: confidence may be absent
  const sure: number = r.answers.get('action')!.confidence;
  // @ts-expect-error: the answers are read-only
  r.answers.set('x', first!);
  // @ts-expect-error: the answers are keyed by id, not an array
  void r.answers[0];
  void ids0;
  void sure;
  m.close();
}
void main;
