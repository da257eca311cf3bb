"""The engine-independent part of skycmd.spark (shared by skycmd.ray), without an engine."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

import common
import skycmd
import skycmd.spark


class BatchOnly:
    """A model as a binding without Model.decide_each shows it: decide_batch and decide."""

    def __init__(self, model: skycmd.Model) -> None:
        self._m = model
        self.batch_calls = 0

    def decide_batch(self, bodies):
        self.batch_calls += 1
        return self._m.decide_batch(bodies)

    def decide(self, body):
        return self._m.decide(body)


def _bodies():
    good = [{"state": s, "questions": common.QUESTIONS} for s in common.make_states(9, seed=2)]
    bodies = [json.dumps(b) for b in good]
    bodies[3] = '{"state": null, "questions": ' + json.dumps(common.QUESTIONS) + "}"
    bodies[7] = "{not json"
    return bodies


def _summary(items):
    return [f"{type(x).__name__}: {x}" if isinstance(x, Exception) else x.json for x in items]


def test_fallback_without_decide_each_answers_as_decide_each():
    with skycmd.Model.open(common.MODEL, threads=1) as m:
        bodies = _bodies()
        assert hasattr(m, "decide_each")
        streamed = skycmd.spark.decide_rows(m, bodies, group=4)
        proxy = BatchOnly(m)
        fallback = skycmd.spark.decide_rows(proxy, bodies, group=4)
        assert proxy.batch_calls == 3, "one decide_batch per group of 4"
        assert _summary(fallback) == _summary(streamed)
        kinds = [type(x).__name__ for x in fallback]
        assert kinds[3] == "RequestError" and kinds[7] == "JsonError"
        assert all(k == "Response" for i, k in enumerate(kinds) if i not in (3, 7))


def test_answer_arrow_columns_and_errors():
    with skycmd.Model.open(common.MODEL, threads=1) as m:
        table = pa.table({"state": ["vy 0 dx 36 up 9 dn 7 nxt 10 alt 32", None]})
        arrays = skycmd.spark.answer_arrow(m, table, questions=common.QUESTIONS)
        names = [n for n, _ in skycmd.spark.answer_fields(common.QUESTIONS)]
        assert names == ["action", "danger", "margin", "input_tokens", "error"]
        out = pa.table(dict(zip(names, arrays))).to_pylist()
        ref = m.decide(state=table["state"][0].as_py(), questions=common.QUESTIONS)
        assert out[0]["action"]["choice"] == ref["action"].choice
        assert out[0]["margin"]["score"] == ref["margin"].score
        assert out[0]["danger"] == {"noul": ref["danger"].noul}
        assert out[0]["input_tokens"] == ref.input_tokens and out[0]["error"] is None
        assert out[1]["action"] is None and "SKYCMD_E_REQUEST" in out[1]["error"]
        with pytest.raises(RuntimeError, match="row 1 of the batch"):
            skycmd.spark.answer_arrow(m, table, questions=common.QUESTIONS, strict=True)


def test_questions_checked_before_any_engine_work():
    with pytest.raises(ValueError):
        skycmd.spark.plain_questions({"x": {"type": "rank"}})
    with pytest.raises(ValueError):
        skycmd.spark.plain_questions({})
