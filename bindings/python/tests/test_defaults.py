"""The built-in model (default_model_path, Model.open_default[_async]), Model.open_async and
the error naming: code is the status name; a file that does not exist is FileNotFoundError
as well as the binding's own class. The C library reads the environment os.environ writes,
so SKYCMD_DEFAULT_MODEL is set per test (monkeypatch)."""
import asyncio
import errno
import os
import pickle

import pytest

import skycmd


def answers(model, example):
    with model:
        return model.decide(example).json


def test_default_model_opens_like_its_path(model_path, example, monkeypatch):
    want = answers(skycmd.Model.open(model_path), example)
    monkeypatch.setenv("SKYCMD_DEFAULT_MODEL", model_path)
    assert skycmd.default_model_path() == model_path
    assert answers(skycmd.Model.open_default(), example) == want
    assert answers(skycmd.Model.open_default(threads=1), example) == want
    assert answers(asyncio.run(skycmd.Model.open_default_async(threads=1)), example) == want


def test_default_model_missing(tmp_path, monkeypatch):
    missing = str(tmp_path / "no-default.gguf")
    monkeypatch.setenv("SKYCMD_DEFAULT_MODEL", missing)
    for call in (skycmd.default_model_path, skycmd.Model.open_default):
        with pytest.raises(FileNotFoundError) as e:
            call()
        assert isinstance(e.value, skycmd.NotFoundError) and isinstance(e.value, skycmd.Error)
        assert type(e.value) is skycmd.DefaultModelNotFoundError
        assert e.value.code == "SKYCMD_E_NOT_FOUND" and e.value.status == 12
        assert e.value.errno == errno.ENOENT and missing in e.value.message
    # unset: the library looks beside itself (a wheel: its data directory)
    monkeypatch.setenv("SKYCMD_DEFAULT_MODEL", "")
    try:
        path = skycmd.default_model_path()
    except skycmd.DefaultModelNotFoundError as e:
        assert "looked in" in e.message
    else:
        assert os.path.basename(path) == "s1-pico-flappy.gguf"


def test_missing_file_is_file_not_found(tmp_path):
    path = str(tmp_path / "missing.gguf")
    with pytest.raises(FileNotFoundError) as e:
        skycmd.Model.open(path)
    err = e.value
    assert type(err) is skycmd.NoSuchFileError
    assert isinstance(err, skycmd.IoError) and isinstance(err, skycmd.Error)
    assert err.code == "SKYCMD_E_IO" and err.status == 4
    assert err.errno == errno.ENOENT and err.strerror == os.strerror(errno.ENOENT)
    assert err.filename == path
    assert str(err).startswith("SKYCMD_E_IO: ") and "missing.gguf" in str(err)
    try:  # existing handlers keep working
        skycmd.Model.open(path)
    except skycmd.IoError:
        pass
    with pytest.raises(FileNotFoundError):
        skycmd.inspect(path)
    e2 = pickle.loads(pickle.dumps(err))
    assert type(e2) is skycmd.NoSuchFileError and e2.errno == errno.ENOENT and e2.message == err.message
    # other failures are not OSErrors
    junk = tmp_path / "junk.gguf"
    junk.write_text("not a gguf file, only some text long enough to be read\n" * 4)
    with pytest.raises(skycmd.FormatError) as f:
        skycmd.Model.open(junk)
    assert not isinstance(f.value, OSError) and f.value.errno is None


def test_open_async(model_path, example):
    want = answers(skycmd.Model.open(model_path), example)

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.create_task(ticker())
        m = await skycmd.Model.open_async(model_path, threads=1)
        t.cancel()
        with pytest.raises(FileNotFoundError):
            await skycmd.Model.open_async(model_path + ".missing")
        return m, ticks

    m, ticks = asyncio.run(main())
    assert answers(m, example) == want
    assert ticks > 0  # the loop kept running while the model loaded
