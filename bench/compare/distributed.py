#!/usr/bin/env python3
"""The targets of issue 42 (docs/distributed.md), one interleaved run, not a timed test:

  - skycmd.spark on local[1] and local[2]: states/s, local[2] / local[1] (target >= 1.8x);
  - per-state cost of local[1] against `skycmd decide --batch --f32 --jobs 1` (target <= 1.3x);
  - the same for skycmd.ray with 1 and 2 actors (Ray runs only in a network namespace with
    loopback alone: run this script under `unshare -n`, see below);
  - peak resident memory of each Python worker / actor process (polled from /proc).

usage (the venv of tools/test-distributed.sh, the CLI of its build tree):
  unshare -n sh -c '.venv-dist/bin/python tests/distributed/loopback_up.py && exec \
      .venv-dist/bin/python bench/compare/distributed.py --states 1000000'
  --engines spark,ray (default both), --model PATH, --cli PATH, --json FILE
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def make_states(n: int, seed: int = 7) -> List[str]:
    rnd = random.Random(seed)
    return [f"vy {rnd.randint(-9, 9)} dx {rnd.randint(0, 60)} up {rnd.randint(0, 20)} "
            f"dn {rnd.randint(0, 20)} nxt {rnd.randint(0, 30)} alt {rnd.randint(0, 60)}"
            for _ in range(n)]


class PeakRss:
    """Polls /proc every 0.2 s: the peak VmRSS of each process whose command line holds
    one of the markers (PySpark's workers, Ray's MapWorker actors)."""

    def __init__(self, markers: List[str]) -> None:
        self.markers = [m.encode() for m in markers]
        self.peak: Dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or int(pid) == me:
                    continue
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read()
                    if not any(m in cmd for m in self.markers):
                        continue
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                kb = int(line.split()[1])
                                self.peak[int(pid)] = max(self.peak.get(int(pid), 0), kb)
                except (OSError, ValueError):
                    pass
            self._stop.wait(0.2)

    def mib(self) -> List[float]:
        return sorted(round(kb / 1024, 1) for kb in self.peak.values())


def run_cli(cli: str, model: str, jsonl: str, tmp: str) -> float:
    t = time.perf_counter()
    subprocess.run([cli, "decide", model, "--batch", jsonl, "-o", os.path.join(tmp, "cli.jsonl"),
                    "--f32", "--jobs", "1"], check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def run_spark(slots: int, parquet: str, model: str, questions: dict) -> Dict[str, object]:
    from pyspark.sql import SparkSession
    import skycmd.spark
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark = (SparkSession.builder.master(f"local[{slots}]").appName(f"skycmd-bench-{slots}")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.read.parquet(parquet)
        # warm-up: start the Python workers and open the model in each (not timed)
        skycmd.spark.decide(df.limit(64 * slots).repartition(slots), model,
                            questions=questions).write.format("noop").mode("overwrite").save()
        with PeakRss(["pyspark.daemon", "pyspark/daemon", "pyspark.worker"]) as rss:
            t = time.perf_counter()
            skycmd.spark.decide(df, model, questions=questions).write.format("noop").mode("overwrite").save()
            wall = time.perf_counter() - t
        return {"seconds": wall, "partitions": df.rdd.getNumPartitions(), "worker_peak_rss_mib": rss.mib()}
    finally:
        spark.stop()


def run_ray(actors: int, parquet: str, model: str, questions: dict,
            limit: int = 0) -> Dict[str, object]:
    import ray
    import skycmd.ray
    ds = ray.data.read_parquet(parquet, override_num_blocks=8)
    if limit:
        ds = ds.limit(limit)
    with PeakRss(["ray::MapWorker"]) as rss:
        t = time.perf_counter()
        n = 0
        out = skycmd.ray.decide(ds, model, questions=questions, concurrency=actors, batch_size=1000)
        for batch in out.iter_batches(batch_format="pyarrow", batch_size=None):
            n += batch.num_rows
        wall = time.perf_counter() - t
    return {"seconds": wall, "rows": n, "worker_peak_rss_mib": rss.mib()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=1_000_000)
    ap.add_argument("--engines", default="spark,ray")
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "s1-pico-flappy.gguf"))
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "skycmd"))
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    engines = args.engines.split(",")
    if "ray" in engines and sorted(n for _, n in socket.if_nameindex()) != ["lo"]:
        print("Ray binds the machine's own address: run this under `unshare -n` with only lo up "
              "(or --engines spark)", file=sys.stderr)
        return 2

    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyspark
    import skycmd

    with open(os.path.join(ROOT, "examples", "flappy-drone.json"), encoding="utf-8") as f:
        questions = json.load(f)["questions"]
    tmp = tempfile.mkdtemp(prefix="skycmd-dist-bench.")
    try:
        states = make_states(args.states)
        parquet = os.path.join(tmp, "states")
        os.makedirs(parquet)
        files = 8
        step = (len(states) + files - 1) // files
        for k in range(files):
            pq.write_table(pa.table({"id": list(range(k * step, min(len(states), (k + 1) * step))),
                                     "state": states[k * step:(k + 1) * step]}),
                           os.path.join(parquet, f"part-{k}.parquet"))
        jsonl = os.path.join(tmp, "in.jsonl")
        qjson = json.dumps(questions)
        with open(jsonl, "w", encoding="utf-8") as f:
            for s in states:
                f.write('{"state":' + json.dumps(s) + ',"questions":' + qjson + "}\n")
        del states

        n = args.states
        res: Dict[str, object] = {"states": n, "cpu": platform.processor() or "",
                                  "versions": {"skycmd": skycmd.library_version(),
                                               "pyspark": pyspark.__version__, "python": platform.python_version()}}
        with open("/proc/cpuinfo") as f:
            res["cpu"] = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
        res["cli_1_thread_s"] = run_cli(args.cli, args.model, jsonl, tmp)
        if "spark" in engines:
            res["spark_local1"] = run_spark(1, parquet, args.model, questions)
            res["spark_local2"] = run_spark(2, parquet, args.model, questions)
        if "ray" in engines:
            import ray
            res["versions"]["ray"] = ray.__version__  # type: ignore[index]
            ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False,
                     _node_ip_address="127.0.0.1")
            ray.data.DataContext.get_current().enable_progress_bars = False
            try:
                run_ray(2, parquet, args.model, questions, limit=4000)  # warm-up (not kept)
                res["ray_1_actor"] = run_ray(1, parquet, args.model, questions)
                res["ray_2_actors"] = run_ray(2, parquet, args.model, questions)
            finally:
                ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    cli_us = res["cli_1_thread_s"] / n * 1e6  # type: ignore[operator]
    print(f"{n} states, {res['cpu']}, {res['versions']}")
    print(f"skycmd decide --batch --f32 --jobs 1: {res['cli_1_thread_s']:.1f} s, {cli_us:.0f} us/state")
    for one, two, label in (("spark_local1", "spark_local2", "spark local[1] / local[2]"),
                            ("ray_1_actor", "ray_2_actors", "ray 1 actor / 2 actors")):
        if one not in res:
            continue
        a, b = res[one], res[two]  # type: ignore[assignment]
        per = a["seconds"] / n * 1e6  # type: ignore[index]
        print(f"{label}: {a['seconds']:.1f} s / {b['seconds']:.1f} s; scaling {a['seconds'] / b['seconds']:.2f}x "  # type: ignore[index]
              f"(target >= 1.8); {per:.0f} us/state on one = {per / cli_us:.2f}x the CLI (target <= 1.3); "
              f"worker peak RSS MiB: one {a['worker_peak_rss_mib']}, two {b['worker_peak_rss_mib']}")  # type: ignore[index]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
