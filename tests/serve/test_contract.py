#!/usr/bin/env python3
"""The HTTP contract of `skycmd serve`: docs/openapi.json is a valid OpenAPI 3.1 document
(openapi-spec-validator), the server serves exactly it at GET /openapi.json, and
schemathesis, driven by it against a live server, generates at least 1,000 requests with
no 5xx answer and every response matching the document (status, content type, schema,
headers).

Needs openapi-spec-validator and schemathesis (tools/requirements-ci.txt) for the
interpreter serve_common.sdk_interpreter() picks ($SKYCMD_SERVE_SDK_PYTHON, else .venv-ci); exit 77 (skipped, with the reason printed) without
them, unless SKYCMD_REQUIRE_SDK=1, where their absence is a failure.

usage: test_contract.py --cli build/skycmd [--model m.gguf] [--work-dir DIR]
"""

import json
import os
import shutil
import subprocess
import sys
import urllib.request

import serve_common
serve_common.run_under_sdk_python()
from serve_common import Server, check, eq, ensure_model, main_guard, parse_args, run_tests, test

# Under the sanitizers (tools/test-all.sh's ASan stage) a smaller run is enough to exercise
# the code; the release stage runs the full one the issue asks for (>= 1,000 cases).
MAX_EXAMPLES = os.environ.get("SKYCMD_CONTRACT_MAX_EXAMPLES", "900")
MIN_CASES = int(os.environ.get("SKYCMD_CONTRACT_MIN_CASES", "1000"))


def missing(why):
    if os.environ.get("SKYCMD_REQUIRE_SDK") == "1":
        print(f"{why} (required: SKYCMD_REQUIRE_SDK=1)")
        print("0 passed, 1 failed")
        sys.exit(1)
    print(f"{why}; skipped (pip install -r tools/requirements-ci.txt)")
    print("0 passed, 0 failed, 1 skipped")
    sys.exit(77)


try:
    from openapi_spec_validator import validate
except ImportError as e:  # pragma: no cover - depends on the environment
    missing(f"openapi-spec-validator is not installed for {sys.executable} ({e})")
SCHEMATHESIS = os.path.join(os.path.dirname(sys.executable), "schemathesis")
if not os.path.exists(SCHEMATHESIS):
    SCHEMATHESIS = shutil.which("schemathesis")
if not SCHEMATHESIS:
    missing(f"schemathesis is not installed beside {sys.executable}")

ARGS = parse_args(__doc__)
DOC_PATH = os.path.join(ARGS.source_dir, "docs", "openapi.json")


def setup():
    ensure_model(ARGS)
    srv = Server(ARGS, ["--threads", "2", "--queue", "1024"])
    return {"srv": srv, "url": f"http://127.0.0.1:{srv.port}"}


def teardown(ctx):
    eq(ctx["srv"].stop(), 0, "server exit status")


@test
def document_is_valid_openapi_3_1(ctx):
    with open(DOC_PATH, "rb") as f:
        doc = json.load(f)
    eq(doc["openapi"], "3.1.0", "openapi version")
    validate(doc)
    for path in ("/v1/systemone", "/health", "/healthz", "/v1/models", "/metrics", "/openapi.json"):
        check(path in doc["paths"], f"{path} is not documented")


@test
def served_document_is_the_committed_one(ctx):
    with urllib.request.urlopen(ctx["url"] + "/openapi.json") as r:
        eq(r.status, 200, "status")
        check(r.headers["Content-Type"].startswith("application/json"), "content type")
        served = r.read()
    with open(DOC_PATH, "rb") as f:
        eq(served, f.read(), "GET /openapi.json bytes")


@test
def schemathesis_finds_no_server_error_or_schema_violation(ctx):
    # Two runs: the coverage phase with one worker, the others with two. With two POST
    # operations (/v1/systemone and /v1/systemone/batch), hypothesis builds their coverage
    # strategies on two threads at once and CPython 3.11's ast.parse inside hypothesis'
    # lambda descriptions is not thread-safe ("AST constructor recursion depth mismatch",
    # a Runtime Error in the report, no request sent); one worker avoids it, and the fuzzing
    # phase, where the time goes, keeps two.
    generated = with_failures = errored = accepted = 0
    for phases, workers in (("coverage", "1"), ("examples,fuzzing,stateful", "2")):
        report = os.path.join(ARGS.work_dir, f"schemathesis-{phases.split(',')[0]}.json")
        if os.path.exists(report):
            os.remove(report)
        cmd = [SCHEMATHESIS, "run", ctx["url"] + "/openapi.json",
               "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                           "response_schema_conformance,response_headers_conformance",
               "--phases", phases,
               "--max-examples", MAX_EXAMPLES, "--seed", "17", "--workers", workers, "--request-timeout", "30",
               "--report", "json", "--report-json-path", report]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ARGS.work_dir, timeout=1400)
        tail = "\n".join(p.stdout.splitlines()[-25:])
        print("  " + "\n  ".join(tail.splitlines()[-8:]))
        check(os.path.exists(report), f"no schemathesis report; exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}")
        with open(report) as f:
            rep = json.load(f)
        cases = rep["test_cases"]
        generated += cases["generated"]
        with_failures += cases["with_failures"]
        errored += cases["errored"]
        accepted += sum(ph.get("accepted", 0) for ph in rep.get("valid_rates", {}).get("POST /v1/systemone", {}).values())
        eq(rep["failures"], [], f"schemathesis failures ({phases})")
        eq(rep["errors"], [], f"schemathesis errors ({phases})")
        eq(p.returncode, 0, f"schemathesis exit status ({phases})\n{tail}")
    print(f"  schemathesis: {generated} generated cases, {with_failures} with failures, "
          f"{errored} errored; POST /v1/systemone answered 2xx {accepted} times")
    check(generated >= MIN_CASES, f"only {generated} cases generated (want >= {MIN_CASES})")
    eq(with_failures, 0, "cases with failures")
    check(accepted > 0, "no generated POST /v1/systemone was valid (the schema generates nothing useful)")
    check(ctx["srv"].proc.poll() is None, "the server died")

if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup, teardown))
