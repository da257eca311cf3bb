"""Fixtures: a random s1-pico model and the example request, as every binding's suite uses.

SKYCMD_TEST_MODEL and SKYCMD_EXAMPLE_REQUEST (set by bindings/run-tests.sh) name them;
without them the suite makes its own model and reads examples/flappy-drone.json. Tests that
need a model skip if the library cannot make one (E_UNSUPPORTED), unless
SKYCMD_REQUIRE_MODEL=1, which makes that a failure.
"""
import json
import os
import pathlib

import pytest

import skycmd

REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def model_path(tmp_path_factory):
    given = os.environ.get("SKYCMD_TEST_MODEL")
    if given and os.path.exists(given):
        return given
    path = str(tmp_path_factory.mktemp("model") / "s1-pico.gguf")
    try:
        skycmd.random_model("s1-pico", path)
    except skycmd.UnsupportedError as e:
        if os.environ.get("SKYCMD_REQUIRE_MODEL") == "1":
            pytest.fail(f"SKYCMD_REQUIRE_MODEL=1 but no random model: {e}")
        pytest.skip(f"this library cannot make a random model: {e}")
    return path


@pytest.fixture(scope="session")
def example_text():
    path = os.environ.get("SKYCMD_EXAMPLE_REQUEST") or str(REPO / "examples" / "flappy-drone.json")
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="session")
def example(example_text):
    return json.loads(example_text)


@pytest.fixture()
def model(model_path):
    with skycmd.Model.open(model_path) as m:
        yield m
