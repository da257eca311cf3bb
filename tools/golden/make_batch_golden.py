#!/usr/bin/env python3
"""Golden fixtures of `POST /v1/systemone/batch` and the per-request max_len / head_max_len
controls, computed by laya serve 0.4.15 itself.

What it does:
  1. builds laya serve's own FastAPI app (`laya.serve.create_app`) around a real
     `laya.Router` whose registry maps the name "golden" to the F32 golden checkpoint
     tests/fixtures/golden/ckpt/laya-5x-f32-d128 (CPU, HF_HUB_OFFLINE=1; nothing is
     downloaded), with LAYA_MAX_TOKEN_BUDGET / LAYA_MAX_BATCH_TOKENS set as the C test starts
     its server (--max-token-budget / --max-batch-tokens);
  2. posts every body of CASES below to laya's `/v1/systemone/batch` (and the single-route
     cases to `/v1/systemone`) through starlette's TestClient, with "model": "golden";
  3. writes tests/fixtures/serve/batch_golden.json: for every case the exact body text sent,
     the environment, laya's status and its JSON answer (results with laya's 4-decimal
     probabilities, or its error `detail`).

tests/serve/test_batch.py starts `skycmd serve` on the same checkpoint converted to an F32
GGUF, sends the same bodies, and compares: statuses, error messages, per-state answers
(choices, probabilities, noul and score values within 1e-4, input tokens exactly) and
total_usage.

Run with the pinned reference environment (tools/golden/requirements.txt, which now includes
fastapi and httpx for laya's `serve` extra):
    /tmp/gvenv/bin/python tools/golden/make_batch_golden.py
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CKPT = os.path.join(ROOT, "tests", "fixtures", "golden", "ckpt", "laya-5x-f32-d128")
OUT = os.path.join(ROOT, "tests", "fixtures", "serve", "batch_golden.json")

# The server limits both sides run with: small enough that the chunking path runs.
MAX_TOKEN_BUDGET = 4096
MAX_BATCH_TOKENS = 2048

QUESTIONS = {
    "action": {"type": "choice", "instructions": "Which input keeps the drone flying through the next gap?",
               "criteria": {"thrust": "fire the rotors for an upward impulse",
                            "glide": "let gravity pull the drone down",
                            "hover": "hold the altitude"}},
    "danger": {"type": "noul", "instructions": "Will the drone crash within the next half second?"},
    "margin": {"type": "score", "instructions": "How much room is left above and below the drone?",
               "criteria": ["none", "tight", "comfortable"]},
}

LONG = " ".join("gap %d at altitude %d, wind %d" % (i, (i * 37) % 100, (i * 11) % 9) for i in range(60))
STATES = [
    "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32",
    "vy -3 dx 12 up 2 dn 15 nxt 4 alt 8",
    ["tick 1: alt 30", "tick 2: alt 28", "tick 3: alt 25"],
    {"vy": 4, "dx": 50, "alt": 61.5, "note": "tailwind"},
    LONG,
    "x",
    "the drone is " + "very " * 40 + "close to the ceiling",
]


def body(**extra):
    b = {"model": "golden", "states": STATES, "questions": QUESTIONS}
    b.update(extra)
    return b


# (name, route, body). Bodies are sent as the exact text recorded.
CASES = [
    ("plain", "/v1/systemone/batch", body()),
    ("max_len", "/v1/systemone/batch", body(max_len=64)),
    ("head_max_len", "/v1/systemone/batch", body(head_max_len=40)),
    ("both_budgets", "/v1/systemone/batch", body(max_len=96, head_max_len=48)),
    ("wide_max_len", "/v1/systemone/batch", body(max_len=1024)),
    ("batch_size_sorted", "/v1/systemone/batch", body(batch_size=2, sort_by_length=True)),
    ("batch_size_1", "/v1/systemone/batch", body(batch_size=1, sort_by_length=False)),
    ("one_state", "/v1/systemone/batch", {"model": "golden", "states": [STATES[0]],
                                          "questions": {"danger": QUESTIONS["danger"]}}),
    # refusals and validation, each with laya's status and message
    ("max_len_zero", "/v1/systemone/batch", body(max_len=0)),
    ("max_len_float", "/v1/systemone/batch", body(max_len=64.0)),
    ("max_len_bool", "/v1/systemone/batch", body(max_len=True)),
    ("max_len_over_cap", "/v1/systemone/batch", body(max_len=MAX_TOKEN_BUDGET + 1)),
    ("head_max_len_negative", "/v1/systemone/batch", body(head_max_len=-5)),
    ("batch_size_zero", "/v1/systemone/batch", body(batch_size=0)),
    ("batch_size_string", "/v1/systemone/batch", body(batch_size="2")),
    ("sort_by_length_string", "/v1/systemone/batch", body(sort_by_length="yes")),
    ("states_empty", "/v1/systemone/batch", {"model": "golden", "states": [], "questions": QUESTIONS}),
    ("states_not_list", "/v1/systemone/batch", {"model": "golden", "states": "x", "questions": QUESTIONS}),
    ("states_too_many", "/v1/systemone/batch", {"model": "golden", "states": ["s"] * 65, "questions": QUESTIONS}),
    ("no_states", "/v1/systemone/batch", {"model": "golden", "questions": QUESTIONS}),
    ("hooks", "/v1/systemone/batch", body(hooks=["x"])),
    ("diagnostics", "/v1/systemone/batch", body(diagnostics={})),
    # the single route's BODY_CONTROLS
    ("single_max_len", "/v1/systemone", {"model": "golden", "state": LONG, "questions": QUESTIONS, "max_len": 80}),
    ("single_head_max_len", "/v1/systemone", {"model": "golden", "state": STATES[2], "questions": QUESTIONS,
                                              "head_max_len": 36}),
    ("single_max_len_over_cap", "/v1/systemone", {"model": "golden", "state": "x", "questions": QUESTIONS,
                                                  "max_len": MAX_TOKEN_BUDGET + 7}),
]


def main():
    os.environ["LAYA_MAX_TOKEN_BUDGET"] = str(MAX_TOKEN_BUDGET)
    os.environ["LAYA_MAX_BATCH_TOKENS"] = str(MAX_BATCH_TOKENS)
    os.environ.pop("LAYA_JEV_STRICT", None)
    os.environ.pop("LAYA_TOURNAMENT_GROUP", None)
    os.environ.pop("LAYA_API_KEY", None)
    import fastapi
    import laya
    import torch
    from fastapi.testclient import TestClient
    from laya.router import Router
    from laya.serve import create_app

    torch.set_num_threads(1)
    # laya rewrites tokenizer/tokenizer_config.json of a directory it loads; it gets a copy so
    # the committed checkpoint stays as it is.
    import shutil
    import tempfile
    work = tempfile.mkdtemp(prefix="batch-golden-")
    ckpt = os.path.join(work, "ckpt")
    shutil.copytree(CKPT, ckpt)
    router = Router(models={"golden": ckpt}, default="golden", device="cpu", max_loaded=1)
    app = create_app(router)
    cases = []
    with TestClient(app) as client:
        for name, route, b in CASES:
            text = json.dumps(b, ensure_ascii=False)
            r = client.post(route, content=text.encode("utf-8"), headers={"Content-Type": "application/json"})
            answer = r.json()
            # laya reports where it loaded the checkpoint from: a temporary path, not kept
            for res in answer.get("results", [answer]) if isinstance(answer, dict) else []:
                if isinstance(res, dict) and isinstance(res.get("routing"), dict) and "repo" in res["routing"]:
                    res["routing"]["repo"] = "<checkpoint copy>"
            cases.append({"name": name, "route": route, "body": text, "status": r.status_code, "answer": answer})
            print("%-26s %s %d" % (name, route, r.status_code), file=sys.stderr)
    doc = {
        "generator": "tools/golden/make_batch_golden.py",
        "versions": {"laya": laya.__version__, "torch": torch.__version__, "fastapi": fastapi.__version__,
                     "python": sys.version.split()[0]},
        "checkpoint": "tests/fixtures/golden/ckpt/laya-5x-f32-d128",
        "env": {"LAYA_MAX_TOKEN_BUDGET": MAX_TOKEN_BUDGET, "LAYA_MAX_BATCH_TOKENS": MAX_BATCH_TOKENS},
        "cases": cases,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    shutil.rmtree(work, ignore_errors=True)
    print("wrote", OUT, file=sys.stderr)


if __name__ == "__main__":
    main()
