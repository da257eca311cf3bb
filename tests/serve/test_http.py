#!/usr/bin/env python3
"""HTTP tests of `skycmd serve` against started servers: every endpoint, every error
status, request ids, model selection, keep-alive, concurrent clients, auth on and off, and
graceful shutdown with requests in flight.

usage: test_http.py --cli build/skycmd [--model m.gguf] [--work-dir DIR]
"""

import http.client
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import threading
import time

from serve_common import (Failure, Server, check, eq, error_of, example_request, ensure_model, main_guard,
                          parse_args, request, run_tests, test)

ARGS = parse_args(__doc__)
BODY = example_request(ARGS)
REQ = json.loads(BODY)


def many_questions(n):
    q = {}
    for i in range(n):
        q[f"q{i}"] = {"type": "noul", "instructions": f"Is statement number {i} about the drone true?"}
    return {"state": REQ["state"], "questions": q}


def check_answer_shapes(doc, req, model_name=None):
    eq(list(doc), ["model", "answers", "usage"], "top-level keys (in order)")
    if model_name is not None:
        eq(doc["model"], model_name, "model")
    eq(list(doc["usage"]), ["input_tokens", "output_tokens"], "usage keys")
    check(isinstance(doc["usage"]["input_tokens"], int) and doc["usage"]["input_tokens"] > 0, "input_tokens")
    eq(doc["usage"]["output_tokens"], 0, "output_tokens")
    eq(list(doc["answers"]), list(req["questions"]), "answers in request order")
    for qid, q in req["questions"].items():
        a = doc["answers"][qid]
        eq(a["type"], q["type"], f"{qid}.type")
        if q["type"] == "choice":
            eq(list(a), ["type", "choice", "probabilities", "confidence"], f"{qid} keys")
            eq(list(a["probabilities"]), list(q["criteria"]), f"{qid} probability keys")
            check(a["choice"] == max(a["probabilities"], key=a["probabilities"].get), f"{qid} choice is argmax")
            check(abs(sum(a["probabilities"].values()) - 1) < 1e-4, f"{qid} probabilities sum")
            check(0 <= a["confidence"] <= 1, f"{qid} confidence range")
        elif q["type"] == "score":
            eq(list(a), ["type", "score", "legend", "probabilities", "confidence"], f"{qid} keys")
            keys = [str(i) for i in range(len(q["criteria"]))]
            eq(list(a["legend"]), keys, f"{qid} legend keys")
            eq(list(a["legend"].values()), q["criteria"], f"{qid} legend values")
            eq(list(a["probabilities"]), keys, f"{qid} probability keys")
            p = [a["probabilities"][k] for k in keys]
            check(abs(sum(p) - 1) < 1e-4, f"{qid} probabilities sum")
            check(abs(a["score"] - sum(i * x for i, x in enumerate(p))) < 1e-4, f"{qid} score = E[level]")
        else:
            eq(list(a), ["type", "noul"], f"{qid} keys")
            check(0 <= a["noul"] <= 1 and math.isfinite(a["noul"]), f"{qid} noul range")


def setup():
    model = ensure_model(ARGS)
    # The shared server: two names for the same file, small limits for the limit tests.
    srv = Server(ARGS, ["--threads", "2", "--max-body", "65536", "--max-questions", "64", "--access-log",
                        "--log-format", "json"], models=[f"pico={model}", f"second={model}"])
    return {"model": model, "srv": srv}


def teardown(ctx):
    rc = ctx["srv"].stop()
    eq(rc, 0, "shared server exit status")
    text = ctx["srv"].text()
    # the access log is JSON lines with the documented fields
    lines = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    check(lines, "no JSON access-log lines")
    for k in ("ts", "request_id", "method", "path", "status", "questions", "tokens", "micros"):
        check(k in lines[0], f"access log field {k} missing")
    check(ARGS.only or any(l["path"] == "/v1/systemone" and l["status"] == 200 and l["questions"] == 3 and l["tokens"] > 0
              for l in lines), "no access-log line of an answered request")


# ------------------------------------------------------------------ endpoints --------

@test
def health_ok(ctx):
    st, h, body = request(ctx["srv"].port, "GET", "/health")
    eq(st, 200, "status")
    eq(json.loads(body), {"status": "ok"}, "body")
    check(h.get("x-request-id"), "x-request-id")
    eq(h.get("content-type"), "application/json", "content-type")
    st, h, body = request(ctx["srv"].port, "HEAD", "/health")
    eq(st, 200, "HEAD status")
    eq(body, b"", "HEAD body")


@test
def models_list(ctx):
    st, h, body = request(ctx["srv"].port, "GET", "/v1/models")
    eq(st, 200, "status")
    doc = json.loads(body)
    eq([m["id"] for m in doc["data"]], ["pico", "second"], "data ids")
    eq(doc["object"], "list", "object")
    eq([m["name"] for m in doc["models"]], ["pico", "second"], "models names")
    for m in doc["models"]:
        check(isinstance(m["description"], str) and isinstance(m["release_date"], str), "model metadata")


@test
def systemone_example(ctx):
    st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", BODY)
    eq(st, 200, "status")
    eq(h.get("content-type"), "application/json", "content-type")
    check(h.get("x-request-id") and h.get("x-request-id") == h.get("x-typesafe-request-id"), "request ids")
    doc = json.loads(body)
    check_answer_shapes(doc, REQ, "pico")
    # deterministic: the same request gives the same bytes
    st2, _, body2 = request(ctx["srv"].port, "POST", "/v1/systemone", BODY)
    eq(st2, 200, "second status")
    eq(body2, body, "same answer twice")


@test
def systemone_same_as_cli_decide(ctx):
    """The server's body is the library's response JSON: compare with `skycmd decide`."""
    path = os.path.join(ARGS.work_dir, "example.json")
    with open(path, "wb") as f:
        f.write(BODY)
    p = subprocess.run([ARGS.cli, "decide", ctx["model"], path], capture_output=True)
    if p.returncode != 0:
        p = subprocess.run([ARGS.cli, "decide", "--model", ctx["model"], path], capture_output=True)
    if p.returncode != 0:
        print(f"  note: `skycmd decide` unavailable ({p.stderr.decode(errors='replace').strip()[:120]}); compared shapes only")
        return
    cli = json.loads(p.stdout)
    st, _, body = request(ctx["srv"].port, "POST", "/v1/systemone", BODY)
    eq(st, 200, "status")
    doc = json.loads(body)
    eq(doc["answers"], cli["answers"], "answers equal to skycmd decide")
    eq(doc["usage"], cli["usage"], "usage equal to skycmd decide")


@test
def metrics_text(ctx):
    port = ctx["srv"].port
    request(port, "POST", "/v1/systemone", BODY)
    st, h, body = request(port, "GET", "/metrics")
    eq(st, 200, "status")
    check(h.get("content-type", "").startswith("text/plain"), "content-type")
    text = body.decode()
    for name in ("skycmd_http_requests_total", "skycmd_request_duration_seconds_bucket",
                 "skycmd_request_duration_seconds_sum", "skycmd_request_duration_seconds_count",
                 "skycmd_questions_total", "skycmd_input_tokens_total", "skycmd_queue_depth",
                 "skycmd_workers_busy", "skycmd_http_connections", "skycmd_inline_answers_total"):
        check(name in text, f"{name} missing")

    def value(series):
        for line in text.splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
        return None

    ok = value('skycmd_http_requests_total{endpoint="/v1/systemone",code="200"}')
    check(ok is not None and ok >= 1, "200 counter")
    q = value("skycmd_questions_total")
    check(q is not None and q >= 3, "questions counter")
    inf = value('skycmd_request_duration_seconds_bucket{le="+Inf"}')
    cnt = value("skycmd_request_duration_seconds_count")
    check(inf == cnt and cnt >= 1, "histogram +Inf bucket equals count")
    # counters move
    request(port, "POST", "/v1/systemone", BODY)
    _, _, body2 = request(port, "GET", "/metrics")
    text = body2.decode()
    eq(value("skycmd_questions_total"), q + 3, "questions counter after one more request")


@test
def request_id_echo(ctx):
    st, h, _ = request(ctx["srv"].port, "GET", "/health", headers={"x-request-id": "trace-42.a_b"})
    eq(h.get("x-request-id"), "trace-42.a_b", "echoed id")
    st, h, _ = request(ctx["srv"].port, "GET", "/health", headers={"x-request-id": "bad id\x7f"[:6] + "!"})
    check(h.get("x-request-id", "").startswith("req-"), "unsafe id replaced")
    ids = {request(ctx["srv"].port, "GET", "/health")[1]["x-request-id"] for _ in range(20)}
    eq(len(ids), 20, "distinct generated ids")


# ------------------------------------------------------------------ model selection --

@test
def model_field_picks_model(ctx):
    port = ctx["srv"].port
    for name, expect in (("second", "second"), ("pico", "pico"), (None, "pico"), ("jev-latest", "pico")):
        req = dict(REQ)
        if name is not None:
            req["model"] = name
        st, _, body = request(port, "POST", "/v1/systemone", req)
        eq(st, 200, f"status for model={name}")
        eq(json.loads(body)["model"], expect, f"answering model for {name}")
    req = dict(REQ, model=None)
    st, _, body = request(port, "POST", "/v1/systemone", req)
    eq(st, 200, "model null")
    # only the top-level member counts; JSON escapes are decoded before matching
    qs = json.dumps(REQ["questions"])
    raw_bodies = (('{"state": {"model": "second"}, "questions": %s}' % qs, "pico"),
                  ('{"mod\\u0065l": "sec\\u006fnd", "state": "x", "questions": %s}' % qs, "second"))
    for raw_body, expect in raw_bodies:
        st, _, body = request(port, "POST", "/v1/systemone", raw_body.encode())
        eq(st, 200, f"status for {raw_body[:40]}")
        eq(json.loads(body)["model"], expect, f"answering model for {raw_body[:40]}")


@test
def model_unknown_names_available(ctx):
    st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", dict(REQ, model="jev-9"))
    err = error_of(st, h, body, 422, "unprocessable_entity_error", "jev-9")
    check("pico" in err["message"] and "second" in err["message"], "available models named")
    st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", dict(REQ, model=7))
    error_of(st, h, body, 422, "unprocessable_entity_error", '"model"')


# ------------------------------------------------------------------ errors -----------

@test
def error_422_malformed_json(ctx):
    # Jev (FastAPI) answers a body that is not JSON 422 json_invalid, loc ["body", offset]
    for bad in (b'{"state": "x", "questions": ', b"not json", b"{}}", b'{"state":"x",}'):
        st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", bad)
        error_of(st, h, body, 422, "unprocessable_entity_error", "malformed JSON")
        d = json.loads(body)["detail"][0]
        eq(d["type"], "json_invalid", "detail type")
        check(len(d["loc"]) == 2 and isinstance(d["loc"][1], int), f"loc {d['loc']!r} names no byte offset")


@test
def error_422_empty_body(ctx):
    st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", b"")
    error_of(st, h, body, 422, "unprocessable_entity_error")


@test
def error_detail_loc(ctx):
    # Jev's detail[].loc points into the body: the question and its field
    q = {"type": "choice", "instructions": "Pick", "criteria": {}}
    st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", dict(REQ, questions={"team": q}))
    error_of(st, h, body, 422)
    eq(json.loads(body)["detail"][0]["loc"], ["body", "questions", "team", "criteria"], "loc of a question's field")
    st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", {"questions": REQ["questions"]})
    error_of(st, h, body, 422)
    d = json.loads(body)["detail"][0]
    eq(d["loc"], ["body", "state"], "loc of a missing field")
    eq(d["type"], "missing", "type of a missing field")


@test
def error_422_invalid_request_names_field(ctx):
    port = ctx["srv"].port
    cases = [
        ({"questions": REQ["questions"]}, "state"),
        ({"state": "x"}, "questions"),
        ({"state": "x", "questions": {}}, "questions"),
        ({"state": "x", "questions": {"a": {"type": "maybe", "instructions": "?"}}}, "type"),
        ({"state": "x", "questions": {"a": {"type": "choice", "instructions": "?", "criteria": {}}}}, "criteria"),
        ({"state": "x", "questions": {"a": {"type": "score", "instructions": "?", "criteria": []}}},
         "criteria"),
        ({"state": "x", "questions": {"a": {"type": "choice", "criteria": {"x": None, "y": None}}}},
         "instructions"),
    ]
    for req, field in cases:
        st, h, body = request(port, "POST", "/v1/systemone", req)
        err = error_of(st, h, body, 422, "unprocessable_entity_error")
        check(field in err["message"], f"message {err['message']!r} should name {field!r}")


@test
def noul_without_instructions(ctx):
    # Jev reads a noul by its criteria alone; laya's Agent refuses it (docs/compat.md)
    for q in ({"type": "noul"}, {"type": "noul", "instructions": None},
              {"type": "noul", "criteria": {"true": "The customer threatens a chargeback", "false": "No threat"}}):
        st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", dict(REQ, questions={"threat": q}))
        eq(st, 200, f"status for {q!r}")
        a = json.loads(body)["answers"]["threat"]
        check(a["type"] == "noul" and 0.0 <= a["noul"] <= 1.0, f"answer {a!r}")


@test
def error_404_unknown_path(ctx):
    for method, path in (("GET", "/"), ("GET", "/v2/systemone"), ("POST", "/v1/systemone/x"),
                         ("GET", "/v1/models/pico")):
        st, h, body = request(ctx["srv"].port, method, path, b"{}" if method == "POST" else None)
        error_of(st, h, body, 404, "not_found_error")


@test
def error_405_wrong_method(ctx):
    for method, path, allow in (("GET", "/v1/systemone", "POST"), ("PUT", "/v1/systemone", "POST"),
                                ("DELETE", "/v1/systemone", "POST"), ("POST", "/health", "GET, HEAD"),
                                ("POST", "/metrics", "GET, HEAD"), ("PATCH", "/v1/models", "GET, HEAD")):
        st, h, body = request(ctx["srv"].port, method, path, b"{}" if method in ("POST", "PUT", "PATCH") else None)
        error_of(st, h, body, 405)
        eq(h.get("allow"), allow, f"Allow for {method} {path}")


@test
def error_413_body_over_limit(ctx):
    big = json.dumps({"state": "x" * 70000, "questions": REQ["questions"]}).encode()
    st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", big)
    error_of(st, h, body, 413, "request_too_large_error", "65536")
    # the server goes on serving
    eq(request(ctx["srv"].port, "GET", "/health")[0], 200, "health after 413")


@test
def error_413_too_many_questions(ctx):
    st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", many_questions(65))
    error_of(st, h, body, 413, "request_too_large_error", "64")
    st, _, body = request(ctx["srv"].port, "POST", "/v1/systemone", many_questions(64))
    eq(st, 200, "64 questions accepted")
    eq(len(json.loads(body)["answers"]), 64, "64 answers")


@test
def error_413_names_the_servers_question_limit(ctx):
    # 10,000 questions are past both the server's --max-questions (256 by default) and the
    # library's own cap (4096): the 413 names the server's limit
    with Server(ARGS, ["--threads", "1"], models=[ctx["model"]]) as srv:
        st, h, body = request(srv.port, "POST", "/v1/systemone", many_questions(10000))
        err = error_of(st, h, body, 413, "request_too_large_error", "at most 256 per request")
        check("10000" in err["message"] and "4096" not in err["message"], f"message {err['message']!r}")
        batch = dict(many_questions(10000), states=["vy 0 dx 36"])
        batch.pop("state")
        st, h, body = request(srv.port, "POST", "/v1/systemone/batch", batch)
        err = error_of(st, h, body, 413, "request_too_large_error", "at most 256 per request")
        check("4096" not in err["message"], f"batch message {err['message']!r}")


@test
def absolute_form_target_is_routed(ctx):
    # RFC 9112 §3.2.2: "POST http://host/v1/systemone" is the origin-form's request
    port = ctx["srv"].port
    st0, _, want = request(port, "POST", "/v1/systemone", BODY)
    eq(st0, 200, "origin-form")
    st, _, got = request(port, "POST", f"http://127.0.0.1:{port}/v1/systemone", BODY)
    eq(st, 200, "absolute-form POST /v1/systemone")
    eq(json.loads(got)["answers"].keys(), json.loads(want)["answers"].keys(), "the same answers")
    eq(request(port, "GET", "http://example.invalid/health")[0], 200, "absolute-form GET /health")
    eq(request(port, "GET", "HTTP://127.0.0.1/v1/models")[0], 200, "scheme in capitals")
    eq(request(port, "GET", "http://127.0.0.1/nothing")[0], 404, "absolute-form of an unknown path")


@test
def error_415_content_encoding(ctx):
    # (zstd, gzip and deflate are decoded: test_encoding.py)
    st, h, body = request(ctx["srv"].port, "POST", "/v1/systemone", BODY, headers={"Content-Encoding": "br"})
    error_of(st, h, body, 415)


@test
def error_429_queue_full(ctx):
    """One worker, a queue of one: a burst of slow requests gets 429 + Retry-After."""
    heavy = json.dumps(many_questions(48)).encode()
    with Server(ARGS, ["--threads", "1", "--queue", "1"]) as srv:
        seen = {}
        for _round in range(5):
            results = []

            def one():
                try:
                    results.append(request(srv.port, "POST", "/v1/systemone", heavy))
                except OSError as e:
                    results.append((0, {}, str(e).encode()))

            ts = [threading.Thread(target=one) for _ in range(12)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            for st, h, body in results:
                seen.setdefault(st, (h, body))
            if 429 in seen and 200 in seen:
                break
        check(set(seen) <= {200, 429}, f"statuses {sorted(seen)}")
        check(429 in seen, "no 429 seen")
        h, body = seen[429]
        error_of(429, h, body, 429, "rate_limit_error")
        check(int(h.get("retry-after", "0")) >= 1, "Retry-After >= 1")
        eq(request(srv.port, "POST", "/v1/systemone", BODY)[0], 200, "serves after the burst")


@test
def error_401_auth(ctx):
    key = "s3cret-Key_0123456789"
    with Server(ARGS, ["--api-key", key]) as srv:
        st, h, body = request(srv.port, "POST", "/v1/systemone", BODY)
        error_of(st, h, body, 401, "authentication_error")
        eq(h.get("www-authenticate"), "Bearer", "WWW-Authenticate")
        for bad in ("Bearer wrong", "Bearer " + key + "x", "Bearer " + key[:-1], "Basic " + key, key, "Bearer"):
            st, h, body = request(srv.port, "POST", "/v1/systemone", BODY, headers={"Authorization": bad})
            error_of(st, h, body, 401, "authentication_error")
        st, _, body = request(srv.port, "POST", "/v1/systemone", BODY, headers={"Authorization": "Bearer " + key})
        eq(st, 200, "right key")
        check_answer_shapes(json.loads(body), REQ)
        # /health is open; models and metrics need the key
        eq(request(srv.port, "GET", "/health")[0], 200, "health without key")
        eq(request(srv.port, "GET", "/v1/models")[0], 401, "models without key")
        eq(request(srv.port, "GET", "/metrics")[0], 401, "metrics without key")
        eq(request(srv.port, "GET", "/metrics", headers={"Authorization": "Bearer " + key})[0], 200,
           "metrics with key")
    # the key from a file, and auth off by default (the shared server) already tested
    kf = os.path.join(ARGS.work_dir, "key.txt")
    with open(kf, "w") as f:
        f.write(key + "\n")
    with Server(ARGS, ["--api-key-file", kf]) as srv:
        eq(request(srv.port, "POST", "/v1/systemone", BODY, headers={"Authorization": "Bearer " + key})[0], 200,
           "key file")
        eq(request(srv.port, "POST", "/v1/systemone", BODY)[0], 401, "key file, no header")


@test
def auth_off_by_default(ctx):
    st, _, _ = request(ctx["srv"].port, "POST", "/v1/systemone", BODY, headers={"Authorization": "Bearer anything"})
    eq(st, 200, "no auth configured: any header accepted")


# ------------------------------------------------------------------ connections ------

@test
def keep_alive_one_connection(ctx):
    c = ctx["srv"].conn()
    c.connect()
    sock = c.sock
    lat = []
    first = None
    for i in range(200):
        t = time.perf_counter()
        st, h, body = request(c, "POST", "/v1/systemone", BODY)
        lat.append(time.perf_counter() - t)
        eq(st, 200, f"request {i}")
        check(c.sock is sock, f"connection was not reused at request {i}")
        if first is None:
            first = body
        eq(body, first, "same answer on the same connection")
    # errors do not close the connection either
    st, _, _ = request(c, "POST", "/v1/systemone", b"{bad")
    eq(st, 422, "422 on keep-alive")
    st, _, _ = request(c, "GET", "/nope")
    eq(st, 404, "404 on keep-alive")
    st, _, _ = request(c, "POST", "/v1/systemone", BODY)
    eq(st, 200, "200 after errors")
    check(c.sock is sock, "connection survived error responses")
    c.close()
    lat.sort()
    print(f"  example request over one keep-alive connection: median {statistics.median(lat) * 1e3:.3f} ms, "
          f"p90 {lat[int(len(lat) * 0.9)] * 1e3:.3f} ms (python client, {len(lat)} requests)")


@test
def concurrent_clients(ctx):
    port = ctx["srv"].port
    _, _, ref = request(port, "POST", "/v1/systemone", BODY)
    errors = []

    def client(n):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for i in range(n):
                req = dict(REQ, model="second") if i % 2 else REQ
                st, _, body = request(c, "POST", "/v1/systemone", req)
                if st != 200:
                    errors.append(f"status {st}")
                    continue
                doc = json.loads(body)
                if doc["answers"] != json.loads(ref)["answers"]:
                    errors.append("answers differ under concurrency")
            c.close()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    ts = [threading.Thread(target=client, args=(25,)) for _ in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    eq(errors, [], "errors")


def metric_value(port, series):
    _, _, body = request(port, "GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    raise Failure(f"{series} missing from /metrics")


@test
def lone_small_requests_answered_inline(ctx):
    """--inline-max-us: a request alone, for a model whose lone answers are small, is answered
    on the I/O thread with exactly a worker's answer; the first (model not measured yet) and
    concurrent ones go to the workers; 0 turns it off. (A large limit here: the sanitizer
    builds compute this model slower than the default 1 ms.)"""
    bad = b'{"state": "x", "questions": '
    with Server(ARGS, ["--threads", "2", "--inline-max-us", "10000000"]) as srv, \
            Server(ARGS, ["--threads", "2", "--inline-max-us", "0"]) as ref:
        c = srv.conn()
        answers = [request(c, "POST", "/v1/systemone", BODY) for _ in range(6)]
        c.close()
        eq(metric_value(srv.port, "skycmd_inline_answers_total"), 5,
           "the first request went to a worker (which measured the model), the next five inline")
        st, h, worker = request(ref.port, "POST", "/v1/systemone", BODY)
        eq(st, 200, "status of the worker's answer")
        for st, h, body in answers:
            eq(st, 200, "status")
            doc, wdoc = json.loads(body), json.loads(worker)
            eq(doc["answers"], wdoc["answers"], "inline answers equal the worker's")
            eq(doc["usage"], wdoc["usage"], "inline usage equals the worker's")
        # an error that needs no compute is answered inline too, with the worker's envelope
        st1, h1, b1 = request(srv.port, "POST", "/v1/systemone", bad)
        st2, h2, b2 = request(ref.port, "POST", "/v1/systemone", bad)
        eq((st1, json.loads(b1)), (st2, json.loads(b2)), "a bad body: the same error either way")
        eq(metric_value(srv.port, "skycmd_inline_answers_total"), 6, "the bad body was answered inline")
        eq(metric_value(ref.port, "skycmd_inline_answers_total"), 0, "--inline-max-us 0: never inline")
        # concurrent requests: not alone, so (at least some) go to the workers
        errors = []

        def client():
            try:
                cc = srv.conn()
                for _ in range(10):
                    st, _, body = request(cc, "POST", "/v1/systemone", BODY)
                    if st != 200 or json.loads(body)["answers"] != json.loads(worker)["answers"]:
                        errors.append(st)
                cc.close()
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        ts = [threading.Thread(target=client) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        eq(errors, [], "concurrent answers")
        inline = metric_value(srv.port, "skycmd_inline_answers_total") - 6
        print(f"  8 concurrent clients: {inline:.0f} of 80 requests answered inline")
        check(inline < 80, f"all 80 concurrent requests were answered inline ({inline:.0f})")
        # a reload releases the replaced model although the I/O thread's sessions held it
        # and no request comes after it
        srv.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 30
        while "released model" not in srv.text() and time.time() < deadline:
            time.sleep(0.05)
        check("released model" in srv.text(), f"the replaced model was not released:\n{srv.text()[-2000:]}")


@test
def slow_client_does_not_block_others(ctx):
    """A client that sends half a request and stalls holds no worker."""
    with Server(ARGS, ["--threads", "1", "--timeout", "3"]) as srv:
        stalled = []
        for _ in range(8):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"state\":")
            stalled.append(s)
        t = time.time()
        for _ in range(10):
            eq(request(srv.port, "POST", "/v1/systemone", BODY)[0], 200, "served beside stalled clients")
        check(time.time() - t < 2.5, "requests waited for stalled clients")
        # the idle timeout closes the stalled connections
        for s in stalled:
            s.settimeout(10)
            data = s.recv(4096)
            check(data == b"" or b"HTTP/1.1" in data, "stalled connection closed or answered")
            s.close()


@test
def graceful_shutdown_finishes_in_flight(ctx):
    heavy = json.dumps(many_questions(200)).encode()
    srv = Server(ARGS, ["--threads", "1", "--queue", "64"])
    try:
        idle = srv.conn()
        eq(request(idle, "GET", "/health")[0], 200, "idle keep-alive connection")
        results = []
        done_at = []
        started = threading.Barrier(9)

        def one():
            c = srv.conn(timeout=60)
            c.connect()
            started.wait()
            try:
                results.append(request(c, "POST", "/v1/systemone", heavy)[0])
            except Exception as e:  # noqa: BLE001
                results.append(repr(e))
            done_at.append(time.time())

        ts = [threading.Thread(target=one) for _ in range(8)]
        for t in ts:
            t.start()
        started.wait()
        time.sleep(0.05)  # the requests are sent and queued behind one worker
        signalled = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)
        # a new connection is refused (the listener is closed) or gets 503
        try:
            st, h, _ = request(srv.port, "POST", "/v1/systemone", BODY, timeout=5)
            check(st == 503, f"new request during drain got {st}")
        except OSError:
            pass
        for t in ts:
            t.join()
        eq(results, [200] * 8, "in-flight requests finished")
        late = sum(1 for t in done_at if t > signalled)
        check(late >= 1, "no request was still in flight at SIGTERM (test too fast to mean anything)")
        print(f"  {late} of 8 requests were answered after SIGTERM")
        # a new request on an idle keep-alive connection: 503 + close, or the connection is gone
        try:
            st, h, _ = request(idle, "POST", "/v1/systemone", BODY, timeout=5)
            check(st == 503, f"request on idle connection during drain got {st}")
        except (OSError, http.client.HTTPException):
            pass
        rc = srv.proc.wait(timeout=30)
        eq(rc, 0, "exit status after SIGTERM")
        text = srv.text()
        check("finishing requests in flight" in text and "stopped" in text, "shutdown messages")
    finally:
        srv.kill()


@test
def healthz_and_openapi(ctx):
    st, h, body = request(ctx["srv"].port, "GET", "/healthz")
    eq((st, json.loads(body)), (200, {"status": "ok"}), "/healthz")
    st, h, body = request(ctx["srv"].port, "GET", "/openapi.json")
    eq(st, 200, "/openapi.json status")
    with open(os.path.join(ARGS.source_dir, "docs", "openapi.json"), "rb") as f:
        eq(body, f.read(), "/openapi.json is docs/openapi.json")
    eq(json.loads(body)["openapi"], "3.1.0", "OpenAPI version")
    st, _, _ = request(ctx["srv"].port, "OPTIONS", "/v1/systemone")
    eq(st, 405, "OPTIONS without --cors-origin")


@test
def cors_origin(ctx):
    with Server(ARGS, ["--cors-origin", "https://app.example", "--api-key", "k"]) as srv:
        st, h, body = request(srv.port, "OPTIONS", "/v1/systemone",
                              headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
        eq(st, 204, "preflight status (no key needed)")
        eq(h.get("access-control-allow-origin"), "https://app.example", "allow-origin")
        check("POST" in h.get("access-control-allow-methods", ""), "allow-methods")
        check("authorization" in h.get("access-control-allow-headers", "").lower(), "allow-headers")
        eq(body, b"", "no body")
        st, h, _ = request(srv.port, "POST", "/v1/systemone", BODY, headers={"Authorization": "Bearer k"})
        eq(st, 200, "POST")
        eq(h.get("access-control-allow-origin"), "https://app.example", "allow-origin on a response")
        check("x-request-id" in h.get("access-control-expose-headers", ""), "expose-headers")
        st, h, _ = request(srv.port, "POST", "/v1/systemone", BODY)
        eq(st, 401, "the key is still required")
        eq(h.get("access-control-allow-origin"), "https://app.example", "allow-origin on an error")


@test
def batch_flags(ctx):
    ref = request(ctx["srv"].port, "POST", "/v1/systemone", BODY)[2]
    with Server(ARGS, ["--batch-max", "1", "--batch-window-us", "500"], models=[f"pico={ctx['model']}"]) as srv:
        eq(request(srv.port, "POST", "/v1/systemone", BODY)[2], ref, "answer with --batch-max 1 --batch-window-us 500")
    with Server(ARGS, ["--batch-max", "32", "--batch-window-us", "2000", "--threads", "1"],
                models=[f"pico={ctx['model']}"]) as srv:
        out = []
        ts = [threading.Thread(target=lambda: out.append(request(srv.port, "POST", "/v1/systemone", BODY)[2]))
              for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        eq(out, [ref] * 8, "answers of batched requests")
    for bad in (["--batch-max", "0"], ["--batch-max", "33"], ["--batch-window-us", "x"],
                ["--inline-max-us", "-1"], ["--inline-max-us", "10000001"]):
        p = subprocess.run([ARGS.cli, "serve", "--model", ctx["model"]] + bad, capture_output=True, text=True)
        eq(p.returncode, 2, f"{bad} is a usage error")


def idle_class_threads(pid):
    """The threads of process pid that run under SCHED_IDLE."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if os.sched_getscheduler(int(tid)) == os.SCHED_IDLE:
                out.append(int(tid))
        except OSError:
            pass
    return out


@test
def poll_us_keeps_answers(ctx):
    """--poll-us: one idle-class warm thread; answers unchanged on one keep-alive connection
    (the window opened by each response is open when the next request comes)."""
    ref = request(ctx["srv"].port, "POST", "/v1/systemone", BODY)[2]
    eq(idle_class_threads(ctx["srv"].proc.pid), [], "no idle-class thread without --poll-us")
    with Server(ARGS, ["--poll-us", "200"], models=[f"pico={ctx['model']}"]) as srv:
        # the warm thread puts itself in the idle class once it runs, which on a loaded
        # machine can be after the server already accepts connections
        deadline = time.monotonic() + 10
        while not idle_class_threads(srv.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        eq(len(idle_class_threads(srv.proc.pid)), 1, "--poll-us 200 starts one SCHED_IDLE thread")
        c = srv.conn()
        for i in range(50):
            st, _, body = request(c, "POST", "/v1/systemone", BODY)
            eq((st, body), (200, ref), f"answer {i} with --poll-us 200")
        c.close()
    for bad in (["--poll-us", "-1"], ["--poll-us", "1000001"], ["--poll-us", "x"], ["--poll-us"]):
        p = subprocess.run([ARGS.cli, "serve", "--model", ctx["model"]] + bad, capture_output=True, text=True)
        eq(p.returncode, 2, f"{bad} is a usage error")


@test
def sigint_stops_cleanly(ctx):
    srv = Server(ARGS, [])
    eq(request(srv.port, "POST", "/v1/systemone", BODY)[0], 200, "answer")
    eq(srv.stop(signal.SIGINT), 0, "exit status after SIGINT")


@test
def builtin_model_without_model_flag(ctx):
    builtin = os.path.join(os.path.dirname(os.path.abspath(ARGS.cli)), "share", "skycmd", "models",
                           "s1-pico-flappy.gguf")
    if not os.path.exists(builtin):
        check(False, f"the build tree has no built-in model at {builtin}")
    srv = Server(ARGS, [], models=[], env={"SKYCMD_DEFAULT_MODEL": ""})
    st, _, body = request(srv.port, "POST", "/v1/systemone", BODY)
    eq(st, 200, "answer")
    eq(json.loads(body)["model"], "s1-pico-flappy", "the built-in model answers")
    eq(srv.stop(), 0, "exit status")


@test
def startup_errors(ctx):
    p = subprocess.run([ARGS.cli, "serve", "--model", os.path.join(ARGS.work_dir, "missing.gguf"), "--port", "0"],
                       capture_output=True, text=True, timeout=60)
    eq(p.returncode, 1, "missing model exit status")
    check("missing.gguf" in p.stderr, "message names the file")
    # without --model the built-in model serves; when it cannot be found that is an error
    missing_default = dict(os.environ, SKYCMD_DEFAULT_MODEL=os.path.join(ARGS.work_dir, "none.gguf"))
    p = subprocess.run([ARGS.cli, "serve", "--port", "0"], capture_output=True, text=True, timeout=60,
                       env=missing_default)
    eq(p.returncode, 1, "no --model and no built-in model: exit status")
    check("SKYCMD_DEFAULT_MODEL" in p.stderr, "the message names SKYCMD_DEFAULT_MODEL")
    p = subprocess.run([ARGS.cli, "serve", "--help"], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, "--help")
    check("--api-key" in p.stdout and "--max-body" in p.stdout, "help text")
    for opt in ("--batch-max", "--batch-window-us", "--inline-max-us", "--poll-us", "--header-timeout", "--body-timeout", "--drain-timeout",
                "--max-buffered", "--cors-origin"):
        check(opt in p.stdout, f"--help documents {opt}")
    p = subprocess.run([ARGS.cli, "serve", "--model", ctx["model"], "--port", "99999"], capture_output=True,
                       text=True, timeout=60)
    eq(p.returncode, 2, "bad port is a usage error")
    # a port in use
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    p = subprocess.run([ARGS.cli, "serve", "--model", ctx["model"], "--port", str(port)], capture_output=True,
                       text=True, timeout=60)
    s.close()
    eq(p.returncode, 1, "port in use")
    # the reason is libmicrohttpd's own (errno after it fails is stale: it once said
    # "Bad file descriptor" here)
    check("Address already in use" in p.stderr, f"the reason is given: {p.stderr!r}")


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup, teardown))
