#!/usr/bin/env python3
"""One request path: the same /v1/systemone bodies through every entry point give
byte-identical answers and the same refusals.

Entry points: `skycmd decide` (one body on stdin), `skycmd decide --batch` (all bodies in one
file), the library's skycmd_decide_json (tests/entry/decide_json.c) and `skycmd serve`
(POST /v1/systemone). Models: a random s1-pico (byte-level BPE tokenizer) and the committed
laya-built mmbert-tiny checkpoint (Gemma-style SentencePiece with byte fallback), opened from
its Laya directory. Every body carries a per-request setting: the budgets max_len and
head_max_len (also values laya serve refuses), min_confidence, a gated tournament, a long
state read in windows, option_order, the truncation report, a choice too big for one pass
(the automatic tournament) and a noul without instructions. Products are F32 everywhere (the
programs' --f32: the library's default), so the bytes must agree exactly.

Usage: test_entry_points.py --cli SKYCMD --decide-json TOOL [--source-dir DIR] [--work-dir DIR]
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_common as sc  # noqa: E402

WORDS = ("the drone climbs over a wall and falls when rotors rest while wind from east pushes craft two "
         "units per tick battery drains fast über straße café 東京 日本語の ελληνικά русский 🙂").split()


def prose(n, seed):
    x, out = seed, []
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2147483648
        out.append(WORDS[x % len(WORDS)])
    return " ".join(out)


QUESTIONS = {
    "action": {"type": "choice", "instructions": "Which input keeps the drone flying?",
               "criteria": {"thrust": "fire the rotors", "glide": "let it fall", "hover": "hold",
                            "dive": "drop fast"}},
    "danger": {"type": "noul", "instructions": "Will the drone crash?"},
    "margin": {"type": "score", "instructions": "How much room is left?", "criteria": ["none", "tight", "wide"]},
}


def bodies():
    long_state = prose(700, 3)
    ordered = dict(QUESTIONS["action"], option_order=[2, 0, 3, 1])
    labels = {"l%02d" % i: "%s %s" % (WORDS[i % len(WORDS)], WORDS[(i * 7) % len(WORDS)]) for i in range(30)}
    B = [
        ("plain", {"state": prose(20, 1), "questions": QUESTIONS}),
        ("max-len-60", {"state": long_state, "questions": QUESTIONS, "max_len": 60}),
        ("head-max-len-30", {"state": long_state, "questions": QUESTIONS, "head_max_len": 30}),
        ("both-budgets-list-state", {"state": [prose(30, i) for i in range(8)], "questions": QUESTIONS,
                                     "max_len": 120, "head_max_len": 50}),
        ("budget-null", {"state": prose(20, 2), "questions": QUESTIONS, "max_len": None}),
        ("refused-max-len-9000", {"state": "s", "questions": QUESTIONS, "max_len": 9000}),
        ("refused-head-max-len-0", {"state": "s", "questions": QUESTIONS, "head_max_len": 0}),
        ("refused-max-len-string", {"state": "s", "questions": QUESTIONS, "max_len": "300"}),
        ("min-confidence", {"state": prose(25, 4), "questions": QUESTIONS,
                            "min_confidence": {"choice:3-5": 0.3, "default": 0.6}}),
        ("tournament-gated", {"state": prose(25, 5), "tournament_group": 8,
                              "questions": {"c": {"type": "choice", "instructions": "Which label?",
                                                  "criteria": labels}},
                              "min_confidence": {"choice:3-5": 0.01, "default": 0.99}}),
        ("long-window", {"state": long_state, "questions": QUESTIONS, "long": True, "window": 48}),
        ("long-budget", {"state": long_state, "questions": QUESTIONS, "long": True, "max_len": 200}),
        ("option-order", {"state": prose(25, 6), "questions": {"a": ordered}}),
        ("report-truncation", {"state": long_state, "questions": QUESTIONS, "report_truncation": True,
                               "max_len": 150}),
        # 64 options whose markers do not fit one pass: the automatic tournament of 16
        ("overflow-tournament", {"state": "I was charged twice", "questions": {"queue": {
            "type": "choice", "instructions": "Which queue?",
            "criteria": {"Queue %03d" % i: "Tickets routed to queue %d" % i for i in range(64)}}}}),
        ("noul-without-instructions", {"state": prose(15, 7), "questions": {
            "t": {"type": "noul", "criteria": {"true": "a threat"}}}}),
        ("refused-choice-without-instructions", {"state": "s", "questions": {
            "c": {"type": "choice", "criteria": {"x": None, "y": None}}}}),
    ]
    return [(n, json.dumps(b, ensure_ascii=False)) for n, b in B]


def via_cli(args, model, body):
    p = subprocess.run([args.cli, "decide", "--f32", model, "-"], input=body.encode(), capture_output=True)
    if p.returncode == 0:
        return ("ok", p.stdout.decode().rstrip("\n"))
    err = p.stderr.decode().strip().splitlines()[-1]
    # skycmd decide: <message> (<STATUS>)
    msg = err.split(": ", 1)[1].rsplit(" (", 1)[0]
    return ("error", msg)


def via_batch(args, model, items):
    path = os.path.join(args.work_dir, "bodies.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for _, b in items:
            f.write(b + "\n")
    p = subprocess.run([args.cli, "decide", "--f32", "--batch", path, model], capture_output=True)
    lines = p.stdout.decode().rstrip("\n").split("\n")
    sc.eq(len(lines), len(items), "batch output lines")
    out = []
    for line in lines:
        j = json.loads(line)
        out.append(("error", j["error"]["message"]) if "error" in j else ("ok", line))
    return out


def via_library(args, model, items):
    p = subprocess.run([args.decide_json, model], input="".join(b + "\n" for _, b in items).encode(),
                       capture_output=True)
    sc.check(p.returncode == 0, "decide_json: %s" % p.stderr.decode())
    out = []
    for line in p.stdout.decode().rstrip("\n").split("\n"):
        out.append(("error", line.split(" ", 2)[2]) if line.startswith("ERROR ") else ("ok", line))
    return out


def via_server(srv, body):
    st, _, resp = sc.request(srv.port, "POST", "/v1/systemone", body.encode(),
                             {"Content-Type": "application/json"})
    if st == 200:
        return ("ok", resp.decode())
    return ("error", json.loads(resp)["error"]["message"])


def run_model(args, model, label):
    items = bodies()
    lib = via_library(args, model, items)
    batch = via_batch(args, model, items)
    answered = refused = 0
    with sc.Server(args, ["--f32"], models=[model]) as srv:
        for k, (name, body) in enumerate(items):
            cli = via_cli(args, model, body)
            server = via_server(srv, body)
            # the server names the model by its file name, the others by general.name: compare
            # the rest of the envelope byte for byte
            got = {"cli": cli, "batch": batch[k], "library": lib[k], "serve": server}
            if cli[0] == "ok":
                strip = {}
                for where, (kind, text) in got.items():
                    sc.check(kind == "ok", "%s %s: %s refused it: %s" % (label, name, where, text))
                    j = json.loads(text)
                    j.pop("model", None)
                    strip[where] = json.dumps(j, ensure_ascii=False)
                    sc.check(text.startswith('{"model":'), "%s %s: %s: envelope" % (label, name, where))
                first = strip["library"]
                for where, t in strip.items():
                    sc.check(t == first, "%s %s: %s differs from the library:\n  %s\n  %s" %
                             (label, name, where, t[:400], first[:400]))
                answered += 1
            else:
                for where, (kind, text) in got.items():
                    sc.check(kind == "error", "%s %s: %s answered what the CLI refused" % (label, name, where))
                    sc.check(text == cli[1], "%s %s: %s says %r, the CLI %r" % (label, name, where, text, cli[1]))
                refused += 1
            if name.startswith("refused"):
                sc.check(cli[0] == "error", "%s %s: answered" % (label, name))
            if name in ("overflow-tournament", "noul-without-instructions"):
                sc.check(cli[0] == "ok", "%s %s: refused: %s" % (label, name, cli[1]))
            # (mmbert-tiny's max_len of 1024 holds all 64 markers: one pass there)
            if name == "overflow-tournament" and cli[0] == "ok" and label == "s1-pico":
                sc.check('"x_tournament"' in cli[1], "%s %s: not a tournament" % (label, name))
    sc.check(answered >= 9 and refused >= 3, "%s: %d answered, %d refused" % (label, answered, refused))
    print("  %s: %d bodies answered byte-identically by CLI, batch, library and server; %d refused with one message"
          % (label, answered, refused))


ARGS = None


@sc.test
def same_answers_byte_level_bpe():
    run_model(ARGS, sc.ensure_model(ARGS), "s1-pico")


@sc.test
def same_answers_sentencepiece():
    run_model(ARGS, os.path.join(ARGS.source_dir, "tests", "fixtures", "golden", "ckpt", "mmbert-tiny"),
              "mmbert-tiny")


@sc.test
def budget_refusals_are_laya_serves():
    """The refusals' words are laya serve's _validate_budget_param's."""
    items = dict(bodies())
    lib = dict(zip(items, via_library(ARGS, sc.ensure_model(ARGS), list(items.items()))))
    sc.eq(lib["refused-max-len-9000"], ("error", "max_len exceeds server limit (9000 > 8192)"), "9000")
    sc.eq(lib["refused-head-max-len-0"], ("error", "head_max_len must be a positive integer"), "0")
    sc.eq(lib["refused-max-len-string"], ("error", "max_len must be an integer"), "string")


if __name__ == "__main__":
    import argparse
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--decide-json", required=True)
    known, rest = extra.parse_known_args()
    sys.argv = [sys.argv[0]] + rest
    ARGS = sc.parse_args(__doc__.splitlines()[0])
    ARGS.decide_json = known.decide_json
    sys.exit(sc.run_tests(ARGS))
