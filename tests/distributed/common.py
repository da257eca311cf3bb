"""Shared by the Spark and Ray tests: the states, the CLI's reference answers and the
canonical JSON of one row's answers (whatever engine produced them)."""
from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from typing import Any, Dict, List, Optional

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.environ.get("SKYCMD_DIST_MODEL", os.path.join(ROOT, "models", "s1-pico-flappy.gguf"))
CLI = os.environ.get("SKYCMD_DIST_CLI", os.path.join(ROOT, "build", "skycmd"))
N_STATES = int(os.environ.get("SKYCMD_DIST_STATES", "20000"))

with open(os.path.join(ROOT, "examples", "flappy-drone.json"), encoding="utf-8") as f:
    QUESTIONS: Dict[str, Any] = json.load(f)["questions"]


def make_states(n: int, seed: int = 7) -> List[str]:
    """n Flappy Drone states of the built-in model's training format, deterministic."""
    rnd = random.Random(seed)
    return [f"vy {rnd.randint(-9, 9)} dx {rnd.randint(0, 60)} up {rnd.randint(0, 20)} "
            f"dn {rnd.randint(0, 20)} nxt {rnd.randint(0, 30)} alt {rnd.randint(0, 60)}"
            for _ in range(n)]


def write_parquet(path: str, states: List[Optional[str]], files: int = 4) -> None:
    """ids 0..n-1 and the states, split over `files` Parquet files (so local[2] has
    several partitions to share)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    os.makedirs(path, exist_ok=True)
    n = len(states)
    step = (n + files - 1) // files
    for k in range(files):
        lo, hi = k * step, min(n, (k + 1) * step)
        if lo >= hi:
            break
        pq.write_table(pa.table({"id": pa.array(range(lo, hi), type=pa.int64()),
                                 "state": pa.array(states[lo:hi], type=pa.string())}),
                       os.path.join(path, f"part-{k}.parquet"))


def cli_answers(tmpdir: str, requests: List[Any]) -> List[Dict[str, Any]]:
    """`skycmd decide MODEL --batch --f32` (the bindings' exact f32 path) on the requests:
    one parsed output line per request (a dict, or a JSON line as it is), in order: a
    response, or {"error": {...}}."""
    src = os.path.join(tmpdir, "cli-in.jsonl")
    dst = os.path.join(tmpdir, "cli-out.jsonl")
    with open(src, "w", encoding="utf-8") as f:
        for r in requests:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    subprocess.run([CLI, "decide", MODEL, "--batch", src, "-o", dst, "--f32"], check=False,
                   stderr=subprocess.DEVNULL)
    with open(dst, encoding="utf-8") as f:
        out = [json.loads(line) for line in f]
    assert len(out) == len(requests), "the CLI answered every line"
    return out


def _as_dict(m: Any) -> Optional[Dict[str, Any]]:
    """A Spark/Arrow map as a dict (Spark gives a dict, Arrow's to_pylist a list of pairs)."""
    if m is None:
        return None
    return dict(m) if not isinstance(m, dict) else m


def canonical_typed(qtype: str, a: Dict[str, Any]) -> Dict[str, Any]:
    """One answer in the wire's shape, from the wire or from a typed struct."""
    if qtype == "choice":
        return {"choice": a["choice"], "probabilities": _as_dict(a["probabilities"]),
                "confidence": a["confidence"]}
    if qtype == "score":
        return {"score": a["score"], "legend": _as_dict(a["legend"]),
                "probabilities": _as_dict(a["probabilities"]), "confidence": a["confidence"]}
    return {"noul": a["noul"]}


def canonical_generic(a: Dict[str, Any]) -> Dict[str, Any]:
    """An element of the per-row `answers` map in the wire's shape."""
    t = a["type"]
    value_key = {"choice": None, "score": "score", "noul": "noul"}[t]
    d = dict(a)
    if value_key:
        d[value_key] = a["value"]
    return canonical_typed(t, d)


def row_hash(answers: Dict[str, Dict[str, Any]], input_tokens: int) -> str:
    """sha256 of the canonical JSON (sorted keys, floats as repr: exact) of a row."""
    text = json.dumps({"answers": answers, "input_tokens": input_tokens}, sort_keys=True,
                      ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cli_hash(resp: Dict[str, Any]) -> str:
    answers = {qid: canonical_typed(a["type"], a) for qid, a in resp["answers"].items()}
    return row_hash(answers, resp["usage"]["input_tokens"])


def typed_row_hash(row: Dict[str, Any], questions: Dict[str, Any]) -> str:
    """The hash of an output row with one struct column per fixed question."""
    answers = {qid: canonical_typed(q["type"], row[qid]) for qid, q in questions.items()}
    return row_hash(answers, row["input_tokens"])


def generic_row_hash(row: Dict[str, Any]) -> str:
    answers = {qid: canonical_generic(a) for qid, a in _as_dict(row["answers"]).items()}
    return row_hash(answers, row["input_tokens"])


def mixed_requests() -> List[Dict[str, Any]]:
    """Per-row questions: different question sets, three bad rows (malformed questions JSON,
    a question of no known type, a null state), as (request for the CLI, questions
    JSON text for the DataFrame) pairs flattened into dicts."""
    rows: List[Dict[str, Any]] = []
    states = make_states(40, seed=11)
    subsets = [["action"], ["danger", "margin"], ["action", "danger", "margin"], ["margin"]]
    for i, s in enumerate(states):
        qs = {k: QUESTIONS[k] for k in subsets[i % len(subsets)]}
        rows.append({"id": i, "state": s, "questions": json.dumps(qs)})
    rows[5]["questions"] = '{"action": {"type": "choice", '           # malformed JSON
    rows[17]["questions"] = json.dumps({"x": {"type": "rank", "instructions": "?"}})  # no such type
    rows[29]["state"] = None                                           # no state
    return rows


def mixed_line(row: Dict[str, Any]) -> str:
    """The request line of a mixed row, built as skycmd.spark builds it."""
    return '{"state":' + json.dumps(row["state"], ensure_ascii=False) + ',"questions":' + row["questions"] + "}"


def local_spark(master: str, app: str, conf: Optional[Dict[str, str]] = None) -> Any:
    """A SparkSession in local mode bound to 127.0.0.1 (no UI), the workers on this Python,
    with `conf` on top; a new context if none runs (each test module stops its own)."""
    conf = conf or {}
    from pyspark.sql import SparkSession
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.ui.enabled", "false"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    for key, value in conf.items():
        if session.sparkContext.getConf().get(key) != value:
            session.stop()
            raise AssertionError(f"an earlier Spark context is still running: {key} cannot change in it")
    return session
