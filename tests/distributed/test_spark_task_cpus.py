"""skycmd.spark's model threads follow spark.task.cpus: a second Spark context (after
test_spark.py's has stopped; spark.task.cpus is fixed per context) in local[2] with two
CPUs per task, so one task runs at a time and its worker's model computes on both."""
from __future__ import annotations

import json

import pytest

import common
import skycmd.spark


@pytest.fixture(scope="module")
def spark_two_cpus():
    session = common.local_spark("local[2]", "skycmd-task-cpus", {
        "spark.task.cpus": "2", "spark.python.worker.reuse": "true"})
    yield session
    session.stop()


def _models_of_workers(spark, partitions: int) -> list:
    """worker_models() of the Python worker that runs each of `partitions` tasks: through
    mapInArrow, as decide() runs, since PySpark keeps a pool of idle workers per kind of
    Python function (an RDD function would get a worker of another pool)."""
    def report(batches):
        import pyarrow as pa
        for _ in batches:
            pass
        keys = [json.dumps(list(k)) for k in skycmd.spark.worker_models()]
        yield pa.RecordBatch.from_arrays([pa.array(keys, type=pa.string())], names=["model"])
    df = spark.range(partitions).repartition(partitions)
    return [tuple(json.loads(r["model"])) for r in df.mapInArrow(report, "model string").collect()]


def test_threads_follow_task_cpus(spark_two_cpus, reference):
    n = 400
    df = spark_two_cpus.createDataFrame(list(enumerate(reference.states[:n])),
                                        "id long, state string").repartition(2)
    rows = skycmd.spark.decide(df, common.MODEL, questions=common.QUESTIONS).toArrow().to_pylist()
    assert sorted(r["id"] for r in rows) == list(range(n))
    for r in rows:
        assert r["error"] is None, r["error"]
        assert common.typed_row_hash(r, common.QUESTIONS) == reference.hashes[r["id"]]
    # One task slot (2 CPUs of 2 per task): the reused Python worker reports the model that
    # decide() opened in it, with the task's two threads.
    seen = _models_of_workers(spark_two_cpus, 2)
    assert seen, "no Python worker held a model after decide(): spark.python.worker.reuse?"
    assert {threads for _, threads, _ in seen} == {2}, seen
