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
MAX_EXAMPLES = os.environ.get("SKYCMD_CONTRACT_MAX_EXAMPLES", "450")
MIN_CASES = int(os.environ.get("SKYCMD_CONTRACT_MIN_CASES", "1000"))


def missing(why):
    serve_common.tool_missing(why)


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
    # One run of every phase with one worker. Two workers bought no speed (the time is spent
    # generating in Python, under one GIL) and made the run nondeterministic: hypothesis'
    # engines for the two POST operations share state across threads, and now and then one
    # of them gave up after a handful of cases with no error (a run of 625 cases instead of
    # ~1,500 failed CI; 10 % of short seeded runs stopped early with two workers, none with
    # one). Earlier, two threads also broke CPython 3.11's ast.parse inside hypothesis'
    # lambda descriptions ("AST constructor recursion depth mismatch").
    # The hypothesis database and schemathesis' cache from an earlier run in this directory
    # are removed first, so that the seed alone decides what is sent.
    for state in (".hypothesis", ".schemathesis"):
        shutil.rmtree(os.path.join(ARGS.work_dir, state), ignore_errors=True)
    report = os.path.join(ARGS.work_dir, "schemathesis.json")
    if os.path.exists(report):
        os.remove(report)
    cmd = [SCHEMATHESIS, "run", ctx["url"] + "/openapi.json",
           "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                       "response_schema_conformance,response_headers_conformance",
           "--phases", "coverage,examples,fuzzing,stateful",
           "--max-examples", MAX_EXAMPLES, "--seed", "17", "--workers", "1", "--request-timeout", "30",
           "--report", "json", "--report-json-path", report]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ARGS.work_dir, timeout=1400)
    with open(os.path.join(ARGS.work_dir, "schemathesis.out"), "w") as f:
        f.write(p.stdout + p.stderr)
    tail = "\n".join(p.stdout.splitlines()[-25:])
    print("  " + "\n  ".join(tail.splitlines()[-8:]))
    check(os.path.exists(report), f"no schemathesis report; exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}")
    with open(report) as f:
        rep = json.load(f)
    cases = rep["test_cases"]
    per_operation = {op: sum(ph.get("accepted", 0) + ph.get("rejected", 0) for ph in rates.values())
                     for op, rates in rep.get("valid_rates", {}).items()}
    accepted = sum(ph.get("accepted", 0) for ph in rep.get("valid_rates", {}).get("POST /v1/systemone", {}).values())
    print(f"  schemathesis: {cases['generated']} generated cases, {cases['with_failures']} with failures, "
          f"{cases['errored']} errored, stopped: {rep['stop_reason']}; POST /v1/systemone answered 2xx "
          f"{accepted} times; requests per operation {per_operation}")
    eq(rep["failures"], [], "schemathesis failures")
    eq(rep["errors"], [], "schemathesis errors")
    eq(rep["stop_reason"], "completed", f"why schemathesis stopped\n{tail}")
    eq(p.returncode, 0, f"schemathesis exit status\n{tail}")
    check(cases["generated"] >= MIN_CASES, f"only {cases['generated']} cases generated (want >= {MIN_CASES})")
    eq(cases["with_failures"], 0, "cases with failures")
    check(accepted > 0, "no generated POST /v1/systemone was valid (the schema generates nothing useful)")
    check(ctx["srv"].proc.poll() is None, "the server died")

if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup, teardown))
