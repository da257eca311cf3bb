#!/usr/bin/env python3
"""Deadlines and limits of `skycmd serve` over raw sockets: a 1 B/s header or body trickler
is cut with 408 within --header-timeout/--body-timeout while normal clients keep their
latency; an idle keep-alive connection lives by --timeout, not by the header deadline; past
--max-connections new connections are closed at once (never left in the backlog); past
--max-buffered request bytes held across connections a body gets 503 + Retry-After.

usage: test_limits.py --cli build/skycmd [--model m.gguf] [--work-dir DIR]
"""

import json
import re
import socket
import statistics
import threading
import time

from serve_common import Server, check, eq, ensure_model, main_guard, parse_args, request, run_tests, test

ARGS = parse_args(__doc__)
BODY = b'{"state":"x","questions":{"a":{"type":"noul","instructions":"?"}}}'
HEADER_S, BODY_S = 2, 2


def connect(port, timeout=10.0):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def read_all(s, timeout):
    """Read until the server closes (or timeout); returns (bytes, closed, seconds)."""
    t0 = time.time()
    s.settimeout(0.2)
    out, closed = b"", False
    while time.time() - t0 < timeout:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            closed = True
            break
        if not chunk:
            closed = True
            break
        out += chunk
    return out, closed, time.time() - t0


REPLIES = {}  # socket -> what the server sent it


def trickle(s, data, stop_at, period=1.0):
    """Send data one byte per period until the server closes or stop_at; returns when closed."""
    for b in data:
        if time.time() > stop_at:
            return False
        try:
            s.sendall(bytes([b]))
        except OSError:
            return True
        s.settimeout(period)
        try:
            chunk = s.recv(65536)
            if not chunk:
                return True
            REPLIES[s] = REPLIES.get(s, b"") + chunk
            if b"\r\n\r\n" in REPLIES[s] and b"}" in REPLIES[s]:
                return True
        except socket.timeout:
            pass
        except OSError:
            return True
    return False


def latencies(port, n=20):
    out = []
    for _ in range(n):
        t = time.time()
        st, _, _ = request(port, "POST", "/v1/systemone", BODY)
        out.append(time.time() - t)
        eq(st, 200, "normal client's status")
    return out


def setup():
    ensure_model(ARGS)
    return {}


def cut_with_408(kind):
    with Server(ARGS, ["--threads", "2", "--header-timeout", str(HEADER_S), "--body-timeout", str(BODY_S),
                       "--timeout", "30"]) as srv:
        if kind == "header":
            head, rest = b"POST /v1/systemone HTTP/1.1\r\nHost: a\r\n", b"X-Slow: " + b"a" * 100 + b"\r\n"
        else:
            head = b"POST /v1/systemone HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n"
            rest = b"{" + b" " * 999
        socks = []
        for _ in range(4):
            s = connect(srv.port)
            s.sendall(head)
            socks.append(s)
        t0 = time.time()
        results = [None] * len(socks)

        def run(i):
            results[i] = (trickle(socks[i], rest, t0 + 10), time.time() - t0)
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(socks))]
        for t in threads:
            t.start()
        lat = latencies(srv.port)  # meanwhile, a normal client
        for t in threads:
            t.join()
        limit = HEADER_S if kind == "header" else BODY_S
        for i, s in enumerate(socks):
            closed, secs = results[i]
            check(closed, f"{kind} trickler {i} was not cut within 10 s")
            check(secs < limit + 1.5, f"{kind} trickler {i} cut after {secs:.1f} s (deadline {limit} s)")
            reply = REPLIES.get(s, b"")
            if reply:  # a reset may beat the 408 to the client; when it arrived it is a 408
                check(reply.startswith(b"HTTP/1.1 408 ") and b"connection: close" in reply.lower(),
                      f"reply {reply[:200]!r}")
            s.close()
        med = statistics.median(lat)
        print(f"  {kind} tricklers: cut after {max(r[1] for r in results):.2f} s; normal client median "
              f"{med * 1000:.1f} ms, max {max(lat) * 1000:.1f} ms")
        check(max(lat) < 1.0, f"a normal request took {max(lat):.2f} s beside the tricklers")
        st, _, body = request(srv.port, "GET", "/metrics")
        m = re.search(rb"skycmd_request_timeouts_total (\d+)", body)
        check(m and int(m.group(1)) >= 4, "timeouts not counted in /metrics")


@test
def header_trickler_is_cut(ctx):
    cut_with_408("header")


@test
def body_trickler_is_cut(ctx):
    cut_with_408("body")


@test
def idle_keep_alive_outlives_the_header_deadline(ctx):
    with Server(ARGS, ["--threads", "2", "--header-timeout", "1", "--timeout", "10"]) as srv:
        c = srv.conn()
        eq(request(c, "GET", "/health")[0], 200, "first")
        time.sleep(2.5)  # idle, longer than the header deadline
        eq(request(c, "GET", "/health")[0], 200, "after 2.5 s idle on the same connection")
        # the next request on it, trickled, is cut by the header deadline
        c.sock.sendall(b"GET /health HTTP/1.1\r\n")
        t0 = time.time()
        closed = trickle(c.sock, b"Host: aaaaaaaaaaaaaaaa\r\n", t0 + 6)
        check(closed and time.time() - t0 < 2.6, f"trickled follow-up cut after {time.time() - t0:.1f} s")
        c.close()


@test
def past_max_connections_refused_at_once(ctx):
    with Server(ARGS, ["--threads", "2", "--max-connections", "6", "--header-timeout", "60"]) as srv:
        held = []
        deadline = time.time() + 10
        while len(held) < 6 and time.time() < deadline:
            # a held connection is one that got an answer (keep-alive); a refusal here is a
            # closed connection whose slot libmicrohttpd has not released yet: try again
            c = srv.conn(timeout=5)
            try:
                eq(request(c, "GET", "/health")[0], 200, "held connection")
                held.append(c)
            except OSError:
                c.close()
                time.sleep(0.1)
        eq(len(held), 6, "connections held")
        for _ in range(3):
            s = connect(srv.port)
            try:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n")
            except OSError:
                pass
            out, closed, secs = read_all(s, 3)
            check(closed and secs < 1.0, f"connection past the limit: closed={closed} after {secs:.2f} s")
            check(b"200 OK" not in out, "answered past the limit")
            s.close()
        held.pop().close()
        time.sleep(0.3)
        eq(request(srv.port, "GET", "/health")[0], 200, "a slot freed")
        for c in held:  # the held ones are still served
            eq(request(c, "GET", "/health")[0], 200, "held connection still served")
        for s in held:
            s.close()
        time.sleep(0.3)
        st, _, body = request(srv.port, "GET", "/metrics")
        m = re.search(rb"skycmd_connections_refused_total (\d+)", body)
        check(m and int(m.group(1)) >= 3, "refusals not counted")


@test
def per_ip_cap(ctx):
    with Server(ARGS, ["--threads", "2", "--max-connections-per-ip", "3", "--header-timeout", "60"]) as srv:
        held = []
        deadline = time.time() + 10
        while len(held) < 3 and time.time() < deadline:
            c = srv.conn(timeout=5)
            try:
                eq(request(c, "GET", "/health")[0], 200, "held connection")
                held.append(c)
            except OSError:
                c.close()
                time.sleep(0.1)
        eq(len(held), 3, "connections held")
        s = connect(srv.port)
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n")
        except OSError:
            pass
        out, closed, secs = read_all(s, 3)
        check(closed and secs < 1.0 and b"200 OK" not in out, f"a 4th connection from 127.0.0.1: {out[:80]!r}")
        s.close()
        # another address (127.0.0.2 is loopback too) is not capped by 127.0.0.1's connections
        s = socket.socket()
        s.settimeout(5)
        s.bind(("127.0.0.2", 0))
        s.connect(("127.0.0.1", srv.port))
        s.sendall(b"GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        out, _, _ = read_all(s, 3)
        check(out.startswith(b"HTTP/1.1 200"), f"from 127.0.0.2: {out[:80]!r}")
        s.close()
        for c in held:
            c.close()


@test
def buffered_bytes_cap(ctx):
    with Server(ARGS, ["--threads", "2", "--max-buffered", "1m", "--max-body", "2m"]) as srv:
        state = "s" * 800000
        big = json.dumps({"state": state, "questions": {"a": {"type": "noul", "instructions": "?"}}}).encode()
        a = connect(srv.port)
        a.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % len(big) + big[:700000])
        time.sleep(0.5)
        second = json.dumps({"state": "t" * 400000, "questions": {"a": {"type": "noul", "instructions": "?"}}})
        st, h, body = request(srv.port, "POST", "/v1/systemone", second)
        eq(st, 503, "status past --max-buffered")
        check(h.get("retry-after"), "no Retry-After")
        check("max-buffered" in json.loads(body)["error"]["message"], "message")
        a.sendall(big[700000:])
        a.settimeout(10)
        out = a.recv(65536)
        check(out.startswith(b"HTTP/1.1 200"), f"the first body, once complete: {out[:100]!r}")
        a.close()
        st, _, _ = request(srv.port, "POST", "/v1/systemone", second)
        eq(st, 200, "status once the bytes are released")


@test
def chunked_body_past_the_discard_limit_sees_its_413(ctx):
    # A chunked body far over --max-body is read and dropped up to the discard limit (8 MiB
    # here), then refused mid-body: the client, still sending, must read the 413 (not a
    # reset, not an empty reply: the server lingers, reading, before it closes)
    with Server(ARGS, ["--threads", "1", "--max-body", "1k"]) as srv:
        for _ in range(2):
            s = connect(srv.port)
            s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                      b"Content-Type: application/json\r\n\r\n")
            got, stop = [], threading.Event()

            def reader():
                got.append(read_all(s, 20))
                stop.set()

            t = threading.Thread(target=reader)
            t.start()
            piece = b"%x\r\n" % 65536 + b"a" * 65536 + b"\r\n"
            sent, send_error = 0, None
            while not stop.is_set() and sent < 64 << 20:
                try:
                    s.sendall(piece)
                    sent += len(piece)
                except OSError as e:  # the server may close while we send: fine once the 413 is read
                    send_error = e
                    break
            t.join()
            s.close()
            out, closed, _ = got[0]
            check(out.startswith(b"HTTP/1.1 413 "), f"after {sent} bytes ({send_error!r}): {out[:200]!r}")
            check(re.search(rb"(?i)\r\nconnection: *close\r\n", out), f"no Connection: close: {out[:300]!r}")
            body = out.split(b"\r\n\r\n", 1)[1]
            eq(json.loads(body)["error"]["code"], 413, "the whole error body arrived")
            check(closed, "the server kept the connection")
        eq(request(srv.port, "GET", "/health")[0], 200, "the server answers afterwards")
        metrics = request(srv.port, "GET", "/metrics")[2].decode()
        check('endpoint="/v1/systemone",code="413"} 2' in metrics, "the 413s are counted")


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup))
