#!/usr/bin/env python3
"""Content-Encoding of request bodies in `skycmd serve`: zstd, gzip and deflate (zlib and
raw) bodies are decoded as they stream in and answered exactly like the plain body; a bomb
(100 MiB of zeros) gets 413 quickly, and the connection stays usable; a truncated or corrupt
body gets 400; an unknown coding (and only that) gets 415.

zstd data comes from the `zstd` command (Debian package zstd), or from Python's
compression.zstd / backports.zstd when present.

usage: test_encoding.py --cli build/skycmd [--model m.gguf] [--work-dir DIR]
"""

import gzip
import json
import shutil
import subprocess
import time
import zlib

from serve_common import (Server, check, eq, error_of, example_request, ensure_model, main_guard, parse_args,
                          request, run_tests, test)

ARGS = parse_args(__doc__)
BODY = example_request(ARGS)
BOMB_SIZE = 100 * 1024 * 1024


def zstd_compress(data):
    for mod in ("compression.zstd", "backports.zstd"):
        try:
            m = __import__(mod, fromlist=["compress"])
            return m.compress(data)
        except ImportError:
            pass
    exe = shutil.which("zstd")
    check(exe is not None, "no zstd compressor: install the Debian package zstd (tools/setup.sh)")
    return subprocess.run([exe, "-q", "-c", "-3"], input=data, capture_output=True, check=True).stdout


def zstd_bomb():
    exe = shutil.which("zstd")
    if exe:  # streamed: the frame does not announce its size
        return subprocess.run(f"head -c {BOMB_SIZE} /dev/zero | {exe} -q -c -19", shell=True,
                              capture_output=True, check=True).stdout
    return zstd_compress(bytes(BOMB_SIZE))


def setup():
    ensure_model(ARGS)
    srv = Server(ARGS, ["--threads", "2"])
    plain = request(srv.port, "POST", "/v1/systemone", BODY)
    eq(plain[0], 200, "plain request")
    return {"srv": srv, "plain": plain[2]}


def teardown(ctx):
    eq(ctx["srv"].stop(), 0, "server exit status")


def post(ctx, data, coding, conn=None):
    return request(conn or ctx["srv"].port, "POST", "/v1/systemone", data, headers={"Content-Encoding": coding})


def same_answer(ctx, data, coding):
    st, _, body = post(ctx, data, coding)
    eq(st, 200, f"{coding} status ({body[:200]!r})")
    eq(body, ctx["plain"], f"{coding} answer equals the plain body's")


@test
def zstd_body(ctx):
    same_answer(ctx, zstd_compress(BODY), "zstd")
    same_answer(ctx, zstd_compress(BODY), "ZSTD")


@test
def gzip_body(ctx):
    same_answer(ctx, gzip.compress(BODY), "gzip")
    same_answer(ctx, gzip.compress(BODY), "x-gzip")


@test
def deflate_bodies(ctx):
    same_answer(ctx, zlib.compress(BODY), "deflate")  # RFC 9110: the zlib format
    raw = zlib.compressobj(wbits=-15)
    same_answer(ctx, raw.compress(BODY) + raw.flush(), "deflate")  # what some clients send


@test
def identity_is_plain(ctx):
    same_answer(ctx, BODY, "identity")


@test
def large_state_zstd(ctx):
    big = json.dumps({"state": "telemetry " * 100000, "questions": json.loads(BODY)["questions"]}).encode()
    st, _, _ = post(ctx, zstd_compress(big), "zstd")
    eq(st, 200, "a 1 MB state sent as zstd")


def bomb(ctx, data, coding):
    c = ctx["srv"].conn()
    t = time.time()
    st, h, body = post(ctx, data, coding, conn=c)
    took = time.time() - t
    error_of(st, h, body, 413, "request_too_large_error", "decoded")
    check(took < 2.0, f"the {coding} bomb took {took:.2f} s")
    # the connection is still usable (the rest was read and dropped)
    if h.get("connection", "").lower() != "close":
        eq(request(c, "POST", "/v1/systemone", BODY)[0], 200, "next request on the connection")
    c.close()
    print(f"  {coding} bomb: {len(data)} bytes expanding to {BOMB_SIZE >> 20} MiB -> 413 in {took * 1000:.0f} ms")


@test
def zstd_bomb_413(ctx):
    bomb(ctx, zstd_bomb(), "zstd")


@test
def gzip_bomb_413(ctx):
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = b"".join(co.compress(bytes(1 << 20)) for _ in range(BOMB_SIZE >> 20)) + co.flush()
    bomb(ctx, data, "gzip")


@test
def corrupt_and_truncated(ctx):
    st, h, body = post(ctx, b"\x28\xb5\x2f\xfd garbage garbage", "zstd")
    error_of(st, h, body, 400, "invalid_request_error", "zstd")
    st, h, body = post(ctx, b"this is not gzip", "gzip")
    error_of(st, h, body, 400, "invalid_request_error", "gzip")
    z = gzip.compress(BODY)
    st, h, body = post(ctx, z[: len(z) // 2], "gzip")
    error_of(st, h, body, 400, "invalid_request_error", "truncated")
    z = zstd_compress(BODY)
    st, h, body = post(ctx, z[: len(z) // 2], "zstd")
    error_of(st, h, body, 400, "invalid_request_error", "truncated")
    st, h, body = post(ctx, gzip.compress(BODY) + b"trailing", "gzip")
    error_of(st, h, body, 400, "invalid_request_error")


@test
def unknown_coding_415(ctx):
    for coding in ("br", "compress", "gzip, zstd", "zstd;q=1"):
        st, h, body = post(ctx, BODY, coding)
        error_of(st, h, body, 415, "invalid_request_error", "Content-Encoding")


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup, teardown))
