#!/usr/bin/env python3
"""make_ort_int8_golden.py - int8 accuracy on the golden set, ONNX Runtime's dynamic int8
beside skycmd's; writes tests/fixtures/golden/ort-int8.json (ORT int8's figures, which
tests/test_quant_golden.c holds skycmd's recommended --int8 against).

ort_peer.py compares speed and error on random base and large models; this script asks the
other half of the question: on the golden set (the checkpoints laya's and transformers' own
classes made, tests/fixtures/golden/ckpt/, and the random presets of the manifest, made
again with `skycmd random PRESET DIR --layout laya --seed N [--massive N]`), how far from
laya fp32 each int8 method lands, over every probability of every golden request that
laya answers (tests/fixtures/golden/requests.json, the ones not expected to fail).

Per model:
  laya fp32       laya.agent.Agent.system_one, probabilities unrounded (the reference)
  ort int8        (where laya.onnx_agent takes the checkpoint: not option_layout
                  "parallel") torch.onnx.export of the same model (ort_peer.export_onnx), then
                  onnxruntime.quantization.quantize_dynamic (QInt8 weights), run through
                  laya.onnx_agent.ONNXAgent on one thread
  skycmd ...      `skycmd decide --batch` on the F16 conversion (the shipping type) and on
                  the files `skycmd quantize` makes from it: --int8 (quantize --int8),
                  --q8-row (the same file), --q8 (quantize --calibrated)

Prints one line per model and method (max and mean |dp|); --out writes all of it as JSON,
--fixture the ORT int8 figures (with the versions that made them) for the test. Needs the
reference venv of bench/compare/ort_peer.py (laya, torch, onnxruntime). Example:
  /tmp/gvenv/bin/python tools/golden/make_ort_int8_golden.py --skycmd build/skycmd \
      --fixture tests/fixtures/golden/ort-int8.json
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "compare"))
import compare as C  # noqa: E402  (logging, subprocess runs)
import ort_peer as P  # noqa: E402  (the ONNX export and quantize_dynamic of the speed runs)
GOLDEN = os.path.join(ROOT, "tests", "fixtures", "golden")


def models(only):
    with open(os.path.join(GOLDEN, "manifest.json")) as f:
        man = json.load(f)
    for m in man["models"]:
        if only and m["model"] not in only:
            continue
        if m["model"].endswith(("-xt", "-clamp")):
            continue  # temperature edge cases of the f32 path, the same weights as s1-pico
        yield m


def laya_dir_of(a, m, work):
    if m.get("checkpoint"):
        src = os.path.join(GOLDEN, m["checkpoint"])
        d = os.path.join(work, m["model"])
        if not os.path.isdir(d):
            shutil.copytree(src, d)
        return d
    d = os.path.join(work, m["model"])
    if not os.path.isdir(d):
        C.run([a.skycmd, "random", m["preset"], d, "--layout", "laya", "--seed", str(m["seed"]),
               *(["--massive", str(m["massive"])] if m.get("massive") else []), "-q"])
    return d


def ask(agent, b):
    """system_one with the body's own budgets, as laya serve passes them (make_golden.py)"""
    budgets = {k: b[k] for k in ("max_len", "head_max_len") if b.get(k) is not None}
    return P.flat_probs(agent.system_one(b["state"], b["questions"], **budgets))


def run_model(a, m, bodies, work):
    P.unround_laya()
    from laya.agent import Agent
    from laya.onnx_agent import ONNXAgent
    name = m["model"]
    mw = os.path.join(work, name + "-work")
    os.makedirs(mw, exist_ok=True)
    d = laya_dir_of(a, m, work)
    agent = Agent(d, device="cpu")
    refs = [ask(agent, b) for b in bodies]
    fp32 = os.path.join(mw, "model.fp32.onnx")
    int8 = os.path.join(mw, "model.int8.onnx")
    if not os.path.exists(fp32):
        P.export_onnx(d, fp32, mw)
    if not os.path.exists(int8):
        P.quantize_int8(fp32, int8)
    out = {}
    for tag, path in (("ort fp32", fp32), ("ort int8", int8)):
        try:
            oa = ONNXAgent(d, onnx_path=path)
        except ValueError as e:  # laya's ONNX agent refuses some layouts (option_layout parallel)
            C.log("%s: %s: %s" % (name, tag, e))
            continue
        oa.session = P.ort_session(path, 1)
        out[tag] = P.dp_stats(refs, [ask(oa, b) for b in bodies], fold_case=True)
    f16 = os.path.join(mw, "model.f16.gguf")
    rows = os.path.join(mw, "model.int8.gguf")
    cal = os.path.join(mw, "model.calibrated.gguf")
    C.run([a.skycmd, "convert", d, f16, "--type", "f16", "-q"])
    C.run([a.skycmd, "quantize", f16, rows, "--int8", "-q"])
    C.run([a.skycmd, "quantize", f16, cal, "--calibrated", "-q"])
    batch = os.path.join(mw, "requests.jsonl")
    with open(batch, "w") as f:
        for b in bodies:
            f.write(json.dumps(b) + "\n")
    for tag, path, extra in (("skycmd f32", f16, ["--f32"]), ("skycmd --int8", rows, ["--int8"]),
                             ("skycmd --q8-row", rows, ["--q8-row"]), ("skycmd --q8", cal, ["--q8"])):
        r = C.run([a.skycmd, "decide", path, "--batch", batch, "--no-progress", *extra]).stdout
        out[tag] = P.dp_stats(refs, [P.flat_probs(json.loads(x)) for x in r.splitlines() if x.strip()],
                               fold_case=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skycmd", required=True)
    ap.add_argument("--models", help="comma list of manifest names (default: all but -xt/-clamp)")
    ap.add_argument("--work", help="keep models and graphs here (default: a temp dir)")
    ap.add_argument("--out", help="write the figures as JSON")
    ap.add_argument("--fixture", help="write ORT int8's figures as the test fixture")
    a = ap.parse_args()
    a.skycmd = os.path.abspath(a.skycmd)
    with open(os.path.join(GOLDEN, "requests.json")) as f:
        bodies = [json.loads(r["body"]) for r in json.load(f) if not r.get("expect_error")]
    work = a.work or tempfile.mkdtemp(prefix="ort-golden-")
    os.makedirs(work, exist_ok=True)
    only = set(a.models.split(",")) if a.models else None
    res = {"skycmd": subprocess.run([a.skycmd, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip(),
           "requests": len(bodies), "models": {}}
    for m in models(only):
        r = run_model(a, m, bodies, work)
        res["models"][m["model"]] = r
        for tag, s in r.items():
            print("%-18s %-16s max |dp| %.4f  mean %.5f  (%d probabilities)" %
                  (m["model"], tag, s["max"], s["mean"], s["n"]), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    if a.fixture:
        import laya
        import onnxruntime
        import torch
        fx = {"format": 1, "made_by": "tools/golden/make_ort_int8_golden.py",
              "what": "max and mean |p - p_laya_fp32| of onnxruntime quantize_dynamic (QInt8) "
                      "over every probability of the golden requests laya answers",
              "onnxruntime": onnxruntime.__version__, "laya": laya.__version__,
              "torch": torch.__version__.split("+")[0], "requests": len(bodies),
              "models": {k: v["ort int8"] for k, v in res["models"].items() if "ort int8" in v}}
        with open(a.fixture, "w") as f:
            json.dump(fx, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
