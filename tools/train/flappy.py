"""Flappy Drone: the simulator, the oracle that labels its states, and the data sets.

The world (all quantities integers, one step = 0.1 s):
- The drone flies at a fixed horizontal position between the ground (altitude 0) and the
  ceiling (altitude CEILING). Each step it either GLIDES (gravity: the vertical speed drops
  by GRAVITY, down to -MAX_FALL) or THRUSTS (the rotors set the vertical speed to
  THRUST_SPEED), then moves by its vertical speed.
- Walls come towards it at SPEED units per step, SPACING units apart; each wall is WALL
  units thick and has a gap of GAP_MIN..GAP_MAX units whose center moves by at most
  MAX_SHIFT from one wall to the next. While any part of a wall overlaps the drone
  (-WALL < dx <= 0), the drone must be strictly inside the gap.
- It crashes on the ground, on the ceiling, or on a wall.

A state is written as in the seed's example, `vy 0 dx 36 up 9 dn 7 nxt 10 alt 32`:
  vy   vertical speed (units per step, up is positive)
  dx   horizontal distance to the front of the next wall (negative while the drone is
       inside the wall: -2 means the front passed two units ago)
  up   room between the drone and the top of that wall's gap (negative: above it)
  dn   room between the drone and the bottom of that wall's gap (negative: below it)
  nxt  how far the gap after it lies above (positive) or below (negative) this one
  alt  altitude above the ground

The oracle labels each state with the three questions of examples/flappy-drone.json:
  action  "thrust" or "glide": the action that keeps the drone alive. When both do, the
          pilot's habit decides: thrust when gliding would leave the drone below the middle
          of the gap ahead. Survival is decided by an exhaustive search over all later
          actions until the drone has cleared the wall after next.
  danger  noul: does the drone crash within the next half second (5 steps) if it keeps
          gliding?
  margin  score 0/1/2 ("none"/"tight"/"comfortable"): the smaller of up and dn, <= 2,
          3..5, >= 6 (none when the drone is not between the gap's edges).
Everything is deterministic given the seed.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Iterator, List, Optional, Tuple

CEILING = 64
GRAVITY = 1
MAX_FALL = 6
THRUST_SPEED = 4
SPEED = 2
SPACING = 40
WALL = 6
GAP_MIN, GAP_MAX = 12, 20
MAX_SHIFT = 12
DANGER_STEPS = 5

GLIDE, THRUST = "glide", "thrust"


@dataclass(frozen=True)
class Gap:
    bottom: int
    top: int


@dataclass(frozen=True)
class World:
    """What the drone sees: its own motion, the next wall and the one after it."""
    alt: int
    vy: int
    dx: int
    gap: Gap
    next_gap: Gap
    # the center shift of the gap after next_gap (unknown to the drone's text, used to
    # roll the world on once the next wall is passed)
    after_shift: int = 0

    def text(self) -> str:
        nxt = center(self.next_gap) - center(self.gap)
        return "vy %d dx %d up %d dn %d nxt %d alt %d" % (
            self.vy, self.dx, self.gap.top - self.alt, self.alt - self.gap.bottom,
            nxt, self.alt)


def center(g: Gap) -> int:
    return (g.bottom + g.top) // 2


def step_motion(alt: int, vy: int, action: str) -> Tuple[int, int]:
    vy = THRUST_SPEED if action == THRUST else max(vy - GRAVITY, -MAX_FALL)
    return alt + vy, vy


def in_wall(dx: int) -> bool:
    return -WALL < dx <= 0


def crashed(alt: int, dx: int, gap: Gap) -> bool:
    if alt <= 0 or alt >= CEILING:
        return True
    return in_wall(dx) and not (gap.bottom < alt < gap.top)


def survives(alt: int, vy: int, dx: int, gap: Gap, next_gap: Gap, first: str) -> bool:
    """Whether some sequence of actions starting with `first` keeps the drone alive until
    it has cleared the wall after next (exhaustive search with memo)."""
    horizon_dx = -(SPACING + WALL)  # relative to the current wall: past the next one

    @lru_cache(maxsize=None)
    def alive(alt: int, vy: int, dx: int) -> bool:
        if dx <= horizon_dx:
            return True
        for action in (GLIDE, THRUST):
            a2, v2 = step_motion(alt, vy, action)
            d2 = dx - SPEED
            g = gap if d2 > -WALL else next_gap
            rel = d2 if d2 > -WALL else d2 + SPACING
            if not crashed(a2, rel, g) and alive(a2, v2, d2):
                return True
        return False

    a2, v2 = step_motion(alt, vy, first)
    d2 = dx - SPEED
    g = gap if d2 > -WALL else next_gap
    rel = d2 if d2 > -WALL else d2 + SPACING
    return not crashed(a2, rel, g) and alive(a2, v2, d2)


def tracking_action(w: World) -> str:
    """The pilot's habit when either action is safe: thrust when gliding would leave the
    drone below the middle of the gap it is heading for."""
    alt_after_glide, _ = step_motion(w.alt, w.vy, GLIDE)
    return THRUST if alt_after_glide < center(w.gap) else GLIDE


def label_action(w: World) -> Optional[str]:
    """The action that keeps the drone alive: the only one that does, or the pilot's habit
    (tracking_action) when both do; None when the drone is doomed whatever it does (such
    states are not labelled)."""
    glide_ok = survives(w.alt, w.vy, w.dx, w.gap, w.next_gap, GLIDE)
    thrust_ok = survives(w.alt, w.vy, w.dx, w.gap, w.next_gap, THRUST)
    if glide_ok and thrust_ok:
        return tracking_action(w)
    if glide_ok:
        return GLIDE
    return THRUST if thrust_ok else None


def label_danger(w: World) -> bool:
    alt, vy, dx = w.alt, w.vy, w.dx
    for _ in range(DANGER_STEPS):
        alt, vy = step_motion(alt, vy, GLIDE)
        dx -= SPEED
        g, rel = (w.gap, dx) if dx > -WALL else (w.next_gap, dx + SPACING)
        if crashed(alt, rel, g):
            return True
    return False


def label_margin(w: World) -> int:
    room = min(w.gap.top - w.alt, w.alt - w.gap.bottom)
    if room <= 2:
        return 0
    return 1 if room <= 5 else 2


def labels(w: World) -> Optional[Dict[str, object]]:
    action = label_action(w)
    if action is None:
        return None
    return {"action": action, "danger": label_danger(w), "margin": label_margin(w)}


# ------------------------------------------------------------------------- worlds ----

def random_gap(rng: random.Random, around: Optional[int] = None) -> Gap:
    size = rng.randint(GAP_MIN, GAP_MAX)
    lo, hi = 4 + size // 2, CEILING - 4 - size // 2
    if around is None:
        c = rng.randint(lo, hi)
    else:
        c = min(hi, max(lo, around + rng.randint(-MAX_SHIFT, MAX_SHIFT)))
    return Gap(c - size // 2, c - size // 2 + size)


def advance(w: World, action: str, rng: random.Random) -> Tuple[World, bool]:
    """One step of the world; returns the new world and whether the drone crashed."""
    alt, vy = step_motion(w.alt, w.vy, action)
    dx, gap, next_gap = w.dx - SPEED, w.gap, w.next_gap
    if dx <= -WALL:  # the wall is behind: the next one becomes current
        dx += SPACING
        gap, next_gap = next_gap, random_gap(rng, center(next_gap))
    return World(alt, vy, dx, gap, next_gap), crashed(alt, dx, gap)


def random_world(rng: random.Random) -> World:
    """A state drawn broadly over what the text can describe."""
    gap = random_gap(rng)
    next_gap = random_gap(rng, center(gap))
    half = (gap.top - gap.bottom) // 2 + 6
    alt = (min(CEILING - 2, max(2, center(gap) + rng.randint(-half, half)))
           if rng.random() < 0.7 else rng.randint(2, CEILING - 2))
    vy = rng.randint(-MAX_FALL, THRUST_SPEED)
    dx = rng.randint(-WALL + SPEED, SPACING - WALL) // SPEED * SPEED
    return World(alt, vy, dx, gap, next_gap)


def flown_states(rng: random.Random, n: int, explore: float = 0.15) -> Iterator[World]:
    """States met in flight: an oracle pilot that takes a random action with probability
    `explore`, restarting after a crash or 300 steps."""
    made = 0
    while made < n:
        gap = random_gap(rng)
        w = World(center(gap) + rng.randint(-6, 6), 0, rng.randint(15, SPACING - WALL) // 2 * 2,
                  gap, random_gap(rng, center(gap)))
        for _ in range(300):
            yield w
            made += 1
            if made >= n:
                return
            best = label_action(w)
            action = best if best is not None and rng.random() >= explore else rng.choice((GLIDE, THRUST))
            w, dead = advance(w, action, rng)
            if dead:
                break


# ---------------------------------------------------------------------- questions ----

ACTION_INSTRUCTIONS = [
    "Which input keeps the drone flying through the next gap?",
    "What should the pilot do now to keep the drone in the air?",
    "Pick the control input that avoids a crash.",
    "Which action keeps the drone alive?",
]
DANGER_INSTRUCTIONS = [
    "Will the drone crash within the next half second if it keeps gliding?",
    "If the rotors stay off, does the drone hit something in the next half second?",
    "Is a crash coming within half a second without thrust?",
]
MARGIN_INSTRUCTIONS = [
    "How much room is left above and below the drone?",
    "How close is the drone to the edges of the gap?",
    "Rate the clearance between the drone and the gap's edges.",
]
ACTION_CRITERIA = {"thrust": "fire the rotors for an upward impulse",
                   "glide": "let gravity pull the drone down"}
MARGIN_CRITERIA = ["none", "tight", "comfortable"]


def questions(rng: Optional[random.Random]) -> Dict[str, Dict[str, object]]:
    """The three questions; with rng, paraphrased instructions (None: the example's own)."""
    pick = (lambda xs: xs[0]) if rng is None else rng.choice
    return {
        "action": {"type": "choice", "instructions": pick(ACTION_INSTRUCTIONS),
                   "criteria": dict(ACTION_CRITERIA)},
        "danger": {"type": "noul", "instructions": pick(DANGER_INSTRUCTIONS)},
        "margin": {"type": "score", "instructions": pick(MARGIN_INSTRUCTIONS),
                   "criteria": list(MARGIN_CRITERIA)},
    }


def all_questions() -> Iterator[Dict[str, Dict[str, object]]]:
    """Every wording of every question (one question per dict), for the tokenizer's corpus."""
    base = questions(None)
    for qid, wordings in (("action", ACTION_INSTRUCTIONS), ("danger", DANGER_INSTRUCTIONS),
                          ("margin", MARGIN_INSTRUCTIONS)):
        for w in wordings:
            q = dict(base[qid])
            q["instructions"] = w
            yield {qid: q}


def dataset(seed: int, n: int, paraphrase: bool) -> List[Dict[str, object]]:
    """n labelled, distinct states: half met in flight, half drawn broadly."""
    rng = random.Random(seed)
    rows: List[Dict[str, object]] = []
    seen = set()
    flown = flown_states(random.Random(seed + 1), 10 * n)
    while len(rows) < n:
        w = next(flown) if len(rows) % 2 == 0 else random_world(rng)
        text = w.text()
        if text in seen or crashed(w.alt, w.dx, w.gap):  # (a drawn state may be inside a wall)
            continue
        y = labels(w)
        if y is None:
            continue
        seen.add(text)
        rows.append({"state": text, "questions": questions(rng if paraphrase else None),
                     "expected": y})
    return rows


def write_jsonl(path: str, rows: List[Dict[str, object]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    import sys
    rows = dataset(int(sys.argv[1]) if len(sys.argv) > 1 else 0, 2000, paraphrase=True)
    from collections import Counter
    print(Counter(r["expected"]["action"] for r in rows),
          Counter(r["expected"]["danger"] for r in rows),
          Counter(r["expected"]["margin"] for r in rows))
    print(rows[0]["state"], rows[0]["expected"])
