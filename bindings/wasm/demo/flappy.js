// flappy.js - Flappy Drone, the world of tools/train/flappy.py and the episode of
// tools/train/play.py, in JavaScript: the same integer physics, the same state string the
// model was trained on, and Python's own random number generator (random.Random: MT19937,
// seeded and drawn exactly as CPython does), so that an episode with seed 11 and the same
// decisions passes through the same states as `python3 tools/train/play.py --seed 11`.
// tests/browser checks it state for state against flappy.py. No DOM here: the page draws.

export const CEILING = 64;
export const GRAVITY = 1;
export const MAX_FALL = 6;
export const THRUST_SPEED = 4;
export const SPEED = 2;
export const SPACING = 40;
export const WALL = 6;
export const GAP_MIN = 12;
export const GAP_MAX = 20;
export const MAX_SHIFT = 12;

export const GLIDE = 'glide';
export const THRUST = 'thrust';

// ---- Python's random.Random ---------------------------------------------------------------

/** CPython's Mersenne Twister (Modules/_randommodule.c), the calls flappy.py makes. */
export class PyRandom {
  constructor(seed) {
    this.mt = new Uint32Array(624);
    this.index = 625;
    this.seed(seed);
  }

  // random.seed(int): the absolute value as 32-bit words, least significant first, through
  // init_by_array (a seed of 0 is the one-word key [0]).
  seed(seed) {
    let n = BigInt(seed);
    if (n < 0n) n = -n;
    const key = [];
    do {
      key.push(Number(n & 0xffffffffn));
      n >>= 32n;
    } while (n > 0n);
    this.initGenrand(19650218);
    const mt = this.mt;
    let i = 1;
    let j = 0;
    for (let k = Math.max(624, key.length); k > 0; k--) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = ((mt[i] ^ Math.imul(prev, 1664525)) + key[j] + j) >>> 0;
      i++;
      j++;
      if (i >= 624) {
        mt[0] = mt[623];
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let k = 623; k > 0; k--) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = ((mt[i] ^ Math.imul(prev, 1566083941)) - i) >>> 0;
      i++;
      if (i >= 624) {
        mt[0] = mt[623];
        i = 1;
      }
    }
    mt[0] = 0x80000000;
  }

  initGenrand(s) {
    const mt = this.mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < 624; i++) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = (Math.imul(prev, 1812433253) + i) >>> 0;
    }
    this.index = 624;
  }

  genrandUint32() {
    const mt = this.mt;
    if (this.index >= 624) {
      for (let k = 0; k < 624; k++) {
        const y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff);
        mt[k] = mt[(k + 397) % 624] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      this.index = 0;
    }
    let y = mt[this.index++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  // getrandbits(k) for 0 < k <= 32: the top k bits of one draw.
  getrandbits(k) {
    return this.genrandUint32() >>> (32 - k);
  }

  // randint(a, b) = a + _randbelow(b - a + 1): rejection sampling on bit_length(n) bits.
  randint(a, b) {
    const n = b - a + 1;
    if (n <= 0 || n > 0xffffffff) throw new RangeError(`randint(${a}, ${b})`);
    const k = 32 - Math.clz32(n);
    let r = this.getrandbits(k);
    while (r >= n) r = this.getrandbits(k);
    return a + r;
  }
}

// ---- the world ------------------------------------------------------------------------------

const floorDiv = (a, b) => Math.floor(a / b);

export function center(gap) {
  return floorDiv(gap.bottom + gap.top, 2);
}

/** The state string of flappy.World.text(): what the model reads. */
export function stateText(w) {
  const nxt = center(w.nextGap) - center(w.gap);
  return `vy ${w.vy} dx ${w.dx} up ${w.gap.top - w.alt} dn ${w.alt - w.gap.bottom} nxt ${nxt} alt ${w.alt}`;
}

export function stepMotion(alt, vy, action) {
  const v = action === THRUST ? THRUST_SPEED : Math.max(vy - GRAVITY, -MAX_FALL);
  return [alt + v, v];
}

export function inWall(dx) {
  return -WALL < dx && dx <= 0;
}

export function crashed(alt, dx, gap) {
  if (alt <= 0 || alt >= CEILING) return true;
  return inWall(dx) && !(gap.bottom < alt && alt < gap.top);
}

export function randomGap(rng, around) {
  const size = rng.randint(GAP_MIN, GAP_MAX);
  const lo = 4 + floorDiv(size, 2);
  const hi = CEILING - 4 - floorDiv(size, 2);
  const c = around === undefined
    ? rng.randint(lo, hi)
    : Math.min(hi, Math.max(lo, around + rng.randint(-MAX_SHIFT, MAX_SHIFT)));
  const bottom = c - floorDiv(size, 2);
  return { bottom, top: bottom + size };
}

/** One step of the world (flappy.advance): the new world and whether the drone crashed. */
export function advance(w, action, rng) {
  const [alt, vy] = stepMotion(w.alt, w.vy, action);
  let dx = w.dx - SPEED;
  let gap = w.gap;
  let nextGap = w.nextGap;
  if (dx <= -WALL) { // the wall is behind: the next one becomes current
    dx += SPACING;
    gap = nextGap;
    nextGap = randomGap(rng, center(nextGap));
  }
  return { world: { alt, vy, dx, gap, nextGap }, dead: crashed(alt, dx, gap) };
}

/** The start of play.py's episode: a random gap, the drone at its center, the wall 30 ahead. */
export function startWorld(rng) {
  const gap = randomGap(rng);
  return { alt: center(gap), vy: 0, dx: 30, gap, nextGap: randomGap(rng, center(gap)) };
}

// ---- the request ----------------------------------------------------------------------------

/** The three questions of examples/flappy-drone.json (flappy.questions(None)). */
export const QUESTIONS = Object.freeze({
  action: {
    type: 'choice',
    instructions: 'Which input keeps the drone flying through the next gap?',
    criteria: {
      thrust: 'fire the rotors for an upward impulse',
      glide: 'let gravity pull the drone down',
    },
  },
  danger: {
    type: 'noul',
    instructions: 'Will the drone crash within the next half second if it keeps gliding?',
  },
  margin: {
    type: 'score',
    instructions: 'How much room is left above and below the drone?',
    criteria: ['none', 'tight', 'comfortable'],
  },
});

/** The request play.py sends for a world: its state string and the three questions. */
export function requestFor(w) {
  return { state: stateText(w), questions: QUESTIONS };
}

/**
 * An episode as play.py flies it: seed the generator, start, then each step take the
 * model's action and move the world on. `step(action)` returns {dead, wallPassed}.
 */
export class Episode {
  constructor(seed) {
    this.seed = seed;
    this.rng = new PyRandom(seed);
    this.world = startWorld(this.rng);
    this.steps = 0;
    this.walls = 0;
    this.dead = false;
    this.path = [this.world.alt]; // altitudes flown, the current one last
  }

  state() {
    return stateText(this.world);
  }

  step(action) {
    if (this.dead) throw new Error('the episode has ended');
    if (action !== THRUST && action !== GLIDE) throw new Error(`unknown action ${action}`);
    const before = this.world.gap;
    const { world, dead } = advance(this.world, action, this.rng);
    const wallPassed = world.gap !== before;
    this.world = world;
    this.steps++;
    if (wallPassed) this.walls++;
    this.dead = dead;
    this.path.push(world.alt);
    return { dead, wallPassed };
  }
}
