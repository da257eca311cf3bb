#!/usr/bin/env python3
"""flappy_reference.py - the reference for the demo's JavaScript port of Flappy Drone
(bindings/wasm/demo/flappy.js): episodes replayed by tools/train/flappy.py itself.

Reads JSON on stdin, {"episodes": [{"seed": N, "actions": ["thrust", "glide", ...]}, ...]},
and prints {"episodes": [{"states": [...], "dead": [...]}, ...]}: for each episode the world
play.py starts from that seed (random.Random(seed), a gap, the drone at its center, the wall
30 ahead), then flappy.advance with each action in turn; states[k] is the state string
before action k (len(actions) + 1 of them) and dead[k] whether action k crashed the drone.
The replay goes on after a crash (advance does not care), so any sequence can be checked."""
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "train"))
import flappy  # noqa: E402


def replay(seed, actions):
    rng = random.Random(seed)
    gap = flappy.random_gap(rng)
    w = flappy.World(flappy.center(gap), 0, 30, gap, flappy.random_gap(rng, flappy.center(gap)))
    states, dead = [w.text()], []
    for action in actions:
        w, crashed = flappy.advance(w, action, rng)
        states.append(w.text())
        dead.append(crashed)
    return {"states": states, "dead": dead}


def main():
    job = json.load(sys.stdin)
    json.dump({"episodes": [replay(e["seed"], e["actions"]) for e in job["episodes"]]}, sys.stdout)


if __name__ == "__main__":
    main()
