"""skycmd.spark on PySpark local[2] (local[2,2]: two task slots, a failed task retried once),
bound to 127.0.0.1: the answers equal `skycmd decide --batch` row for row."""
from __future__ import annotations

import glob
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import common
import skycmd.spark


@pytest.fixture(scope="module")
def spark():
    session = common.local_spark("local[2,2]", "skycmd-distributed-tests", {
        "spark.task.maxFailures": "2",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
        "spark.sql.shuffle.partitions": "4",
    })
    yield session
    session.stop()


def _hashes_by_id(table: pa.Table) -> dict:
    out = {}
    for row in table.to_pylist():
        assert row["error"] is None, row["error"]
        assert row["id"] not in out, f"row {row['id']} doubled"
        out[row["id"]] = common.typed_row_hash(row, common.QUESTIONS)
    return out


def test_answers_equal_cli(spark, reference):
    df = spark.read.parquet(reference.parquet)
    assert df.rdd.getNumPartitions() >= 2, "several partitions, so both task slots work"
    out = skycmd.spark.decide(df, common.MODEL, questions=common.QUESTIONS)
    assert out.schema["action"].dataType.simpleString() == \
        "struct<choice:string,probabilities:map<string,double>,confidence:double>"
    assert out.schema["margin"].dataType.simpleString() == \
        "struct<score:double,legend:map<string,string>,probabilities:map<string,double>,confidence:double>"
    assert out.schema["danger"].dataType.simpleString() == "struct<noul:double>"
    got = _hashes_by_id(out.drop("state").toArrow())
    assert len(got) == len(reference.hashes)
    assert got == reference.hashes


def test_failed_task_is_retried(spark, reference, tmp_path):
    """A task raises after all its rows were scored and passed on, on its first attempt only;
    Spark retries it and the written output is still every row once, equal to the CLI."""
    marker = str(tmp_path / "failed-once")
    attempts = str(tmp_path / "attempts")
    os.makedirs(attempts)

    def fail_once(batches):
        from pyspark import TaskContext
        tc = TaskContext.get()
        n = 0
        for rb in batches:
            n += rb.num_rows
            yield rb
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            fd = -1
        if fd >= 0 and n > 0:
            os.close(fd)
            raise RuntimeError("injected failure on the first attempt")
        open(os.path.join(attempts, f"{tc.partitionId()}-{tc.attemptNumber()}"), "w").close()

    out = skycmd.spark.decide(spark.read.parquet(reference.parquet), common.MODEL,
                              questions=common.QUESTIONS)
    dst = str(tmp_path / "out")
    out.drop("state").mapInArrow(fail_once, out.drop("state").schema).write.parquet(dst)
    assert os.path.exists(marker), "the injected failure happened"
    retried = [f for f in os.listdir(attempts) if not f.endswith("-0")]
    assert len(retried) == 1, f"exactly one task succeeded on a second attempt: {sorted(os.listdir(attempts))}"
    table = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(os.path.join(dst, "*.parquet")))])
    assert table.num_rows == len(reference.hashes), "no row lost or doubled"
    assert _hashes_by_id(table) == reference.hashes


def test_bad_rows_get_their_error(spark, tmp_path):
    states = common.make_states(30, seed=3)
    bad = {4, 12, 27}
    for i in bad:
        states[i] = None
    df = spark.createDataFrame([(i, s) for i, s in enumerate(states)], "id long, state string")
    rows = skycmd.spark.decide(df.repartition(2), common.MODEL,
                               questions=common.QUESTIONS).toArrow().to_pylist()
    cli = common.cli_answers(str(tmp_path), [{"state": s, "questions": common.QUESTIONS} for s in states])
    assert sorted(r["id"] for r in rows) == list(range(30))
    for r in rows:
        ref = cli[r["id"]]
        if r["id"] in bad:
            assert "error" in ref
            assert r["error"] == f"RequestError: {ref['error']['status']}: {ref['error']['message']}"
            assert r["action"] is None and r["input_tokens"] is None
        else:
            assert r["error"] is None
            assert common.typed_row_hash(r, common.QUESTIONS) == common.cli_hash(ref)


def test_per_row_questions(spark, tmp_path):
    rows = common.mixed_requests()
    df = spark.createDataFrame([(r["id"], r["state"], r["questions"]) for r in rows],
                               "id long, state string, questions string")
    out = skycmd.spark.decide(df, common.MODEL, questions_col="questions")
    got = {r["id"]: r for r in out.toArrow().to_pylist()}
    cli = common.cli_answers(str(tmp_path), [common.mixed_line(r) for r in rows])
    assert len(got) == len(rows)
    errors = 0
    for i, ref in enumerate(cli):
        if "error" in ref:
            errors += 1
            assert got[i]["answers"] is None
            assert ref["error"]["message"] in got[i]["error"]
            assert ref["error"]["status"] in got[i]["error"]
        else:
            assert got[i]["error"] is None
            assert common.generic_row_hash(got[i]) == common.cli_hash(ref)
    assert errors == 3


def test_struct_state(spark, tmp_path):
    """A struct state column is sent as a JSON object, as the CLI reads one."""
    df = spark.createDataFrame([(i, i - 5, 30 + i) for i in range(12)], "id long, vy int, alt int")
    df = df.selectExpr("id", "named_struct('vy', vy, 'alt', alt) AS state")
    rows = sorted(skycmd.spark.decide(df, common.MODEL, questions=common.QUESTIONS)
                  .toArrow().to_pylist(), key=lambda r: r["id"])
    cli = common.cli_answers(str(tmp_path), [{"state": {"vy": i - 5, "alt": 30 + i},
                                              "questions": common.QUESTIONS} for i in range(12)])
    assert [common.typed_row_hash(r, common.QUESTIONS) for r in rows] == [common.cli_hash(c) for c in cli]


def test_strict_fails_the_job(spark):
    df = spark.createDataFrame([(0, "vy 0 dx 36"), (1, None)], "id long, state string")
    out = skycmd.spark.decide(df, common.MODEL, questions=common.QUESTIONS, strict=True)
    with pytest.raises(Exception) as info:
        out.collect()
    assert "must be provided" in str(info.value)


def test_model_shipped_with_spark_files(spark, tmp_path):
    """add_model ships the file with SparkContext.addFile; the workers open their copy."""
    name = skycmd.spark.add_model(spark, common.MODEL)
    assert name == "sparkfiles:s1-pico-flappy.gguf"
    df = spark.createDataFrame([(0, "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32")], "id long, state string")
    row = skycmd.spark.decide(df, name, questions=common.QUESTIONS).toArrow().to_pylist()[0]
    with open(os.path.join(common.ROOT, "examples", "flappy-drone.json"), encoding="utf-8") as f:
        example = json.load(f)
    (ref,) = common.cli_answers(str(tmp_path), [example])
    assert common.typed_row_hash(row, common.QUESTIONS) == common.cli_hash(ref)
