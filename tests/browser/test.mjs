// test.mjs - the WebAssembly package and its demo page in a real headless Chromium
// (Debian's /usr/bin/chromium driven by playwright-core), against references computed in the
// same run: the native CLI's answers (skycmd decide --f32, one thread) and
// tools/train/flappy.py's world. Run by tests/browser/run.sh, which builds what it needs and
// sets the environment (harness.mjs). Each check is one pass or failure; the last line is
// "browser: N passed, M failed"; exit 1 on any failure.
//
// The checks:
//   - the demo page loads the package, the module and the built-in model (with download
//     progress), without cross-origin isolation and without console errors;
//   - its request panel holds examples/flappy-drone.json, and the page's answer to it is
//     the native answer (token counts identical, every number within 1e-5);
//   - s1-pico's golden requests (tests/fixtures/golden/requests.json on the golden suite's
//     s1-pico, F32) decided inside the page against native: every answered request the same
//     (at least 20), every refused request a SkycmdError with native's status;
//   - the drone flies: the page's own flight (seed 11, one decision per step) passes through
//     exactly the states flappy.py gives for the same decisions, and its decisions are
//     native's on the same states; flappy.js against flappy.py on noisy pilots' episodes;
//   - bad input (a truncated model, a text file and an empty file as models, a malformed
//     and an invalid request, in the API and through the page's own controls): each a
//     SkycmdError with the library's status and message, never a trap, and the module
//     keeps answering afterwards.
// A screenshot of the page after its flight goes to $SKYCMD_ARTIFACTS/demo.png.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  compareResponses, demoLoaded, env, launch, nativeDecide, newPage, python, serve,
} from './harness.mjs';

const TOL = 1e-5;
const FLIGHT_STEPS = 40; // decisions the page makes before the flight checks
const NATIVE_FLIGHT_CHECKS = 15; // of those, compared with native decisions
let passed = 0;
let failed = 0;

function check(name, ok, detail = '') {
  if (ok) {
    passed++;
    console.log(`ok      ${name}${detail ? `: ${detail}` : ''}`);
  } else {
    failed++;
    console.log(`FAILED  ${name}${detail ? `: ${detail}` : ''}`);
  }
}

async function checkAsync(name, fn) {
  try {
    const [ok, detail] = await fn();
    check(name, ok, detail);
  } catch (e) {
    check(name, false, `threw ${e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e}`);
  }
}

const root = env.root;
const art = env.artifacts;
mkdirSync(art, { recursive: true });
const work = path.join(art, 'work');
mkdirSync(work, { recursive: true });
const builtin = path.join(root, 'models/s1-pico-flappy.gguf');
const exampleText = readFileSync(path.join(root, 'examples/flappy-drone.json'), 'utf8');

// Bad models for the server: the built-in one cut in half, a text file, nothing.
const modelBytes = readFileSync(builtin);
writeFileSync(path.join(work, 'truncated.gguf'), modelBytes.subarray(0, Math.floor(modelBytes.length / 2)));
writeFileSync(path.join(work, 'empty.gguf'), '');
const srv = await serve({
  '/golden/s1-pico.gguf': env.goldenGguf,
  '/bad/truncated.gguf': path.join(work, 'truncated.gguf'),
  '/bad/text.gguf': path.join(root, 'README.md'),
  '/bad/empty.gguf': path.join(work, 'empty.gguf'),
});
const browser = await launch();
console.log(`chromium ${browser.version}, playwright-core ${JSON.parse(readFileSync(
  new URL('./node_modules/playwright-core/package.json', import.meta.url), 'utf8')).version}, ` +
  `node ${process.version}, server ${srv.url}`);

try {
  // ---- the demo page ------------------------------------------------------------------------
  const { page, problems } = await newPage(browser.context);
  await page.goto(`${srv.url}demo/`);
  const phase = await demoLoaded(page).catch((e) => `not loaded: ${e.message}`);
  const info = await page.evaluate(() => {
    const d = window.skycmdDemo;
    return {
      errors: d.errors, modelName: d.modelName, modelBytes: d.modelBytes, download: d.download,
      isolated: window.crossOriginIsolated, kernels: d.skycmd && d.skycmd.kernels ? d.skycmd.kernels() : null,
      loadText: document.getElementById('load-text').textContent,
      progress: document.getElementById('load-progress').value,
    };
  });
  check('demo page loads the module and the built-in model', phase === 'ready' &&
    info.modelName === 's1-pico-flappy' && info.modelBytes === modelBytes.length && info.progress === 1 &&
    info.download.events >= 1 && info.download.loaded === modelBytes.length && info.download.total === modelBytes.length,
  `phase ${phase}, model ${info.modelName} (${info.modelBytes} bytes), download ${JSON.stringify(info.download)}, "${info.loadText}", ` +
    `kernels ${info.kernels}${info.errors.length ? `, errors ${JSON.stringify(info.errors)}` : ''}`);
  check('the page is not cross-origin isolated (no COOP/COEP needed)', info.isolated === false);
  if (phase !== 'ready') throw new Error('the demo page did not load: the remaining checks need it');

  await checkAsync('request panel: examples/flappy-drone.json, answered as native answers it', async () => {
    const panel = await page.evaluate(() => ({
      text: document.getElementById('request').value,
      answer: window.skycmdDemo.panel.answer,
      latency: document.getElementById('latency').textContent,
    }));
    const same = JSON.stringify(JSON.parse(panel.text)) === JSON.stringify(JSON.parse(exampleText));
    const native = await nativeDecide(builtin, exampleText, work);
    const { bad, maxDiff } = compareResponses(panel.answer, native.response, TOL, 'example');
    return [same && bad.length === 0 && /^\d+\.\d\d ms/.test(panel.latency),
      `textarea is the example: ${same}; max |d| ${maxDiff.toExponential(2)}; latency "${panel.latency}"` +
      (bad.length ? `; ${bad.slice(0, 5).join('; ')}` : '')];
  });

  // ---- the flight ----------------------------------------------------------------------------
  await page.waitForFunction((n) => window.skycmdDemo.totalSteps >= n, FLIGHT_STEPS, { timeout: 60000 })
    .catch(() => {});
  const flight = await page.evaluate(() => ({
    flight: window.skycmdDemo.flight, total: window.skycmdDemo.totalSteps, log: window.skycmdDemo.log,
    caption: document.getElementById('caption').textContent,
    state: document.getElementById('state').textContent,
  }));
  check('the drone flies from the model\'s decisions', flight.total >= FLIGHT_STEPS && flight.log.length >= FLIGHT_STEPS,
    `${flight.total} steps, now ${JSON.stringify(flight.flight)}; caption "${flight.caption}"`);

  await checkAsync('the page\'s flight is flappy.py\'s world for the same decisions', async () => {
    const first = flight.log.filter((e) => e.seed === 11); // the first episode, from its start
    const actions = first.map((e) => e.answer.answers.action.choice);
    const ref = await python(path.join(root, 'tests/browser/flappy_reference.py'),
      { episodes: [{ seed: 11, actions }] });
    const states = ref.episodes[0].states;
    const bad = first.filter((e, k) => e.step !== k || e.state !== states[k]);
    return [first.length >= FLIGHT_STEPS && bad.length === 0,
      `${first.length} states of seed 11${bad.length ? `; first difference at step ${bad[0].step}: page "${bad[0].state}", flappy.py "${states[bad[0].step]}"` : ''}`];
  });

  await checkAsync(`the flight's first ${NATIVE_FLIGHT_CHECKS} decisions are native's`, async () => {
    const bad = [];
    let maxDiff = 0;
    for (const e of flight.log.slice(0, NATIVE_FLIGHT_CHECKS)) {
      const body = JSON.stringify({ state: e.state, questions: JSON.parse(exampleText).questions });
      const n = await nativeDecide(builtin, body, work);
      const c = compareResponses(e.answer, n.response, TOL, `step ${e.step}`);
      bad.push(...c.bad);
      maxDiff = Math.max(maxDiff, c.maxDiff);
    }
    return [bad.length === 0, `max |d| ${maxDiff.toExponential(2)}${bad.length ? `; ${bad.slice(0, 5).join('; ')}` : ''}`];
  });

  await checkAsync('flappy.js against flappy.py on noisy pilots\' episodes', async () => {
    // A pilot in the page that tracks the gap's middle and errs 15 % of the time (so that it
    // passes walls and also crashes); flappy.py then replays the same actions from the seed.
    const seeds = [0, 1, 7, 11, 2026, 987654321];
    const js = await page.evaluate(async (ss) => {
      const flappy = await import('/demo/flappy.js');
      let r = 12345;
      const noise = () => (r = (r * 1103515245 + 12345) % 2147483648) / 2147483648;
      return ss.map((seed) => {
        const ep = new flappy.Episode(seed);
        const states = [ep.state()];
        const actions = [];
        const dead = [];
        for (let k = 0; k < 400; k++) {
          const w = ep.world;
          let a = flappy.stepMotion(w.alt, w.vy, flappy.GLIDE)[0] < flappy.center(w.gap) ? flappy.THRUST : flappy.GLIDE;
          if (noise() < 0.15) a = a === flappy.THRUST ? flappy.GLIDE : flappy.THRUST;
          ep.dead = false; // fly on after a crash, as the reference replays on
          actions.push(a);
          dead.push(ep.step(a).dead);
          states.push(ep.state());
        }
        return { seed, actions, states, dead, walls: ep.walls };
      });
    }, seeds);
    const ref = await python(path.join(root, 'tests/browser/flappy_reference.py'),
      { episodes: js.map(({ seed, actions }) => ({ seed, actions })) });
    const diffs = [];
    ref.episodes.forEach((r, i) => {
      r.states.forEach((st, k) => { if (js[i].states[k] !== st) diffs.push(`seed ${seeds[i]} step ${k}: "${js[i].states[k]}" vs "${st}"`); });
      r.dead.forEach((d, k) => { if (js[i].dead[k] !== d) diffs.push(`seed ${seeds[i]} step ${k}: dead ${js[i].dead[k]} vs ${d}`); });
    });
    const crashes = ref.episodes.reduce((n, r) => n + r.dead.filter(Boolean).length, 0);
    const walls = js.reduce((n, e) => n + e.walls, 0);
    return [diffs.length === 0 && crashes > 0 && walls > 20,
      `${seeds.length} episodes x 400 steps, ${walls} walls passed, ${crashes} crashing steps; ` +
      `${diffs.length} differences${diffs.length ? `: ${diffs.slice(0, 3).join('; ')}` : ''}`];
  });

  // ---- the golden requests in the page --------------------------------------------------------
  const requests = JSON.parse(readFileSync(path.join(root, 'tests/fixtures/golden/requests.json'), 'utf8'));
  const inPage = await page.evaluate(async (bodies) => {
    const { Model, SkycmdError } = window.skycmdDemo.skycmd;
    const m = await Model.fromUrl('/golden/s1-pico.gguf');
    const out = bodies.map((body) => {
      try {
        return { response: m.decide(body) };
      } catch (e) {
        return { error: { skycmd: e instanceof SkycmdError, status: e.status, message: e.message } };
      }
    });
    m.close();
    return out;
  }, requests.map((r) => r.body));
  const native = [];
  for (const r of requests) native.push(await nativeDecide(env.goldenGguf, r.body, work));
  {
    let answered = 0;
    let maxDiff = 0;
    const bad = [];
    requests.forEach((r, i) => {
      if (!native[i].response) return;
      if (!inPage[i].response) {
        bad.push(`${r.name}: native answers, the page threw ${JSON.stringify(inPage[i].error)}`);
        return;
      }
      answered++;
      const c = compareResponses(inPage[i].response, native[i].response, TOL, r.name);
      bad.push(...c.bad);
      maxDiff = Math.max(maxDiff, c.maxDiff);
    });
    check(`golden s1-pico requests in Chromium against native (${answered} answered)`,
      answered >= 20 && bad.length === 0,
      `max |d| ${maxDiff.toExponential(2)}, ${bad.length} mismatches${bad.length ? `: ${bad.slice(0, 5).join('; ')}` : ''}`);
    const refusals = requests.map((r, i) => [r, i]).filter(([, i]) => native[i].error);
    const wrong = refusals.filter(([, i]) => !(inPage[i].error && inPage[i].error.skycmd &&
      inPage[i].error.status === native[i].error.status && inPage[i].error.message));
    check(`golden requests native refuses: SkycmdError with the same status (${refusals.length})`,
      refusals.length > 0 && wrong.length === 0,
      wrong.map(([r, i]) => `${r.name}: native ${native[i].error.status}, page ${JSON.stringify(inPage[i].error || inPage[i].response)}`).slice(0, 5).join('; '));
  }

  // (before the bad input, whose failed downloads Chromium logs as console errors)
  check('no console errors or uncaught exceptions on the demo page', problems.length === 0, problems.slice(0, 5).join('; '));

  // ---- WorkerModel: the same answers from a Web Worker ------------------------------------------
  await checkAsync('WorkerModel in a Web Worker answers as the page\'s model, byte for byte', async () => {
    const r = await page.evaluate(async () => {
      const { WorkerModel } = await import('/worker-model.js');
      const demo = window.skycmdDemo;
      let progress = null;
      const w = await WorkerModel.fromUrl('/s1-pico-flappy.gguf', { onProgress: (l, t) => { progress = [l, t]; } });
      const inWorker = JSON.stringify(await w.decide(demo.exampleRequest));
      const inPage = JSON.stringify(demo.model.decide(demo.exampleRequest));
      let bad = null;
      try { await w.decide('{"state": '); } catch (e) { bad = `${e.name} ${e.status}`; }
      await w.close();
      let badModel = null;
      try { await WorkerModel.fromUrl('/bad/text.gguf'); } catch (e) { badModel = `${e.name} ${e.status}`; }
      return { same: inWorker === inPage, progress, bad, badModel };
    });
    return [r.same && r.progress && r.progress[0] === r.progress[1] && r.progress[0] > 0 &&
      r.bad === 'SkycmdError SKYCMD_E_JSON' && r.badModel === 'SkycmdError SKYCMD_E_FORMAT',
      JSON.stringify(r)];
  });

  // ---- bad input through the API ---------------------------------------------------------------
  const badApi = await page.evaluate(async () => {
    const { Model, SkycmdError } = window.skycmdDemo.skycmd;
    const out = {};
    const grab = async (name, fn) => {
      try {
        await fn();
        out[name] = { threw: false };
      } catch (e) {
        out[name] = { threw: true, skycmd: e instanceof SkycmdError, name: e.name, status: e.status, message: e.message };
      }
    };
    const bytes = new Uint8Array(await (await fetch('/s1-pico-flappy.gguf')).arrayBuffer());
    await grab('truncated model (fromBytes)', () => Model.fromBytes(bytes.subarray(0, bytes.length >> 1)));
    await grab('truncated model (fromUrl)', () => Model.fromUrl('/bad/truncated.gguf'));
    await grab('a text file as a model', () => Model.fromUrl('/bad/text.gguf'));
    await grab('an empty file as a model', () => Model.fromUrl('/bad/empty.gguf'));
    await grab('a model that is not there', () => Model.fromUrl('/bad/missing.gguf'));
    const m = window.skycmdDemo.model;
    await grab('a malformed request', () => m.decide('{"state": "vy 0 dx 36", "questions": {"action": '));
    await grab('an invalid request', () => m.decide({ state: 'x', questions: { a: { type: 'bogus', instructions: 'x' } } }));
    let after;
    try {
      after = m.decide(window.skycmdDemo.exampleRequest).answers.action.choice;
    } catch (e) {
      after = `threw ${e.status || e.name}: ${e.message}`;
    }
    return { out, after };
  });
  const nativeMalformed = await nativeDecide(builtin, '{"state": "vy 0 dx 36", "questions": {"action": ', work);
  const nativeInvalid = await nativeDecide(builtin, JSON.stringify({ state: 'x', questions: { a: { type: 'bogus', instructions: 'x' } } }), work);
  const expectStatus = {
    'a malformed request': nativeMalformed.error && nativeMalformed.error.status,
    'an invalid request': nativeInvalid.error && nativeInvalid.error.status,
    'a model that is not there': 'SKYCMD_E_IO',
  };
  for (const [name, r] of Object.entries(badApi.out)) {
    const want = expectStatus[name];
    check(`bad input, ${name}: a clear SkycmdError`,
      r.threw && r.skycmd && /^SKYCMD_E_/.test(r.status) && r.status !== 'SKYCMD_E_INTERNAL' &&
      r.message && r.message.length > 10 && (!want || r.status === want),
      r.threw ? `${r.name} ${r.status}: ${r.message}${want ? ` (native: ${want})` : ''}` : 'no error');
  }
  check('the module answers after the bad inputs', badApi.after === 'thrust', badApi.after);

  // ---- bad input through the page's own controls ------------------------------------------------
  await checkAsync('the request panel shows a malformed request\'s error', async () => {
    await page.fill('#request', '{"state": "vy 0", "questions": [');
    await page.click('#decide');
    const shown = await page.evaluate(() => ({
      text: document.getElementById('answer').textContent,
      isError: document.getElementById('answer').classList.contains('error'),
      panel: window.skycmdDemo.panel,
    }));
    await page.click('#reset-request');
    await page.click('#decide');
    const again = await page.evaluate(() => window.skycmdDemo.panel.answer && window.skycmdDemo.panel.answer.answers.action.choice);
    return [shown.isError && shown.panel.error && shown.panel.error.status === 'SKYCMD_E_JSON' &&
      shown.text.includes('SKYCMD_E_JSON') && again === 'thrust',
    `shown "${shown.text.replace(/\n/g, ' | ')}"; the example again: ${again}`];
  });
  // The screenshot after the whole run: by now the drone has flown 100 steps or more.
  await page.screenshot({ path: path.join(art, 'demo.png'), fullPage: true });
  console.log(`screenshot after ${await page.evaluate(() => window.skycmdDemo.totalSteps)} steps: ${path.join(art, 'demo.png')}`);
  await page.close();

  for (const [what, url] of [['a truncated model', '/bad/truncated.gguf'], ['a text file as the model', '/bad/text.gguf']]) {
    await checkAsync(`the demo page with ${what} shows the error`, async () => {
      const { page: p, problems: pr } = await newPage(browser.context);
      await p.goto(`${srv.url}demo/?model=${encodeURIComponent(url)}&paused=1`);
      const ph = await demoLoaded(p);
      const shown = await p.evaluate(() => ({
        box: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
        errors: window.skycmdDemo.errors,
      }));
      const uncaught = pr.filter((x) => x.startsWith('page error'));
      await p.close();
      const e = shown.errors[0] || {};
      return [ph === 'failed' && e.name === 'SkycmdError' && /^SKYCMD_E_/.test(e.status) &&
        e.status !== 'SKYCMD_E_INTERNAL' && shown.box.includes(e.status) && uncaught.length === 0,
      `phase ${ph}; shown "${shown.box}"${uncaught.length ? `; ${uncaught.join('; ')}` : ''}`];
    });
  }
} catch (e) {
  check('the browser run', false, e && e.stack ? e.stack : String(e));
} finally {
  await browser.close();
  await srv.close();
}
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
