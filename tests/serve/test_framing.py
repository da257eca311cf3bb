#!/usr/bin/env python3
"""Request framing of `skycmd serve` over raw sockets (RFC 9112 §6.3): every ambiguity of a
message's length gets 400 with `Connection: close`, the connection is closed, and nothing
sent after it (a smuggled `GET /metrics`) is answered.

usage: test_framing.py --cli build/skycmd [--model m.gguf] [--work-dir DIR]
"""

import os
import re
import socket
import subprocess
import time

from serve_common import Server, Skip, check, eq, ensure_model, main_guard, parse_args, request, run_tests, test

ARGS = parse_args(__doc__)
BODY = b'{"state":"x","questions":{"a":{"type":"noul","instructions":"?"}}}'
SMUGGLED = b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"


def exchange(port, data, timeout=5.0):
    """Send data, read until the server closes; returns (bytes read, closed by the server)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out, closed = b"", False
    try:
        s.sendall(data)
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            out += chunk
    finally:
        s.close()
    return out, closed


def refused(ctx, head, rest=b"", contains=None):
    """head (request line + headers, without the blank line) then rest: one 400 with
    Connection: close, the connection closed, no second response."""
    out, closed = exchange(ctx["srv"].port, head + b"\r\n" + rest + SMUGGLED)
    statuses = [int(x) for x in re.findall(rb"HTTP/1\.[01] (\d{3}) ", out)]
    # (libmicrohttpd 0.9.75's own 400, for a Content-Length it cannot parse, writes its
    # status line and headers twice before the one body: still one answer, then close.)
    check(statuses and set(statuses) == {400} and out.count(b"</html>") + out.count(b'"error"') == 1,
          f"statuses for {head!r}: {statuses} in {out[:400]!r}")
    check(re.search(rb"(?i)\r\nconnection: *close\r\n", out), f"no Connection: close in {out[:300]!r}")
    check(closed, "the server kept the connection open")
    check(b"skycmd_http_requests_total" not in out, "the smuggled request was answered")
    if contains:
        check(contains.encode() in out, f"message does not say {contains!r}: {out[-300:]!r}")
    # and the server still answers
    st, _, _ = request(ctx["srv"].port, "GET", "/health")
    eq(st, 200, "health after the case")


def post_head(*headers):
    return b"POST /v1/systemone HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n" + \
        b"".join(h + b"\r\n" for h in headers)


def setup():
    ensure_model(ARGS)
    return {"srv": Server(ARGS, ["--threads", "2"])}


def teardown(ctx):
    eq(ctx["srv"].stop(), 0, "server exit status")


CL = b"Content-Length: " + str(len(BODY)).encode()


@test
def two_host_headers(ctx):
    # RFC 9112 §3.2: a request with more than one Host line gets 400
    refused(ctx, b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n", contains="several Host headers")
    refused(ctx, post_head(b"Host: b", CL), BODY, contains="several Host headers")


@test
def two_different_content_lengths(ctx):
    refused(ctx, post_head(CL, b"Content-Length: 0"), BODY, "Content-Length")


@test
def two_equal_content_lengths(ctx):
    refused(ctx, post_head(CL, CL), BODY)


@test
def content_length_list(ctx):
    refused(ctx, post_head(b"Content-Length: %d, %d" % (len(BODY), len(BODY))), BODY)


@test
def content_length_and_chunked(ctx):
    refused(ctx, post_head(CL, b"Transfer-Encoding: chunked"), b"0\r\n\r\n", "Transfer-Encoding")


@test
def chunked_and_content_length_reversed(ctx):
    refused(ctx, post_head(b"Transfer-Encoding: chunked", CL), BODY)


@test
def transfer_encoding_not_exactly_chunked(ctx):
    for te in (b"gzip, chunked", b"chunked, chunked", b"identity", b"gzip", b"xchunked", b"chunked;x=1"):
        refused(ctx, post_head(b"Transfer-Encoding: " + te), b"0\r\n\r\n")


@test
def two_transfer_encodings(ctx):
    refused(ctx, post_head(b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked"), b"0\r\n\r\n")


@test
def space_before_colon(ctx):
    refused(ctx, post_head(b"Transfer-Encoding : chunked", CL), BODY)
    refused(ctx, post_head(b"Content-Length : 0", CL), BODY)
    refused(ctx, b"GET /health HTTP/1.1\r\nHost: a\r\nX-Foo\t: a\r\n")


@test
def folded_framing_header(ctx):
    refused(ctx, post_head(b"Content-Length:", b" " + str(len(BODY)).encode()), BODY)
    refused(ctx, post_head(b"Transfer-Encoding:", b"\tchunked"), b"0\r\n\r\n")


def http_library():
    """`skycmd --version`'s HTTP line: the libmicrohttpd the server runs on and whether it
    rejects obsolete line folding."""
    out = subprocess.run([ARGS.cli, "--version"], capture_output=True, text=True, check=True).stdout
    return next((ln for ln in out.splitlines() if ln.startswith("HTTP:")), "HTTP: unknown")


@test
def folded_other_header(ctx):
    # RFC 9112 5.2: a server that receives obs-fold outside message/http must reject it (or
    # replace it by SP). libmicrohttpd 0.9.75 merges it whatever its settings; >= 1.0 at
    # discipline level 1 answers 400 and closes. SKYCMD_REQUIRE_STRICT_HTTP=1 (tools/test-all.sh,
    # which builds with tools/build-mhd.sh's libmicrohttpd 1.0.1) turns the skip into a failure.
    lib = http_library()
    if "obsolete line folding rejected" not in lib:
        if os.environ.get("SKYCMD_REQUIRE_STRICT_HTTP") == "1":
            raise AssertionError(f"SKYCMD_REQUIRE_STRICT_HTTP=1 but the server says {lib!r}")
        raise Skip(f"{lib}: obsolete line folding cannot be refused by this libmicrohttpd")
    refused(ctx, b"GET /health HTTP/1.1\r\nHost: a\r\nX-Note: first\r\n second")
    refused(ctx, post_head(b"X-Trace: a", b"\tb", CL), BODY)
    refused(ctx, post_head(b"Accept: application/json,", b" text/plain", CL), BODY)


@test
def chunked_alone_is_fine(ctx):
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
    out, _ = exchange(ctx["srv"].port, post_head(b"Transfer-Encoding: chunked") + b"\r\n" + chunked + SMUGGLED,
                      timeout=3)
    eq([int(x) for x in re.findall(rb"HTTP/1\.[01] (\d{3}) ", out)], [200, 200], "chunked then pipelined GET")


@test
def ordinary_keep_alive_unaffected(ctx):
    c = ctx["srv"].conn()
    for _ in range(20):
        st, h, _ = request(c, "POST", "/v1/systemone", BODY)
        eq(st, 200, "status")
        check(h.get("connection", "").lower() != "close", "keep-alive lost")
    c.close()


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup, teardown))
