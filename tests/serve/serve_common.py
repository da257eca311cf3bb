"""Shared helpers of the `skycmd serve` HTTP tests (Python 3 standard library only).

A test script starts real servers (`<cli> serve --port 0 ...`), reads the port from the
"listening on" line the server prints, and talks HTTP to it. Every test is a function
registered with @test; run_tests() runs them, prints one line per test and the closing
summary "N passed, M failed", and returns the exit status.
"""

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback

# The Flappy Drone request of the skycmd book (ch. 16); examples/flappy-drone.json is used
# when it exists, this copy otherwise.
FLAPPY_DRONE = {
    "state": "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32",
    "questions": {
        "action": {
            "type": "choice",
            "instructions": "Which input keeps the drone flying through the next gap?",
            "criteria": {
                "thrust": "fire the rotors for an upward impulse",
                "glide": "let gravity pull the drone down",
            },
        },
        "danger": {
            "type": "noul",
            "instructions": "Will the drone crash within the next half second if it keeps gliding?",
        },
        "margin": {
            "type": "score",
            "instructions": "How much room is left above and below the drone?",
            "criteria": ["none", "tight", "comfortable"],
        },
    },
}

_TESTS = []


def test(fn):
    _TESTS.append(fn)
    return fn


class Failure(AssertionError):
    pass


class Skip(Exception):
    """A test that cannot run here: printed as SKIP with its reason and counted apart, never
    as a pass. raise Skip("why")."""


def check(cond, msg="check failed"):
    if not cond:
        raise Failure(msg)


def eq(a, b, what=""):
    if a != b:
        raise Failure(f"{what}: expected {b!r}, got {a!r}")


def parse_args(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--cli", required=True, help="path of the skycmd executable")
    ap.add_argument("--source-dir", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--work-dir", default=None, help="where models and logs go")
    ap.add_argument("--model", default=None, help="a GGUF model (default: make a random s1-pico)")
    ap.add_argument("-k", dest="only", default=None, help="run only tests whose name contains this")
    args = ap.parse_args()
    if args.work_dir is None:
        args.work_dir = tempfile.mkdtemp(prefix="skycmd-serve-")
    os.makedirs(args.work_dir, exist_ok=True)
    return args


def ensure_model(args):
    """The model the servers load: --model, or a random s1-pico made with the CLI once."""
    if args.model:
        return args.model
    path = os.path.join(args.work_dir, "s1-pico.gguf")
    if os.path.exists(path):
        return path
    attempts = [[args.cli, "random", "s1-pico", path], [args.cli, "convert", "--random", "s1-pico", path]]
    errors = []
    for cmd in attempts:
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode == 0 and os.path.exists(path):
            return path
        errors.append(f"{' '.join(cmd)}: {p.stderr.strip()}")
    raise RuntimeError("cannot make a test model:\n" + "\n".join(errors))


def example_request(args):
    path = os.path.join(args.source_dir, "examples", "flappy-drone.json")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    return json.dumps(FLAPPY_DRONE).encode()


class Server:
    """One `skycmd serve` process on a free loopback port."""

    _seq = 0

    def __init__(self, args, extra, models=None, wait_ready=True, env=None):
        Server._seq += 1
        self.log_path = os.path.join(args.work_dir, f"server-{os.getpid()}-{Server._seq}.log")
        self.log = open(self.log_path, "wb")
        if models is None:
            models = [ensure_model(args)]
        cmd = [args.cli, "serve", "--port", "0", "--host", "127.0.0.1"]
        for m in models:
            cmd += ["--model", m]
        cmd += list(extra)
        e = dict(os.environ)
        e.pop("SKYCMD_API_KEY", None)
        if env:
            e.update(env)
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=e)
        self.port = None
        deadline = time.time() + 60
        while time.time() < deadline:
            text = self.text()
            m = re.search(r"listening on http://[^\s]*:(\d+)", text)
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}) before listening:\n{text}")
            time.sleep(0.02)
        if self.port is None:
            self.kill()
            raise RuntimeError("server did not print its port:\n" + self.text())
        if wait_ready:
            self.wait_ready()

    def text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                st, _, _ = request(self.port, "GET", "/health")
                if st == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}):\n{self.text()}")
            time.sleep(0.02)
        raise RuntimeError("server not ready:\n" + self.text())

    def conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Signal the server and wait; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Failure("server did not stop within %d s after signal %d" % (timeout, sig))
        self.log.close()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        rc = self.stop()
        if exc[0] is None and rc != 0:
            raise Failure(f"server exit status {rc} (expected 0); log:\n{self.text()[-3000:]}")


def request(port_or_conn, method, path, body=None, headers=None, timeout=30):
    """One request; returns (status, headers with lower-case names, body bytes). Pass an
    HTTPConnection to reuse it (keep-alive)."""
    own = not isinstance(port_or_conn, http.client.HTTPConnection)
    c = http.client.HTTPConnection("127.0.0.1", port_or_conn, timeout=timeout) if own else port_or_conn
    try:
        h = {"Content-Type": "application/json"} if body is not None else {}
        h.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        if own:
            c.close()


def error_of(status, headers, body, code, etype=None, contains=None):
    """Check an error response: status, envelope shape, type, message text, request id."""
    eq(status, code, "status")
    check("x-request-id" in headers, "x-request-id header missing")
    doc = json.loads(body)
    check(set(doc) == {"error", "detail"}, f"error body has keys {sorted(doc)}")
    err = doc["error"]
    check(set(err) == {"code", "message", "type"}, f"error object has keys {sorted(err)}")
    eq(err["code"], code, "error.code")
    check(isinstance(err["message"], str) and err["message"], "error.message empty")
    # Jev's "detail" beside llama-server's "error", saying the same (docs/serve.md "Errors")
    detail = doc["detail"]
    if code == 422:
        check(isinstance(detail, list) and len(detail) == 1, f"422 detail is not a one-item list: {detail!r}")
        d = detail[0]
        check(set(d) == {"loc", "msg", "type"}, f"detail[0] has keys {sorted(d)}")
        check(isinstance(d["loc"], list) and d["loc"][:1] == ["body"], f"detail[0].loc {d['loc']!r}")
        eq(d["msg"], err["message"], "detail[0].msg")
        check(isinstance(d["type"], str) and d["type"], "detail[0].type empty")
    else:
        eq(detail, {"error_type": err["type"], "message": err["message"]}, "detail")
    if etype:
        eq(err["type"], etype, "error.type")
    if contains:
        check(contains in err["message"], f"message {err['message']!r} does not contain {contains!r}")
    check("0x" not in err["message"], "error message leaks a pointer")
    return err


def run_tests(args, setup=None, teardown=None):
    ctx = setup() if setup else None
    passed = failed = skipped = 0
    for fn in _TESTS:
        if args.only and args.only not in fn.__name__:
            continue
        t = time.time()
        try:
            fn(ctx) if setup else fn()
            passed += 1
            print(f"PASS {fn.__name__} ({time.time() - t:.2f} s)", flush=True)
        except Skip as why:
            skipped += 1
            print(f"SKIP {fn.__name__}: {why}", flush=True)
        except Exception:  # noqa: BLE001 - every failure is reported, the run goes on
            failed += 1
            print(f"FAIL {fn.__name__}:\n{traceback.format_exc()}", flush=True)
    if teardown:
        try:
            teardown(ctx)
        except Exception:  # noqa: BLE001
            failed += 1
            print(f"FAIL teardown:\n{traceback.format_exc()}", flush=True)
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""), flush=True)
    return 0 if failed == 0 and passed > 0 else 1


def main_guard(fn):
    try:
        sys.exit(fn())
    except KeyboardInterrupt:
        sys.exit(130)


# ---- the interpreter of the tests that use the SDK and the contract tools ----

def tool_missing(why, how="pip install -r tools/requirements-ci.txt"):
    """A test tool is not installed: exit 77 (ctest: skipped), or 1 (a failure) when
    SKYCMD_REQUIRE_SDK=1, as CI sets it (tools/test-all.sh): there a missing tool must fail."""
    if os.environ.get("SKYCMD_REQUIRE_SDK") == "1":
        print(f"{why} (required: SKYCMD_REQUIRE_SDK=1)")
        print("0 passed, 1 failed")
        sys.exit(1)
    print(f"{why}; skipped ({how})")
    print("0 passed, 0 failed, 1 skipped")
    sys.exit(77)


def sdk_interpreter():
    """The interpreter that has typesafe-sdk, chosen when the test runs (not when CMake
    configures: the venv of tools/setup.sh --all may be made after build/ was configured):
    $SKYCMD_SERVE_SDK_PYTHON, else the project's pinned CI venv (.venv-ci), else this one."""
    chosen = os.environ.get("SKYCMD_SERVE_SDK_PYTHON")
    if chosen:
        return chosen
    venv = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv-ci", "bin", "python")
    return os.path.normpath(venv) if os.path.exists(venv) else sys.executable


def run_under_sdk_python():
    """Re-run the calling test script under sdk_interpreter() unless it already runs there
    (test_sdk.py and test_contract.py need the CI venv's packages)."""
    chosen = sdk_interpreter()
    if os.path.abspath(chosen) == os.path.abspath(sys.executable) or "SKYCMD_SERVE_SDK_REEXEC" in os.environ:
        return
    if not os.access(chosen, os.X_OK):
        print(f"SKYCMD_SERVE_SDK_PYTHON={chosen} is not an executable interpreter")
        print("0 passed, 1 failed")
        sys.exit(1)
    os.environ["SKYCMD_SERVE_SDK_REEXEC"] = "1"
    os.execv(chosen, [chosen] + sys.argv)
