#!/usr/bin/env python3
"""Drain and reload of `skycmd serve`: after SIGTERM new connections are refused at once,
requests in flight are answered (the last ones with `Connection: close`) and the server
exits 0 within --drain-timeout; SIGHUP reloads every --model from disk under load with no
failed request, the new model answers afterwards, and a file that fails to load keeps the
model loaded before. A SIGTERM/SIGINT while the first models load (an s1-micro with --q8:
seconds of int8 calibration; /health says 503 "loading" meanwhile) stops the load inside the
library (its progress callback), then ends the server by that signal within 1 s, with a
message; one during a SIGHUP reload (while /health stays 200 and the old model answers)
cancels the reload, drains and exits 0 within 1 s.

usage: test_lifecycle.py --cli build/skycmd [--work-dir DIR]
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

from serve_common import Server, check, eq, ensure_model, main_guard, parse_args, request, run_tests, test

ARGS = parse_args(__doc__)
BODY = json.dumps({"state": "vy 0 dx 36", "questions": {
    "a": {"type": "noul", "instructions": "Will it crash?"},
    "b": {"type": "choice", "instructions": "Which?", "criteria": {"x": "up", "y": "down"}}}}).encode()


def heavy():
    q = {f"q{i}": {"type": "noul", "instructions": f"Is statement number {i} about the drone true?"}
         for i in range(200)}
    return json.dumps({"state": "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32", "questions": q}).encode()


def random_model(path, seed):
    p = subprocess.run([ARGS.cli, "random", "s1-pico", path, "--seed", str(seed)], capture_output=True, text=True)
    check(p.returncode == 0, f"skycmd random: {p.stderr}")


def setup():
    ensure_model(ARGS)
    return {}


@test
def sigterm_refuses_new_connections_and_answers_in_flight(ctx):
    srv = Server(ARGS, ["--threads", "1", "--queue", "64", "--drain-timeout", "20"])
    try:
        idle = srv.conn()
        eq(request(idle, "GET", "/health")[0], 200, "idle keep-alive connection")
        big = heavy()
        results, started = [], threading.Barrier(9)

        def one():
            c = srv.conn(timeout=60)
            c.connect()
            started.wait()
            try:
                st, h, _ = request(c, "POST", "/v1/systemone", big)
                results.append((st, h.get("connection", ""), time.time()))
            except Exception as e:  # noqa: BLE001
                results.append((repr(e), "", time.time()))

        ts = [threading.Thread(target=one) for _ in range(8)]
        for t in ts:
            t.start()
        started.wait()
        time.sleep(0.05)
        signalled = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        # the listening socket closes at once: a connection attempt is refused
        refused_after = None
        for _ in range(100):
            try:
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=1)
                s.close()
                time.sleep(0.005)
            except (ConnectionRefusedError, ConnectionResetError):
                # refused; or reset: a connection that reached the backlog in the instant the
                # listening socket closed is reset by the kernel, which refuses it just as well
                refused_after = time.time() - signalled
                break
        check(refused_after is not None and refused_after < 0.5, f"connect not refused after SIGTERM ({refused_after})")
        # a request on the idle keep-alive connection: 503 + close, or the connection is gone
        try:
            st, h, _ = request(idle, "POST", "/v1/systemone", BODY)
            eq(st, 503, "request on a kept-alive connection during the drain")
            eq(h.get("connection", "").lower(), "close", "Connection on the 503")
        except (ConnectionError, OSError):
            pass
        for t in ts:
            t.join()
        eq([r[0] for r in results], [200] * 8, "in-flight requests answered")
        late = [r for r in results if r[2] > signalled + 0.01]
        check(late, "no request still in flight at SIGTERM (the test means nothing)")
        for r in late:
            eq(r[1].lower(), "close", "Connection on a response sent during the drain")
        rc = srv.proc.wait(timeout=20)
        eq(rc, 0, "exit status")
        print(f"  connect refused {refused_after * 1000:.1f} ms after SIGTERM; {len(late)} of 8 answered after it; "
              f"exited {time.time() - signalled:.2f} s after it")
    finally:
        srv.kill()


@test
def drain_timeout_bounds_a_slow_body(ctx):
    srv = Server(ARGS, ["--threads", "1", "--drain-timeout", "2", "--body-timeout", "60"])
    try:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{")
        time.sleep(0.2)
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        rc = srv.proc.wait(timeout=10)
        took = time.time() - t0
        eq(rc, 0, "exit status")
        check(1.5 < took < 3.5, f"exited {took:.2f} s after SIGTERM (--drain-timeout 2)")
        s.close()
    finally:
        srv.kill()


@test
def sighup_reloads_under_load(ctx):
    path = os.path.join(ARGS.work_dir, "reloaded.gguf")
    a, b = path + ".a", path + ".b"
    random_model(a, 1)
    random_model(b, 2)
    shutil.copyfile(a, path)
    srv = Server(ARGS, ["--threads", "2"], models=[path])
    try:
        before = request(srv.port, "POST", "/v1/systemone", BODY)[2]
        stop, lock = threading.Event(), threading.Lock()
        stats = {"ok": 0, "failed": [], "bodies": set()}

        def loop():
            c = srv.conn(timeout=30)
            while not stop.is_set():
                try:
                    st, _, body = request(c, "POST", "/v1/systemone", BODY)
                    with lock:
                        if st == 200:
                            stats["ok"] += 1
                            stats["bodies"].add(body)
                        else:
                            stats["failed"].append(st)
                except Exception as e:  # noqa: BLE001
                    with lock:
                        stats["failed"].append(repr(e))
                    c.close()
                    c = srv.conn(timeout=30)
            c.close()

        ts = [threading.Thread(target=loop) for _ in range(4)]
        for t in ts:
            t.start()
        time.sleep(0.5)
        shutil.copyfile(b, path + ".tmp")
        os.replace(path + ".tmp", path)
        srv.proc.send_signal(signal.SIGHUP)
        deadline, after = time.time() + 10, None
        while time.time() < deadline:
            body = request(srv.port, "POST", "/v1/systemone", BODY)[2]
            if body != before:
                after = body
                break
            time.sleep(0.05)
        check(after is not None, "the answers did not change after SIGHUP")
        time.sleep(0.5)
        # a file that fails to load keeps the model loaded before
        with open(path + ".tmp", "wb") as f:
            f.write(b"this is not a GGUF file")
        os.replace(path + ".tmp", path)
        srv.proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        stop.set()
        for t in ts:
            t.join()
        eq(request(srv.port, "POST", "/v1/systemone", BODY)[2], after, "answer after a failed reload")
        eq(srv.proc.poll(), None, "the server is still running")
        text = srv.text()
        check("cannot reload" in text and "keeping the model loaded before" in text, "the failure is logged")
        check("released model" in text, "the old model was not released")
        eq(stats["failed"], [], "failed requests during the reloads")
        check(stats["ok"] > 100, f"only {stats['ok']} requests under load")
        eq(len(stats["bodies"]), 2, "distinct answers seen (old model, new model)")
        st, _, metrics = request(srv.port, "GET", "/metrics")
        check(b'skycmd_reloads_total{result="ok"} 1' in metrics and
              b'skycmd_reloads_total{result="failed"} 1' in metrics, "reloads counted")
        print(f"  {stats['ok']} requests under load across two reloads, 0 failed")
        eq(srv.stop(), 0, "exit status")
    finally:
        srv.kill()


def sighup_reloads_under_wrk(ctx):
    """The same under wrk (16 connections, 4 s, two reloads); registered only when wrk is
    installed (tools/setup.sh --all), the Python loop above always runs."""
    wrk = shutil.which("wrk")
    path = os.path.join(ARGS.work_dir, "reloaded-wrk.gguf")
    a, b = path + ".a", path + ".b"
    random_model(a, 3)
    random_model(b, 4)
    shutil.copyfile(a, path)
    srv = Server(ARGS, ["--threads", "2"], models=[path])
    try:
        before = request(srv.port, "POST", "/v1/systemone", BODY)[2]
        lua = os.path.join(ARGS.work_dir, "post.lua")
        with open(lua, "w") as f:
            f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n')
            f.write("wrk.body = " + json.dumps(BODY.decode()) + "\n")
        p = subprocess.Popen([wrk, "-t2", "-c16", "-d4s", "-s", lua, f"http://127.0.0.1:{srv.port}/v1/systemone"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.0)
        shutil.copyfile(b, path + ".tmp")
        os.replace(path + ".tmp", path)
        srv.proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        shutil.copyfile(a, path + ".tmp")
        os.replace(path + ".tmp", path)
        srv.proc.send_signal(signal.SIGHUP)
        out, _ = p.communicate(timeout=60)
        m = re.search(r"(\d+) requests in", out)
        check(m and int(m.group(1)) > 100, f"wrk made too few requests:\n{out}")
        check("Non-2xx" not in out, f"wrk saw non-2xx answers:\n{out}")
        check("Socket errors" not in out, f"wrk saw socket errors:\n{out}")
        eq(request(srv.port, "POST", "/v1/systemone", BODY)[2], before, "the model of the last reload answers")
        check(srv.text().count("released model") >= 2, "the replaced models were released")
        print(f"  wrk: {m.group(1)} requests across two reloads, 0 non-2xx, 0 socket errors")
        eq(srv.stop(), 0, "exit status")
    finally:
        srv.kill()


if shutil.which("wrk"):
    test(sighup_reloads_under_wrk)
else:
    print("wrk is not installed: sighup_reloads_under_wrk is not run (not counted)")


def micro_model():
    path = os.path.join(ARGS.work_dir, "s1-micro.gguf")
    if not os.path.exists(path):
        p = subprocess.run([ARGS.cli, "random", "s1-micro", path], capture_output=True, text=True)
        check(p.returncode == 0, f"skycmd random s1-micro: {p.stderr}")
    return path


# ThreadSanitizer sleeps 1 s in every exit (its atexit_sleep_ms): not the server's time
NO_EXIT_SLEEP = {"TSAN_OPTIONS": ":".join(x for x in (os.environ.get("TSAN_OPTIONS"), "atexit_sleep_ms=0") if x)}


def wait_log(srv, pattern, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if re.search(pattern, srv.text()):
            return
        check(srv.proc.poll() is None, f"server exited ({srv.proc.returncode}):\n{srv.text()}")
        time.sleep(0.01)
    raise AssertionError(f"no {pattern!r} in the log:\n{srv.text()}")


@test
def signal_during_first_load_stops_within_1s(ctx):
    micro = micro_model()
    for sig in (signal.SIGINT, signal.SIGTERM):
        srv = Server(ARGS, ["--q8"], models=[micro], wait_ready=False, env=NO_EXIT_SLEEP)
        try:
            wait_log(srv, r"loading model 1 of 1 from ")
            st, h, body = request(srv.port, "GET", "/health")
            eq(st, 503, "/health while loading")
            eq(json.loads(body)["status"], "loading", "/health status while loading")
            eq(h.get("retry-after"), "1", "Retry-After while loading")
            time.sleep(0.3)
            check("ready:" not in srv.text(), "the load finished before the signal (the test means nothing)")
            t0 = time.time()
            srv.proc.send_signal(sig)
            rc = srv.proc.wait(timeout=10)
            took = time.time() - t0
            eq(rc, -sig, "exit status (killed by the signal, as the CLI's other interrupts)")
            check(took < 1.0, f"stopped {took:.2f} s after {sig.name}")
            name = sig.name
            check(re.search(name + r" while loading model 1 of 1 \(.*\): stopping", srv.text()),
                  "no message:\n" + srv.text())
            check("stopped before serving" in srv.text(), "no final line:\n" + srv.text())
            # the library stopped the load (a clean teardown), rather than the exit abandoning it
            check("stopped before serving (load cancelled in" in srv.text(),
                  "the load was not cancelled by the library:\n" + srv.text())
            print(f"  {name} during the first load (--q8 s1-micro): exit {rc} after {took * 1000:.0f} ms")
        finally:
            srv.kill()


@test
def sigterm_during_reload_drains_within_1s(ctx):
    # the first load is a small model; SIGHUP then reloads the same path holding an s1-micro
    # with --q8 (seconds), and SIGTERM comes while that reload runs
    path = os.path.join(ARGS.work_dir, "reload-slow.gguf")
    shutil.copyfile(ensure_model(ARGS), path)
    srv = Server(ARGS, ["--q8", "--threads", "1"], models=[path], env=NO_EXIT_SLEEP)
    try:
        eq(request(srv.port, "POST", "/v1/systemone", BODY)[0], 200, "before the reload")
        shutil.copyfile(micro_model(), path + ".tmp")
        os.replace(path + ".tmp", path)
        srv.proc.send_signal(signal.SIGHUP)
        wait_log(srv, r"SIGHUP: reloading 1 model")
        time.sleep(0.3)
        check("generation 2" not in srv.text(), "the reload finished before the signal (the test means nothing)")
        st, _, body = request(srv.port, "GET", "/health")
        eq(st, 200, "/health during a reload (the old model answers)")
        eq(request(srv.port, "POST", "/v1/systemone", BODY)[0], 200, "a request during the reload")
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        rc = srv.proc.wait(timeout=10)
        took = time.time() - t0
        eq(rc, 0, "exit status after a drain")
        check(took < 1.0, f"stopped {took:.2f} s after SIGTERM during the reload")
        # the reload stops inside the library (it no longer runs on, abandoned, to the exit)
        check("during a reload: the reload is cancelled" in srv.text(), "no message:\n" + srv.text())
        check("SIGHUP: reload cancelled while loading" in srv.text(), "the reload was not cancelled:\n" + srv.text())
        check("(the cancelled reload was still loading)" not in srv.text(), "the reload ran on:\n" + srv.text())
        print(f"  SIGTERM during a --q8 reload: exit {rc} after {took * 1000:.0f} ms")
    finally:
        srv.kill()


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup))
