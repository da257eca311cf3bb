#!/usr/bin/env python3
"""compare.py - side-by-side timings of libskycmd and its peers, run by hand.

One run measures, on the same random Laya checkpoint (and the GGUF converted from it) and
the same request, interleaved A, B, A, B ... so a shared machine's load hits both alike:

  inproc   (a) `skycmd bench MODEL.gguf` (our library in-process, a subprocess per round)
           vs (d) the Python `laya` runtime in-process in this process
           (Agent(DIR, device="cpu").system_one, torch fp32, torch.set_num_threads(T));
  http     (b) `skycmd serve` over HTTP/1.1 keep-alive (one connection, raw-socket client)
           vs (c) llama.cpp's llama-server when --llama-server PATH (or $LLAMA_SERVER) is
           given -- skipped otherwise; plus `wrk -c 64` on each server when wrk exists;
  threads  `skycmd bench` with --threads 1 vs --threads N;
  q8       `skycmd bench` f32 vs --q8-fast (and --q8) on the same GGUF;
  load     s1-micro load time and peak RSS against the GGUF / Q8_0 GGUF sizes.

Every figure is the median over rounds of the per-round medians; the load average is
recorded each round. Results: a Markdown table on stdout and --out JSON.

Run with the reference venv (laya==0.4.15, torch==2.15.0), e.g.:
  /opt/gvenv/bin/python bench/compare/compare.py --skycmd build/skycmd --preset s1-pico \
      --suite inproc,http --threads 1
  /opt/gvenv/bin/python bench/compare/compare.py --skycmd build/skycmd --preset base \
      --tokens 128 --suite inproc,threads,q8 --threads 1
No timing is asserted: this is a measuring tool, not a test.
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

KINDS = ("action", "danger", "margin")  # choice, noul, score (as `skycmd bench` names them)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def loadavg():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def run(cmd, **kw):
    log("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], check=True, stdout=subprocess.PIPE, text=True, **kw)


def bench_json(skycmd, model, args, extra):
    out = run([skycmd, "bench", model, "--json", *extra]).stdout
    return json.loads(out)


# ----------------------------------------------------------------- checkpoints --

def make_models(a, work):
    """Random Laya checkpoint -> GGUF f32 (same values as torch fp32) and Q8_0."""
    laya_dir = os.path.join(work, a.preset)  # named like the preset: convert keeps the name
    gguf = os.path.join(work, a.preset + ".f32.gguf")
    q8 = os.path.join(work, a.preset + ".q8_0.gguf")
    if not os.path.isdir(laya_dir):
        run([a.skycmd, "random", a.preset, laya_dir, "--layout", "laya", "--seed", a.seed])
        max_len = getattr(a, "max_len", None)
        if max_len:  # a longer sequence budget than the preset's (both runtimes read it)
            cfg_path = os.path.join(laya_dir, "rl_agent_config.json")
            with open(cfg_path) as f:
                cfg = json.load(f)
            cfg["max_len"] = int(max_len)
            with open(cfg_path, "w") as f:
                json.dump(cfg, f, indent=2)
    if not os.path.exists(gguf):
        run([a.skycmd, "convert", laya_dir, gguf, "--type", "f32"])
    if not os.path.exists(q8):
        run([a.skycmd, "quantize", gguf, q8, "--type", "q8_0"])
    req_path = os.path.join(work, "request-%s-%s.json" % (a.preset, a.tokens or 0))
    extra = ["--questions", "3"] + (["--tokens", a.tokens] if a.tokens else [])
    run([a.skycmd, "bench", gguf, *extra, "--save-request", req_path])
    with open(req_path) as f:
        body = json.load(f)
    return laya_dir, gguf, q8, body


# ----------------------------------------------------------------- python laya --

class PyLaya:
    def __init__(self, laya_dir, threads, work):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ["OMP_NUM_THREADS"] = str(threads)
        import torch  # after OMP_NUM_THREADS
        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass
        from laya.agent import Agent
        # laya may rewrite tokenizer_config.json in place: load a copy
        copy = os.path.join(work, "pylaya-" + os.path.basename(laya_dir))
        if not os.path.isdir(copy):
            shutil.copytree(laya_dir, copy)
        t0 = time.perf_counter()
        self.agent = Agent(copy, device="cpu")
        self.load_s = time.perf_counter() - t0
        self.torch = torch

    def time_call(self, state, questions):
        t0 = time.perf_counter()
        self.agent.system_one(state, questions)
        return time.perf_counter() - t0

    def round(self, body, iters):
        """Per-kind single-question medians and the full request's per-question median."""
        state, qs = body["state"], body["questions"]
        single = {k: [] for k in KINDS}
        for _ in range(iters):
            for k in KINDS:
                single[k].append(self.time_call(state, {k: qs[k]}))
        full = [self.time_call(state, qs) / len(qs) for _ in range(iters)]
        allv = [v for k in KINDS for v in single[k]]
        return {"single_median_s": median(allv),
                "single_kind_median_s": {k: median(single[k]) for k in KINDS},
                "per_question_s": median(full)}


def sky_round(a, gguf, threads, iters, extra=()):
    ex = ["--questions", "3", "--threads", threads, "--iters", iters, "--warmup", "2",
          "--peak-ms", "0", *extra]
    if a.tokens:
        ex += ["--tokens", a.tokens]
    j = bench_json(a.skycmd, gguf, a, ex)
    return {"single_median_s": j["single_question"]["median_ms"] / 1e3,
            "single_kind_median_s": {KINDS[i]: j["kinds"][k]["single"]["median_ms"] / 1e3
                                     for i, k in enumerate(("choice", "noul", "score"))},
            "per_question_s": j["per_question"]["median_ms"] / 1e3,
            "request_cpu_s": j["request_cpu"]["median_ms"] / 1e3,
            "gflops": j["gflops"], "gflops_per_cpu_s": j["gflops_per_cpu_s"],
            "load_ms": j["load_ms"], "peak_rss_bytes": j["peak_rss_bytes"],
            "gguf_bytes": j["gguf_bytes"], "request_tokens": j["request_tokens"],
            "kinds": j["kinds"]}


def suite_inproc(a, laya_dir, gguf, body, work, res):
    py = PyLaya(laya_dir, a.threads, work)
    log("python laya loaded in %.2f s" % py.load_s)
    for _ in range(a.py_warmup):  # torch's first calls allocate and pick kernels
        py.time_call(body["state"], body["questions"])
    rounds = []
    for r in range(a.rounds):
        la = loadavg()
        s = sky_round(a, gguf, a.threads, a.sky_iters)
        p = py.round(body, a.py_iters)
        rounds.append({"loadavg": la, "skycmd": s, "laya": p})
        log("round %d: load %.2f skycmd %.3f ms/q laya %.3f ms/q -> %.1fx" % (
            r + 1, la or -1, s["single_median_s"] * 1e3, p["single_median_s"] * 1e3,
            p["single_median_s"] / s["single_median_s"]))
    sk = median([x["skycmd"]["single_median_s"] for x in rounds])
    pl = median([x["laya"]["single_median_s"] for x in rounds])
    skf = median([x["skycmd"]["per_question_s"] for x in rounds])
    plf = median([x["laya"]["per_question_s"] for x in rounds])
    res["inproc"] = {
        "rounds": rounds, "threads": a.threads, "laya_load_s": py.load_s,
        "skycmd_single_ms": sk * 1e3, "laya_single_ms": pl * 1e3, "ratio_single": pl / sk,
        "skycmd_per_question_ms": skf * 1e3, "laya_per_question_ms": plf * 1e3,
        "ratio_per_question": plf / skf,
        "skycmd_gflops": median([x["skycmd"]["gflops"] for x in rounds]),
        "skycmd_gflops_per_cpu_s": median([x["skycmd"]["gflops_per_cpu_s"] for x in rounds]),
        "loadavg": median([x["loadavg"] for x in rounds]),
    }


# ----------------------------------------------------------------- http ---------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_health(port, proc, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=1)
            c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = c.recv(4096)
            c.close()
            if b" 200 " in data.split(b"\r\n", 1)[0]:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("server on port %d did not become healthy" % port)


class KeepAlive:
    """One HTTP/1.1 connection, prebuilt request bytes, minimal response parsing."""

    def __init__(self, port, path, body):
        self.port = port
        self._connect()
        b = json.dumps(body).encode()
        self.req = (("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\n\r\n") % (path, len(b))).encode() + b

    def _connect(self):
        self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.left = None  # requests this connection may still carry (Keep-Alive: max=N)

    def once(self):
        # Servers may cap the requests of one connection (llama-server's cpp-httplib sends
        # "Keep-Alive: timeout=5, max=100" and then closes): open a new one beforehand, so
        # the reconnection is never inside a timed request.
        if self.left is not None and self.left <= 0:
            self.sock.close()
            self._connect()
        t0 = time.perf_counter()
        self.sock.sendall(self.req)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        head, rest = self.buf.split(b"\r\n\r\n", 1)
        m = re.search(rb"(?i)content-length:\s*(\d+)", head)
        if not m:
            raise RuntimeError("response without Content-Length: %r" % head[:200])
        n = int(m.group(1))
        while len(rest) < n:
            rest += self._recv()
        self.buf = rest[n:]
        dt = time.perf_counter() - t0
        ka = re.search(rb"(?i)\r\nkeep-alive:[^\r]*max=(\d+)", head)
        if re.search(rb"(?i)\r\nconnection:\s*close", head):
            self.left = 0
        elif ka:
            self.left = int(ka.group(1)) - 1 if self.left is None else self.left - 1
        status = head.split(b" ", 2)[1]
        if status != b"200":
            raise RuntimeError("HTTP %s: %r" % (status.decode(), rest[:300]))
        return dt

    def _recv(self):
        d = self.sock.recv(65536)
        if not d:
            raise RuntimeError("connection closed by the server")
        return d

    def close(self):
        self.sock.close()


def wrk_run(port, path, body, seconds, conns, threads, work):
    if not shutil.which("wrk"):
        return None
    lua = os.path.join(work, "post.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                "wrk.body = [==[%s]==]\n" % json.dumps(body))
    out = run(["wrk", "-t", threads, "-c", conns, "-d", "%ds" % seconds, "--latency", "-s", lua,
               "http://127.0.0.1:%d%s" % (port, path)]).stdout
    rps = re.search(r"Requests/sec:\s*([\d.]+)", out)
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    unit = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    return {"requests_per_s": float(rps.group(1)) if rps else None,
            "p50_ms": float(p50.group(1)) * unit[p50.group(2)] if p50 else None,
            "non_2xx": int(non2xx.group(1)) if non2xx else 0}


def suite_http(a, gguf, body, work, res):
    servers = []
    # one `skycmd serve` per --compute-threads value (a comma list: same-run A/B)
    variants = [v for v in a.serve_compute_threads.split(",") if v]
    for v in variants:
        ct, _, binary = v.partition("@")  # "auto@/path/to/other/skycmd": an A/B of two builds
        # "auto+--inline-max-us=0": extra serve flags after '+' (FLAG=VALUE), same build
        ct, *flags = ct.split("+")
        extra = [x for f in flags for x in f.split("=", 1)]
        port = free_port()
        sky = subprocess.Popen([binary or a.skycmd, "serve", "--model", "%s=%s" % (a.preset, gguf),
                                "--port", str(port), "--threads", str(a.threads),
                                "--compute-threads", ct] + extra,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers.append(("skycmd serve" if len(variants) == 1 else "skycmd serve ct=%s" % v,
                        sky, port))
    llama = a.llama_server or os.environ.get("LLAMA_SERVER")
    if llama and os.path.exists(llama):
        lport = free_port()
        lp = subprocess.Popen([llama, "-m", gguf, "-c", "256", "--host", "127.0.0.1", "--port",
                               str(lport), "-ngl", "0", "-t", str(a.threads)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers.append(("llama-server", lp, lport))
    else:
        log("llama-server: no binary given (--llama-server PATH or $LLAMA_SERVER): skipped")
    out = {"threads": a.threads, "llama_server": any(n == "llama-server" for n, _, _ in servers),
           "rounds": []}
    try:
        for _, p, pt in servers:
            wait_health(pt, p)
        one = {"state": body["state"], "questions": {"action": body["questions"]["action"]}}
        for name, req in (("one_question", one), ("request", body)):
            conns = {n: KeepAlive(pt, "/v1/systemone", req) for n, _, pt in servers}
            for c in conns.values():
                for _ in range(a.http_warmup):
                    c.once()
            per = {n: [] for n in conns}
            for r in range(a.rounds):
                la = loadavg()
                # request by request (A, B, A, B ...): a burst of other load on a shared
                # machine then slows every server alike instead of one server's block
                ts = {n: [] for n in conns}
                for _ in range(a.http_iters):
                    for n, c in conns.items():
                        ts[n].append(c.once())
                        if a.http_gap_ms > 0:
                            # a quiet gap after every request: no server then answers while
                            # the previous one's threads still spin (llama-server polls
                            # after a job), which the back-to-back order puts on whichever
                            # server follows it
                            time.sleep(a.http_gap_ms / 1e3)
                for n in conns:
                    per[n].append(median(ts[n]))
                out["rounds"].append({"what": name, "loadavg": la,
                                      **{n: per[n][-1] * 1e3 for n in per}})
            for c in conns.values():
                c.close()
            out[name] = {n: median(v) * 1e3 for n, v in per.items()}
            log("http %s median ms: %s" % (name, out[name]))
        if a.wrk_seconds > 0:
            # wrk -c1: a C client on one keep-alive connection (no Python in the loop), with
            # the one-question body; then -c64 with the 3-question request for throughput
            for key, req, conns, thr in (("wrk1", one, 1, 1), ("wrk64", body, 64, 2)):
                w = {n: [] for n, _, _ in servers}
                for r in range(a.wrk_rounds):
                    for n, _, pt in servers:
                        w[n].append(wrk_run(pt, "/v1/systemone", req, a.wrk_seconds, conns, thr,
                                            work))
                out[key] = {n: {"requests_per_s": median([x["requests_per_s"] for x in v if x]),
                                "p50_ms": median([x["p50_ms"] for x in v if x]),
                                "non_2xx": sum(x["non_2xx"] for x in v if x)}
                            for n, v in w.items()}
                log("wrk %s: %s" % (key, out[key]))
    finally:
        for _, p, _ in servers:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    res["http"] = out


# ----------------------------------------------------------------- skycmd only --

def suite_pair(a, gguf, label, variants, res, iters):
    """Interleave several `skycmd bench` variants: [(name, gguf, threads, extra)]."""
    rounds = []
    for r in range(a.rounds):
        la = loadavg()
        row = {"loadavg": la}
        for name, g, th, extra in variants:
            row[name] = sky_round(a, g, th, iters, extra)
        rounds.append(row)
        log("%s round %d (load %.2f): %s" % (label, r + 1, la or -1, ", ".join(
            "%s %.2f ms/q" % (n, row[n]["per_question_s"] * 1e3) for n, *_ in variants)))
    out = {"rounds": rounds, "loadavg": median([x["loadavg"] for x in rounds])}
    for name, *_ in variants:
        out[name] = {k: median([x[name][k] for x in rounds])
                     for k in ("per_question_s", "single_median_s", "request_cpu_s", "gflops",
                               "gflops_per_cpu_s", "peak_rss_bytes", "gguf_bytes")}
    res[label] = out


def suite_load(a, res):
    """s1-micro load time (open + first session) and RSS; f32 and Q8_0 files."""
    work = tempfile.mkdtemp(prefix="skycmd-load-")
    try:
        f32 = os.path.join(work, "s1-micro.f32.gguf")
        q8 = os.path.join(work, "s1-micro.q8_0.gguf")
        run([a.skycmd, "random", "s1-micro", f32, "--type", "f32", "--seed", a.seed])
        run([a.skycmd, "random", "s1-micro", q8, "--type", "q8_0", "--seed", a.seed])
        loads = {"f32": [], "q8": []}
        for _ in range(max(a.rounds, 5)):
            for name, g, ex in (("f32", f32, []), ("q8", q8, ["--q8"])):
                j = bench_json(a.skycmd, g, a, ["--iters", "5", "--warmup", "0", "--no-single",
                                                "--peak-ms", "0", *ex])
                loads[name].append(j)
        res["load_micro"] = {n: {"load_ms": median([j["load_ms"] for j in v]),
                                 "open_ms": median([j["open_ms"] for j in v]),
                                 "peak_rss_bytes": median([j["peak_rss_bytes"] for j in v]),
                                 "gguf_bytes": v[0]["gguf_bytes"]} for n, v in loads.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------- main ---------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skycmd", required=True, help="path of the built skycmd CLI")
    ap.add_argument("--preset", default="s1-pico")
    ap.add_argument("--seed", default="42")
    ap.add_argument("--tokens", type=int, default=0, help="about N tokens per sequence")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--threads2", type=int, default=2, help="the 'threads' suite's N")
    ap.add_argument("--suite", default="inproc,http",
                    help="comma list: inproc, http, threads, q8, load")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sky-iters", type=int, default=200, help="skycmd bench --iters per round")
    ap.add_argument("--py-iters", type=int, default=30, help="laya calls per kind per round")
    ap.add_argument("--py-warmup", type=int, default=3)
    ap.add_argument("--http-iters", type=int, default=300)
    ap.add_argument("--http-warmup", type=int, default=20)
    ap.add_argument("--http-gap-ms", type=float, default=0.0,
                    help="http suite: sleep this long after every keep-alive request (a "
                         "client's think time; 0 = back to back)")
    ap.add_argument("--wrk-seconds", type=int, default=5, help="0 = skip wrk")
    ap.add_argument("--wrk-rounds", type=int, default=2)
    ap.add_argument("--llama-server", help="llama-server binary with /v1/systemone")
    ap.add_argument("--serve-compute-threads", default="auto",
                    help="skycmd serve --compute-threads (auto: a lone request uses the idle "
                    "cores; 1: one core per request, the figures of section 3); a comma list "
                    "(auto,1) runs one server per value in the same interleaved rounds; VALUE@PATH "
                    "runs that value with another skycmd binary (before/after A/B); "
                    "VALUE+--FLAG=X adds serve flags (auto+--inline-max-us=0)")
    ap.add_argument("--work", help="keep the checkpoints here (default: a temp dir)")
    ap.add_argument("--out", help="write the results as JSON")
    a = ap.parse_args()
    a.skycmd = os.path.abspath(a.skycmd)
    suites = [s for s in a.suite.split(",") if s]
    for s in suites:
        if s not in ("inproc", "http", "threads", "thread_scaling", "q8", "int8", "load"):
            ap.error("unknown suite '%s'" % s)
    work = a.work or tempfile.mkdtemp(prefix="skycmd-compare-")
    os.makedirs(work, exist_ok=True)
    res = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "preset": a.preset, "tokens": a.tokens,
           "threads": a.threads, "argv": sys.argv, "loadavg_start": loadavg(),
           "nproc": os.cpu_count(),
           "skycmd_version": run([a.skycmd, "--version"]).stdout.strip()}
    try:
        laya_dir, gguf, q8, body = make_models(a, work)
        if "inproc" in suites:
            suite_inproc(a, laya_dir, gguf, body, work, res)
        if "http" in suites:
            suite_http(a, gguf, body, work, res)
        if "threads" in suites or "thread_scaling" in suites:
            suite_pair(a, gguf, "thread_scaling", [("t1", gguf, 1, []),
                                            ("t%d" % a.threads2, gguf, a.threads2, [])],
                       res, a.sky_iters)
        if "q8" in suites or "int8" in suites:
            suite_pair(a, gguf, "int8", [("f32", gguf, a.threads, ["--f32"]),
                                       ("q8-fast", gguf, a.threads, ["--q8-fast"]),
                                       ("q8", gguf, a.threads, ["--q8"]),
                                       ("q8_0-file-q8", q8, a.threads, ["--q8"])],
                       res, a.sky_iters)
        if "load" in suites:
            suite_load(a, res)
    finally:
        res["loadavg_end"] = loadavg()
        if a.out:
            with open(a.out, "w") as f:
                json.dump(res, f, indent=1)
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    print(report(res))


def report(res):
    L = ["## %s, %s tokens, %d thread(s) -- %s (load average %s -> %s, %s CPUs)" % (
        res["preset"], res["tokens"] or "example", res["threads"], res["date"],
        res["loadavg_start"], res["loadavg_end"], res["nproc"])]
    if "inproc" in res:
        r = res["inproc"]
        L += ["", "| in-process, one question | skycmd | Python laya | ratio |", "|---|---|---|---|",
              "| median latency (single-question requests) | %.3f ms | %.3f ms | %.1fx |" % (
                  r["skycmd_single_ms"], r["laya_single_ms"], r["ratio_single"]),
              "| per question in a 3-question request | %.3f ms | %.3f ms | %.1fx |" % (
                  r["skycmd_per_question_ms"], r["laya_per_question_ms"], r["ratio_per_question"]),
              "", "skycmd: %.1f GFLOP/s (%.1f per CPU-second); median load average %.2f" % (
                  r["skycmd_gflops"], r["skycmd_gflops_per_cpu_s"], r["loadavg"] or -1)]
    if "http" in res:
        h = res["http"]
        L += ["", "| HTTP keep-alive, one connection | " + " | ".join(
            k for k in h["one_question"]) + " |", "|---|" + "---|" * len(h["one_question"])]
        for what in ("one_question", "request"):
            L.append("| %s median | " % what + " | ".join(
                "%.3f ms" % v for v in h[what].values()) + " |")
        if "wrk1" in h:
            L.append("| wrk -c1 -t1 (one question) p50 | " + " | ".join(
                "%.3f ms (%.0f req/s)" % (v["p50_ms"] or 0, v["requests_per_s"] or 0)
                for v in h["wrk1"].values()) + " |")
        if "wrk64" in h:
            L.append("| wrk -c64 -t2 (3-question request) req/s | " + " | ".join(
                "%.0f (p50 %.2f ms, non-2xx %d)" % (v["requests_per_s"] or 0, v["p50_ms"] or 0,
                                                    v["non_2xx"]) for v in h["wrk64"].values()) + " |")
        if h["llama_server"]:
            for what in ("one_question", "request"):
                v = h[what]
                L.append("| %s: llama-server / skycmd | " % what + " | ".join(
                    "%.2fx" % (v["llama-server"] / v[k]) if k != "llama-server" else "1"
                    for k in v) + " |")
        if not h["llama_server"]:
            L.append("\nllama-server: not available on this machine (no binary given): skipped.")
    for label in ("thread_scaling", "int8"):
        if label in res:
            r = res[label]
            names = [k for k in r if k not in ("rounds", "loadavg")]
            base = r[names[0]]["per_question_s"]
            L += ["", "| %s | ms/question (3-q request) | single q | CPU ms/request | GFLOP/s | "
                  "GFLOP/CPU-s | peak RSS / its GGUF | speed-up (wall) | speed-up (CPU time) |"
                  % label, "|---|---|---|---|---|---|---|---|---|"]
            t0 = r[names[0]]["request_cpu_s"]
            for n in names:
                v = r[n]
                # CPU time: for N threads, the wall time the request would take with N free
                # cores is at least CPU time / N; with 1 thread it is the CPU time itself.
                nthr = int(n[1:]) if label == "thread_scaling" and n[1:].isdigit() else 1
                L.append("| %s | %.2f | %.2f | %.1f | %.1f | %.1f | %.2f | %.2fx | %.2fx |" % (
                    n, v["per_question_s"] * 1e3, v["single_median_s"] * 1e3,
                    v["request_cpu_s"] * 1e3, v["gflops"], v["gflops_per_cpu_s"],
                    v["peak_rss_bytes"] / v["gguf_bytes"], base / v["per_question_s"],
                    t0 / (v["request_cpu_s"] / nthr)))
            L.append("\nmedian load average %.2f" % (r["loadavg"] or -1))
    if "load_micro" in res:
        L += ["", "| s1-micro | load (open + session) | open | peak RSS | GGUF | RSS/GGUF |",
              "|---|---|---|---|---|---|"]
        for n, v in res["load_micro"].items():
            L.append("| %s | %.2f ms | %.2f ms | %.1f MB | %.1f MB | %.2f |" % (
                n, v["load_ms"], v["open_ms"], v["peak_rss_bytes"] / 1e6, v["gguf_bytes"] / 1e6,
                v["peak_rss_bytes"] / v["gguf_bytes"]))
    return "\n".join(L)


if __name__ == "__main__":
    main()
