#!/usr/bin/env python3
"""ort_peer.py - ONNX Runtime as a peer of libskycmd, run by hand (never in a timed test).

For each preset (random Laya checkpoint, `skycmd random PRESET DIR --layout laya`), token
length and thread count it measures, interleaved round by round (A, B, C, ... A, B, C):

  skycmd f32        `skycmd bench GGUF --json` (our library in-process, a subprocess a round)
  skycmd q8-fast    the same with --q8-fast (int8 weights made at load)
  skycmd q8         --q8 on the file `skycmd quantize --calibrated` made (the recommended
                    int8 deployment; made once, kept in --work)
  skycmd q8-row     --q8-row (q8-row-fast: and --q8-fast) on the file `skycmd quantize
                    --calibrated --q8-row` made (made once, kept in --work)
                    (--sky picks the variants: also f32-avx512 / q8-fast-vnni, the same with
                    SKYCMD_KERNELS=avx512, i.e. no AMX, and bf16x3, bench --bf16x3)
  ort fp32          the laya model exported with torch.onnx.export (the five inputs and two
                    outputs laya.onnx_agent.ONNXAgent feeds and reads), run
                    (1) through ONNXAgent.system_one (tokenizer + collation + run + decode)
                    (2) through a plain onnxruntime.InferenceSession.run on prebuilt inputs
  ort int8          onnxruntime.quantization.quantize_dynamic(fp32 graph), both ways
  torch eager       (optional, --torch) laya.agent.Agent.system_one, torch fp32 eager

ORT sessions: CPUExecutionProvider, intra_op_num_threads = T, inter_op_num_threads = 1,
ORT_SEQUENTIAL, graph_optimization_level = ORT_ENABLE_ALL (what ONNXAgent sets; it sets no
thread count, so the agent's session is replaced by one with the same options plus T).
torch: torch.set_num_threads(T). skycmd: --threads T.

Timed unit: one single-question request per kind (choice, noul, score of the flappy-drone
request, its state grown to about --tokens tokens), interleaved; figure = median over rounds
of per-round medians over all kinds (as compare.py's "single question").

Accuracy: max and mean |dp| against laya fp32 (torch Agent) over every probability of
--acc-requests 3-question requests (the example's state, then its steps rotated; choice and
score probabilities, the noul value), for ORT fp32/int8 (via ONNXAgent) and skycmd f32 /
--q8-fast / --q8-row (`skycmd decide --batch`). One request holds only 6 probabilities, and
the max over so few is a single draw of an int8 method's rounding noise. laya rounds its probabilities to 4 digits; the
module-level `round` of laya.agent and laya.onnx_agent is replaced by the identity here so
the full values are compared.

Needs the reference venv plus bench/compare/requirements.txt (onnxruntime, onnx, onnxscript).
Example:
  /tmp/gvenv/bin/python bench/compare/ort_peer.py --skycmd build/skycmd \
      --presets base,large --tokens 128,512 --threads 1,2 --rounds 3 --out /tmp/ort.json
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402  (checkpoint making, skycmd bench rounds, logging)

KINDS = C.KINDS


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ----------------------------------------------------------------- export -------

def export_onnx(laya_dir, onnx_path, work):
    """torch.onnx.export of laya's model with the inputs/outputs ONNXAgent uses."""
    import torch
    from laya.agent import Agent
    copy = os.path.join(work, "export-" + os.path.basename(laya_dir))
    if not os.path.isdir(copy):
        shutil.copytree(laya_dir, copy)
    model = Agent(copy, device="cpu").model.eval()
    # Dummy batch: 2 rows of different lengths, 3 marker columns with one masked slot (the
    # exported head takes topk(2), so ONNXAgent always sends >= 2 marker columns).
    B, L = 2, 48
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 200, (B, L), generator=g)
    att = torch.ones(B, L, dtype=torch.int64)
    att[1, 30:] = 0
    mpos = torch.tensor([[3, 10, 20], [4, 12, 0]])
    mmask = torch.tensor([[True, True, True], [True, True, False]])
    qtype = torch.tensor([0, 2])
    names = ["input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype"]
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
           "marker_pos": {0: "batch", 1: "markers"}, "marker_mask": {0: "batch", 1: "markers"},
           "qtype": {0: "batch"}, "logits": {0: "batch", 1: "markers"},
           "act_logits": {0: "batch"}}
    # nn.TransformerEncoderLayer's inference fast path (aten::_transformer_encoder_layer_fwd)
    # has no ONNX form: export the plain modules (the same maths)
    torch.backends.mha.set_fastpath_enabled(False)
    t0 = time.perf_counter()
    with torch.no_grad():
        try:
            # the TorchScript exporter: laya's _DynamicMultiheadAttention exists for it
            torch.onnx.export(model, (ids, att, mpos, mmask, qtype), onnx_path,
                              input_names=names, output_names=["logits", "act_logits"],
                              dynamic_axes=dyn, opset_version=17, dynamo=False)
            how = "torch.onnx.export(dynamo=False, opset 17)"
        except Exception as e:  # the dynamo exporter as a fallback
            C.log("legacy exporter failed (%s); trying dynamo=True" % e)
            torch.onnx.export(model, (ids, att, mpos, mmask, qtype), onnx_path,
                              input_names=names, output_names=["logits", "act_logits"],
                              dynamic_axes=dyn, dynamo=True)
            how = "torch.onnx.export(dynamo=True)"
    C.log("exported %s in %.1f s (%s)" % (onnx_path, time.perf_counter() - t0, how))
    return how


def quantize_int8(fp32_path, int8_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    t0 = time.perf_counter()
    quantize_dynamic(fp32_path, int8_path, weight_type=QuantType.QInt8)
    C.log("quantize_dynamic -> %s in %.1f s" % (int8_path, time.perf_counter() - t0))


# ----------------------------------------------------------------- runtimes -----

def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


class OrtPeer:
    """ONNXAgent over one graph, its session rebuilt with T threads, plus prebuilt inputs."""

    def __init__(self, laya_dir, onnx_path, threads, body, work, tag):
        from laya.onnx_agent import ONNXAgent, _collate_items_numpy
        copy = os.path.join(work, "ort-%s-%s" % (tag, os.path.basename(laya_dir)))
        if not os.path.isdir(copy):
            shutil.copytree(laya_dir, copy)
        self.agent = ONNXAgent(copy, onnx_path=onnx_path)
        self.agent.session = ort_session(onnx_path, threads)
        self.sess = self.agent.session
        a = self.agent
        state, qs = body["state"], body["questions"]
        max_len = a.cfg.get("max_len", 512)
        head_max_len = a.cfg.get("head_max_len", 192)
        self.inputs = {}
        for k in KINDS:
            internal = {k: a._to_internal(qs[k])}
            items = a._encode_state(state, [k], internal, max_len, head_max_len)
            self.inputs[k] = _collate_items_numpy([items], a.tok.pad_token_id)
        ids = list(qs)
        internal = {k: a._to_internal(qs[k]) for k in ids}
        self.full = _collate_items_numpy([a._encode_state(state, ids, internal, max_len, head_max_len)],
                                         a.tok.pad_token_id)
        self.tokens = {k: int(self.inputs[k]["attention_mask"].sum()) for k in KINDS}

    def agent_call(self, state, q):
        t0, c0 = time.perf_counter(), time.process_time()
        self.agent.system_one(state, q)
        return time.perf_counter() - t0, time.process_time() - c0

    def run_call(self, inputs):
        t0, c0 = time.perf_counter(), time.process_time()
        self.sess.run(["logits", "act_logits"], inputs)
        return time.perf_counter() - t0, time.process_time() - c0

    def round(self, body, iters, request_only=False):
        """Single-question calls per kind, then the 3-question request (one run of 3 rows).
        request_only: one single question of one kind through each path, for big models."""
        state, qs = body["state"], body["questions"]
        ag, rn, agr, rnr = [], [], [], []
        for _ in range(iters):
            for k in (KINDS[:1] if request_only else KINDS):
                ag.append(self.agent_call(state, {k: qs[k]}))
                rn.append(self.run_call(self.inputs[k]))
        for _ in range(iters):
            agr.append(self.agent_call(state, qs))
            rnr.append(self.run_call(self.full))
        return summarize(ag, rn, agr, rnr)


def summarize(ag, rn, agr, rnr):
    """Wall median and min of the single questions; wall and CPU of the 3-question request."""
    return {"agent_single_s": median([w for w, _ in ag]), "agent_single_min_s": min(w for w, _ in ag),
            "run_single_s": median([w for w, _ in rn]), "run_single_min_s": min(w for w, _ in rn),
            "agent_request_s": median([w for w, _ in agr]), "agent_request_cpu_s": median([c for _, c in agr]),
            "run_request_s": median([w for w, _ in rnr]), "run_request_cpu_s": median([c for _, c in rnr])}


class TorchPeer:
    def __init__(self, laya_dir, threads, work):
        self.py = C.PyLaya(laya_dir, threads, work)

    def round(self, body, iters):
        state, qs = body["state"], body["questions"]
        one, full = [], []
        for _ in range(iters):
            for k in KINDS:
                t0, c0 = time.perf_counter(), time.process_time()
                self.py.agent.system_one(state, {k: qs[k]})
                one.append((time.perf_counter() - t0, time.process_time() - c0))
        for _ in range(iters):
            t0, c0 = time.perf_counter(), time.process_time()
            self.py.agent.system_one(state, qs)
            full.append((time.perf_counter() - t0, time.process_time() - c0))
        return {"single_s": median([w for w, _ in one]), "single_min_s": min(w for w, _ in one),
                "request_s": median([w for w, _ in full]),
                "request_cpu_s": median([c for _, c in full])}


# skycmd variants (--sky): name -> (bench flags, environment overrides). "vnni" caps the
# kernels below AMX (SKYCMD_KERNELS=avx512: the AVX-512 f32 and VNNI int8 paths of a CPU
# without tiles), so one run gives the AMX-vs-VNNI ratio next to the ORT ones.
SKY_VARIANTS = {
    "f32": (["--f32"], {}),  # the exact FMA path; the default is bf16x3 where AMX-BF16 is
    "f32-avx512": (["--f32"], {"SKYCMD_KERNELS": "avx512"}),
    "bf16x3": (["--bf16x3"], {}),
    "q8-fast": (["--q8-fast"], {}),
    "q8-fast-vnni": (["--q8-fast"], {"SKYCMD_KERNELS": "avx512"}),
    # row-scaled int8 (one scale per weight row and per activation row, the head's blocks
    # too): ONNX Runtime's dynamic-int8 kind of method, with calibrated outlier columns
    # (two-pass activations; q8-row-fast: one pass, two at the sites the probe chose), on
    # the file `skycmd quantize --calibrated --q8-row` made once (kept in the work directory)
    "q8-row": (["--q8-row"], {}, "rows"),
    "q8-row-vnni": (["--q8-row"], {"SKYCMD_KERNELS": "avx512"}, "rows"),
    "q8-row-fast": (["--q8-row", "--q8-fast"], {}, "rows"),
    # the same on the Q8_0 GGUF (compare.py's q8 file): no calibration at load, which on
    # base takes minutes of CPU with the sensitivity probe and GPTQ, so a round stays short;
    # the int8 kernels and the f32 head are the same, the calibrated mode's f32-kept
    # matrices and outlier columns are not there
    "q8-fast-file": (["--q8-fast"], {}, "q8file"),
    # the recommended int8 deployment: `skycmd quantize --calibrated` once (made here and
    # kept in the work directory), then --q8 loads it with no calibration
    "q8": (["--q8"], {}, "stored"),
    "q8-vnni": (["--q8"], {"SKYCMD_KERNELS": "avx512"}, "stored"),
    "q8-fast-stored": (["--q8-fast"], {}, "stored"),
    "q8-fast-file-vnni": (["--q8-fast"], {"SKYCMD_KERNELS": "avx512"}, "q8file"),
}


def sky_round(a, gguf, threads, iters, extra=(), env=None):
    ex = ["--questions", "3", "--threads", threads, "--iters", iters, "--warmup",
          "1" if a.request_only else "2", "--peak-ms", "0", *extra]
    if a.tokens:
        ex += ["--tokens", a.tokens]
    if env:
        e = dict(os.environ, **env)
        j = json.loads(C.run([a.skycmd, "bench", gguf, "--json", *ex], env=e).stdout)
    else:
        j = C.bench_json(a.skycmd, gguf, a, ex)
    return {"single_s": j["single_question"]["median_ms"] / 1e3,
            "single_min_s": j["single_question"]["min_ms"] / 1e3,
            "request_s": j["request"]["median_ms"] / 1e3,
            "request_cpu_s": j["request_cpu"]["median_ms"] / 1e3,
            "request_tokens": j["request_tokens"], "load_ms": j["load_ms"]}


# ----------------------------------------------------------------- accuracy -----

def unround_laya():
    """laya rounds probabilities to 4 digits with the builtin round: compare full values."""
    import laya.agent
    import laya.onnx_agent
    for m in (laya.agent, laya.onnx_agent):
        m.round = lambda x, n=None: x


def flat_probs(resp):
    out = {}
    for qid, a in resp["answers"].items():
        if "probabilities" in a:
            for k, v in a["probabilities"].items():
                out["%s/%s" % (qid, k)] = float(v)
        if "noul" in a:
            out["%s/noul" % qid] = float(a["noul"])
    return out


def abs_dps(ref, got):
    """|dp| of every probability of one answer against its reference (the same keys)."""
    if set(ref) != set(got):
        raise RuntimeError("answer keys differ: %s vs %s" % (sorted(ref), sorted(got)))
    return [abs(ref[k] - got[k]) for k in ref]


def dp_stats(refs, gots, fold_case=False):
    """Max and mean |dp| of answers gots against refs (request by request, the same keys:
    fold_case compares them case-blind, for option names laya spells as Python's str of a
    JSON value, "True", where skycmd keeps "true"; docs/compat.md)."""
    if len(gots) != len(refs):
        raise RuntimeError("%d answers to %d requests" % (len(gots), len(refs)))
    d = []
    for ref, got in zip(refs, gots):
        if fold_case:
            ref, got = ({k.lower(): v for k, v in x.items()} for x in (ref, got))
        d += abs_dps(ref, got)
    return {"max": max(d), "mean": sum(d) / len(d), "n": len(d)}


def variant(body, j, n):
    """Request j of n for the accuracy phase: the state's " | "-separated steps rotated by
    j/n of their count (same length, other tokens in other places); j = 0 is the body."""
    st = body["state"]
    if j == 0 or not isinstance(st, str) or " | " not in st:
        return body
    parts = st.split(" | ")
    k = len(parts) * j // n
    return {"state": " | ".join(parts[k:] + parts[:k]), "questions": body["questions"]}


def stored_calibrated(a, gguf, rows=False):
    """The calibrated int8 file of gguf (`skycmd quantize --calibrated`, with rows: and
    `--q8-row`), made once."""
    out = gguf.replace(".f32.gguf", ".rows.gguf" if rows else ".calibrated.gguf")
    if not os.path.exists(out):
        t0 = time.perf_counter()
        # (the file is the same bytes for any thread count: all of them)
        C.run([a.skycmd, "quantize", gguf, out, "--calibrated", *(["--q8-row"] if rows else []),
               "-q", "--compute-threads", str(os.cpu_count() or 1)])
        C.log("quantize --calibrated%s %s: %.1f s" % (" --q8-row" if rows else "",
                                                      os.path.basename(gguf), time.perf_counter() - t0))
    return out


def accuracy(a, laya_dir, gguf, q8file, body, peers, work, stored=None, rows=None):
    """max and mean |dp| against laya fp32 over every probability of a.acc_requests requests
    (one 3-question request holds only 6 probabilities: the max over so few is one draw of
    an int8 method's rounding noise, so a comparison of two int8 methods needs more)."""
    unround_laya()
    from laya.agent import Agent
    copy = os.path.join(work, "ref-" + os.path.basename(laya_dir))
    if not os.path.isdir(copy):
        shutil.copytree(laya_dir, copy)
    agent = Agent(copy, device="cpu")
    bodies = [variant(body, j, a.acc_requests) for j in range(a.acc_requests)]
    refs = [flat_probs(agent.system_one(b["state"], b["questions"])) for b in bodies]
    req = os.path.join(work, "acc-request.json")
    with open(req, "w") as f:
        json.dump(body, f)
    with open(os.path.join(work, "acc-laya-fp32.json"), "w") as f:  # for checks by hand
        json.dump(refs[0], f)
    with open(os.path.join(work, "acc-laya-fp32.jsonl"), "w") as f:  # line k: request k's
        for r in refs:
            f.write(json.dumps(r) + "\n")
    batch = os.path.join(work, "acc-requests.jsonl")
    with open(batch, "w") as f:
        for b in bodies:
            f.write(json.dumps(b) + "\n")

    out = {}
    for name, model, extra in (("skycmd f32", gguf, ["--f32"]), ("skycmd bf16x3", gguf, ["--bf16x3"]),
                               ("skycmd q8-fast", gguf, ["--q8-fast"]),
                               ("skycmd q8-fast (Q8_0 file)", q8file, ["--q8-fast"]),
                               ("skycmd q8-row", rows, ["--q8-row"]),
                               ("skycmd q8-row-fast", rows, ["--q8-row", "--q8-fast"]),
                               ("skycmd q8 (stored calibrated)", stored, ["--q8"]),
                               ("skycmd q8-fast (stored calibrated)", stored, ["--q8-fast"])):
        if model is None:
            continue
        if name == "skycmd q8-fast" and a.no_calib_accuracy:
            continue
        if name in ("skycmd q8-row", "skycmd q8-row-fast", "skycmd bf16x3") and name[7:] not in a.sky_list:
            continue
        if name == "skycmd q8-fast (stored calibrated)" and "q8-fast-stored" not in a.sky_list:
            continue
        r = C.run([a.skycmd, "decide", model, "--batch", batch, "--no-progress", *extra]).stdout
        out[name] = dp_stats(refs, [flat_probs(json.loads(line)) for line in r.splitlines() if line.strip()])
    for name, p in peers.items():
        out[name] = dp_stats(refs, [flat_probs(p.agent.system_one(b["state"], b["questions"])) for b in bodies])
    out["reference_spread"] = max(max(r.values()) for r in refs) - min(min(r.values()) for r in refs)
    out["requests"] = len(bodies)
    return out


# ----------------------------------------------------------------- one config ---

def run_config(a, preset, tokens, threads_list, work):
    """All thread counts of one (preset, tokens): models, export, then interleaved rounds."""
    ns = argparse.Namespace(skycmd=a.skycmd, preset=preset, seed=a.seed, tokens=tokens,
                            request_only=a.request_only, max_len=a.max_len)
    pw = os.path.join(work, preset + ("-len%d" % a.max_len if a.max_len else ""))
    os.makedirs(pw, exist_ok=True)
    laya_dir, gguf, _q8, body = C.make_models(ns, pw)
    fp32 = os.path.join(pw, preset + ".fp32.onnx")
    int8 = os.path.join(pw, preset + ".int8.onnx")
    how = None
    if not os.path.exists(fp32):
        how = export_onnx(laya_dir, fp32, pw)
    if not os.path.exists(int8):
        quantize_int8(fp32, int8)
    stored = stored_calibrated(a, gguf) if any(
        SKY_VARIANTS[v][2:] == ("stored",) for v in a.sky_list) else None
    rows = stored_calibrated(a, gguf, True) if any(
        SKY_VARIANTS[v][2:] == ("rows",) for v in a.sky_list) else None
    results = []
    for threads in threads_list:
        peers = {"ort fp32": OrtPeer(laya_dir, fp32, threads, body, pw, "fp32"),
                 "ort int8": OrtPeer(laya_dir, int8, threads, body, pw, "int8")}
        torch_peer = TorchPeer(laya_dir, threads, pw) if a.torch else None
        for p in peers.values():  # warm-up: ORT's first runs allocate
            for _ in range(a.warmup):
                p.round(body, 1, True)
        if torch_peer:
            for _ in range(a.warmup):
                torch_peer.round(body, 1)
        acc = accuracy(a, laya_dir, gguf, _q8, body, peers, pw, stored, rows) if threads == threads_list[0] else None
        rounds = []
        for r in range(a.rounds):
            la = C.loadavg()
            row = {"loadavg": la}
            for v in a.sky_list:
                flags, env = SKY_VARIANTS[v][:2]
                model = {("q8file",): _q8, ("stored",): stored, ("rows",): rows}.get(SKY_VARIANTS[v][2:], gguf)
                row["skycmd " + v] = sky_round(ns, model, threads, a.sky_iters, flags, env)
            for n, p in peers.items():
                row[n] = p.round(body, a.iters, a.request_only)
            if torch_peer:
                row["torch eager"] = torch_peer.round(body, a.iters)
            rounds.append(row)
            C.log("%s %s tok T=%d round %d (load %.2f): skycmd %.3f / int8 %.3f ms, "
                  "ort fp32 %.3f (agent %.3f), ort int8 %.3f (agent %.3f)%s" % (
                      preset, tokens or "example", threads, r + 1, la or -1,
                      row["skycmd f32"]["single_s"] * 1e3, next((row[k] for k in ("skycmd q8", "skycmd q8-fast", "skycmd q8-fast-file") if k in row), row["skycmd f32"])["single_s"] * 1e3,
                      row["ort fp32"]["run_single_s"] * 1e3, row["ort fp32"]["agent_single_s"] * 1e3,
                      row["ort int8"]["run_single_s"] * 1e3, row["ort int8"]["agent_single_s"] * 1e3,
                      ", torch %.3f" % (row["torch eager"]["single_s"] * 1e3) if torch_peer else ""))
        # per runtime: (single median, single min, request wall, request CPU), median over rounds
        cols = {"skycmd " + v: ("skycmd " + v, "") for v in a.sky_list}
        cols.update({"ort fp32 (session.run)": ("ort fp32", "run_"),
                "ort fp32 (ONNXAgent)": ("ort fp32", "agent_"),
                "ort int8 (session.run)": ("ort int8", "run_"),
                "ort int8 (ONNXAgent)": ("ort int8", "agent_")})
        if torch_peer:
            cols["torch eager"] = ("torch eager", "")
        med = {}
        for label, (key, pre) in cols.items():
            med[label] = {f: median([x[key][pre + f] for x in rounds])
                          for f in ("single_s", "single_min_s", "request_s", "request_cpu_s")}
        res = {"preset": preset, "tokens": tokens, "threads": threads, "export": how,
               "ort_tokens": peers["ort fp32"].tokens,
               "sky_tokens": rounds[0]["skycmd f32"]["request_tokens"],
               "median_s": med, "accuracy": acc, "rounds": rounds,
               "loadavg": median([x["loadavg"] for x in rounds])}
        results.append(res)
        print(report_one(res), flush=True)
        del peers, torch_peer
    return results


def report_one(r):
    m = r["median_s"]
    s = m["skycmd f32"]
    q = m.get("skycmd q8") or m.get("skycmd q8-fast") or m.get("skycmd q8-fast-file") or s
    L = ["", "### %s, %s tokens, %d thread(s) (median load average %.2f; ORT tokens per kind %s)" % (
        r["preset"], r["tokens"] or "example", r["threads"], r["loadavg"] or -1, r["ort_tokens"]),
        "", "| runtime | one question, median | min | / skycmd f32 | / skycmd q8 "
        "| 3-q request wall | CPU | CPU / skycmd f32 | CPU / q8 |", "|---|---|---|---|---|---|---|---|---|"]
    for n, v in m.items():
        L.append("| %s | %.3f ms | %.3f ms | %.2fx | %.2fx | %.3f ms | %.3f ms | %.2fx | %.2fx |" % (
            n, v["single_s"] * 1e3, v["single_min_s"] * 1e3, v["single_s"] / s["single_s"],
            v["single_s"] / q["single_s"], v["request_s"] * 1e3, v["request_cpu_s"] * 1e3,
            v["request_cpu_s"] / s["request_cpu_s"], v["request_cpu_s"] / q["request_cpu_s"]))
    if r["accuracy"]:
        acc = r["accuracy"]
        L += ["", "|dp| vs laya fp32, max / mean over %d probabilities of %d 3-question requests "
              "(reference spread %.3f): " % (next(v["n"] for v in acc.values() if isinstance(v, dict)),
                                             acc["requests"], acc["reference_spread"]) +
              ", ".join("%s %.2e / %.2e" % (k, v["max"], v["mean"])
                        for k, v in acc.items() if isinstance(v, dict))]
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skycmd", required=True)
    ap.add_argument("--presets", default="s1-pico,base,large")
    ap.add_argument("--tokens", default="128,512", help="comma list; 0 = the example state")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--seed", default="42")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=2, help="calls per kind per round (ORT, torch)")
    ap.add_argument("--sky-iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--torch", action="store_true", help="also time laya's torch eager Agent")
    ap.add_argument("--request-only", action="store_true",
                    help="big models: the 3-question request is the unit (skycmd bench: its "
                    "single questions still run once each); ORT: one single question a path")
    ap.add_argument("--sky", default="f32,q8-fast",
                    help="skycmd variants, comma list of " + ",".join(SKY_VARIANTS) +
                    " (f32 is required: the ratios' denominator, with q8-fast when given)")
    ap.add_argument("--acc-requests", type=int, default=8,
                    help="requests of the accuracy phase (the example's state, then its steps "
                         "rotated; default 8)")
    ap.add_argument("--no-calib-accuracy", action="store_true",
                    help="skip the calibrated --q8-fast decide of the accuracy phase (minutes "
                    "of calibration on base and large)")
    ap.add_argument("--max-len", type=int,
                    help="sequence budget of the checkpoints (rl_agent_config max_len; the "
                         "random presets' is 256, so --tokens 512 needs --max-len 512 or more)")
    ap.add_argument("--work", help="keep checkpoints and graphs here (default: a temp dir)")
    ap.add_argument("--out", help="write every round as JSON")
    a = ap.parse_args()
    a.skycmd = os.path.abspath(a.skycmd)
    a.sky_list = a.sky.split(",")
    for v in a.sky_list:
        if v not in SKY_VARIANTS:
            ap.error("--sky: unknown variant %r" % v)
    if "f32" not in a.sky_list:
        ap.error("--sky must include f32")
    work = a.work or tempfile.mkdtemp(prefix="skycmd-ort-")
    os.makedirs(work, exist_ok=True)
    import onnxruntime
    import torch
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "argv": sys.argv,
            "onnxruntime": onnxruntime.__version__, "torch": torch.__version__,
            "skycmd_version": C.run([a.skycmd, "--version"]).stdout.strip(),
            "loadavg_start": C.loadavg()}
    print("## ONNX Runtime %s vs skycmd -- %s, load average %s" % (
        onnxruntime.__version__, meta["date"], meta["loadavg_start"]), flush=True)
    allres = []
    try:
        for preset in a.presets.split(","):
            for tok in (int(t) for t in a.tokens.split(",")):
                allres += run_config(a, preset, tok, [int(t) for t in a.threads.split(",")], work)
    finally:
        meta["loadavg_end"] = C.loadavg()
        if a.out:
            with open(a.out, "w") as f:
                json.dump({"meta": meta, "results": allres}, f, indent=1)
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
