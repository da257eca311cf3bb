"""The states and the CLI's reference answers, made once per test session."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Dict, List

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import common  # noqa: E402


@dataclass
class Reference:
    parquet: str
    states: List[str]
    hashes: Dict[int, str]


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """N_STATES states in 4 Parquet files and the hash of `skycmd decide --batch`'s answer
    to each (by id)."""
    d = tmp_path_factory.mktemp("states")
    states = common.make_states(common.N_STATES)
    common.write_parquet(str(d / "states"), states)
    out = common.cli_answers(str(d), [{"state": s, "questions": common.QUESTIONS} for s in states])
    assert all("error" not in o for o in out)
    return Reference(str(d / "states"), states, {i: common.cli_hash(o) for i, o in enumerate(out)})
