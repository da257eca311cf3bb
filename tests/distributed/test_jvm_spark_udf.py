"""The JVM side: org.skycmd.spark.DecideUdf (bindings/java/spark) as a Spark SQL function
over the Java binding: the same answers as `skycmd decide --batch`, row for row, and a bad
row its error line.

This module's name sorts first among the Spark tests on purpose: registering a Java
function needs its class on the driver's class path, which spark.jars reaches only when it
is given as PySpark launches the JVM (the session's first Spark context); a later context in
the same JVM ships its jars to the executors only."""
from __future__ import annotations

import glob
import json
import os
import subprocess

import pyspark
import pytest
from pyspark.sql.types import StringType

import common

JAVA_CLASSES = os.environ.get("SKYCMD_DIST_JAVA_CLASSES",
                              os.path.join(common.ROOT, "bindings", "java", "target", "classes"))


@pytest.fixture(scope="module")
def udf_jar(tmp_path_factory) -> str:
    """DecideUdf and the Java binding in one jar, built against PySpark's own jars."""
    assert glob.glob(os.path.join(JAVA_CLASSES, "native", "*", "libskycmd_jni.*")), \
        f"no Java binding with its JNI library in {JAVA_CLASSES}: build it first " \
        "(bindings/run-tests.sh java, or set SKYCMD_DIST_JAVA_CLASSES)"
    spark_jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    out = str(tmp_path_factory.mktemp("jvm") / "skycmd-spark.jar")
    subprocess.run([os.path.join(common.ROOT, "bindings", "java", "spark", "build.sh"),
                    spark_jars, JAVA_CLASSES, out, "--bundle"], check=True)
    return out


@pytest.fixture(scope="module")
def spark_jvm(udf_jar):
    session = common.local_spark("local[2]", "skycmd-jvm-udf", {
        "spark.jars": udf_jar, "spark.skycmd.model": common.MODEL})
    try:
        session.udf.registerJavaFunction("skycmd_decide", "org.skycmd.spark.DecideUdf", StringType())
    except Exception:
        session.stop()  # the next module's context must not find this one running
        raise
    yield session
    session.stop()


def test_jvm_udf_answers_equal_cli(spark_jvm, reference):
    n = 2000
    questions = json.dumps(common.QUESTIONS)
    df = spark_jvm.createDataFrame(list(enumerate(reference.states[:n])), "id long, state string")
    df.createOrReplaceTempView("states")
    rows = spark_jvm.sql("SELECT id, skycmd_decide(state, ?) AS answer FROM states",
                         args=[questions]).collect()
    assert sorted(r["id"] for r in rows) == list(range(n))
    for r in rows:
        resp = json.loads(r["answer"])
        assert "error" not in resp, resp
        assert common.cli_hash(resp) == reference.hashes[r["id"]], r["id"]


def test_jvm_udf_bad_rows_get_their_error(spark_jvm, tmp_path):
    questions = json.dumps(common.QUESTIONS)
    df = spark_jvm.createDataFrame([(0, "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32"), (1, None)],
                                   "id long, state string")
    df.createOrReplaceTempView("bad_states")
    got = {r["id"]: json.loads(r["answer"]) for r in spark_jvm.sql(
        "SELECT id, skycmd_decide(state, ?) AS answer FROM bad_states", args=[questions]).collect()}
    assert got[1] == {"error": {"status": "SKYCMD_E_REQUEST", "message": "the state is null"}}
    (ref,) = common.cli_answers(str(tmp_path), [{"state": "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32",
                                                 "questions": common.QUESTIONS}])
    assert common.cli_hash(got[0]) == common.cli_hash(ref)
    # a request the library refuses: its status and message, the row answered as an error
    bad = spark_jvm.sql("SELECT skycmd_decide('vy 0', '{}') AS answer").collect()[0]["answer"]
    (cli_bad,) = common.cli_answers(str(tmp_path), ['{"state": "vy 0", "questions": {}}'])
    assert json.loads(bad)["error"]["status"] == cli_bad["error"]["status"] == "SKYCMD_E_REQUEST"
    assert json.loads(bad)["error"]["message"] == cli_bad["error"]["message"]
