"""Score the rows of a Spark DataFrame with a skycmd model (``docs/distributed.md``).

    import skycmd, skycmd.spark
    out = skycmd.spark.decide(df, "/shared/s1-pico-flappy.gguf", questions={
        "action": skycmd.Choice({"thrust": "fire the rotors", "glide": "let gravity pull"},
                                instructions="Which input keeps the drone flying?"),
        "danger": skycmd.Noul(instructions="Will the drone crash?"),
    })
    out.select("action.choice", "action.confidence", "danger.noul", "error")

Built on ``DataFrame.mapInArrow``: each Python worker process opens the model once (lazily,
on its first batch) and keeps it for the tasks it runs after; the rows of an Arrow batch
are answered ``group`` at a time through the library's batch call. A row the library
refuses gets its message in the ``error`` column (its answers null) instead of failing the
task, unless ``strict=True``. pyspark and pyarrow are imported inside the functions, so
``import skycmd`` never needs them.

The Arrow core (``answer_arrow``, ``answer_fields``) is shared with ``skycmd.ray``.
"""
from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from ._errors import Error
from ._model import Model, default_model_path
from ._requests import Choice, Noul, Question, Score

#: The prefix of a model path that ``add_model`` shipped with ``SparkContext.addFile``.
SPARK_FILES = "sparkfiles:"

_TYPES = ("choice", "score", "noul")
_models: Dict[Tuple[str, int, Optional[str]], Model] = {}
_models_lock = threading.Lock()


# ---------------------------------------------------------------------------------------------
# The engine-independent part: questions, Arrow types, one batch answered.

def plain_questions(questions: Mapping[str, Question]) -> Dict[str, Dict[str, Any]]:
    """The wire form of fixed questions (Choice/Score/Noul objects or dicts), checked: each
    has a known ``type`` (the answer columns' types follow from it)."""
    if not isinstance(questions, Mapping) or not questions:
        raise ValueError("questions must be a non-empty mapping of names to questions")
    out: Dict[str, Dict[str, Any]] = {}
    for name, q in questions.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"a question's name must be a non-empty str, not {name!r}")
        d = q.to_dict() if isinstance(q, (Choice, Score, Noul)) else dict(q)
        if d.get("type") not in _TYPES:
            raise ValueError(f"question {name!r} has no type choice, score or noul")
        out[name] = d
    return out


def _arrow_types() -> Dict[str, Any]:
    import pyarrow as pa
    probs = pa.map_(pa.string(), pa.float64())
    legend = pa.map_(pa.string(), pa.string())
    return {
        "choice": pa.struct([("choice", pa.string()), ("probabilities", probs),
                             ("confidence", pa.float64())]),
        "score": pa.struct([("score", pa.float64()), ("legend", legend),
                            ("probabilities", probs), ("confidence", pa.float64())]),
        "noul": pa.struct([("noul", pa.float64())]),
        # per-row questions: one map of question id to a struct that holds any type
        "any": pa.map_(pa.string(), pa.struct([
            ("type", pa.string()), ("choice", pa.string()), ("value", pa.float64()),
            ("confidence", pa.float64()), ("probabilities", probs), ("legend", legend)])),
    }


def answer_fields(questions: Optional[Mapping[str, Question]], prefix: str = "") -> List[Tuple[str, Any]]:
    """The (name, pyarrow type) of the columns added: one struct per fixed question (named
    prefix + question id) or, with per-row questions, one ``answers`` map; then
    ``input_tokens`` (int32) and ``error`` (string)."""
    import pyarrow as pa
    types = _arrow_types()
    if questions is None:
        fields = [(prefix + "answers", types["any"])]
    else:
        fields = [(prefix + qid, types[q["type"]]) for qid, q in plain_questions(questions).items()]
    return fields + [(prefix + "input_tokens", pa.int32()), (prefix + "error", pa.string())]


def _state_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _bodies(states: List[Any], questions_json: Optional[str],
            row_questions: Optional[List[Any]]) -> List[Union[str, Exception]]:
    """Each row's request JSON text (the fixed questions' JSON encoded once), or the error
    of a row that cannot become one."""
    out: List[Union[str, Exception]] = []
    for i, state in enumerate(states):
        try:
            q = questions_json
            if row_questions is not None:
                q = row_questions[i]
                if q is None:
                    raise ValueError("the row's questions are null")
                if not isinstance(q, str):
                    q = json.dumps(q, ensure_ascii=False, allow_nan=False)
            out.append('{"state":' + _state_json(state) + ',"questions":' + str(q) + "}")
        except (TypeError, ValueError) as e:
            out.append(e)
    return out


def decide_rows(model: Model, bodies: List[str], group: int = 32) -> List[Union[Any, Exception]]:
    """One item per request body, in order: its Response or its exception. Through
    ``Model.decide_each`` where the binding has it; else ``decide_batch`` per group, and one
    ``decide`` per request of a group that the batch call refused (all or nothing)."""
    each = getattr(model, "decide_each", None)
    if each is not None:
        return list(each(bodies, group=group))
    out: List[Union[Any, Exception]] = []
    for i in range(0, len(bodies), group):
        chunk = bodies[i:i + group]
        try:
            out.extend(model.decide_batch(chunk))
        except Error:
            for body in chunk:
                try:
                    out.append(model.decide(body))
                except Error as e:
                    out.append(e)
    return out


def _options(a: Any) -> List[Tuple[str, float]]:
    return [(o.key, o.probability) for o in a.options]


def _legend(a: Any) -> Optional[List[Tuple[str, str]]]:
    if a.type != "score":
        return None
    return [(o.key, o.legend) for o in a.options if o.legend is not None]


def _typed(a: Any) -> Dict[str, Any]:
    if a.type == "choice":
        return {"choice": a.choice, "probabilities": _options(a), "confidence": a.confidence}
    if a.type == "score":
        return {"score": a.value, "legend": _legend(a), "probabilities": _options(a),
                "confidence": a.confidence}
    return {"noul": a.value}


def _generic(a: Any) -> Dict[str, Any]:
    return {"type": a.type, "choice": a.choice, "value": a.value, "confidence": a.confidence,
            "probabilities": _options(a), "legend": _legend(a)}


def answer_arrow(model: Model, batch: Any, *, questions: Optional[Mapping[str, Question]] = None,
                 questions_json: Optional[str] = None, state_col: str = "state",
                 questions_col: Optional[str] = None, prefix: str = "", group: int = 32,
                 strict: bool = False) -> List[Any]:
    """The arrays of the added columns (``answer_fields`` order) for a pyarrow RecordBatch or
    Table: the state column's values (a string, or a struct/list as a JSON object/array)
    with the fixed ``questions`` or each row's ``questions_col`` (JSON text of the
    questions object, or a struct/map). A row that fails gets its message in ``error``;
    with ``strict`` the first failure is raised (naming the row) instead."""
    import pyarrow as pa
    if (questions is None) == (questions_col is None):
        raise ValueError("give either questions or questions_col")
    if questions is not None and questions_json is None:
        questions_json = json.dumps(plain_questions(questions), ensure_ascii=False, allow_nan=False)
    states = batch.column(state_col).to_pylist()
    row_questions = batch.column(questions_col).to_pylist() if questions_col else None
    bodies = _bodies(states, questions_json, row_questions)
    good = [b for b in bodies if isinstance(b, str)]
    answered = iter(decide_rows(model, good, group))
    results: List[Any] = [next(answered) if isinstance(b, str) else b for b in bodies]

    errors: List[Optional[str]] = []
    tokens: List[Optional[int]] = []
    for i, r in enumerate(results):
        if isinstance(r, Exception):
            if strict:
                raise RuntimeError(f"skycmd: row {i} of the batch: {r}") from r
            errors.append(f"{type(r).__name__}: {r}")
            tokens.append(None)
        else:
            errors.append(None)
            tokens.append(r.input_tokens)
    ok = [not isinstance(r, Exception) for r in results]
    fields = answer_fields(questions, prefix)
    arrays: List[Any] = []
    if questions is None:
        arrays.append(pa.array([[(qid, _generic(a)) for qid, a in r.items()] if good_row else None
                                for r, good_row in zip(results, ok)], type=fields[0][1]))
    else:
        for (_, typ), qid in zip(fields, plain_questions(questions)):
            arrays.append(pa.array([_typed(r[qid]) if good_row else None
                                    for r, good_row in zip(results, ok)], type=typ))
    arrays.append(pa.array(tokens, type=pa.int32()))
    arrays.append(pa.array(errors, type=pa.string()))
    return arrays


def worker_model(path: Optional[str], threads: int, weights: Optional[str]) -> Model:
    """This process's model for (path, threads, weights), opened on first use and kept."""
    if path is None:
        path = default_model_path()
    key = (path, threads, weights)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = Model.open(path, threads=threads, weights=weights)
            _models[key] = model
        return model


def worker_models() -> List[Tuple[str, int, Optional[str]]]:
    """(path, threads, weights) of each model this process holds (``worker_model``'s), to see
    on an executor which models its Python worker loaded and with how many threads."""
    with _models_lock:
        return sorted(_models, key=repr)


# ---------------------------------------------------------------------------------------------
# Spark.

def add_model(spark: Any, path: Union[str, "os.PathLike[str]"]) -> str:
    """Ship a model file to every executor (``SparkContext.addFile``, once per executor) and
    return the name to give ``decide`` (``"sparkfiles:" + its file name``)."""
    path = os.fspath(path)
    spark.sparkContext.addFile(path)
    return SPARK_FILES + os.path.basename(path)


def _resolve(model: Optional[str]) -> Optional[str]:
    if model is not None and model.startswith(SPARK_FILES):
        from pyspark import SparkFiles
        return str(SparkFiles.get(model[len(SPARK_FILES):]))
    return model


def _task_cpus(default: int) -> int:
    try:
        from pyspark import TaskContext
        tc = TaskContext.get()
        if tc is not None:
            return max(1, int(tc.cpus()))
    except (ImportError, AttributeError, ValueError):
        pass
    return default


def _spark_type(arrow_type: Any) -> Any:
    """The Spark SQL type of one of answer_fields' Arrow types."""
    import pyarrow as pa
    from pyspark.sql import types as T
    if pa.types.is_map(arrow_type):
        return T.MapType(_spark_type(arrow_type.key_type), _spark_type(arrow_type.item_type), True)
    if pa.types.is_struct(arrow_type):
        return T.StructType([T.StructField(arrow_type.field(i).name,
                                           _spark_type(arrow_type.field(i).type), True)
                             for i in range(arrow_type.num_fields)])
    if pa.types.is_string(arrow_type):
        return T.StringType()
    if pa.types.is_float64(arrow_type):
        return T.DoubleType()
    if pa.types.is_int32(arrow_type):
        return T.IntegerType()
    raise TypeError(f"no Spark type for {arrow_type}")


def decide(df: Any, model: Optional[str] = None, *,
           questions: Optional[Mapping[str, Question]] = None,
           questions_col: Optional[str] = None, state_col: str = "state",
           prefix: str = "", group: int = 32, threads: Optional[int] = None,
           weights: Optional[str] = None, strict: bool = False) -> Any:
    """``df`` with answer columns added (every input column is kept).

    model: a GGUF path that every executor can read, ``add_model(spark, path)``'s name, or
    None for the built-in model (``skycmd.default_model_path()`` on the executor).
    questions: the same questions for every row (a dict of Choice/Score/Noul or wire dicts):
    one struct column per question, ``choice`` -> (choice, probabilities, confidence),
    ``score`` -> (score, legend, probabilities, confidence), ``noul`` -> (noul); or
    questions_col: a column with each row's questions object (JSON text, or a struct/map):
    one ``answers`` column, a map of question id to (type, choice, value, confidence,
    probabilities, legend). Then ``input_tokens`` and ``error`` (null when answered).
    state_col: a string column, or a struct/array (sent as a JSON object/array).
    threads: compute threads of each worker's model (default ``spark.task.cpus``); group:
    requests per library call; strict: a failed row fails the task (Spark retries it, then
    fails the job) instead of filling ``error``; prefix: put before every added column's name.
    """
    from pyspark.sql import types as T
    if (questions is None) == (questions_col is None):
        raise ValueError("give either questions or questions_col")
    if group < 1:
        raise ValueError("group must be positive")
    qs = plain_questions(questions) if questions is not None else None
    questions_json = json.dumps(qs, ensure_ascii=False, allow_nan=False) if qs is not None else None
    fields = answer_fields(qs, prefix)
    names = set(df.columns)
    for name, _ in fields:
        if name in names:
            raise ValueError(f"the DataFrame already has a column {name!r} (use prefix=)")
    for col in [state_col] + ([questions_col] if questions_col else []):
        if col not in names:
            raise ValueError(f"the DataFrame has no column {col!r}")
    schema = T.StructType(list(df.schema.fields) +
                          [T.StructField(n, _spark_type(t), True) for n, t in fields])
    default_cpus = int(df.sparkSession.conf.get("spark.task.cpus", "1") or 1)

    def score(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa
        m = worker_model(_resolve(model), threads or _task_cpus(default_cpus), weights)
        for rb in batches:
            arrays = answer_arrow(m, rb, questions=qs, questions_json=questions_json,
                                  state_col=state_col, questions_col=questions_col,
                                  prefix=prefix, group=group, strict=strict)
            yield pa.RecordBatch.from_arrays(list(rb.columns) + arrays,
                                             names=list(rb.schema.names) + [n for n, _ in fields])

    return df.mapInArrow(score, schema)


__all__ = ["SPARK_FILES", "add_model", "answer_arrow", "answer_fields", "decide",
           "decide_rows", "plain_questions", "worker_model", "worker_models"]
