"""Golden fixtures of laya 0.4.15's abstention gate and temperature calibration.

    /tmp/gvenv/bin/python tools/golden/make_calibrate_golden.py
        [--checkpoint models/s1-pico-flappy.laya] [--test tests/fixtures/flappy/test.jsonl]
        [--out tests/fixtures/calibrate]

Writes, all computed by laya itself (nothing from our code):
  laya.json      records_from_labeled(agent, pairs) on the oracle-labelled Flappy Drone test
                 set (6,000 records: 2,000 states x 3 questions), their raw logits and
                 targets, fit_temperature_map's result, _ece_report figures per type and over
                 all (uncalibrated T = 1, the checkpoint's own temperatures, the fitted ones),
                 and fit_abstention_thresholds with two parameter sets.
  synthetic.json seeded synthetic records that reach what the trained model does not: the
                 clamps at both bounds, mixed option counts in one type (the width groups),
                 buckets under the 2,000 floor and a type only the 10-record floor fits.
  gate.json      Agent.predict(..., min_confidence=X) on 40 test states for a scalar and a
                 per-bucket map: laya's answer_confidence, abstention, abstention_threshold
                 and low_confidence per answer; and laya.confidence's validation messages.

The labelled file format (docs/calibrate.md): a /v1/systemone request per line plus
"expected" (choice key / score level / noul bool, made one-hot here exactly as the C reader
does) or "targets" (laya's probability vectors).
"""
import argparse
import json
import math
import os
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def one_hot(q, v):
    if q["type"] == "choice":
        keys = list(q["criteria"].keys()) if isinstance(q["criteria"], dict) else list(q["criteria"])
        return [1.0 if k == v else 0.0 for k in keys]
    if q["type"] == "score":
        return [1.0 if i == v else 0.0 for i in range(len(q["criteria"]))]
    return [0.0, 1.0] if v else [1.0, 0.0]


def f32list(v):
    import numpy as np
    return [float(x) for x in np.asarray(v, dtype=np.float32).reshape(-1)]


def ece_block(C, recs, temperature, tbo):
    from laya.common import QTYPE_NAMES
    out = {}
    for name, sel in [("all", recs)] + [(QTYPE_NAMES[qt], [r for r in recs if r[0] == qt]) for qt in range(3)]:
        if not sel:
            continue
        rep = C._ece_report(sel, temperature, tbo)
        out[name] = {"n": len(sel), "ece_before": rep["ece_before"], "ece_after": rep["ece_after"]}
    return out


def fit_block(C, recs, model_t=None, model_tbo=None):
    import numpy as np
    fit = C.fit_temperature_map(recs)
    recs_v = C._iter_records(recs)
    block = {
        "records": [{"qt": int(qt), "k": int(k), "z": f32list(z), "t": f32list(t)} for qt, z, t, k in recs_v],
        "temperature": fit["temperature"],
        "temperature_by_options": fit["temperature_by_options"],
        "n_by_bucket": fit["n_by_bucket"],
        "temperature_clamped": fit["temperature_clamped"],
        "ece_fitted": ece_block(C, recs, fit["temperature"], fit["temperature_by_options"]),
        "abstention": [],
    }
    if model_t is not None:
        block["model_temperature"] = model_t
        block["model_temperature_by_options"] = model_tbo
        block["ece_model"] = ece_block(C, recs, model_t, model_tbo)
    for params in ({"target_error": 0.10, "min_bucket_n": 100, "conservative": True},
                   {"target_error": 0.05, "min_bucket_n": 100, "conservative": False},
                   {"target_error": 0.01, "min_bucket_n": 3000, "conservative": True}):
        thr = C.fit_abstention_thresholds(recs, fit["temperature"], fit["temperature_by_options"], **params)
        block["abstention"].append({"params": params, "thresholds": thr})
    return block


def synthetic(C):
    import numpy as np
    rng = np.random.RandomState(20261201)
    recs = []
    # choice, widths 2..12: over-confident logits (the fit softens past TEMP_MAX for some)
    for i in range(5200):
        k = [2, 3, 4, 7, 12][i % 5]
        y = rng.randint(k)
        z = rng.normal(0, 1, k)
        if rng.rand() < 0.55:
            z[y] += 2.0
        recs.append((0, (z * 9.0).astype(np.float32), np.eye(k, dtype=np.float32)[y], k))
    # score, 3 levels: under-confident logits (the fit sharpens past TEMP_MIN)
    for i in range(2100):
        k = 3
        y = rng.randint(k)
        z = rng.normal(0, 0.02, k)
        z[y] += 0.12
        recs.append((1, z.astype(np.float32), np.eye(k, dtype=np.float32)[y], k))
    # noul: 15 records, only the type-level floor
    for i in range(15):
        y = rng.randint(2)
        z = rng.normal(0, 1, 2)
        z[y] += 1.0
        recs.append((2, z.astype(np.float32), np.eye(2, dtype=np.float32)[y], 2))
    return fit_block(C, recs)


def gate(agent, rows):
    from laya import confidence as LC
    thresholds = [0.9, {"choice:2": 0.95, "score:3-5": 0.999, "default": 0.7}, {"noul:2": 0.9}, 0.0]
    cases = []
    for i, r in enumerate(rows[:40]):
        for thr in thresholds:
            res = agent.predict(r["state"], r["questions"], min_confidence=thr)
            ans = {}
            for qid, a in res["answers"].items():
                ans[qid] = {k: a.get(k) for k in ("answer_confidence", "abstention", "abstention_threshold")}
                ans[qid]["low_confidence"] = bool(a.get("low_confidence", False))
            cases.append({"row": i, "min_confidence": thr, "answers": ans})
    bad = []
    for v in [1.5, -0.1, True, "0.5", None, [0.5], {}, {"choice:7": 0.5}, {"choice:2": 2}, {"default": "x"}]:
        try:
            LC.check_min_confidence(v)
            bad.append({"value": v, "error": None})
        except ValueError as exc:
            bad.append({"value": v, "error": str(exc)})
    return {"cases": cases, "validation": bad}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", default=os.path.join(REPO, "models", "s1-pico-flappy.laya"))
    ap.add_argument("--test", default=os.path.join(REPO, "tests", "fixtures", "flappy", "test.jsonl"))
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "calibrate"))
    a = ap.parse_args()
    import torch
    import laya
    from laya import calibrate as C
    torch.set_num_threads(1)
    rows = [json.loads(line) for line in open(a.test, encoding="utf-8") if line.strip()]
    pairs = [(r["state"], r["questions"], {qid: one_hot(q, r["expected"][qid]) for qid, q in r["questions"].items()})
             for r in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = laya.Agent(a.checkpoint, device="cpu")
    versions = {"laya": laya.__version__, "torch": torch.__version__,
                "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    os.makedirs(a.out, exist_ok=True)

    g = gate(agent, rows)
    g.update({"format": 1, "checkpoint": os.path.relpath(a.checkpoint, REPO),
              "test_set": os.path.relpath(a.test, REPO), "versions": versions})
    with open(os.path.join(a.out, "gate.json"), "w") as f:
        json.dump(g, f, separators=(",", ":"))

    syn = synthetic(C)
    syn.update({"format": 1, "versions": versions})
    with open(os.path.join(a.out, "synthetic.json"), "w") as f:
        json.dump(syn, f, separators=(",", ":"))

    recs = C.records_from_labeled(agent, pairs)
    blk = fit_block(C, recs, list(agent.temperature), dict(agent.temperature_by_options))
    blk.update({"format": 1, "checkpoint": os.path.relpath(a.checkpoint, REPO),
                "test_set": os.path.relpath(a.test, REPO), "versions": versions})
    with open(os.path.join(a.out, "laya.json"), "w") as f:
        json.dump(blk, f, separators=(",", ":"))
    print("temperature", blk["temperature"], "by options", blk["temperature_by_options"])
    print("synthetic", syn["temperature"], syn["temperature_by_options"], syn["temperature_clamped"])


if __name__ == "__main__":
    main()
