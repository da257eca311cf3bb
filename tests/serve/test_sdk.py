#!/usr/bin/env python3
"""Wire compatibility with a client we did not write: the official Python SDK
`typesafe-sdk` (PyPI, pinned 0.7.5), pointed at `skycmd serve` with its base_url, answers
the example request with its own typed objects, lists the models, and maps our error
statuses to its own exception classes.

Runs itself with the interpreter of serve_common.sdk_interpreter() ($SKYCMD_SERVE_SDK_PYTHON, else .venv-ci).
Exit status 77 (ctest: skipped) when typesafe_sdk is not importable by that interpreter, 1
instead when SKYCMD_REQUIRE_SDK=1.

usage: test_sdk.py --cli build/skycmd [--model m.gguf] [--work-dir DIR]
"""

import json
import os
import sys


import serve_common
serve_common.run_under_sdk_python()
from serve_common import (Server, check, eq, example_request, ensure_model, main_guard, parse_args, run_tests,
                          test)

try:
    import typesafe_sdk
    from typesafe_sdk import (Choice, ChoiceAnswer, Noul, NoulAnswer, RetryPolicy, Score, ScoreAnswer,
                              SystemOneResponse, TypeSafeAuthenticationError, TypeSafeClient,
                              TypeSafeUnprocessableEntityError)
except ImportError as e:  # pragma: no cover - depends on the environment
    serve_common.tool_missing(f"typesafe_sdk is not installed for {sys.executable} ({e})")

SDK_VERSION = "0.7.5"
ARGS = parse_args(__doc__)
REQ = json.loads(example_request(ARGS))
KEY = "sk-test-0123456789abcdef"


def typed_questions(req):
    """The example's questions as the SDK's own question objects."""
    out = {}
    for qid, q in req["questions"].items():
        if q["type"] == "choice":
            out[qid] = Choice(instructions=q["instructions"], criteria=q["criteria"])
        elif q["type"] == "score":
            out[qid] = Score(instructions=q["instructions"], criteria=q["criteria"])
        else:
            out[qid] = Noul(instructions=q["instructions"], criteria=q.get("criteria"))
    return out


def setup():
    ensure_model(ARGS)
    srv = Server(ARGS, ["--api-key", KEY])
    return {"srv": srv, "url": f"http://127.0.0.1:{srv.port}"}


def teardown(ctx):
    eq(ctx["srv"].stop(), 0, "server exit status")


@test
def sdk_version_pinned(ctx):
    eq(typesafe_sdk.__version__, SDK_VERSION, "typesafe-sdk version (the pin in docs/serve.md)")


@test
def sdk_answers_example_with_typed_objects(ctx):
    # Only base_url and api_key change; the SDK's default model name ("jev-latest") is
    # accepted as the server's default model.
    with TypeSafeClient(api_key=KEY, base_url=ctx["url"], retry=RetryPolicy(max_retries=0)) as client:
        res = client.system_one(state=REQ["state"], questions=typed_questions(REQ))
    check(isinstance(res, SystemOneResponse), "SystemOneResponse")
    eq(list(res.answers), list(REQ["questions"]), "answers in request order")
    for qid, q in REQ["questions"].items():
        a = res.answers[qid]
        if q["type"] == "choice":
            check(isinstance(a, ChoiceAnswer), f"{qid} is a ChoiceAnswer")
            check(a.choice in q["criteria"], f"{qid} choice")
            eq(set(a.probabilities), set(q["criteria"]), f"{qid} probabilities keys")
            check(0.0 <= a.confidence <= 1.0, f"{qid} confidence")
            check(res.choices[qid] is a, f"{qid} in .choices")
        elif q["type"] == "score":
            check(isinstance(a, ScoreAnswer), f"{qid} is a ScoreAnswer")
            eq(sorted(a.legend), list(range(len(q["criteria"]))), f"{qid} legend keys (ints)")
            eq([a.legend[i] for i in range(len(q["criteria"]))], q["criteria"], f"{qid} legend values")
            check(abs(a.score - sum(i * p for i, p in a.probabilities.items())) < 1e-6, f"{qid} score")
            check(res.scores[qid] is a, f"{qid} in .scores")
        else:
            check(isinstance(a, NoulAnswer), f"{qid} is a NoulAnswer")
            check(0.0 <= a.noul <= 1.0, f"{qid} noul")
            check(res.nouls[qid] is a, f"{qid} in .nouls")
    check(res.usage.input_tokens > 0, "usage.input_tokens")
    eq(res.usage.output_tokens, 0, "usage.output_tokens")
    check(res.request_id.startswith("req-"), "request_id from x-typesafe-request-id")
    check(res.model, "model")


@test
def sdk_raw_dict_questions_and_named_model(ctx):
    with TypeSafeClient(api_key=KEY, base_url=ctx["url"], model="jev-latest") as client:
        res = client.system_one(state={"telemetry": REQ["state"]}, questions=REQ["questions"])
        eq(list(res.answers), list(REQ["questions"]), "answers")
        models = client.models.list()
        names = [m.name for m in models.models]
        check(names and names[0] == res.model, f"models.list() names {names} vs {res.model}")
        res2 = client.system_one(state=REQ["state"], questions=REQ["questions"], model=names[0])
        eq(res2.model, names[0], "model chosen by name")


@test
def sdk_errors_map_to_its_exceptions(ctx):
    with TypeSafeClient(api_key="wrong-key", base_url=ctx["url"], retry=RetryPolicy(max_retries=0)) as client:
        try:
            client.system_one(state="x", questions=typed_questions(REQ))
            raise AssertionError("no error for a wrong key")
        except TypeSafeAuthenticationError as e:
            eq(e.status, 401, "status")
            check("Invalid API Key" in str(e), f"message: {e}")
    with TypeSafeClient(api_key=KEY, base_url=ctx["url"], retry=RetryPolicy(max_retries=0)) as client:
        try:
            client.system_one(state="x", questions={"a": {"type": "choice", "instructions": "?", "criteria": {"k": None}}},
                              model="no-such-model")
            raise AssertionError("no error for an unknown model")
        except TypeSafeUnprocessableEntityError as e:
            eq(e.status, 422, "status")
            check("no-such-model" in str(e), f"message names the model: {e}")
        try:
            client.system_one(state="x", questions={"a": {"type": "maybe", "instructions": "?"}})
            raise AssertionError("no error for a bad question type")
        except TypeSafeUnprocessableEntityError as e:
            check("type" in str(e), f"message names the field: {e}")
            check(e.request_id, "request id on errors")


@test
def sdk_zstd_bodies(ctx):
    # typesafe-sdk[zstd] (pinned in tools/requirements-ci.txt) compresses bodies of 1 KiB and
    # more with zstd; the server decodes them (it answered 415 before).
    from typesafe_sdk._core import compression
    if os.environ.get("SKYCMD_REQUIRE_SDK") == "1":
        check("zstd" in compression.COMPRESSORS, "typesafe-sdk's zstd extra is not installed (backports.zstd)")
    if "zstd" not in compression.COMPRESSORS:
        print("  typesafe-sdk without its zstd extra: bodies go uncompressed (install typesafe-sdk[zstd])")
    import urllib.request
    def decoded():
        req = urllib.request.Request(ctx["url"] + "/metrics", headers={"Authorization": "Bearer " + KEY})
        with urllib.request.urlopen(req) as r:
            for line in r.read().decode().splitlines():
                if line.startswith('skycmd_decoded_bodies_total{coding="zstd"}'):
                    return int(line.split()[-1])
        return 0
    n0 = decoded()
    state = REQ["state"] + " " + "telemetry 0123456789 " * 200  # > 1 KiB: compressed
    with TypeSafeClient(api_key=KEY, base_url=ctx["url"], retry=RetryPolicy(max_retries=0)) as client:
        res = client.system_one(state=state, questions=typed_questions(REQ))
        eq(list(res.answers), list(REQ["questions"]), "answers of a zstd body")
        plain = TypeSafeClient(api_key=KEY, base_url=ctx["url"], compression=False)
        with plain:
            res2 = plain.system_one(state=state, questions=typed_questions(REQ))
        eq(res2.model_dump()["answers"], res.model_dump()["answers"], "same answers compressed or not")
    if "zstd" in compression.COMPRESSORS:
        eq(decoded(), n0 + 1, "zstd bodies the server decoded")


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup, teardown))
