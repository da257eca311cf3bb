// demo.js - the demo page: loads the package (../skycmd.js) and its module, downloads the
// model with a progress bar, flies Flappy Drone (./flappy.js) from the model's own
// decisions, one decision per step, and answers the request the user edits. Every failure
// is shown on the page (SkycmdError's status and message), never only in the console.
//
// For tests and curious users the page's state is on window.skycmdDemo: phase ('loading',
// 'ready', 'failed'), errors, the package namespace (skycmd), the model, its download
// progress, the flight
// (seed, step, walls, dead, state, action), the totals, the last 200 decisions (log) and
// the panel's last answer, error and latency. Query parameters: see index.html.
import * as flappy from './flappy.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

// examples/flappy-drone.json, as the repository has it.
const EXAMPLE_REQUEST = `{
  "state": "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32",
  "questions": {
    "action": {
      "type": "choice",
      "instructions": "Which input keeps the drone flying through the next gap?",
      "criteria": {
        "thrust": "fire the rotors for an upward impulse",
        "glide": "let gravity pull the drone down"
      }
    },
    "danger": {
      "type": "noul",
      "instructions": "Will the drone crash within the next half second if it keeps gliding?"
    },
    "margin": {
      "type": "score",
      "instructions": "How much room is left above and below the drone?",
      "criteria": ["none", "tight", "comfortable"]
    }
  }
}`;

const demo = {
  phase: 'loading',
  errors: [], // {where, name, status, code, message}
  skycmd: null, // the package's namespace, once imported
  model: null,
  modelName: null,
  modelBytes: 0, // the GGUF's size
  download: { loaded: 0, total: 0, events: 0 }, // the model's download, as onProgress saw it
  flight: null, // {seed, step, walls, dead, state, action}
  totalSteps: 0,
  crashes: 0,
  log: [], // the last 200 decisions of the flight: {seed, step, state, answer}
  panel: { answer: null, error: null, latencyMs: null },
  exampleRequest: EXAMPLE_REQUEST,
};
window.skycmdDemo = demo;

// ---- errors and loading ----------------------------------------------------------------------

function describe(err) {
  const SkycmdError = demo.skycmd && demo.skycmd.SkycmdError;
  if (SkycmdError && err instanceof SkycmdError) {
    return { name: 'SkycmdError', status: err.status, code: err.code, message: err.message };
  }
  return { name: (err && err.name) || 'Error', status: null, code: null, message: String((err && err.message) || err) };
}

function errorText(d) {
  return d.status ? `${d.status}: ${d.message}` : `${d.name}: ${d.message}`;
}

function showError(where, err) {
  const d = { where, ...describe(err) };
  demo.errors.push(d);
  const box = $('error');
  box.hidden = false;
  const line = document.createElement('div');
  const what = document.createElement('b');
  what.textContent = where + ': ';
  line.append(what, errorText(d));
  box.append(line);
  console.error(where, err);
  return d;
}

function setLoad(text, fraction) {
  $('load-text').textContent = text;
  const bar = $('load-progress');
  if (fraction === undefined) bar.removeAttribute('value');
  else bar.value = fraction;
}

const kb = (n) => `${(n / 1024).toFixed(0)} KB`;

async function loadPackage() {
  setLoad('Loading the package (skycmd.js) and its WebAssembly module…');
  try {
    demo.skycmd = await import('../skycmd.js');
  } catch (err) {
    showError('Cannot load the package ../skycmd.js', err);
    return false;
  }
  try {
    const wasm = params.get('wasm');
    if (wasm) await demo.skycmd.init(new URL(wasm, location.href));
    else await demo.skycmd.init();
  } catch (err) {
    showError('Cannot load the WebAssembly module (skycmd.wasm next to skycmd.js, or ?wasm=URL)', err);
    return false;
  }
  return true;
}

async function loadModel() {
  const url = new URL(params.get('model') || '../s1-pico-flappy.gguf', location.href);
  const name = decodeURIComponent(url.pathname.split('/').pop() || 'model');
  setLoad(`Downloading the model ${name}…`, 0);
  let size = 0;
  try {
    const model = await demo.skycmd.Model.fromUrl(url.href, {
      onProgress(loaded, total) {
        size = loaded;
        demo.download = { loaded, total, events: demo.download.events + 1 };
        if (total > 0) setLoad(`Downloading the model ${name}: ${kb(loaded)} of ${kb(total)}`, loaded / total);
        else setLoad(`Downloading the model ${name}: ${kb(loaded)}`);
      },
    });
    useModel(model, name.replace(/\.gguf$/i, ''), size);
    return true;
  } catch (err) {
    showError(`Cannot load the model ${url.href}`, err);
    return false;
  }
}

function useModel(model, name, bytes) {
  if (demo.model) demo.model.close();
  demo.model = model;
  demo.modelName = name;
  demo.modelBytes = bytes;
  setLoad(`Model ${name} loaded${bytes ? ` (${kb(bytes)})` : ''}: flying.`, 1);
  for (const id of ['play', 'step', 'restart', 'decide', 'use-state']) $(id).disabled = false;
  $('about').textContent =
    `Model: ${name}. ` +
    `This page is ${window.crossOriginIsolated ? '' : 'not '}cross-origin isolated: ` +
    'the module is single-threaded and needs no COOP/COEP headers. ' +
    'Source: libskycmd, bindings/wasm/demo/.';
}

// ---- the flight ---------------------------------------------------------------------------------

const canvas = $('sky');
const ctx = canvas.getContext('2d');
const VIEW_W = 90; // world units across the canvas, as play.py draws
const DRONE_X = 20;
const TRAIL = 20;
let episode = null;
let timer = null;
let running = params.get('paused') !== '1';

function fitCanvas() {
  const ratio = window.devicePixelRatio || 1;
  const cssW = canvas.clientWidth || 540;
  const cssH = Math.round(cssW * flappy.CEILING / VIEW_W);
  canvas.style.height = `${cssH}px`;
  canvas.width = Math.round(cssW * ratio);
  canvas.height = Math.round(cssH * ratio);
}

let lastFrame = null; // draw()'s arguments, to draw the same frame again after a resize

function draw(world, path, action, crashedNow, hudStep, hudWalls) {
  lastFrame = [world, path.slice(), action, crashedNow, hudStep, hudWalls];
  const s = canvas.width / VIEW_W;
  const H = flappy.CEILING;
  const y = (alt) => (H - alt) * s;
  ctx.fillStyle = '#121826';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = '#46a05a';
  for (const [dx, g] of [[world.dx, world.gap], [world.dx + flappy.SPACING, world.nextGap]]) {
    const x0 = (DRONE_X + dx) * s;
    ctx.fillRect(x0, y(g.bottom), flappy.WALL * s, g.bottom * s);
    ctx.fillRect(x0, 0, flappy.WALL * s, (H - g.top) * s);
  }
  const trail = path.slice(-TRAIL);
  if (trail.length > 1) {
    ctx.strokeStyle = '#f0c850';
    ctx.lineWidth = Math.max(2, s / 3);
    ctx.beginPath();
    trail.forEach((alt, k) => {
      const x = (DRONE_X - (trail.length - 1 - k)) * s;
      if (k === 0) ctx.moveTo(x, y(alt));
      else ctx.lineTo(x, y(alt));
    });
    ctx.stroke();
  }
  ctx.fillStyle = action === flappy.THRUST ? '#fa5a46' : '#f0f0f0';
  ctx.beginPath();
  ctx.arc(DRONE_X * s, y(world.alt), 1.5 * s, 0, 2 * Math.PI);
  ctx.fill();
  if (crashedNow) {
    ctx.strokeStyle = '#fa5a46';
    ctx.lineWidth = Math.max(2, s / 3);
    ctx.beginPath();
    ctx.arc(DRONE_X * s, y(world.alt), 3 * s, 0, 2 * Math.PI);
    ctx.stroke();
  }
  // The counters at the bottom right, on a dark backdrop (the drone may fly through them).
  const f = demo.flight;
  const hud = `seed ${f.seed}  step ${hudStep}  walls ${hudWalls}${crashedNow ? '  CRASHED' : ''}`;
  ctx.font = `${Math.round(2.4 * s)}px ui-monospace, "DejaVu Sans Mono", monospace`;
  ctx.textBaseline = 'bottom';
  const w = ctx.measureText(hud).width;
  ctx.fillStyle = 'rgba(13, 18, 32, 0.75)';
  ctx.fillRect(canvas.width - w - 1.6 * s, canvas.height - 3.6 * s, w + 1.6 * s, 3.6 * s);
  ctx.fillStyle = crashedNow ? '#ffb0a4' : '#e6e6e6';
  ctx.fillText(hud, canvas.width - w - 0.8 * s, canvas.height - 0.7 * s);
}

function showState(world) {
  const text = flappy.stateText(world);
  $('state').textContent = text;
  const parts = text.split(' ');
  for (let i = 0; i < parts.length; i += 2) $(`f-${parts[i]}`).textContent = parts[i + 1];
}

function showAnswer(answer, ms) {
  const a = answer.answers;
  const set = (id, v, text, max = 1) => {
    $(`p-${id}`).style.width = `${(100 * Math.min(1, Math.max(0, v / max))).toFixed(1)}%`;
    $(`p-${id}`).parentElement.setAttribute('aria-valuenow', String(v));
    $(`v-${id}`).textContent = text;
  };
  const pt = a.action.probabilities.thrust;
  set('thrust', pt, pt.toFixed(3));
  set('glide', 1 - pt, a.action.probabilities.glide.toFixed(3));
  set('danger', a.danger.noul, a.danger.noul.toFixed(3));
  const level = ['none', 'tight', 'comfortable'][Math.round(a.margin.score)] || '';
  set('margin', a.margin.score, `${a.margin.score.toFixed(2)} (${level})`, 2);
  $('step-latency').textContent = `decided in ${ms.toFixed(2)} ms`;
}

function caption(text) {
  $('caption').textContent = text;
}

function newEpisode(seed) {
  episode = new flappy.Episode(seed);
  demo.flight = { seed, step: 0, walls: 0, dead: false, state: episode.state(), action: null };
  $('seed').value = String(seed);
  showState(episode.world);
  draw(episode.world, episode.path, null, false, 0, 0);
  caption(`Seed ${seed}: the drone starts in the middle of the first gap.`);
}

// One decision, one step: ask the model about the state, draw the state with the decision
// (as play.py draws each frame), then move the world on.
function stepOnce() {
  if (!demo.model || !episode) return false;
  if (episode.dead) {
    newEpisode(episode.seed + 1);
    return true;
  }
  const world = episode.world;
  const request = flappy.requestFor(world);
  let answer;
  const t0 = performance.now();
  try {
    answer = demo.model.decide(request);
  } catch (err) {
    showError('The flight stopped: decide failed', err);
    pause();
    return false;
  }
  const ms = performance.now() - t0;
  const action = answer.answers.action.choice;
  demo.log.push({ seed: episode.seed, step: episode.steps, state: request.state, answer });
  if (demo.log.length > 200) demo.log.shift();
  // Everything shown is about step `step`: its state, the answer, the drone coloured by the
  // action chosen (as play.py draws each frame); the world then moves on.
  const step = episode.steps;
  const walls = episode.walls;
  showState(world);
  showAnswer(answer, ms);
  draw(world, episode.path, action, false, step, walls);
  const { dead } = episode.step(action);
  demo.totalSteps++;
  Object.assign(demo.flight, { step: episode.steps, walls: episode.walls, dead, state: episode.state(), action });
  const pt = answer.answers.action.probabilities.thrust;
  if (dead) {
    demo.crashes++;
    draw(episode.world, episode.path, action, true, episode.steps, episode.walls);
    caption(`Crashed at step ${episode.steps} after ${episode.walls} walls (seed ${episode.seed}); ` +
      `the next episode (seed ${episode.seed + 1}) starts shortly.`);
  } else {
    caption(`Step ${step}: the model chose ${action} (P(thrust) ${pt.toFixed(2)}); ` +
      `${walls} wall${walls === 1 ? '' : 's'} passed.`);
  }
  return true;
}

function schedule() {
  clearTimeout(timer);
  if (!running) return;
  const delay = episode && episode.dead ? 1500 : Number($('speed').value);
  timer = setTimeout(() => {
    if (stepOnce()) schedule();
  }, delay);
}

function pause() {
  running = false;
  clearTimeout(timer);
  $('play').textContent = 'Play';
}

function play() {
  running = true;
  $('play').textContent = 'Pause';
  schedule();
}

// ---- the request panel ---------------------------------------------------------------------------

let firstPanelAnswer = true;

function decidePanel() {
  const text = $('request').value;
  const out = $('answer');
  const t0 = performance.now();
  try {
    const answer = demo.model.decide(text);
    const ms = performance.now() - t0;
    demo.panel = { answer, error: null, latencyMs: ms };
    out.classList.remove('error');
    out.textContent = JSON.stringify(answer, null, 2);
    $('latency').textContent = `${ms.toFixed(2)} ms${firstPanelAnswer ? ' (the first answer also warms the module up)' : ''}`;
    firstPanelAnswer = false;
  } catch (err) {
    const d = describe(err);
    demo.panel = { answer: null, error: d, latencyMs: null };
    out.classList.add('error');
    out.textContent = `${d.name}${d.code !== null && d.code !== undefined ? ` (code ${d.code})` : ''}\n${errorText(d)}`;
    $('latency').textContent = '';
  }
}

function useDroneState() {
  let req;
  try {
    req = JSON.parse($('request').value);
  } catch {
    req = JSON.parse(EXAMPLE_REQUEST);
  }
  if (req === null || typeof req !== 'object' || Array.isArray(req)) req = JSON.parse(EXAMPLE_REQUEST);
  req.state = demo.flight ? demo.flight.state : req.state;
  $('request').value = JSON.stringify(req, null, 2);
}

async function openModelFile(file) {
  try {
    const bytes = new Uint8Array(await file.arrayBuffer());
    const model = demo.skycmd.Model.fromBytes(bytes, { name: file.name.replace(/\.gguf$/i, '') });
    useModel(model, file.name.replace(/\.gguf$/i, ''), bytes.length);
    demo.phase = 'ready';
    newEpisode(Math.max(0, Math.trunc(Number($('seed').value)) || 0));
    if (running) schedule();
  } catch (err) {
    showError(`Cannot open ${file.name} as a model`, err);
  }
}

// ---- wiring ---------------------------------------------------------------------------------------

function wire() {
  $('request').value = EXAMPLE_REQUEST;
  $('reset-request').addEventListener('click', () => { $('request').value = EXAMPLE_REQUEST; });
  $('decide').addEventListener('click', decidePanel);
  $('use-state').addEventListener('click', useDroneState);
  $('play').addEventListener('click', () => (running ? pause() : play()));
  $('step').addEventListener('click', () => {
    pause();
    stepOnce();
  });
  $('restart').addEventListener('click', () => {
    newEpisode(Math.max(0, Math.trunc(Number($('seed').value)) || 0));
    schedule();
  });
  $('speed').addEventListener('change', schedule);
  $('model-file').addEventListener('change', (e) => {
    const file = e.target.files && e.target.files[0];
    if (file && demo.skycmd) openModelFile(file);
  });
  if (!running) $('play').textContent = 'Play';
  fitCanvas();
  window.addEventListener('resize', () => {
    fitCanvas();
    if (lastFrame) draw(...lastFrame);
  });
}

async function main() {
  wire();
  const seed = Math.max(0, Math.trunc(Number(params.get('seed') || 11)) || 0);
  newEpisode(seed);
  if (!(await loadPackage()) || !(await loadModel())) {
    demo.phase = 'failed';
    setLoad('Not loaded: see the error below.', 0);
    caption('The model is not loaded, so the drone cannot fly.');
    return;
  }
  demo.phase = 'ready';
  decidePanel();
  if (running) schedule();
}

main().catch((err) => {
  demo.phase = 'failed';
  showError('The page failed', err);
});
