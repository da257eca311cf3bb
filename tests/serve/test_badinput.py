#!/usr/bin/env python3
"""Hostile-input suite of `skycmd serve` over raw sockets: malformed HTTP, wrong methods,
missing or wrong Content-Length, chunked bodies, bodies over the limit, deeply nested JSON,
invalid UTF-8, NUL bytes, huge numbers, 10,000 questions, a 1 MB state. Each case checks
the status it gets and that the server still answers afterwards.

usage: test_badinput.py --cli build/skycmd [--model m.gguf] [--work-dir DIR]
"""

import json
import re
import socket
import time

from serve_common import (Server, check, eq, error_of, example_request, ensure_model, main_guard, parse_args,
                          request, run_tests, test)

ARGS = parse_args(__doc__)
BODY = example_request(ARGS)
REQ = json.loads(BODY)
MAX_BODY = 2 * 1024 * 1024  # the server default


def raw(port, data, read_timeout=5.0, half_close=False):
    """Send bytes, read until the server closes or goes quiet; return the statuses found."""
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    try:
        if data:
            s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
            if half_close is False and _complete(out):
                break
    finally:
        s.close()
    return [int(x) for x in re.findall(rb"HTTP/1\.[01] (\d{3}) ", out)], out


def _complete(buf):
    """True when buf holds at least one whole response (headers + Content-Length body)."""
    m = re.search(rb"\r\n\r\n", buf)
    if not m:
        return False
    head = buf[:m.start()]
    cl = re.search(rb"(?i)content-length: *(\d+)", head)
    return cl is not None and len(buf) - m.end() >= int(cl.group(1))


def post(body, extra_headers=b"", ctype=b"application/json"):
    return (b"POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + ctype + b"\r\n" + extra_headers +
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def body_of(out):
    i = out.find(b"\r\n\r\n")
    return out[i + 4:]


def setup():
    ensure_model(ARGS)
    return {"srv": Server(ARGS, ["--timeout", "2", "--threads", "2"])}


def teardown(ctx):
    eq(ctx["srv"].stop(), 0, "server exit status")


def alive(ctx):
    st, _, body = request(ctx["srv"].port, "POST", "/v1/systemone", BODY)
    eq(st, 200, "server still answers")


def expect_error(ctx, data, code, etype=None, contains=None):
    sts, out = raw(ctx["srv"].port, data)
    check(sts, f"no response to {data[:60]!r}")
    eq(sts[0], code, f"status for {data[:60]!r}")
    if etype:
        body = body_of(out)
        hdrs = {k.lower(): v for k, v in re.findall(rb"(?m)^([A-Za-z-]+): (.*?)\r$", out[:out.find(b"\r\n\r\n") + 2])}
        h = {k.decode(): v.decode() for k, v in hdrs.items()}
        cl = int(h.get("content-length", len(body)))
        error_of(code, h, body[:cl], code, etype, contains)
    alive(ctx)


# ------------------------------------------------------------------ malformed HTTP ---

@test
def garbage_request_line(ctx):
    for junk in (b"HELLO\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 40,
                 b"GET\r\n\r\n", b"GET /health\r\n\r\n", b" / HTTP/1.1\r\n\r\n"):
        sts, _ = raw(ctx["srv"].port, junk, read_timeout=4)
        check(not sts or sts[0] in (400, 505), f"status {sts} for {junk[:20]!r}")
        alive(ctx)


@test
def bad_http_version(ctx):
    sts, _ = raw(ctx["srv"].port, b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n")
    check(sts and sts[0] in (400, 505), f"status {sts}")
    alive(ctx)


@test
def header_without_colon_and_nul(ctx):
    sts, _ = raw(ctx["srv"].port, b"GET /health HTTP/1.1\r\nHost x\r\n\r\n")
    check(sts and sts[0] == 400, f"status {sts} for a header without a colon")
    alive(ctx)
    # A NUL in the request line: libmicrohttpd 0.9.75 answers 404 for the cut path;
    # libmicrohttpd >= 1.0 (strict) closes the connection at once without an answer, as it
    # does for any request line it cannot parse (RFC 9112 2.2 lets a server drop such a
    # message). Either way nothing is served for the truncated path "/he".
    t0 = time.time()
    sts, _ = raw(ctx["srv"].port, b"GET /he\x00alth HTTP/1.1\r\nHost: x\r\n\r\n", read_timeout=4)
    check(not sts and time.time() - t0 < 3 or sts and sts[0] in (400, 404),
          f"status {sts} (after {time.time() - t0:.1f} s) for a NUL in the request line")
    alive(ctx)
    # RFC 9110 5.5: a NUL in a field value is rejected or replaced by SP (libmicrohttpd
    # replaces it); either way the request is well-defined and the server goes on.
    sts, _ = raw(ctx["srv"].port, b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n")
    check(sts and sts[0] in (200, 400), f"status {sts} for a NUL in a header value")
    alive(ctx)


@test
def huge_headers(ctx):
    data = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 1000) for i in range(100)) + b"\r\n"
    sts, _ = raw(ctx["srv"].port, data)
    check(not sts or sts[0] in (400, 413, 431), f"status {sts}")
    long_url = b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    sts, _ = raw(ctx["srv"].port, long_url)
    check(not sts or sts[0] in (400, 414, 431), f"status {sts}")
    alive(ctx)


@test
def wrong_methods(ctx):
    for m in (b"PUT", b"DELETE", b"PATCH", b"OPTIONS", b"TRACE", b"BREW"):
        data = m + b" /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        sts, out = raw(ctx["srv"].port, data)
        check(sts and sts[0] in (405, 501), f"{m!r}: status {sts}")
        if sts[0] == 405:
            check(b"Allow: POST" in out, f"{m!r}: Allow header")
    sts, _ = raw(ctx["srv"].port, b"POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    eq(sts[:1], [405], "POST /health")
    alive(ctx)


# ------------------------------------------------------------------ lengths / chunked

@test
def missing_content_length(ctx):
    # No Content-Length and no chunked encoding: HTTP/1.1 says there is no body.
    data = b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n" + BODY
    sts, _ = raw(ctx["srv"].port, data, read_timeout=4)
    check(sts and sts[0] == 422, f"status {sts} (an empty body is not JSON: 422)")
    alive(ctx)


@test
def content_length_too_long_stalls_then_times_out(ctx):
    data = b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + BODY
    t = time.time()
    sts, _ = raw(ctx["srv"].port, data, read_timeout=10)
    eq(sts, [], "no answer to an incomplete body")
    check(time.time() - t < 9, "the idle timeout (2 s) closed the connection")
    alive(ctx)


@test
def content_length_too_short(ctx):
    data = b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n" + BODY
    sts, _ = raw(ctx["srv"].port, data, read_timeout=4)
    check(sts and sts[0] == 422, f"first status {sts} (a cut body is not JSON: 422)")
    alive(ctx)


@test
def content_length_invalid(ctx):
    for cl in (b"abc", b"-1", b"99999999999999999999999", b"1, 2"):
        data = b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: " + cl + b"\r\n\r\n{}"
        sts, _ = raw(ctx["srv"].port, data, read_timeout=4)
        check(not sts or sts[0] in (400, 413), f"Content-Length {cl!r}: status {sts}")
    alive(ctx)


def chunked(body, size=100):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


@test
def chunked_body_ok(ctx):
    data = (b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunked(BODY))
    sts, out = raw(ctx["srv"].port, data)
    eq(sts[:1], [200], "chunked request answered")
    doc = json.loads(body_of(out))
    eq(list(doc["answers"]), list(REQ["questions"]), "answers")


@test
def chunked_malformed(ctx):
    data = (b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"zz\r\n{}\r\n0\r\n\r\n")
    sts, _ = raw(ctx["srv"].port, data)
    check(sts and sts[0] == 400, f"status {sts}")
    alive(ctx)


@test
def chunked_over_limit(ctx):
    """A chunked body over the limit is read and dropped, then answered 413 (keep-alive)."""
    s = socket.create_connection(("127.0.0.1", ctx["srv"].port), timeout=10)
    s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b"%x\r\n" % 65536 + b"a" * 65536 + b"\r\n"
    for _ in range(MAX_BODY // 65536 + 8):
        s.sendall(piece)
    s.sendall(b"0\r\n\r\n")
    out = b""
    while not _complete(out):
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    sts = [int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3}) ", out)]
    eq(sts[:1], [413], "chunked body over the limit")
    # the connection is still usable
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    out = b""
    while not _complete(out):
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    check(out.startswith(b"HTTP/1.1 200 "), f"keep-alive after 413: {out[:40]!r}")
    alive(ctx)


@test
def endless_chunked_stream_is_cut(ctx):
    """A body that never ends is cut off (bounded drain), and the server goes on."""
    s = socket.create_connection(("127.0.0.1", ctx["srv"].port), timeout=10)
    s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b"%x\r\n" % 65536 + b"a" * 65536 + b"\r\n"
    cut = False
    sent = 0
    try:
        while sent < 512 * 1024 * 1024:
            s.sendall(piece)
            sent += len(piece)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        cut = True
    s.close()
    check(cut, "the server read an endless body")
    check(sent < 128 * 1024 * 1024, f"cut only after {sent} bytes")
    alive(ctx)


@test
def body_over_limit_declared(ctx):
    # a body a little over the limit is read, dropped and answered
    data = (b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1)) + b"{" * (MAX_BODY + 1)
    expect_error(ctx, data, 413, "request_too_large_error", str(MAX_BODY))
    # a huge announced body is answered at once, before it is sent
    data = b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{" % (1 << 40)
    expect_error(ctx, data, 413, "request_too_large_error", str(MAX_BODY))


@test
def expect_100_continue_over_limit(ctx):
    data = (b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
            b"Content-Length: %d\r\n\r\n" % (MAX_BODY * 4))
    sts, _ = raw(ctx["srv"].port, data)
    eq(sts[:1], [413], "413 without 100 Continue")
    alive(ctx)


# ------------------------------------------------------------------ hostile JSON -----

@test
def deeply_nested_json(ctx):
    for depth in (100, 10000, 500000):
        state = b"[" * depth + b"]" * depth
        body = b'{"state": ' + state + b', "questions": ' + json.dumps(REQ["questions"]).encode() + b"}"
        if len(body) > MAX_BODY:
            continue
        sts, out = raw(ctx["srv"].port, post(body), read_timeout=30)
        check(sts and sts[0] in (200, 413, 422, 400), f"depth {depth}: status {sts}")
        if depth >= 10000:
            check(sts[0] != 200, f"depth {depth} accepted")
        alive(ctx)
    # nested inside a question, unterminated
    sts, _ = raw(ctx["srv"].port, post(b'{"state":"x","questions":' + b"{" * 100000))
    check(sts and sts[0] in (400, 413, 422), f"unterminated nesting: {sts}")
    alive(ctx)


@test
def invalid_utf8(ctx):
    for bad in (b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"abc\x80", b"\xf4\x90\x80\x80"):
        body = b'{"state": "vy 0 ' + bad + b'", "questions": ' + json.dumps(REQ["questions"]).encode() + b"}"
        expect_error(ctx, post(body), 422, "unprocessable_entity_error")


@test
def nul_bytes(ctx):
    body = b'{"state": "vy\x000", "questions": ' + json.dumps(REQ["questions"]).encode() + b"}"
    expect_error(ctx, post(body), 422, "unprocessable_entity_error")
    body = BODY + b"\x00"
    sts, _ = raw(ctx["srv"].port, post(body))
    check(sts and sts[0] == 422, f"trailing NUL: {sts}")
    # an escaped NUL is valid JSON text
    body = json.dumps(dict(REQ, state="vy\u00000")).encode()
    sts, _ = raw(ctx["srv"].port, post(body))
    check(sts and sts[0] in (200, 422), f"escaped NUL: {sts}")
    alive(ctx)


@test
def huge_numbers(ctx):
    q = json.dumps(REQ["questions"]).encode()
    for num in (b"1e999999", b"-1e400", b"123456789012345678901234567890123456789012345678901234567890",
                b"0." + b"1" * 100000):
        body = b'{"state": {"vy": ' + num + b'}, "questions": ' + q + b"}"
        sts, _ = raw(ctx["srv"].port, post(body))
        check(sts and sts[0] in (200, 400, 422), f"number {num[:20]!r}: status {sts}")
        alive(ctx)
    # a number where an object is expected
    body = b'{"state": "x", "questions": 1e999999}'
    expect_error(ctx, post(body), 422, "unprocessable_entity_error", "questions")


@test
def ten_thousand_questions(ctx):
    qs = {f"q{i}": {"type": "noul", "instructions": "Is it?"} for i in range(10000)}
    body = json.dumps({"state": "x", "questions": qs}).encode()
    check(len(body) < MAX_BODY, "fits the body limit")
    expect_error(ctx, post(body), 413, "request_too_large_error")


@test
def one_megabyte_state(ctx):
    words = ("vy 0 dx 36 up 9 dn 7 nxt 10 alt 32 " * 40000)[:1000000]
    body = json.dumps(dict(REQ, state=words)).encode()
    t = time.time()
    sts, out = raw(ctx["srv"].port, post(body), read_timeout=60)
    eq(sts[:1], [200], "1 MB state answered (cut to the model's budget)")
    doc = json.loads(body_of(out))
    eq(list(doc["answers"]), list(REQ["questions"]), "answers")
    print(f"  1 MB state answered in {time.time() - t:.3f} s, input_tokens {doc['usage']['input_tokens']}")
    alive(ctx)


@test
def wrong_json_shapes(ctx):
    for body in (b"[]", b'"x"', b"null", b"42", b'{"state": null, "questions": {}}'):
        sts, _ = raw(ctx["srv"].port, post(body))
        eq(sts[:1], [422], f"status for {body!r}")
    alive(ctx)


@test
def pipelined_requests(ctx):
    """Two requests in one write on one connection get two answers in order."""
    data = post(BODY) + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", ctx["srv"].port), timeout=5)
    s.sendall(data)
    out = b""
    deadline = time.time() + 5
    while time.time() < deadline and out.count(b"HTTP/1.1 ") < 2:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    eq([int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3}) ", out)][:2], [200, 200], "two answers")


@test
def many_idle_connections(ctx):
    socks = [socket.create_connection(("127.0.0.1", ctx["srv"].port)) for _ in range(100)]
    alive(ctx)
    for s in socks:
        s.close()
    alive(ctx)


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup, teardown))
