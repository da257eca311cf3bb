"""Golden fixture of the built-in trained model: laya 0.4.15's answers on the committed
Flappy Drone test set, the first golden test on trained weights.

    /opt/gvenv/bin/python tools/golden/make_flappy_golden.py
        [--checkpoint models/s1-pico-flappy.laya] [--test tests/fixtures/flappy/test.jsonl]
        [--out tests/fixtures/flappy/laya.json]

Each test-set row (a state and the three questions of examples/flappy-drone.json, with the
oracle's labels) is answered by `laya.Agent(checkpoint).system_one`, observed through
make_golden.py's Recorder: per question laya's token ids, markers and probabilities (after
its temperatures), in the case format of tests/fixtures/golden/<model>.json. tests/
test_flappy.c holds our answers on models/s1-pico-flappy.gguf (and an F32 conversion of the
same checkpoint) to them.
"""
import argparse
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import make_golden  # noqa: E402  (Recorder, run_model, write_model_file)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", default=os.path.join(REPO, "models", "s1-pico-flappy.laya"))
    ap.add_argument("--test", default=os.path.join(REPO, "tests", "fixtures", "flappy", "test.jsonl"))
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "flappy", "laya.json"))
    a = ap.parse_args()
    import torch
    import laya
    import laya.agent as agent_mod
    torch.set_num_threads(1)
    rows = [json.loads(line) for line in open(a.test, encoding="utf-8") if line.strip()]
    reqs = [("row%05d" % i, json.dumps({"state": r["state"], "questions": r["questions"]}), False)
            for i, r in enumerate(rows)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = laya.Agent(a.checkpoint, device="cpu")
    cases = make_golden.run_model(agent, agent_mod, reqs)
    for c in cases:
        for q in c["questions"]:   # the general golden suite checks ids; here they only weigh
            for k in ("ids", "markers", "logits"):
                q.pop(k, None)
    header = {"format": make_golden.FORMAT_VERSION, "model": "s1-pico-flappy",
              "checkpoint": os.path.relpath(a.checkpoint, REPO), "test_set": os.path.relpath(a.test, REPO),
              "model_safetensors_sha256": make_golden.sha256_file(os.path.join(a.checkpoint, "model.safetensors")),
              "temperature_applied": agent.temperature,
              "temperature_by_options_applied": agent.temperature_by_options,
              "versions": {"laya": laya.__version__, "torch": torch.__version__}}
    make_golden.write_model_file(a.out, header, cases)
    print("%s: %d cases" % (a.out, len(cases)))


if __name__ == "__main__":
    main()
