#!/usr/bin/env python3
"""POST /v1/systemone/batch and the per-request max_len / head_max_len controls against
laya serve 0.4.15 itself.

tests/fixtures/serve/batch_golden.json holds the bodies laya serve was sent and what it
answered (tools/golden/make_batch_golden.py, on the F32 golden checkpoint
tests/fixtures/golden/ckpt/laya-5x-f32-d128). Here the same checkpoint is converted to an F32
GGUF, served with the same limits (--max-token-budget / --max-batch-tokens = laya's
LAYA_MAX_TOKEN_BUDGET / LAYA_MAX_BATCH_TOKENS), and every body is sent again:
  - the status is laya's, and an error's message is laya's `detail`;
  - every state's answers agree: the same choice, probabilities / noul / score within 1e-4
    (laya prints 4 decimals), input_tokens exactly; total_usage.input_tokens exactly;
  - each result is byte-identical to the /v1/systemone answer of that state alone with the
    same budgets, whatever batch_size / sort_by_length / --max-batch-tokens cut the passes;
  - min_confidence is refused with 400 (this build has no abstention gate), not ignored;
  - a body without controls gets exactly the bytes of `skycmd decide` (default wire).

usage: test_batch.py --cli build/skycmd [--source-dir .] [--work-dir DIR]
"""

import json
import os
import subprocess

from serve_common import Server, check, eq, error_of, main_guard, parse_args, request, run_tests, test

ARGS = parse_args(__doc__)
TOL = 1e-4
# laya serve prints every number to 4 decimals: a value within TOL of laya's own is within
# TOL + half a unit of its last digit of what the fixture holds
REF_HALF_UNIT = 0.5e-4


def fixture():
    with open(os.path.join(ARGS.source_dir, "tests", "fixtures", "serve", "batch_golden.json"), encoding="utf-8") as f:
        return json.load(f)


def setup():
    doc = fixture()
    ckpt = os.path.join(ARGS.source_dir, doc["checkpoint"])
    gguf = os.path.join(ARGS.work_dir, "golden-f32.gguf")
    p = subprocess.run([ARGS.cli, "convert", ckpt, gguf, "--type", "f32", "--head-type", "f32"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("convert failed: " + p.stderr)
    env = doc["env"]
    srv = Server(ARGS, ["--max-token-budget", str(env["LAYA_MAX_TOKEN_BUDGET"]),
                        "--max-batch-tokens", str(env["LAYA_MAX_BATCH_TOKENS"]), "--threads", "2"],
                 models=["golden=" + gguf])
    return {"doc": doc, "srv": srv, "gguf": gguf}


def teardown(ctx):
    eq(ctx["srv"].stop(), 0, "server exit status")


def post(ctx, route, text):
    st, h, body = request(ctx["srv"].port, "POST", route, body=text.encode("utf-8"))
    return st, h, body


def close(a, b, what):
    check(abs(a - b) <= TOL + REF_HALF_UNIT,
          f"{what}: {a!r} vs laya {b!r} (tolerance {TOL} + the fixture's rounding {REF_HALF_UNIT})")


def compare_answers(ours, laya, what):
    eq(list(ours["answers"]), list(laya["answers"]), f"{what}: question ids")
    for qid, la in laya["answers"].items():
        oa = ours["answers"][qid]
        w = f"{what}.{qid}"
        eq(oa["type"], la["type"], w + ".type")
        if la["type"] == "choice":
            eq(oa["choice"], la["choice"], w + ".choice")
        if la["type"] == "noul":
            close(oa["noul"], la["noul"], w + ".noul")
        else:
            eq(list(oa["probabilities"]), list(la["probabilities"]), w + " option keys")
            for k, p in la["probabilities"].items():
                close(oa["probabilities"][k], p, f"{w}.probabilities[{k}]")
        if la["type"] == "score":
            close(oa["score"], la["score"], w + ".score")
            eq(oa.get("legend"), la.get("legend"), w + ".legend")
    eq(ours["usage"]["input_tokens"], laya["usage"]["input_tokens"], what + ".usage.input_tokens")


def single_bodies(case):
    """Each state of a batch case as its own /v1/systemone body (same controls)."""
    b = json.loads(case["body"])
    controls = {k: b[k] for k in ("model", "max_len", "head_max_len") if k in b}
    return [json.dumps(dict(controls, state=s, questions=b["questions"])) for s in b["states"]]


@test
def batch_answers_agree_with_laya_serve(ctx):
    n = 0
    for case in ctx["doc"]["cases"]:
        st, h, body = post(ctx, case["route"], case["body"])
        name = case["name"]
        if case["status"] != 200:
            error_of(st, h, body, case["status"])
            eq(json.loads(body)["error"]["message"], case["answer"]["detail"], name + ": message")
            continue
        eq(st, 200, name + ": status (" + body.decode()[:300] + ")")
        ours = json.loads(body)
        laya = case["answer"]
        if case["route"] == "/v1/systemone":
            compare_answers(ours, laya, name)
        else:
            eq(set(ours), {"results", "total_usage"}, name + ": keys")
            eq(len(ours["results"]), len(laya["results"]), name + ": result count")
            for i, (o, la) in enumerate(zip(ours["results"], laya["results"])):
                compare_answers(o, la, f"{name}.results[{i}]")
            eq(ours["total_usage"], laya["total_usage"], name + ": total_usage")
        n += 1
    check(n >= 10, f"only {n} answered cases compared")


@test
def batch_results_equal_single_requests(ctx):
    for case in ctx["doc"]["cases"]:
        if case["status"] != 200 or case["route"] != "/v1/systemone/batch":
            continue
        st, _, body = post(ctx, case["route"], case["body"])
        eq(st, 200, case["name"])
        results = json.loads(body)["results"]
        for i, one in enumerate(single_bodies(case)):
            st1, _, b1 = post(ctx, "/v1/systemone", one)
            eq(st1, 200, f"{case['name']} state {i} alone")
            eq(json.dumps(results[i], separators=(",", ":")), b1.decode(), f"{case['name']}: state {i} vs alone")


@test
def min_confidence_gates_every_result(ctx):
    # laya serve applies apply_confidence_gate to every result: each result is the state
    # answered alone with the same min_confidence, and every answer carries the gate's fields
    case = next(c for c in ctx["doc"]["cases"] if c["name"] == "plain")
    b = json.loads(case["body"])
    for gate in (0.5, {"default": 0.99}):
        b["min_confidence"] = gate
        st, _, body = post(ctx, "/v1/systemone/batch", json.dumps(b))
        eq(st, 200, f"min_confidence {gate!r}")
        results = json.loads(body)["results"]
        for i, state in enumerate(b["states"]):
            one = json.dumps({"state": state, "questions": b["questions"], "min_confidence": gate})
            st1, _, b1 = post(ctx, "/v1/systemone", one)
            eq(st1, 200, f"state {i} alone")
            eq(json.dumps(results[i], separators=(",", ":")), b1.decode(), f"state {i} vs alone, gate {gate!r}")
            for qid, a in results[i]["answers"].items():
                check(a.get("abstention") in ("passed", "abstained", "unevaluated"), f"{qid}: {a}")
    b["min_confidence"] = 1.5  # laya's check_min_confidence: outside [0, 1]
    st, h, body = post(ctx, "/v1/systemone/batch", json.dumps(b))
    error_of(st, h, body, 422)
    b["min_confidence"] = None  # null: as laya, "not asked"
    st, _, body = post(ctx, "/v1/systemone/batch", json.dumps(b))
    eq(st, 200, "min_confidence null")
    check(b"abstention" not in body, "null min_confidence must not gate")


@test
def budget_controls_change_answers_only_when_sent(ctx):
    # the default wire: a body without controls is answered exactly as `skycmd decide` does
    body = json.dumps({"state": "vy 0 dx 36", "questions": fixture()["cases"][0] and
                       json.loads(fixture()["cases"][0]["body"])["questions"]})
    path = os.path.join(ARGS.work_dir, "plain.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(body)
    want = subprocess.run([ARGS.cli, "decide", ctx["gguf"], path, "--model-name", "golden"],
                          capture_output=True, text=True, check=True).stdout.strip()
    st, _, got = post(ctx, "/v1/systemone", body)
    eq(st, 200, "plain status")
    eq(got.decode(), want, "default wire vs skycmd decide")
    b = json.loads(body)
    for extra in ({"max_len": None}, {"head_max_len": None}):
        st, _, got2 = post(ctx, "/v1/systemone", json.dumps(dict(b, **extra)))
        eq(got2.decode(), want, f"{extra} is 'not sent'")
    st, _, got3 = post(ctx, "/v1/systemone", json.dumps(dict(b, head_max_len=24)))
    eq(st, 200, "head_max_len 24")
    check(got3.decode() != want, "head_max_len 24 must change the prompt and so the answer")


@test
def batch_route_methods_and_metrics(ctx):
    st, h, body = request(ctx["srv"].port, "GET", "/v1/systemone/batch")
    error_of(st, h, body, 405)
    eq(h.get("allow"), "POST", "Allow")
    st, h, body = post(ctx, "/v1/systemone/batch", '{"states": [1], "questions": ')
    error_of(st, h, body, 400)
    st, h, body = post(ctx, "/v1/systemone/batch", '{"states": ["x"], "questions": {}}')
    error_of(st, h, body, 422, contains="states[0]: ")
    st, _, m = request(ctx["srv"].port, "GET", "/metrics")
    check(b'skycmd_http_requests_total{endpoint="/v1/systemone/batch",code="200"}' in m,
          "metrics do not count the batch endpoint")


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup, teardown))
