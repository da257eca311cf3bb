#!/usr/bin/env python3
"""Golden fixtures of tests/test_long.c from laya 0.4.15 itself: long states and tournaments.

What it does, for each model of MODELS:
  1. gets the checkpoint: our generator's `skycmd random PRESET DIR --layout laya --seed N`
     (the C test regenerates it with skycmd_random_model() and checks the SHA-256 recorded
     here), or a directory committed under tests/fixtures/golden/ckpt/ (built by laya's and
     transformers' own classes, tools/golden/make_golden.py LAYA_BUILT);
  2. loads it with laya's own loader (laya.Agent, CPU, fp32, HF_HUB_OFFLINE=1, on a copy);
  3. answers every case of cases():
       - "long" cases through Agent.predict_long(state, questions, window=, stride=) with the
         body's "window" / "stride";
       - "tournament" cases through laya serve's own _predict_with_tournament(router, state,
         questions, group) with the body's "tournament_group" as LAYA_TOURNAMENT_GROUP, the
         router's predict being Agent.system_one (what laya serve's Router.predict runs for one
         checkpoint);
     observing laya's functions as they run, without changing what they return:
     build_sequence (token ids and markers of every sequence), Agent._decode_answers and
     unpermute_probs (each sequence's probabilities before laya rounds them);
  4. records what laya reads for every window: the slice state[start:end] decoded to text
     (tok.decode) and tokenized again as a string state; checks that every sequence laya
     scored is head + those ids (cut at the room the question leaves) + [SEP];
  5. writes tests/fixtures/long/<model>.json: per case the body (raw JSON text), laya's state
     ids, window size, stride and starts, each window's re-tokenized ids ("window_ids"), each
     question's head ids and markers, the deciding
     window, its unrounded probabilities, laya's usage; for tournaments the finalists, rounds,
     the final pass's ids and markers and the probabilities laya serve reports (0.0 for an
     eliminated option), and with a body's min_confidence the abstention laya serve reports.

The SentencePiece checkpoint (mmbert-tiny: byte-fallback BPE) reads multilingual states, whose
windows often decode to other text than their slice (a character cut in two decodes to U+FFFD),
so their re-tokenized windows differ from the slices: the case that matters.

Run:  /tmp/gvenv/bin/python tools/golden/make_long_golden.py --cli build/skycmd
"""
import argparse
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FORMAT_VERSION = 1

MODELS = [
    {"name": "s1-pico", "preset": "s1-pico", "seed": 7},
    {"name": "laya-5x-f32-d128", "checkpoint": "laya-5x-f32-d128"},
    {"name": "mmbert-tiny", "checkpoint": "mmbert-tiny", "multilingual": True},
]

# Multilingual words for the SentencePiece checkpoint: accents, Greek, Cyrillic, CJK, Arabic,
# Devanagari and emoji, most of them outside its 3,000-token vocabulary (byte fallback).
ML_WORDS = ("über straße naïve café 東京 日本語の 中文 ελληνικά русский язык 🙂 🚁 عربى हिन्दी "
            "français señor ümlaut ça 北京 データ κόσμος мир").split()

WORDS = ("the drone climbs over a wall and falls when rotors rest while wind from east pushes "
         "craft two units per tick battery drains fast score rises by one for every gap pilot "
         "keeps altitude in reserve ground effect makes flight unstable below five obstacles "
         "close leave little time to react").split()


def prose(n_words, seed, marker=None, at=None, ml=False):
    """Plain lower-case words, deterministic; `marker` (a phrase) inserted at word `at`; with
    `ml` every third word is a multilingual one."""
    out, x = [], seed * 2654435761 % 4294967296
    for i in range(n_words):
        x = (x * 1103515245 + 12345) % 2147483648
        out.append(ML_WORDS[(x >> 8) % len(ML_WORDS)] if ml and x % 3 == 0 else WORDS[x % len(WORDS)])
        if marker and i == at:
            out.append(marker)
    return " ".join(out)


def choice(ins, crit):
    return {"type": "choice", "instructions": ins, "criteria": crit}


def body(state, questions, **controls):
    b = {"state": state, "questions": questions}
    b.update(controls)
    return json.dumps(b, ensure_ascii=False)


def long_questions(n_opts=3):
    return {
        "alarm": {"type": "noul", "instructions": "Does the text mention a crash?"},
        "topic": choice("What is the text about?",
                        {"k%d" % i: "topic number %d" % i for i in range(n_opts)} if n_opts > 3 else
                        {"flight": "flying the drone", "power": "the battery", "score": "points"}),
        "risk": {"type": "score", "instructions": "How risky is the flight?",
                 "criteria": ["safe", "some risk", "risky", "crash likely"]},
    }


def ml_cases():
    """The SentencePiece checkpoint (max_len 1024, head_max_len 256): multilingual long states
    whose windows re-tokenize differently, the truncation report, and a gated tournament."""
    C = []
    C.append(("ml-long-default", "long", body(prose(900, 31, ml=True), long_questions(), long=True), False))
    C.append(("ml-long-window-48", "long", body(prose(260, 32, ml=True), long_questions(), long=True,
                                                window=48, stride=24), False))
    C.append(("ml-long-window-odd-stride", "long", body(prose(300, 33, ml=True), {
        "alarm": long_questions()["alarm"]}, long=True, window=71, stride=29), False))
    C.append(("ml-long-noul-only", "long", body(prose(400, 34, "the drone crashed", 200, ml=True), {
        "a": {"type": "noul", "instructions": "Did it crash?"}}, long=True, window=90, stride=45), False))
    C.append(("ml-long-list-state", "long", body([prose(40, 40 + i, ml=True) for i in range(12)], {
        "topic": long_questions()["topic"]}, long=True, window=64), False))
    C.append(("ml-long-fits", "long", body(prose(30, 35, ml=True), long_questions(), long=True), False))
    C.append(("ml-trunc-state-cut", "truncation", body(prose(700, 36, ml=True), long_questions(),
                                                       report_truncation=True), False))
    st = prose(40, 37, ml=True)
    C.append(("ml-tour-30-g8-gated", "tournament", body(st, {"c": choice("Which label fits?", tour_labels(30, 1))},
                                                        tournament_group=8,
                                                        min_confidence={"choice:3-5": 0.01, "default": 0.99}),
              False))
    return C


def tour_labels(n, salt):
    return {"l%03d" % i: "%s %s" % (WORDS[(i * 7 + salt) % len(WORDS)], WORDS[(i * 13 + salt) % len(WORDS)])
            for i in range(n)}


def cases(model):
    if model.get("multilingual"):
        return ml_cases()
    """(name, kind, body, expect_error). Sizes are given in state tokens and turned into words
    with the tokenizer's measured rate on this text (s1-pico about 2.6 tokens per word, the
    small-vocabulary checkpoint about 4.7), so that every long case reads 3 to 20 windows."""
    small = model["name"] != "s1-pico"
    rate = 4.7 if small else 2.6

    class K:  # `n // k` below: n tokens' worth of words
        def __rfloordiv__(self, n):
            return max(1, int(n / rate))
    k = K()
    C = []
    # default window (the config budget, capped at the room the questions leave): 3..6 windows
    C.append(("long-default-3", "long", body(prose(380 // k, 1), long_questions(), long=True), False))
    C.append(("long-default-marker", "long",
              body(prose(988 // k, 2, "the drone crashed into the wall and broke", 600 // k),
                   long_questions(), long=True), False))
    # explicit window and stride: up to 20 windows
    C.append(("long-window-48", "long", body(prose(500 // k, 3), long_questions(), long=True,
                                             window=48, stride=24), False))
    C.append(("long-window-eq-stride", "long", body(prose(630 // k, 4), long_questions(), long=True,
                                                    window=64, stride=64), False))
    C.append(("long-window-odd-stride", "long", body(prose(530 // k, 5), {
        "alarm": long_questions()["alarm"]}, long=True, window=70, stride=33), False))
    # many options (40, cut to 4 tokens each): the room is below the default window, so the
    # window is capped at it
    C.append(("long-many-options", "long", body(prose(460 // k, 6), long_questions(40), long=True), False))
    # an explicit window wider than the room: clamped; its 50% stride clamped with it
    C.append(("long-window-clamped", "long", body(prose(880 // k, 7), long_questions(), long=True,
                                                  window=400, stride=200), False))
    # fits: the one-pass answer, windows 1, no attribution
    C.append(("long-fits", "long", body(prose(60 // k, 8), long_questions(), long=True), False))
    C.append(("long-fits-window", "long", body(prose(70 // k, 9), long_questions(), long=True,
                                               window=100), False))
    # only noul, only score
    C.append(("long-noul-only", "long", body(prose(530 // k, 10), {
        "a": {"type": "noul", "instructions": "Is the battery low?"},
        "b": {"type": "noul", "instructions": "Is there wind?", "criteria": {"true": "wind pushes"}}},
        long=True, window=56), False))
    C.append(("long-score-only", "long", body(prose(500 // k, 11), {
        "s": {"type": "score", "instructions": "How fast?", "criteria": ["slow", "medium", "fast"]}},
        long=True, window=60, stride=40), False))
    # identical windows (one word repeated, window = stride): every window ties at laya's 4
    # decimals, and the first of the tied windows decides (Python's max keeps the first)
    C.append(("long-tie-repeated", "long", body(" ".join(["wall"] * (300 // k)), long_questions(),
                                                long=True, window=32, stride=32), False))
    # refused: a stride past the window (laya: ValueError)
    C.append(("long-error-stride", "long", body(prose(300 // k, 12), long_questions(), long=True,
                                                window=40, stride=41), True))

    # the truncation report of one pass (laya system_one's usage): a state cut for every
    # question, a list state (keeps its end), options whose spans collapse, a state that fits
    C.append(("trunc-state-cut", "truncation", body(prose(400 // k, 13), long_questions(),
                                                    report_truncation=True), False))
    C.append(("trunc-list-state", "truncation", body([prose(60 // k, 14 + i) for i in range(8)], {
        "alarm": long_questions()["alarm"]}, report_truncation=True), False))
    C.append(("trunc-options-collapse", "truncation", body(prose(30 // k, 15), {
        "c": choice("Pick one.", {"the drone option %d" % i: "number %d" % i for i in range(30)}),
        "n": {"type": "noul", "instructions": "Is it calm?"}}, report_truncation=True), False))
    C.append(("trunc-none", "truncation", body(prose(20 // k, 16), long_questions(),
                                               report_truncation=True), False))

    # tournaments (laya serve, LAYA_TOURNAMENT_GROUP)
    def labels(n, salt):
        return {"l%03d" % i: "%s %s" % (WORDS[(i * 7 + salt) % len(WORDS)], WORDS[(i * 13 + salt) % len(WORDS)])
                for i in range(n)}
    st = prose(40 // k, 20)
    C.append(("tour-30-g16", "tournament", body(st, {"c": choice("Which label fits?", labels(30, 1))},
                                                tournament_group=16), False))
    # abstention after a tournament: laya serve gates the final pass, whose bucket counts the
    # finalists (4 here: choice:3-5), not the 30 options (choice:11+, falling to "default")
    C.append(("tour-30-g8-gated", "tournament", body(st, {"c": choice("Which label fits?", labels(30, 1))},
                                                     tournament_group=8,
                                                     min_confidence={"choice:3-5": 0.01, "default": 0.99}),
              False))
    C.append(("tour-100-g10", "tournament", body(st, {"c": choice("Which label fits?", labels(100, 2))},
                                                 tournament_group=10), False))
    C.append(("tour-150-g8", "tournament", body(st, {"c": choice("Which label fits?", labels(150, 3))},
                                                tournament_group=8), False))
    C.append(("tour-255-g16", "tournament", body(st, {"c": choice("Which label fits?", labels(255, 4))},
                                                 tournament_group=16), False))
    C.append(("tour-mixed", "tournament", body(st, {
        "big": choice("Which label fits?", labels(60, 5)),
        "n": {"type": "noul", "instructions": "Is it windy?"},
        "small": choice("Move?", {"up": "climb", "down": "dive", "hold": "keep"}),
        "list": choice("Which word?", list(labels(40, 6).values())),
        "s": {"type": "score", "instructions": "How calm?", "criteria": ["calm", "ok", "wild"]}},
        tournament_group=12), False))
    ordered = choice("Which label fits?", labels(40, 7))
    ordered["option_order"] = list(range(39, -1, -1))
    C.append(("tour-ordered-kept", "tournament", body(st, {"c": ordered}, tournament_group=8), False))
    ordered2 = choice("Which label fits?", labels(120, 8))
    ordered2["option_order"] = [(i * 7) % 120 for i in range(120)]
    C.append(("tour-ordered-dropped", "tournament", body(st, {"c": ordered2, "d": choice(
        "Which other label fits?", labels(20, 9))}, tournament_group=9), False))
    # refused: past laya serve's tournament cap (MAX_TOURNAMENT_CHOICE_OPTIONS, 255), so the
    # acceptance's "30-300 options" ends where laya's own range does
    C.append(("tour-300-refused", "tournament", body(st, {"c": choice("Which label fits?", labels(300, 10))},
                                                     tournament_group=16), True))
    if small:
        C = [c for c in C if c[0] in ("long-default-3", "long-tie-repeated", "trunc-state-cut",
                                      "trunc-options-collapse", "long-window-48", "long-many-options", "long-fits",
                                      "long-noul-only", "long-error-stride", "tour-30-g16", "tour-mixed", "tour-300-refused",
                                      "tour-150-g8", "tour-30-g8-gated")]
    return C


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Recorder:
    """Every sequence laya builds and the probabilities it decodes for it (unrounded)."""

    def __init__(self, agent_mod, agent):
        self.mod, self.agent = agent_mod, agent
        self.reset()
        self._orig = (agent_mod.build_sequence, agent_mod.unpermute_probs)
        bs, up = self._orig
        dec = agent._decode_answers

        def build_sequence(*a, **k):
            out = bs(*a, **k)
            self.seqs.append((list(map(int, out[0])), list(map(int, out[1]))))
            return out

        def decode(logits, act, items, ids, internal, offset, **k):
            self.cur = list(items)
            return dec(logits, act, items, ids, internal, offset, **k)

        def unpermute_probs(p, order):
            out = up(p, order)
            item = self.cur.pop(0)
            self.probs.append((list(map(int, item["ids"])), [float(x) for x in out]))
            return out

        agent_mod.build_sequence, agent_mod.unpermute_probs = build_sequence, unpermute_probs
        agent._decode_answers = decode

    def reset(self):
        self.seqs, self.probs, self.cur = [], [], []

    def close(self):
        self.mod.build_sequence, self.mod.unpermute_probs = self._orig
        del self.agent._decode_answers


def keys_of(agent, qd):
    internal = agent._to_internal(qd)
    t = qd["type"]
    if t == "choice":
        return [json.loads(json.dumps(k)) if not isinstance(k, str) else k for k in internal["crit"].keys()]
    if t == "score":
        return [str(i) for i in range(len(internal["crit"]))]
    return ["false", "true"]


def run_long(agent, rec, name, obj):
    from laya.common import build_head, encode_text, serialize_state, window_budget
    qs = obj["questions"]
    window, stride = obj.get("window"), obj.get("stride")
    rec.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = agent.predict_long(obj["state"], qs, window=window, stride=stride)
    tok = agent.tok
    max_len, head_max_len = agent.cfg.get("max_len", 512), agent.cfg.get("head_max_len", 192)
    state_ids = encode_text(tok, serialize_state(obj["state"]).replace(tok.mask_token, " "),
                            add_special_tokens=False)["input_ids"]
    ids = list(qs.keys())
    internal = {q: agent._to_internal(qs[q]) for q in ids}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        size, step, room = window_budget(tok, [internal[q] for q in ids], max_len, head_max_len,
                                         window=window, stride=stride)
    n = len(state_ids)
    windows = out["usage"]["windows"]
    by_ids = {}
    for seq_ids, p in rec.probs:
        by_ids.setdefault(tuple(seq_ids), p)
    heads = {}
    for q in ids:
        h, m, _ = build_head(tok, internal[q], head_max_len, option_order=qs[q].get("option_order"))
        heads[q] = (list(map(int, h)), list(map(int, m)))
    if windows == 1:
        starts, ends = [0], [n]
    else:
        starts, i = [], 0
        while True:
            starts.append(i)
            if i + size >= n:
                break
            i += step
        ends = [min(s + size, n) for s in starts]
        if len(starts) != windows:
            sys.exit("make_long_golden: %s: %d windows by window_budget, laya scored %d" % (name, len(starts), windows))
    # every window laya scored is head + the window's text re-tokenized (cut at the room) + [SEP]
    per_window, window_ids, differ = [], [], 0
    for w, (s0, s1) in enumerate(zip(starts, ends)):
        row = {}
        if windows > 1:
            text = tok.decode(state_ids[s0:s1])
            wids = list(map(int, encode_text(tok, serialize_state(text).replace(tok.mask_token, " "),
                                             add_special_tokens=False)["input_ids"]))
            window_ids.append(wids)
            differ += wids != list(map(int, state_ids[s0:s1]))
        for q in ids:
            h, m = heads[q]
            room_q = max_len - len(h) - 1
            if windows > 1:
                sl = wids[:room_q]
            elif obj["state"] is not None and isinstance(obj["state"], list):
                sl = state_ids[max(0, n - room_q):]
            else:
                sl = state_ids[:room_q]
            want = tuple(h + list(map(int, sl)) + [tok.sep_token_id])
            if want not in by_ids:
                sys.exit("make_long_golden: %s: window %d of question %s: laya scored no sequence of the"
                         " re-tokenized window [%d, %d)" % (name, w, q, s0, s1))
            row[q] = by_ids[want]
        per_window.append(row)
    qout = []
    total = 0
    for q in ids:
        a = out["answers"][q]
        win = a.get("window")
        best = win["index"] if win else 0
        p = per_window[best][q]
        keys = keys_of(agent, qs[q])
        t = qs[q]["type"]
        # laya's own rounded answer agrees with the recorded probabilities
        if t == "noul":
            assert abs(a["noul"] - round(p[1], 4)) < 1e-9, (name, q)
        elif t == "choice":
            assert a["choice"] == list(internal[q]["crit"].keys())[max(range(len(p)), key=lambda i: (p[i], -i))], (name, q)
        else:
            assert abs(a["score"] - round(sum(i * v for i, v in enumerate(p)), 4)) < 1e-9, (name, q)
        if win:
            assert win["token_start"] == starts[best] and win["token_end"] == ends[best] and win["count"] == windows
        qout.append({"id": q, "type": t, "keys": keys, "head_ids": heads[q][0], "markers": heads[q][1],
                     "window": win, "probabilities": p,
                     "window_keys": [round(max(r[q]) if t != "noul" else r[q][1], 4) for r in per_window]})
    for seq_ids, _ in rec.probs:
        total += len(seq_ids)
    if out["usage"]["input_tokens"] != total:
        sys.exit("make_long_golden: %s: input_tokens %d, sequences %d" % (name, out["usage"]["input_tokens"], total))
    usage = {k: out["usage"][k] for k in ("input_tokens", "state_tokens", "state_tokens_dropped", "truncated",
                                          "truncated_questions", "windows") if k in out["usage"]}
    return {"name": name, "kind": "long", "state_ids": list(map(int, state_ids)), "window": size, "stride": step,
            "room": room, "starts": starts, "ends": ends, "windows": windows, "window_ids": window_ids,
            "windows_retokenized_differently": differ, "usage": usage, "questions": qout}


def run_truncation(agent, rec, name, obj):
    qs = obj["questions"]
    rec.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = agent.system_one(obj["state"], qs)
    ids = list(qs.keys())
    if len(rec.probs) != len(ids):
        sys.exit("make_long_golden: %s: %d probability rows for %d questions" % (name, len(rec.probs), len(ids)))
    qout = [{"id": q, "type": qs[q]["type"], "keys": keys_of(agent, qs[q]), "ids": rec.probs[j][0],
             "probabilities": rec.probs[j][1]} for j, q in enumerate(ids)]
    usage = {k: v for k, v in out["usage"].items()}
    return {"name": name, "kind": "truncation", "usage": usage, "questions": qout}


def run_tournament(agent, rec, name, obj):
    import laya.serve as serve
    qs = obj["questions"]
    group = obj["tournament_group"]

    class Router:
        def predict(self, state, questions, **kw):
            return agent.system_one(state, questions, **kw)

    rec.reset()
    calls = []
    orig = agent.system_one

    def counted(state, questions, **kw):
        calls.append(len(rec.seqs))
        return orig(state, questions, **kw)

    agent.system_one = counted
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kw = {}
            if obj.get("min_confidence") is not None:
                kw["min_confidence"] = obj["min_confidence"]
            out = serve._predict_with_tournament(Router(), obj["state"], qs, group, **kw)
    finally:
        del agent.system_one
    plan = serve._tournament_plan(qs, group)
    final_start = calls[-1]
    final_seqs = rec.seqs[final_start:]
    final_probs = rec.probs[final_start:]
    ids = list(qs.keys())
    if len(final_seqs) != len(ids):
        sys.exit("make_long_golden: %s: final pass built %d sequences for %d questions" % (name, len(final_seqs), len(ids)))
    qout = []
    for j, q in enumerate(ids):
        a = out["answers"][q]
        t = qs[q]["type"]
        keys = keys_of(agent, qs[q])
        raw = final_probs[j][1]
        xt = a.get("x_tournament")
        if xt:
            fin = xt["finalists"]
            labels = [k for k in (qs[q]["criteria"].keys() if isinstance(qs[q]["criteria"], dict) else qs[q]["criteria"])]
            full = [0.0] * len(labels)
            for f, v in zip(fin, raw):
                full[labels.index(f)] = v
            p = full
            assert a["choice"] == fin[max(range(len(raw)), key=lambda i: (raw[i], -i))], (name, q)
        else:
            p = raw
        qout.append({"id": q, "type": t, "keys": keys, "probabilities": p, "final_probabilities": raw,
                     "ids": final_seqs[j][0], "markers": final_seqs[j][1],
                     "finalists": xt["finalists"] if xt else None, "rounds": xt["rounds"] if xt else 0,
                     "option_order_dropped": bool(xt and xt.get("option_order_dropped")),
                     "abstention": a.get("abstention"), "abstention_threshold": a.get("abstention_threshold"),
                     "low_confidence": bool(a.get("low_confidence"))})
    return {"name": name, "kind": "tournament", "group": group, "narrowed": sorted(plan) if plan else [],
            "passes": len(calls), "input_tokens": out["usage"]["input_tokens"], "questions": qout}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True, help="path of the built skycmd CLI")
    ap.add_argument("--out", default=os.path.join(repo, "tests", "fixtures", "long"))
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    import torch
    import laya
    import laya.agent as agent_mod
    torch.set_num_threads(a.threads)
    versions = {"laya": laya.__version__, "torch": torch.__version__}
    if laya.__version__ != "0.4.15":
        sys.exit("make_long_golden: laya %s, the fixtures are laya 0.4.15's" % laya.__version__)
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="long-golden-")
    manifest = {"format": FORMAT_VERSION, "generator": "tools/golden/make_long_golden.py", "versions": versions,
                "models": []}
    try:
        for spec in MODELS:
            py = os.path.join(work, spec["name"])
            entry = {"model": spec["name"], "fixture": spec["name"] + ".json"}
            if "preset" in spec:
                gen = py + "-gen"
                r = subprocess.run([a.cli, "random", spec["preset"], gen, "--layout", "laya", "--seed",
                                    str(spec["seed"])], capture_output=True, text=True)
                if r.returncode:
                    sys.exit("make_long_golden: skycmd random failed: " + r.stderr)
                entry.update(preset=spec["preset"], seed=spec["seed"],
                             model_safetensors_sha256=sha256_file(os.path.join(gen, "model.safetensors")))
                shutil.copytree(gen, py)
            else:
                rel = os.path.join("golden", "ckpt", spec["checkpoint"])
                shutil.copytree(os.path.join(repo, "tests", "fixtures", rel), py)
                entry.update(checkpoint=rel,
                             model_safetensors_sha256=sha256_file(os.path.join(py, "model.safetensors")))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                agent = laya.Agent(py, device="cpu")
            rec = Recorder(agent_mod, agent)
            out = []
            try:
                for name, kind, b, expect_error in cases(spec):
                    obj = json.loads(b)
                    if expect_error:
                        try:
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                if kind == "tournament":
                                    import laya.serve as serve
                                    serve._check_request_limits(obj["state"], obj["questions"],
                                                                serve.MAX_TOURNAMENT_CHOICE_OPTIONS)
                                else:
                                    agent.predict_long(obj["state"], obj["questions"], window=obj.get("window"),
                                                       stride=obj.get("stride"))
                        except Exception as e:  # ValueError (predict_long), HTTPException (serve's limits)
                            if not isinstance(e, ValueError) and type(e).__name__ != "HTTPException":
                                raise
                            out.append({"name": name, "kind": kind, "body": b,
                                        "error": str(getattr(e, "detail", None) or e)})
                            continue
                        sys.exit("make_long_golden: laya accepted %s" % name)
                    run = {"long": run_long, "tournament": run_tournament, "truncation": run_truncation}[kind]
                    c = run(agent, rec, name, obj)
                    c["body"] = b
                    out.append(c)
                    if kind == "long":
                        print("%s %s: %d state tokens, window %d stride %d, %d windows (%d re-tokenized"
                              " differently), deciding %s"
                              % (spec["name"], name, len(c["state_ids"]), c["window"], c["stride"], c["windows"],
                                 c["windows_retokenized_differently"],
                                 [q["window"]["index"] if q["window"] else None for q in c["questions"]]))
                    elif kind == "truncation":
                        print("%s %s: usage %s" % (spec["name"], name, json.dumps(c["usage"])))
                    else:
                        print("%s %s: %d passes, rounds %s" % (spec["name"], name, c["passes"],
                                                               [q["rounds"] for q in c["questions"]]))
            finally:
                rec.close()
            header = {"format": FORMAT_VERSION, "model": spec["name"], "max_len": agent.cfg.get("max_len", 512),
                      "head_max_len": agent.cfg.get("head_max_len", 192), "versions": versions}
            header.update({k: v for k, v in entry.items() if k not in ("model", "fixture")})
            with open(os.path.join(a.out, spec["name"] + ".json"), "w", encoding="utf-8") as f:
                f.write("{\n")
                for k, v in header.items():
                    f.write("%s: %s,\n" % (json.dumps(k), json.dumps(v)))
                f.write('"cases": [\n')
                f.write(",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in out))
                f.write("\n]}\n")
            manifest["models"].append(entry)
        with open(os.path.join(a.out, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
