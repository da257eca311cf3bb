"""skycmd.ray on a one-node Ray (2 actors) inside a private network namespace with only
loopback up (tools/test-distributed.sh runs this file under `unshare -n`): the answers equal
`skycmd decide --batch` row for row."""
from __future__ import annotations

import os
import socket

import pyarrow as pa
import pytest
import ray

import common
import skycmd.ray


@pytest.fixture(scope="module")
def ray_local():
    interfaces = sorted(name for _, name in socket.if_nameindex())  # this namespace's
    assert interfaces == ["lo"], f"Ray runs only where loopback is the one interface: {interfaces}"
    # 3 logical CPUs on 2 cores: the 2 actors hold 1 each, the Parquet read tasks need one
    # more (with 2 the read waits for a CPU the actors never give back)
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1", object_store_memory=300 * 1024 * 1024)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield
    ray.shutdown()


def _hashes_by_id(rows) -> dict:
    out = {}
    for row in rows:
        assert row["error"] is None, row["error"]
        assert row["id"] not in out, f"row {row['id']} doubled"
        out[row["id"]] = common.typed_row_hash(row, common.QUESTIONS)
    return out


def _rows(ds) -> list:
    return pa.concat_tables(ray.get(ds.to_arrow_refs())).to_pylist()


def test_answers_equal_cli(ray_local, reference):
    ds = ray.data.read_parquet(reference.parquet, override_num_blocks=4)
    out = skycmd.ray.decide(ds, common.MODEL, questions=common.QUESTIONS, concurrency=2,
                            batch_size=1000)
    got = _hashes_by_id(_rows(out.drop_columns(["state"])))
    assert len(got) == len(reference.hashes)
    assert got == reference.hashes


def test_dead_actor_is_restarted_and_its_batch_retried(ray_local, reference, tmp_path):
    """The first actor to answer a batch exits (os._exit) before returning it; Ray restarts
    the actor (a new process: the model is opened again) and retries the batch: every row
    once, equal to the CLI."""
    marker = str(tmp_path / "exited-once")

    class ExitOnce(skycmd.ray.Decider):
        def __call__(self, batch):
            out = super().__call__(batch)
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return out
            os.close(fd)
            os._exit(1)

    ds = ray.data.read_parquet(reference.parquet, override_num_blocks=4)
    out = ds.map_batches(ExitOnce, fn_constructor_args=(common.MODEL,),
                         fn_constructor_kwargs={"questions": common.QUESTIONS},
                         compute=ray.data.ActorPoolStrategy(size=2),
                         batch_size=1000, batch_format="pyarrow", max_restarts=2, max_task_retries=2)
    rows = _rows(out.drop_columns(["state"]))
    assert os.path.exists(marker), "the injected exit happened"
    assert len(rows) == len(reference.hashes), "no row lost or doubled"
    assert _hashes_by_id(rows) == reference.hashes


def test_bad_rows_get_their_error(ray_local, tmp_path):
    states = common.make_states(30, seed=3)
    bad = {4, 12, 27}
    for i in bad:
        states[i] = None
    ds = ray.data.from_arrow(pa.table({"id": list(range(30)), "state": pa.array(states, pa.string())}))
    rows = _rows(skycmd.ray.decide(ds, common.MODEL, questions=common.QUESTIONS, batch_size=8))
    cli = common.cli_answers(str(tmp_path), [{"state": s, "questions": common.QUESTIONS} for s in states])
    assert sorted(r["id"] for r in rows) == list(range(30))
    for r in rows:
        ref = cli[r["id"]]
        if r["id"] in bad:
            assert r["error"] == f"RequestError: {ref['error']['status']}: {ref['error']['message']}"
            assert r["action"] is None and r["input_tokens"] is None
        else:
            assert r["error"] is None
            assert common.typed_row_hash(r, common.QUESTIONS) == common.cli_hash(ref)


def test_per_row_questions(ray_local, tmp_path):
    rows = common.mixed_requests()
    ds = ray.data.from_arrow(pa.table({"id": [r["id"] for r in rows],
                                       "state": pa.array([r["state"] for r in rows], pa.string()),
                                       "questions": [r["questions"] for r in rows]}))
    got = {r["id"]: r for r in _rows(skycmd.ray.decide(ds, common.MODEL, questions_col="questions"))}
    cli = common.cli_answers(str(tmp_path), [common.mixed_line(r) for r in rows])
    assert len(got) == len(rows)
    errors = 0
    for i, ref in enumerate(cli):
        if "error" in ref:
            errors += 1
            assert got[i]["answers"] is None
            assert ref["error"]["status"] in got[i]["error"]
            assert ref["error"]["message"] in got[i]["error"]
        else:
            assert got[i]["error"] is None
            assert common.generic_row_hash(got[i]) == common.cli_hash(ref)
    assert errors == 3


def test_decider_without_ray_batch_types():
    """The callable itself on a pandas DataFrame and a dict of columns (Ray's other batch
    formats) answers as on a pyarrow Table."""
    import pandas as pd
    d = skycmd.ray.Decider(common.MODEL, questions=common.QUESTIONS, threads=1)
    states = common.make_states(5, seed=5)
    a = d(pa.table({"state": states})).to_pylist()
    b = d(pd.DataFrame({"state": states})).to_pylist()
    c = d({"state": states}).to_pylist()
    assert a == b == c
    assert all(r["error"] is None and r["action"]["choice"] in ("thrust", "glide") for r in a)
