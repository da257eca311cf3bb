"""Responses copied out of the C response into plain, immutable Python values."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Tuple

_TYPES = ("choice", "score", "noul")


@dataclass(frozen=True)
class Option:
    """One alternative of an answer: ``key`` (a choice label, the score level "0".."n-1", or
    "false"/"true" for a noul), its ``probability``, and for a score the ``legend`` text of
    the level (None otherwise)."""

    key: str
    probability: float
    legend: Optional[str] = None


@dataclass(frozen=True)
class Answer:
    """The answer to one question.

    ``value`` is the probability of the chosen key (choice), the expected level (score) or
    P(true) (noul); ``confidence`` is None for a noul answer (the wire has none); ``choice``
    is the chosen key of a choice answer (None otherwise)."""

    id: str
    type: str
    choice: Optional[str]
    value: float
    confidence: Optional[float]
    options: Tuple[Option, ...]

    @property
    def probabilities(self) -> Dict[str, float]:
        """Probability of each key, in the order of the question's criteria."""
        return {o.key: o.probability for o in self.options}

    @property
    def legend(self) -> Optional[Dict[int, str]]:
        """A score's rubric keyed by integer level (as the SDK's ScoreAnswer.legend): each
        described level's text (a description that is not a string as compact JSON); None
        for other types."""
        if self.type != "score":
            return None
        return {int(o.key): o.legend for o in self.options if o.legend is not None}

    @property
    def score(self) -> Optional[float]:
        """The expected level of a score answer (the wire's "score"), else None."""
        return self.value if self.type == "score" else None

    @property
    def noul(self) -> Optional[float]:
        """P(true) of a noul answer (the wire's "noul"), else None."""
        return self.value if self.type == "noul" else None


@dataclass(frozen=True)
class Response(Mapping[str, Answer]):
    """The answers of one decide call, with the model name reported, the number of input
    tokens and the library's wire JSON (``json``).

    A read-only mapping of question id to Answer in request order, as every binding's answer
    container (keyed by question id, in request order): ``r["action"]``, ``"action" in r``,
    ``len(r)``, ``r.get(id)``, ``r.items()``; iterating yields the question ids, as with any
    Mapping (``r.values()`` yields the answers). ``answers`` is the same content as a dict."""

    model: str
    input_tokens: int
    json: str
    answers: Dict[str, Answer]

    def __iter__(self) -> Iterator[str]:
        return iter(self.answers)

    def __len__(self) -> int:
        return len(self.answers)

    def __getitem__(self, question_id: str) -> Answer:
        return self.answers[question_id]

    @property
    def choices(self) -> Dict[str, Answer]:
        return {k: a for k, a in self.answers.items() if a.type == "choice"}

    @property
    def scores(self) -> Dict[str, Answer]:
        return {k: a for k, a in self.answers.items() if a.type == "score"}

    @property
    def nouls(self) -> Dict[str, Answer]:
        return {k: a for k, a in self.answers.items() if a.type == "noul"}


def from_raw(raw: Any) -> Response:
    """A Response from the extension's tuple (see response_to_tuple in _skycmd.c)."""
    model, input_tokens, wire, answers = raw
    out = {}
    for (qid, qtype, choice, value, confidence, options) in answers:
        out[qid] = Answer(qid, _TYPES[qtype], choice, value, confidence,
                          tuple(Option(k, p, legend) for (k, p, legend) in options))
    return Response(model if model is not None else "", input_tokens, wire, out)
