"""Does the oracle's `action` label have an accuracy ceiling? An audit of a labelled set.

    python3 tools/train/label_audit.py [tests/fixtures/flappy/test.jsonl] [--golden tests/fixtures/flappy/laya.json]

A model reads only the state's text, so the label is learnable to 100 % only if the text
determines it. The text leaves out one thing the oracle's search uses: the size of the gap
after the next wall (`nxt` gives its center only). For every state this script
- relabels the state under every size that gap can have (GAP_MIN..GAP_MAX): if the label
  changes, the state is ambiguous by construction (a ceiling);
- checks that no two rows with the same text carry different labels;
- counts how the label is made: forced (only one action survives) or the pilot's habit (both
  survive; flappy.tracking_action decides), and how many labels flip when alt or vy moves by
  one unit (knife-edge states: learnable, since the text is exact integers, but hard);
- with --golden (laya's answers on the set, tools/golden/make_flappy_golden.py), splits the
  model's errors by those kinds, and counts how often the model's choice keeps the drone alive
  (a safe choice) even where it is not the oracle's label.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import flappy as F  # noqa: E402


def parse(state: str):
    t = state.split()
    return {t[i]: int(t[i + 1]) for i in range(0, len(t), 2)}


def worlds(state: str):
    """Every world the text can describe (one per size of the gap after the next wall)."""
    v = parse(state)
    gap = F.Gap(v["alt"] - v["dn"], v["alt"] + v["up"])
    c = F.center(gap) + v["nxt"]
    return [F.World(v["alt"], v["vy"], v["dx"], gap, F.Gap(c - s // 2, c - s // 2 + s))
            for s in range(F.GAP_MIN, F.GAP_MAX + 1)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", nargs="?", default=os.path.join(HERE, "..", "..", "tests", "fixtures", "flappy", "test.jsonl"))
    ap.add_argument("--golden", default=None)
    a = ap.parse_args()
    rows = [json.loads(line) for line in open(a.rows, encoding="utf-8") if line.strip()]
    choices = None
    if a.golden:
        cases = json.load(open(a.golden, encoding="utf-8"))["cases"]
        choices = [next(q["choice"] for q in c["questions"] if q["id"] == "action") for c in cases]
    ambiguous, by_text, kinds, errors, safe = 0, {}, collections.Counter(), collections.Counter(), 0
    for i, r in enumerate(rows):
        label = r["expected"]["action"]
        ws = worlds(r["state"])
        if len({F.label_action(w) for w in ws}) > 1:
            ambiguous += 1
        if by_text.setdefault(r["state"], label) != label:
            ambiguous += 1
        w = ws[len(ws) // 2]
        ok = {act: F.survives(w.alt, w.vy, w.dx, w.gap, w.next_gap, act) for act in (F.GLIDE, F.THRUST)}
        kind = "habit" if all(ok.values()) else "forced"
        flips = False
        for dalt, dvy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            w2 = F.World(w.alt + dalt, w.vy + dvy, w.dx, w.gap, w.next_gap)
            if F.crashed(w2.alt, w2.dx, w2.gap) or not -F.MAX_FALL <= w2.vy <= F.THRUST_SPEED:
                continue
            other = F.label_action(w2)
            flips = flips or (other is not None and other != label)
        key = (kind, "knife-edge" if flips else "clear")
        kinds[key] += 1
        if choices is not None:
            if choices[i] != label:
                errors[key] += 1
            safe += ok[choices[i]]
    n = len(rows)
    print("%d states; ambiguous by construction (label not fixed by the text): %d" % (n, ambiguous))
    for key in sorted(kinds):
        line = "  %-6s %-10s %5d (%.1f %%)" % (key[0], key[1], kinds[key], 100.0 * kinds[key] / n)
        if choices is not None:
            line += "  model errors %d (%.1f %% of these)" % (errors[key], 100.0 * errors[key] / kinds[key])
        print(line)
    if choices is not None:
        wrong = sum(errors.values())
        print("model: accuracy against the oracle %.4f (%d errors); its choice keeps the drone alive on %.4f"
              % (1 - wrong / n, wrong, safe / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
