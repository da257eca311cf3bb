"""Train the built-in s1-pico Flappy Drone model with laya 0.4.15's own training loop.

    python3 -m venv /tmp/trainvenv && /tmp/trainvenv/bin/pip install -r tools/train/requirements.txt
    /tmp/trainvenv/bin/python tools/train/train.py --skycmd build/skycmd --out models/

Steps (every one deterministic from --seed):
 1. data: tools/train/flappy.py labels simulator states with its oracle: a training set
    (paraphrased instructions; --train states with the three questions and --action-only
    more states with the action question alone, the one the model finds hardest), a
    validation set laya reports on, and the test set that is committed
    (tests/fixtures/flappy/test.jsonl, the example's own instructions);
 2. a random s1-pico-shaped Laya checkpoint made by `skycmd random s1-pico --layout laya`;
 3. `laya.train.finetune` (laya's loop: its loss, optimizer, schedule, its calibration split
    and `fit_temperature_map`), CPU only, on 2 threads;
 4. `skycmd convert` of the result with the seed's shipping policy (F16 encoder, F32 head)
    into models/s1-pico-flappy.gguf, plus models/s1-pico-flappy.report.json with the data
    sizes, the accuracy, AUC and ECE per question on the test set (computed by laya's
    runtime on the saved checkpoint), the exact command and the package versions.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import flappy  # noqa: E402
import state_tokenizer  # noqa: E402


def auc(scores, labels):
    """Area under the ROC curve (ties count half), from the ranks."""
    pairs = sorted(zip(scores, labels))
    pos = sum(1 for _, y in pairs if y)
    neg = len(pairs) - pos
    if pos == 0 or neg == 0:
        return float("nan")
    rank_sum, i = 0.0, 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        mid = (i + 1 + j) / 2.0  # ranks i+1..j share their mean
        rank_sum += mid * sum(1 for k in range(i, j) if pairs[k][1])
        i = j
    return (rank_sum - pos * (pos + 1) / 2.0) / (pos * neg)


def ece(confidences, correct, bins=10):
    """Expected calibration error of the top-1 probability, equal-width bins."""
    total, err = len(confidences), 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, c in enumerate(confidences) if (lo < c <= hi) or (b == 0 and c == 0)]
        if idx:
            acc = sum(correct[i] for i in idx) / len(idx)
            conf = sum(confidences[i] for i in idx) / len(idx)
            err += len(idx) / total * abs(acc - conf)
    return err


def evaluate(agent, rows):
    """Accuracy/AUC/ECE per question of laya's answers on rows (state, questions, expected)."""
    act_conf, act_ok, dang_p, dang_y, dang_conf, dang_ok = [], [], [], [], [], []
    mar_conf, mar_ok = [], []
    for r in rows:
        out = agent.system_one(r["state"], r["questions"])["answers"]
        y = r["expected"]
        a = out["action"]
        probs = a["probabilities"]
        choice = max(probs, key=probs.get)
        act_conf.append(probs[choice])
        act_ok.append(choice == y["action"])
        p_true = out["danger"]["noul"]
        dang_p.append(p_true)
        dang_y.append(bool(y["danger"]))
        dang_conf.append(max(p_true, 1 - p_true))
        dang_ok.append((p_true >= 0.5) == bool(y["danger"]))
        mp = out["margin"]["probabilities"]
        level = max(mp, key=mp.get)
        mar_conf.append(mp[level])
        mar_ok.append(int(level) == int(y["margin"]))
    n = len(rows)
    return {
        "n": n,
        "action": {"accuracy": sum(act_ok) / n, "ece": ece(act_conf, act_ok)},
        "danger": {"accuracy": sum(dang_ok) / n, "auc": auc(dang_p, dang_y), "ece": ece(dang_conf, dang_ok)},
        "margin": {"accuracy": sum(mar_ok) / n, "ece": ece(mar_conf, mar_ok)},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skycmd", default=os.path.join(ROOT, "build", "skycmd"))
    ap.add_argument("--out", default=os.path.join(ROOT, "models"))
    ap.add_argument("--test-set", default=os.path.join(ROOT, "tests", "fixtures", "flappy", "test.jsonl"))
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--train", type=int, default=10000, help="training states")
    ap.add_argument("--val", type=int, default=2000, help="validation states")
    ap.add_argument("--test", type=int, default=2000, help="test states (committed)")
    ap.add_argument("--action-only", type=int, default=10000,
                    help="extra training states labelled for the action question only (the hardest "
                         "of the three; drawn from their own seed, none of them in the other sets)")
    ap.add_argument("--epochs", type=int, default=7)
    ap.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (encoder and head)")
    ap.add_argument("--micro-batch", type=int, default=32)
    ap.add_argument("--tokenizer", choices=("state", "random"), default="state",
                    help="state: a BPE trained on the state language (tools/train/state_tokenizer.py); "
                         "random: the random s1-pico vocabulary")
    # one thread: torch's two-thread kernels wait on each other when the machine has other
    # work (a 2x2240x64 by 64x192 product took 8 ms on 2 threads, 0.7 ms on 1, under load)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work", default=None, help="keep the intermediate files here")
    args = ap.parse_args()

    import torch
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    import laya
    from laya.train import TrainConfig, finetune

    work = args.work or tempfile.mkdtemp(prefix="skycmd-train-")
    os.makedirs(work, exist_ok=True)
    t0 = time.time()

    # 1. data (three disjoint seeds; states are deduplicated within each set, and the
    #    validation and test states that also occur in training are dropped)
    train = flappy.dataset(args.seed, args.train, paraphrase=True)
    seen = {r["state"] for r in train}
    val = [r for r in flappy.dataset(args.seed + 1000, args.val + args.val // 4, paraphrase=True)
           if r["state"] not in seen][:args.val]
    test = [r for r in flappy.dataset(args.seed + 2000, args.test + args.test // 4, paraphrase=False)
            if r["state"] not in seen][:args.test]
    if args.action_only:
        taken = seen | {r["state"] for r in val} | {r["state"] for r in test}
        extra = [r for r in flappy.dataset(args.seed + 3000, args.action_only + args.action_only // 4, paraphrase=True)
                 if r["state"] not in taken][:args.action_only]
        for r in extra:
            r["questions"] = {"action": r["questions"]["action"]}
            r["expected"] = {"action": r["expected"]["action"]}
        train = train + extra
    for name, rows in (("train", train), ("val", val), ("test", test)):
        flappy.write_jsonl(os.path.join(work, name + ".jsonl"), rows)
    os.makedirs(os.path.dirname(args.test_set), exist_ok=True)
    shutil.copyfile(os.path.join(work, "test.jsonl"), args.test_set)
    print("data: %d train (%d of them action only), %d validation, %d test states (%.1f s)" % (len(train), args.action_only, len(val), len(test), time.time() - t0), flush=True)

    # 2. the starting checkpoint
    base = os.path.join(work, "base")
    shutil.rmtree(base, ignore_errors=True)
    subprocess.run([args.skycmd, "random", "s1-pico", base, "--layout", "laya", "--seed", str(args.seed)], check=True)
    if args.tokenizer == "state":
        # the same s1-pico shape (its 1,024-row embedding table is kept: ids past the
        # tokenizer's are padding, docs/compat.md), with a vocabulary made for the states
        texts = []
        for qs in flappy.all_questions():
            texts += state_tokenizer.prompt_texts([qs])
        lines = state_tokenizer.corpus([r["state"] for r in train], texts)
        state_tokenizer.train_tokenizer(lines, 1024, os.path.join(base, "tokenizer"))

    # 3. laya's own loop
    cfg = TrainConfig(epochs=args.epochs, micro_batch=args.micro_batch, grad_accum=1, encoder_lr=args.lr, head_lr=args.lr,
                      min_lr=1e-5, weight_decay=0.01, seed=args.seed % (2 ** 31), calib_max=2000,
                      calib_frac=0.1, eval_data=os.path.join(work, "val.jsonl"))
    trained = os.path.join(work, "trained")
    shutil.rmtree(trained, ignore_errors=True)
    t1, c1 = time.time(), time.process_time()
    summary = finetune(os.path.join(work, "train.jsonl"), base, trained, config=cfg, device="cpu")
    train_s, train_cpu_s = time.time() - t1, time.process_time() - c1
    print("trained in %.0f s (%.0f s of CPU); temperatures %s" % (train_s, train_cpu_s, summary["temperature"]), flush=True)

    # 4. test-set figures from laya's runtime on the saved checkpoint, then the GGUF
    agent = laya.Agent(trained, device="cpu")
    figures = evaluate(agent, test)
    print(json.dumps(figures, indent=1), flush=True)
    # the checkpoint as laya saved it (its epoch snapshot left out), and its conversion
    os.makedirs(args.out, exist_ok=True)
    ckpt = os.path.join(args.out, "s1-pico-flappy.laya")
    shutil.rmtree(ckpt, ignore_errors=True)
    shutil.copytree(trained, ckpt, ignore=shutil.ignore_patterns("checkpoint_latest"))
    gguf = os.path.join(args.out, "s1-pico-flappy.gguf")
    subprocess.run([args.skycmd, "convert", ckpt, gguf, "--name", "s1-pico-flappy"], check=True)

    versions = {}
    for pkg in ("laya", "torch", "transformers", "tokenizers", "safetensors", "numpy"):
        try:
            from importlib.metadata import version
            versions[pkg] = version(pkg)
        except Exception:
            versions[pkg] = None
    report = {
        "model": "s1-pico-flappy",
        "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
        "seed": args.seed,
        "data": {"train": len(train), "train_action_only": args.action_only, "validation": len(val), "test": len(test),
                 "train_items": summary["train_items"], "calibration_items": summary["calibration_items"]},
        "training": {"epochs": args.epochs, "threads": args.threads, "seconds": round(train_s, 1),
                     "cpu_seconds": round(train_cpu_s, 1), "tokenizer": args.tokenizer,
                     "epoch_loss": summary["epoch_loss"], "config": cfg.__dict__},
        "temperature": summary["temperature"],
        "temperature_by_options": summary["temperature_by_options"],
        "test": figures,
        "validation_report": summary["train_report"].get("after"),
        "versions": versions,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
    }
    with open(os.path.join(args.out, "s1-pico-flappy.report.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %s (%d bytes) in %.0f s" % (gguf, os.path.getsize(gguf), time.time() - t0))


if __name__ == "__main__":
    main()
