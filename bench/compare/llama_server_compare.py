#!/usr/bin/env python3
"""llama_server_compare.py - check a skycmd GGUF against llama.cpp's own llama-server.

Given the path of an EXISTING llama-server binary (this script never builds or fetches
llama.cpp), it:
  1. starts `llama-server -m MODEL -c CTX --host 127.0.0.1 --port P -ngl 0` (loopback only)
     and reports whether the GGUF loads (the server log tail is printed if it does not);
  2. sends each request (the given files, plus built-in 6- and 11-option choice, score and
     noul requests) to its POST /v1/systemone and runs `skycmd decide MODEL REQUEST` on the
     same body, then compares: top-level / usage / answer keys, answer types, choices,
     max |dp| over all probabilities (and noul / score values), and usage.input_tokens;
  3. with --bench N, times flappy-drone-like requests over one keep-alive connection per
     server, interleaved (llama, ours, llama, ours ...), against `skycmd serve --model MODEL`
     and reports both medians and their ratio.

Differences that the spec (laya-and-llamacpp-spec.md section 8) expects are not errors:
llama.cpp rejects list criteria and noul labels, uses unclamped temperatures, tanh-GELU in
the encoder FFN, F16 activations for F16 weights, and no NFC normalisation.

Usage:
  python3 bench/compare/llama_server_compare.py --llama-server /path/to/llama-server \
      --skycmd build/skycmd --model /tmp/p.gguf [--bench 200] [REQUEST.json ...]
Exit status 0 when the model loads and every comparable answer has the same keys and choice.
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_health(port, proc, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            r = c.getresponse()
            r.read()
            c.close()
            if r.status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def post(conn, body):
    conn.request("POST", "/v1/systemone", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, {"raw": data.decode("utf-8", "replace")}


def builtin_requests():
    def choice(n):
        return {"state": "the agent sees %d doors, some of them open" % n,
                "questions": {"pick": {"type": "choice",
                                       "instructions": "Which door should the agent open?",
                                       "criteria": {"door%d" % i: "door number %d" % i for i in range(n)}}}}
    return {
        "choice-6": choice(6),
        "choice-11": choice(11),
        # several scripts in state, instructions and options (the Gemma-style tokenizers of
        # mmBERT-shaped models; byte-level BPE models take it as well)
        "multilingual": {"state": {"de": "Die Drohne fliegt über den Fluss", "ja": "風が強くなっています",
                                   "ar": "البطارية منخفضة", "hi": "बारिश शुरू हो गई है", "ru": "видимость плохая",
                                   "emoji": "🚁💨"},
                         "questions": {"accion": {"type": "choice",
                                                  "instructions": "¿Qué debe hacer el dron? 何をすべきか",
                                                  "criteria": {"aterrizar": "atterrir tout de suite",
                                                               "volver": "zurück zur Basis",
                                                               "seguir": "продолжать полёт"}},
                                       "riesgo": {"type": "score", "instructions": "Wie hoch ist das Risiko?",
                                                  "criteria": ["低い", "mittel", "عالية"]}}},
        "score-5+noul": {"state": {"temp": 21, "note": "window open"},
                         "questions": {"comfort": {"type": "score", "instructions": "How comfortable is the room?",
                                                   "criteria": ["cold", "cool", "fine", "warm", "hot"]},
                                       "open": {"type": "noul", "instructions": "Is the window open?",
                                                "criteria": {"true": "it is open"}}}},
    }


def compare(name, lc, ours):
    """Returns (ok, lines, max_dp)."""
    lines, ok, max_dp = [], True, 0.0
    if set(lc) != set(ours):
        lines.append("top-level keys differ: llama %s ours %s" % (sorted(lc), sorted(ours)))
        ok = False
    if lc.get("usage") != ours.get("usage"):
        lines.append("usage differs: llama %s ours %s" % (lc.get("usage"), ours.get("usage")))
    la, oa = lc.get("answers", {}), ours.get("answers", {})
    if list(la) != list(oa):
        lines.append("answer ids/order differ: llama %s ours %s" % (list(la), list(oa)))
        ok = False
    for qid in la:
        a, b = la[qid], oa.get(qid, {})
        if list(a) != list(b):
            lines.append("%s: keys differ: llama %s ours %s" % (qid, list(a), list(b)))
            ok = False
        if a.get("type") == "choice" and a.get("choice") != b.get("choice"):
            lines.append("%s: choice differs: llama %s ours %s" % (qid, a.get("choice"), b.get("choice")))
            ok = False
        pa, pb = a.get("probabilities", {}), b.get("probabilities", {})
        if list(pa) != list(pb):
            lines.append("%s: probability keys differ" % qid)
            ok = False
        for k in pa:
            if k in pb:
                max_dp = max(max_dp, abs(pa[k] - pb[k]))
        for f in ("noul", "score", "confidence"):
            if f in a and f in b:
                d = abs(a[f] - b[f])
                if f == "noul":
                    max_dp = max(max_dp, d)
                if d > 1e-3:
                    lines.append("%s: %s llama %.6f ours %.6f" % (qid, f, a[f], b[f]))
    return ok, lines, max_dp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-server", required=True, help="path of an existing llama-server binary")
    ap.add_argument("--skycmd", required=True, help="path of the skycmd CLI")
    ap.add_argument("--model", required=True, help="GGUF written by skycmd")
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--llama-arg", action="append", default=[], help="extra llama-server argument")
    ap.add_argument("--bench", type=int, default=0, help="requests per server for the latency run")
    ap.add_argument("--bench-request", default=None, help="request for the latency run (default: first file)")
    ap.add_argument("requests", nargs="*")
    a = ap.parse_args()

    reqs = {}
    for path in a.requests:
        with open(path, encoding="utf-8") as f:
            reqs[os.path.basename(path)] = json.load(f)
    reqs.update(builtin_requests())

    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
    cmd = [a.llama_server, "-m", a.model, "-c", str(a.ctx), "--host", "127.0.0.1",
           "--port", str(port), "-ngl", "0"] + a.llama_arg
    print("$", " ".join(cmd))
    lsrv = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    osrv = None
    status = 0
    try:
        if not wait_health(port, lsrv, 120):
            log.flush()
            with open(log.name, encoding="utf-8", errors="replace") as f:
                tail = f.read()[-4000:]
            print("LOAD FAILED (exit %s); log tail:\n%s" % (lsrv.poll(), tail))
            return 2
        print("load: OK (GET /health 200), log in", log.name)
        lconn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        overall = 0.0
        for name, req in reqs.items():
            body = json.dumps(req).encode()
            # a new connection per request: llama-server closes one idle for 5 s, and a large
            # model's `skycmd decide` below takes longer than that
            lconn.close()
            lconn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            st, lc = post(lconn, body)
            with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as t:
                t.write(body)
            p = subprocess.run([a.skycmd, "decide", a.model, t.name], capture_output=True, text=True)
            os.unlink(t.name)
            try:
                ours = json.loads(p.stdout)
            except ValueError:
                ours = {"error": p.stderr.strip()}
            print("\n== %s: llama-server HTTP %d, skycmd decide exit %d" % (name, st, p.returncode))
            if st != 200 or p.returncode != 0:
                print("  llama:", json.dumps(lc)[:400])
                print("  ours :", json.dumps(ours)[:400] if p.returncode == 0 else p.stderr.strip()[:400])
                continue
            ok, lines, dp = compare(name, lc, ours)
            overall = max(overall, dp)
            for qid, ans in lc["answers"].items():
                print("  %-12s llama %s | ours %s" % (qid, json.dumps(ans)[:150], json.dumps(ours["answers"].get(qid))[:150]))
            print("  input_tokens llama %s ours %s; max |dp| %.3g; shape/choices %s" % (
                lc["usage"].get("input_tokens"), ours["usage"].get("input_tokens"), dp, "same" if ok else "DIFFER"))
            for ln in lines:
                print("   -", ln)
            if not ok:
                status = 1
        print("\nmax |dp| over all compared requests: %.3g" % overall)

        if a.bench > 0:
            bpath = a.bench_request or (a.requests[0] if a.requests else None)
            body = json.dumps(json.load(open(bpath, encoding="utf-8")) if bpath else reqs["choice-6"]).encode()
            oport = free_port()
            osrv = subprocess.Popen([a.skycmd, "serve", "--model", a.model, "--host", "127.0.0.1",
                                     "--port", str(oport)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if not wait_health(oport, osrv, 60):
                print("skycmd serve did not start")
                return 2
            oconn = http.client.HTTPConnection("127.0.0.1", oport, timeout=60)
            for _ in range(10):  # warm both
                post(lconn, body)
                post(oconn, body)
            tl, to = [], []
            for _ in range(a.bench):
                t0 = time.perf_counter(); s1, _r = post(lconn, body); tl.append(time.perf_counter() - t0)
                t0 = time.perf_counter(); s2, _r = post(oconn, body); to.append(time.perf_counter() - t0)
                if s1 != 200 or s2 != 200:
                    print("bench: non-200 answer (llama %d, ours %d)" % (s1, s2))
                    return 2
            ml, mo = statistics.median(tl) * 1e3, statistics.median(to) * 1e3
            print("\nlatency over one keep-alive connection, %d interleaved requests each (%s):" % (a.bench, bpath or "choice-6"))
            print("  llama-server median %.3f ms (p90 %.3f)" % (ml, sorted(tl)[int(0.9 * len(tl))] * 1e3))
            print("  skycmd serve median %.3f ms (p90 %.3f)" % (mo, sorted(to)[int(0.9 * len(to))] * 1e3))
            print("  ratio llama/ours %.2f" % (ml / mo))
        return status
    finally:
        for pr in (lsrv, osrv):
            if pr is not None and pr.poll() is None:
                pr.terminate()
                try:
                    pr.wait(10)
                except subprocess.TimeoutExpired:
                    pr.kill()


if __name__ == "__main__":
    sys.exit(main())
