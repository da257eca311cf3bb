// Compiled by `npm run typecheck` (tsc --noEmit): the declarations in index.d.ts must type
// a realistic use of the API, and reject a wrong one.
import * as sky from '..';

async function main(): Promise<void> {
  const m: sky.Model = sky.Model.open('s1-pico.gguf', { weights: 'q8', threads: 1 });
  const r: sky.Response = await m.decide({ state: 'x', questions: {} });
  const a: sky.Answer | undefined = r.answer('action');
  const choice: string | null = a ? a.choice : null;
  const p: number = r.answers[0].probabilities[0].p;
  const s: sky.Response = m.decideSync('{}');
  try {
    sky.quantize('a.gguf', 'b.gguf', { type: 'q8_0' });
  } catch (e) {
    if (e instanceof sky.SkycmdError) void [e.code.length, e.status + 1, e.libraryMessage, choice, p, s.inputTokens];
  }
  // @ts-expect-error: decideSync does not return a Promise
  await m.decideSync('{}').then(() => 0);
  // @ts-expect-error: unknown tensor type name
  sky.quantize('a', 'b', { type: 'q4_k' });
  m.close();
}
void main;
