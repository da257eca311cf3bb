"""Typed request builders mirroring the typesafe-sdk's ``Choice``/``Score``/``Noul`` question
objects, so a request need not be written as JSON by hand.

    Request(state="vy 0 dx 36", questions={
        "action": Choice({"thrust": "fire the rotors", "glide": "let gravity pull"},
                         instructions="Which input keeps the drone flying?"),
        "danger": Noul(instructions="Will the drone crash?"),
        "margin": Score(["none", "tight", "comfortable"], instructions="How much room?"),
    })

Like the SDK, an optional field left at ``None`` is left off the wire, ``None`` values nested
in ``criteria`` are kept, and a choice or score without criteria is refused before encoding
(ValueError). libskycmd itself requires ``instructions`` on every question (E_REQUEST).
"""
from __future__ import annotations

import json as _json
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Union

#: Text, a JSON object or an array (what the SDK calls Content, without assets).
Content = Union[str, Mapping[str, Any], Sequence[Any]]


def _drop_none(d: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _plain(value: Any) -> Any:
    """Mappings and sequences (tuples included) as JSON-ready dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Choice:
    """A question that selects between named alternatives: ``criteria`` maps each label to
    its description (or None for a label that speaks for itself)."""

    criteria: Mapping[str, Optional[Content]]
    instructions: Optional[Content] = None
    type: str = "choice"

    def __post_init__(self) -> None:
        if not self.criteria:
            raise ValueError("a Choice has no criteria; at least one choice is required")

    def to_dict(self) -> Dict[str, Any]:
        return _drop_none({"type": "choice", "instructions": _plain(self.instructions),
                           "criteria": _plain(self.criteria)})


@dataclass(frozen=True)
class Score:
    """A question that assigns a score on an ordered rubric: ``criteria[i]`` describes level i."""

    criteria: Sequence[Content]
    instructions: Optional[Content] = None
    type: str = "score"

    def __post_init__(self) -> None:
        if isinstance(self.criteria, (str, bytes)) or not self.criteria:
            raise ValueError("a Score has no criteria; at least one score is required")

    def to_dict(self) -> Dict[str, Any]:
        return _drop_none({"type": "score", "instructions": _plain(self.instructions),
                           "criteria": _plain(list(self.criteria))})


@dataclass(frozen=True)
class Noul:
    """A yes/no question; ``criteria`` optionally describes the outcomes:
    ``{"true": "...", "false": "..."}``."""

    instructions: Optional[Content] = None
    criteria: Optional[Mapping[str, Optional[Content]]] = None
    type: str = "noul"

    def __post_init__(self) -> None:
        if self.criteria is not None:
            if not isinstance(self.criteria, Mapping):
                raise ValueError("Noul criteria must be a mapping with the keys true and/or false")
            extra = set(self.criteria) - {"true", "false"}
            if extra:
                raise ValueError(f"Noul criteria has keys other than true/false: {sorted(extra)}")
        described = self.criteria is not None and any(v is not None for v in self.criteria.values())
        if self.instructions is None and not described:
            raise ValueError("a Noul has neither instructions nor criteria; at least one is required")

    def to_dict(self) -> Dict[str, Any]:
        return _drop_none({"type": "noul", "instructions": _plain(self.instructions),
                           "criteria": _plain(self.criteria)})


Question = Union[Choice, Score, Noul, Mapping[str, Any]]


@dataclass(frozen=True)
class Request:
    """A /v1/systemone request: the ``state`` to judge and named ``questions`` (question
    objects or plain dicts), optionally the ``model`` name to report."""

    state: Any
    questions: Mapping[str, Question]
    model: Optional[str] = None

    def __post_init__(self) -> None:
        # checked here, where the mistake is made, not as an AttributeError deep in to_dict
        if not isinstance(self.questions, Mapping):
            raise TypeError("questions must be a mapping of names to questions (Choice, Score, "
                            f"Noul or dict), not {type(self.questions).__name__}")
        if not self.questions:
            raise ValueError("a Request needs at least one question")
        for name, q in self.questions.items():
            if not isinstance(name, str):
                raise TypeError(f"a question's name must be a str, not {type(name).__name__}")
            if not isinstance(q, (Choice, Score, Noul, Mapping)):
                raise TypeError(f"question {name!r} must be a Choice, Score, Noul or dict, "
                                f"not {type(q).__name__}")
        if self.model is not None and not isinstance(self.model, str):
            raise TypeError(f"model must be a str, not {type(self.model).__name__}")

    def to_dict(self) -> Dict[str, Any]:
        questions = {name: q.to_dict() if isinstance(q, (Choice, Score, Noul)) else _plain(q)
                     for name, q in self.questions.items()}
        return _drop_none({"model": self.model, "state": _plain(self.state),
                           "questions": questions})

    def to_json(self) -> str:
        return _json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False)


RequestLike = Union[Request, Mapping[str, Any], str, bytes]


def encode_request(request: RequestLike) -> Union[str, bytes]:
    """The JSON text of a request given as a Request, a dict, or JSON (str/bytes, unchanged)."""
    if isinstance(request, (str, bytes)):
        return request
    if isinstance(request, Request):
        return request.to_json()
    if isinstance(request, Mapping):
        return _json.dumps(dict(request), ensure_ascii=False, allow_nan=False,
                           default=_question_default)
    raise TypeError(f"a request is a Request, a dict or JSON text, not {type(request).__name__}")


def _question_default(value: Any) -> Any:
    """Question objects inside a dict request encode as their wire form."""
    if isinstance(value, (Choice, Score, Noul, Request)):
        return value.to_dict()
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
