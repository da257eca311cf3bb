"""The Python binding's suite: the same checks as the other bindings' suites
(docs/bindings.md, "Tests of every binding") plus the Python-only parts (GIL, asyncio,
request builders, context managers)."""
import asyncio
import collections.abc
import errno
import gc
import itertools
import json
import math
import os
import struct
import sys
import threading
import time

import pytest

import skycmd
from skycmd import _skycmd


def bits(v):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", v))[0]


def dump(r):
    """The cross-check's dump format (bindings/go/skycmd_test.go `dump`; an absent value,
    the noul confidence, as `none`)."""
    lines = ["input_tokens %d" % r.input_tokens]
    for a in r.values():
        conf = "none" if a.confidence is None else bits(a.confidence)
        lines.append("answer %s %s choice=%s value=%s confidence=%s"
                     % (a.id, a.type, a.choice or "", bits(a.value), conf))
        for o in a.options:
            lines.append("option %s %s" % (o.key, bits(o.probability)))
    return "\n".join(lines) + "\n"


def check_answers(r, example):
    """Structural checks of the example request's answers."""
    questions = example["questions"]
    assert list(r.answers) == list(questions)
    assert r.input_tokens > 0
    wire = json.loads(r.json)
    assert wire["usage"]["input_tokens"] == r.input_tokens
    assert wire["model"] == r.model
    for a in r.values():
        q = questions[a.id]
        assert a.type == q["type"]
        ps = [o.probability for o in a.options]
        assert all(0.0 <= p <= 1.0 for p in ps)
        assert math.isclose(sum(ps), 1.0, abs_tol=1e-9)
        w = wire["answers"][a.id]
        assert w["type"] == a.type
        if a.type == "choice":
            keys = list(q["criteria"]) if isinstance(q["criteria"], dict) else q["criteria"]
            assert [o.key for o in a.options] == keys
            best = max(a.options, key=lambda o: o.probability)
            assert a.choice == best.key
            assert a.value == best.probability
            assert 0.0 <= a.confidence <= 1.0
            assert w["choice"] == a.choice
            assert w["confidence"] == a.confidence
            assert w["probabilities"] == a.probabilities
            assert a.legend is None
        elif a.type == "score":
            assert [o.key for o in a.options] == [str(i) for i in range(len(q["criteria"]))]
            assert math.isclose(a.value, sum(i * p for i, p in enumerate(ps)), abs_tol=1e-12)
            assert a.score == a.value and a.choice is None
            assert 0.0 <= a.confidence <= 1.0
            assert w["score"] == a.value
            assert w["confidence"] == a.confidence
            assert {int(k): v for k, v in w["probabilities"].items()} == {
                int(o.key): o.probability for o in a.options}
            assert a.legend == {i: text for i, text in enumerate(q["criteria"])}
            assert {int(k): v for k, v in w["legend"].items()} == a.legend
        else:
            assert a.type == "noul"
            assert [o.key for o in a.options] == ["false", "true"]
            assert a.value == a.probabilities["true"]
            assert a.noul == a.value
            assert a.confidence is None
            assert a.choice is None and a.legend is None
            assert w["noul"] == a.value


# ------------------------------------------------------------------ the example request ---

def test_example_request(model, example, example_text):
    r = model.decide(example)
    check_answers(r, example)
    assert r.model == "s1-pico"
    assert dump(model.decide(example_text)) == dump(r)            # str
    assert dump(model.decide(example_text.encode())) == dump(r)   # bytes
    assert model.get_int("decision.max_head_tokens") > 0
    assert model.name == "s1-pico"
    with pytest.raises(skycmd.NotFoundError):
        model.get_int("no.such.key")
    out = os.environ.get("SKYCMD_DUMP_DIR")
    if out:
        with open(os.path.join(out, "python.txt"), "w") as f:
            f.write(dump(r))


def test_model_name_option(model_path, example):
    with skycmd.Model.open(model_path, model_name="my-model") as m:
        r = m.decide(example)
        assert r.model == "my-model"
        assert json.loads(r.json)["model"] == "my-model"
    # a NUL would end the C string: refused, not silently cut to "my"
    with pytest.raises(ValueError, match="model_name must not contain a NUL"):
        skycmd.Model.open(model_path, model_name="my\0model")
    with pytest.raises(ValueError, match="name must not contain a NUL"):
        skycmd.convert(model_path, model_path + ".out", name="a\0b")
    # the extension refuses it too, whoever calls it
    from skycmd import _skycmd
    with pytest.raises(ValueError, match="NUL"):
        _skycmd.Model.open(model_path, [(102, "my\0model")], [], None)


def test_request_builders_equal_hand_written_json(model, example):
    q = example["questions"]
    built = skycmd.Request(state=example["state"], questions={
        "action": skycmd.Choice(q["action"]["criteria"], instructions=q["action"]["instructions"]),
        "danger": skycmd.Noul(instructions=q["danger"]["instructions"]),
        "margin": skycmd.Score(q["margin"]["criteria"], instructions=q["margin"]["instructions"]),
    })
    assert json.loads(built.to_json()) == example
    r = model.decide(built)
    assert dump(r) == dump(model.decide(example))
    # the SDK's keyword form, and question objects inside a plain dict
    r2 = model.decide(state=example["state"], questions=built.questions)
    assert dump(r2) == dump(r)
    r3 = model.decide({"state": example["state"], "questions": dict(built.questions)})
    assert dump(r3) == dump(r)


def test_request_builder_validation(model):
    with pytest.raises(ValueError, match="no criteria"):
        skycmd.Choice({})
    with pytest.raises(ValueError, match="no criteria"):
        skycmd.Score([])
    with pytest.raises(ValueError, match="neither instructions nor criteria"):
        skycmd.Noul()
    with pytest.raises(ValueError, match="true/false"):
        skycmd.Noul(instructions="x", criteria={"maybe": "y"})
    assert skycmd.Noul(criteria={"true": "spam"}).to_dict() == {"type": "noul", "criteria": {"true": "spam"}}
    # None inside criteria is kept (an undescribed label), None fields are dropped
    assert skycmd.Choice({"a": None, "b": "bee"}).to_dict() == {
        "type": "choice", "criteria": {"a": None, "b": "bee"}}
    with pytest.raises(TypeError, match="not int"):
        model.decide(42)  # type: ignore[arg-type]
    # questions that are not a mapping of names to questions: TypeError, saying what is wrong
    with pytest.raises(TypeError, match="questions must be a mapping .* not list"):
        model.decide(state="x", questions=[1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="questions must be a mapping .* not list"):
        skycmd.Request(state="x", questions=[skycmd.Noul(instructions="y")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="question 'a' must be a Choice, Score, Noul or dict, not int"):
        skycmd.Request(state="x", questions={"a": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="name must be a str, not int"):
        skycmd.Request(state="x", questions={1: skycmd.Noul(instructions="y")})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="not both"):
        model.decide("{}", state="x")


def test_options(model_path, example):
    for kw in ({"threads": 1}, {"threads": 2, "activations": "q8"}, {"weights": "q8"},
               {"weights": skycmd.Weights.Q8_PLAIN}, {"weights": "q8_row"}, {"weights": "bf16x3"},
               {"weights": "f32"}, {"max_tokens": 512}):
        with skycmd.Model.open(model_path, **kw) as m:
            check_answers(m.decide(example), example)
    with pytest.raises(ValueError, match="weights must be one of"):
        skycmd.Model.open(model_path, weights="f64")
    with pytest.raises(skycmd.InvalidArgumentError, match=r"threads: -3 is outside \[0, 256\]"):
        skycmd.Model.open(model_path, threads=-3)
    with skycmd.Model.open(model_path, max_tokens=16) as m:
        with pytest.raises(skycmd.RequestError, match="max_len=16"):
            m.decide(example)


def test_open_buffer(model_path, model, example):
    with open(model_path, "rb") as f:
        data = f.read()
    with skycmd.Model.open_buffer(data) as m:
        assert dump(m.decide(example)) == dump(model.decide(example))
    buf = bytearray(data)
    m = skycmd.Model.open_buffer(buf)
    with pytest.raises(BufferError):
        buf.extend(b"x")  # held by the model: it reads these bytes in place
    m.close()
    buf.extend(b"x")  # released with the model
    with pytest.raises(skycmd.FormatError):
        skycmd.Model.open_buffer(b"not a gguf file at all")


# ------------------------------------------------------------------ errors ----------------

def test_error_bad_path(tmp_path):
    path = str(tmp_path / "missing.gguf")
    with pytest.raises(skycmd.IoError) as e:
        skycmd.Model.open(path)
    assert e.value.status == 4 and e.value.code == "SKYCMD_E_IO"
    assert "missing.gguf" in e.value.message
    assert isinstance(e.value, skycmd.Error)
    assert str(e.value).startswith("SKYCMD_E_IO: ")


def test_error_not_gguf(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("this is not a GGUF file, only some text long enough to be read\n" * 4)
    with pytest.raises(skycmd.FormatError) as e:
        skycmd.Model.open(path)  # a pathlib.Path works too
    assert e.value.status == 5 and e.value.code == "SKYCMD_E_FORMAT"
    assert e.value.message



def test_error_non_utf8_file_name(tmp_path, model_path):
    """A file name that is not UTF-8 keeps the library's error (status, errno, filename);
    the message holds its bytes as surrogates (os.fsencode gives them back), as do the log
    messages that name it."""
    base = os.fsencode(tmp_path)
    missing = base + b"/missing\xff.gguf"
    for open_it in (skycmd.Model.open, skycmd.inspect, skycmd.inspect_json):
        with pytest.raises(skycmd.NoSuchFileError) as e:
            open_it(missing)
        assert e.value.code == "SKYCMD_E_IO" and e.value.errno == errno.ENOENT
        assert e.value.filename == missing
        assert b"missing\xff.gguf" in os.fsencode(e.value.message)
    with pytest.raises(skycmd.NoSuchFileError) as e:
        skycmd.Tokenizer.open(base + b"/missing\xff.json")
    assert e.value.errno == errno.ENOENT and e.value.filename == base + b"/missing\xff.json"
    truncated = base + b"/truncated\xff.gguf"
    with open(model_path, "rb") as f, open(truncated, "wb") as out:
        out.write(f.read(100))
    for open_it in (skycmd.Model.open, skycmd.inspect):
        with pytest.raises(skycmd.FormatError) as e:
            open_it(truncated)
        assert e.value.code == "SKYCMD_E_FORMAT"
        assert b"truncated\xff.gguf" in os.fsencode(e.value.message)
    # the log messages of a quantize name its input
    source = base + b"/model\xff.gguf"
    with open(model_path, "rb") as f, open(source, "wb") as out:
        out.write(f.read())
    events = []
    skycmd.quantize(source, base + b"/q8\xff.gguf", log=lambda level, msg: events.append(msg))
    assert any("model\udcff.gguf" in msg for msg in events)
    # a str path: inspect sets filename too
    with pytest.raises(FileNotFoundError) as e:
        skycmd.inspect(str(tmp_path / "missing.gguf"))
    assert e.value.filename == str(tmp_path / "missing.gguf")


def test_error_bad_json(model):
    with pytest.raises(skycmd.JsonError) as e:
        model.decide('{"state": "x", "questions": ')
    assert e.value.status == 8 and e.value.code == "SKYCMD_E_JSON"
    assert "JSON" in e.value.message


def test_error_invalid_request(model):
    with pytest.raises(skycmd.RequestError) as e:
        model.decide({"state": "x", "questions": {"action": {"type": "choice", "instructions": "pick"}}})
    assert e.value.status == 9 and e.value.code == "SKYCMD_E_REQUEST"
    assert "criteria" in e.value.message
    assert "action" in e.value.message


def test_error_closed_model(model_path, example):
    m = skycmd.Model.open(model_path)
    tok = m.tokenizer
    m.close()
    m.close()  # idempotent
    assert m.closed
    for call in (lambda: m.decide(example), lambda: m.decide_batch([example]),
                 lambda: m.name, lambda: m.get_int("vocab_size"), lambda: tok.encode("x"),
                 lambda: tok.vocab_size):
        with pytest.raises(skycmd.MisuseError) as e:
            call()
        assert e.value.status == 2 and e.value.code == "SKYCMD_E_MISUSE"
        assert "closed" in e.value.message


def test_close_while_a_call_runs(model_path, example):
    """close() during a running decide: the call finishes with its answers, later calls get
    MisuseError, and the C model is freed when the running call ends."""
    before = _skycmd.live_models()
    m = skycmd.Model.open(model_path, threads=1)
    expected = dump(m.decide(example))
    results, started = [], threading.Event()

    def worker():
        started.set()
        results.append(m.decide_batch([example] * 64))

    for _ in range(5):  # until the close lands while the call runs
        results.clear()
        started.clear()
        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        time.sleep(0.005)
        running = t.is_alive()
        if running:
            m.close()
        t.join()
        if running:
            break
    assert m.closed, "the batch never ran long enough to be closed under"
    assert [dump(r) for r in results[0]] == [expected] * 64
    with pytest.raises(skycmd.MisuseError):
        m.decide(example)
    assert _skycmd.live_models() == before


def test_context_manager_closes(model_path, example):
    with skycmd.Model.open(model_path) as m:
        m.decide(example)
        assert not m.closed
    assert m.closed
    with pytest.raises(skycmd.MisuseError):
        m.decide(example)


def test_failed_convert_leaves_no_file(tmp_path):
    out = tmp_path / "out.gguf"
    with pytest.raises(skycmd.IoError):
        skycmd.convert(tmp_path / "no-such-checkpoint", out)
    assert not out.exists()
    assert os.listdir(tmp_path) == []


def test_errors_are_picklable():
    import pickle
    e = pickle.loads(pickle.dumps(skycmd.RequestError(9, "questions.x: bad")))
    assert type(e) is skycmd.RequestError and e.status == 9 and e.message == "questions.x: bad"


# ------------------------------------------------------------------ version ---------------

def test_version():
    info = skycmd.library_info()
    n = skycmd.HEADER_VERSION_NUMBER
    assert info["version_number"] >= n
    assert info["version_string"] == skycmd.library_version()
    assert info["abi_version"] >= 1
    assert info["build_id"] and isinstance(info["cpu_features"], str)
    skycmd.check_version(n)  # its own header
    for newer in (n + 1, n + 100, n + 10000):  # one patch, minor or major newer
        with pytest.raises(skycmd.VersionError) as e:
            skycmd.check_version(newer)
        assert e.value.status == 11 and e.value.code == "SKYCMD_E_VERSION"


SIMULATED_OLD_LIBRARY = r"""
import glob, importlib.machinery, importlib.util, os, sys
package = os.path.dirname(importlib.util.find_spec("skycmd").origin)
path = glob.glob(os.path.join(package, "_skycmd*.so"))[0]
loader = importlib.machinery.ExtensionFileLoader("skycmd._skycmd", path)
ext = importlib.util.module_from_spec(importlib.util.spec_from_loader("skycmd._skycmd", loader))
loader.exec_module(ext)
real = ext.check_version
ext.check_version = lambda n: real(n + 10000)  # the library now looks one major older
sys.modules["skycmd._skycmd"] = ext
try:
    import skycmd
except Exception as e:
    print(type(e).__name__, getattr(e, "code", ""), getattr(e, "status", ""))
else:
    print("imported")
"""


def test_older_library_refused_at_import():
    """A library older than the extension's header: `import skycmd` fails with VersionError,
    so no entry point can be reached."""
    import subprocess
    out = subprocess.run([sys.executable, "-c", SIMULATED_OLD_LIBRARY], capture_output=True,
                         text=True, cwd="/", check=True).stdout.split()
    assert out == ["VersionError", "SKYCMD_E_VERSION", "11"], out


# ------------------------------------------------------------------ concurrency ------------

def test_threads_share_a_model(model, example):
    expected = dump(model.decide(example))
    results, errors = [], []
    barrier = threading.Barrier(8)

    def worker():
        try:
            barrier.wait()
            for _ in range(5):
                results.append(dump(model.decide(example)))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 40 and set(results) == {expected}  # bit-identical
    assert 1 <= model.idle_sessions <= 8  # one session per concurrent call, then reused


def test_gil_released_during_decide(model_path, example):
    """Two threads overlap: two decide calls run at the same time (the pool then holds two
    sessions; with the GIL held they would take turns with one), and while a thread is inside
    decide (a batch of ~50 ms) the main thread keeps running Python (with the GIL held its
    longest stall would be at least the C call itself). Each property gets a few attempts, as
    a loaded machine may delay a thread; a binding that holds the GIL fails every attempt."""
    batch = [example] * 48
    with skycmd.Model.open(model_path, threads=1) as model:
        start = time.perf_counter()
        model.decide_batch(batch)
        single = time.perf_counter() - start
        assert model.idle_sessions == 1

        for _ in range(5):
            ready = threading.Barrier(2)

            def worker():
                ready.wait()
                model.decide_batch(batch)

            threads = [threading.Thread(target=worker) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if model.idle_sessions == 2:
                break
        assert model.idle_sessions == 2, "two decide calls never overlapped"

        old = sys.getswitchinterval()
        sys.setswitchinterval(0.001)
        try:
            for _ in range(3):
                call = []

                def timed():
                    t0 = time.perf_counter()
                    model.decide_batch(batch)
                    call.append(time.perf_counter() - t0)

                t = threading.Thread(target=timed)
                gaps, last = [], time.perf_counter()
                t.start()
                while t.is_alive():
                    now = time.perf_counter()
                    gaps.append(now - last)
                    last = now
                t.join()
                if len(gaps) > 100 and max(gaps) < 0.9 * call[0]:
                    break
        finally:
            sys.setswitchinterval(old)
    print(f"python gil: longest main-thread stall {max(gaps) * 1e3:.1f} ms during a "
          f"{call[0] * 1e3:.1f} ms decide_batch (alone: {single * 1e3:.1f} ms)")
    assert len(gaps) > 100
    assert max(gaps) < 0.9 * call[0], (max(gaps), call[0])


def longest_stall(fn):
    """(the main thread's longest stall, the call's duration) while fn runs on a thread."""
    call = []

    def timed():
        t0 = time.perf_counter()
        fn()
        call.append(time.perf_counter() - t0)

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        t = threading.Thread(target=timed)
        longest, last = 0.0, time.perf_counter()
        t.start()
        while t.is_alive():
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert call, "the call failed"
    return longest, call[0]


def test_gil_released_during_open_quantize_convert(tmp_path):
    """open (an s1-nano with int8 weights: calibration, ~0.2 s), quantize and convert leave
    the main thread running (a few attempts each, as in the decide test)."""
    nano = tmp_path / "nano.gguf"
    laya = tmp_path / "nano-laya"
    skycmd.random_model("s1-nano", nano)
    skycmd.random_model("s1-nano", laya, layout="laya")
    calls = {
        "open": lambda: skycmd.Model.open(nano, weights="q8", threads=1).close(),
        "quantize": lambda: skycmd.quantize(nano, tmp_path / "q.gguf", "q8_0"),
        "convert": lambda: skycmd.convert(laya, tmp_path / "c.gguf"),
    }
    for name, fn in calls.items():
        for _ in range(3):
            stall, took = longest_stall(fn)
            if stall < 0.9 * took:
                break
        print(f"python gil: {name}: longest main-thread stall {stall * 1e3:.1f} ms in {took * 1e3:.1f} ms")
        assert stall < 0.9 * took, (name, stall, took)


def test_asyncio(model, example):
    expected = dump(model.decide(example))

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.create_task(ticker())
        rs = await asyncio.gather(*(model.decide_async(example) for _ in range(6)))
        batch = await model.decide_batch_async([example, example])
        t.cancel()
        return rs, batch, ticks

    rs, batch, ticks = asyncio.run(main())
    assert [dump(r) for r in rs] == [expected] * 6
    assert [dump(r) for r in batch] == [expected] * 2
    assert ticks > 0  # the loop kept running

    async def failing():
        await model.decide_async("{")
    with pytest.raises(skycmd.JsonError):
        asyncio.run(failing())


def test_response_is_a_mapping(model, example):
    """Keyed by question id, in request order (the answer container of every binding)."""
    r = model.decide(example)
    ids = list(example["questions"])
    assert isinstance(r, collections.abc.Mapping)
    assert list(r) == ids and list(r.keys()) == ids and len(r) == len(ids)
    assert [a.id for a in r.values()] == ids
    assert [(k, a.id) for k, a in r.items()] == [(i, i) for i in ids]
    assert ids[0] in r and "no-such-question" not in r
    assert r.get("no-such-question") is None and r.get(ids[0]) is r[ids[0]]
    assert dict(r) == r.answers and list(r.answers) == ids
    with pytest.raises(KeyError):
        r["no-such-question"]
    with pytest.raises(TypeError):
        r[ids[0]] = r[ids[0]]  # read-only


# ------------------------------------------------------------------ batch -----------------

def test_decide_batch(model, example):
    other = json.loads(json.dumps(example))
    other["state"] = "vy 3 dx 12 up 1 dn 20 nxt 4 alt 80"
    singles = [dump(model.decide(r)) for r in (example, other, example)]
    assert [dump(r) for r in model.decide_batch([example, other, example])] == singles
    assert model.decide_batch([]) == []
    bad = {"state": "x", "questions": {"q": {"type": "score", "instructions": "i"}}}
    with pytest.raises(skycmd.RequestError, match=r"^SKYCMD_E_REQUEST: request 1: .*criteria"):
        model.decide_batch([example, bad])


def each_requests(example):
    """70 requests (three groups of 32: 32, 32, 6) of varied states, with a malformed JSON
    text at 5, an invalid request at 33 (the second group) and a non-request at 69 (the
    last, in the short group)."""
    bad_request = {"state": "x", "questions": {"q": {"type": "score", "instructions": "i"}}}
    out = []
    for i in range(70):
        r = json.loads(json.dumps(example))
        r["state"] = "vy %d dx %d up 9 dn 7 nxt 10 alt %d" % (i % 7, 3 * i, 20 + i)
        out.append(r if i % 2 else json.dumps(r))  # dicts and JSON texts
    out[5] = '{"state": "x", "questions": '
    out[33] = bad_request
    out[69] = 42
    return out


def check_each(items, requests, singles):
    assert len(items) == len(requests)
    for i, item in enumerate(items):
        if i == 5:
            assert type(item) is skycmd.JsonError and item.code == "SKYCMD_E_JSON", item
        elif i == 33:
            assert type(item) is skycmd.RequestError and "criteria" in item.message, item
        elif i == 69:
            assert type(item) is skycmd.InvalidArgumentError, item
            assert isinstance(item.__cause__, TypeError)
        else:
            assert isinstance(item, skycmd.Response), (i, item)
            assert dump(item) == singles[i], i  # the same as decide alone


def test_decide_each(model, example):
    requests = each_requests(example)
    singles = {i: dump(model.decide(r)) for i, r in enumerate(requests) if i not in (5, 33, 69)}
    assert len(set(singles.values())) > 1  # the states differ, so the order is checked
    for group in (32, 1, 7, 70, 100):
        check_each(list(model.decide_each(requests, group=group)), requests, singles)
    check_each(list(model.decide_each(iter(requests))), requests, singles)  # any iterable
    assert list(model.decide_each([])) == []
    for group in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            model.decide_each(requests, group=group)


def test_decide_each_is_lazy(model, example):
    """The input is read one group at a time: after the first item only the first group has
    been taken, after the 33rd the second."""
    taken = []

    def source():
        for i in range(70):
            taken.append(i)
            yield example

    it = model.decide_each(source())
    assert taken == []  # nothing read before the first item is asked for
    first = next(it)
    assert isinstance(first, skycmd.Response) and len(taken) == 32
    for _ in range(32):
        next(it)
    assert len(taken) == 64
    assert len(list(it)) == 70 - 33 and len(taken) == 70
    endless = model.decide_each(itertools.repeat(example), group=4)  # a source without end
    assert all(isinstance(x, skycmd.Response) for x in itertools.islice(endless, 10))


def test_decide_each_closed_model(model_path, example):
    m = skycmd.Model.open(model_path)
    it = m.decide_each([example] * 40)
    assert isinstance(next(it), skycmd.Response)
    m.close()
    rest = list(it)
    # the rest of the first group was answered before the close; the second group's
    # requests each get the MisuseError of the closed model, and the stream ends normally
    assert all(isinstance(x, skycmd.Response) for x in rest[:31])
    assert [type(x) for x in rest[31:]] == [skycmd.MisuseError] * 8
    assert "closed" in rest[31].message and rest[31] is not rest[32]


def test_decide_each_async(model, example):
    requests = each_requests(example)
    singles = {i: dump(model.decide(r)) for i, r in enumerate(requests) if i not in (5, 33, 69)}

    async def agen():
        for r in requests:
            await asyncio.sleep(0)
            yield r

    async def main():
        from_list = [item async for item in model.decide_each_async(requests, group=16)]
        from_agen = [item async for item in model.decide_each_async(agen())]
        return from_list, from_agen

    from_list, from_agen = asyncio.run(main())
    check_each(from_list, requests, singles)
    check_each(from_agen, requests, singles)
    with pytest.raises(ValueError):
        model.decide_each_async(requests, group=0)


# ------------------------------------------------------------------ files -----------------

def test_inspect(model_path):
    text = skycmd.inspect(model_path)
    assert "GGUF v3" in text and "general.name" in text and "s1-pico" in text
    doc = skycmd.inspect_json(model_path, max_array=2)
    assert doc["version"] == 3 and doc["tensors"]
    assert doc["total_parameters"] > 0
    with pytest.raises(skycmd.IoError):
        skycmd.inspect(model_path + ".missing")


def test_quantize_with_progress(model_path, tmp_path, example):
    out = tmp_path / "q8.gguf"
    seen = []
    skycmd.quantize(model_path, out, "q8_0", progress=lambda done, total: seen.append((done, total)))
    assert seen and all(b >= a for (a, _), (b, _) in zip(seen, seen[1:]))
    assert seen[-1][0] == seen[-1][1]
    types = {t["type"] for t in skycmd.inspect_json(out)["tensors"]}
    assert "q8_0" in {str(t).lower() for t in types}
    with skycmd.Model.open(out) as m:
        check_answers(m.decide(example), example)


def test_quantize_calibrated_answers_as_q8_at_load(model_path, tmp_path, example):
    out = tmp_path / "cal.gguf"
    seen = []
    skycmd.quantize(model_path, out, calibrated=True, progress=lambda done, total: seen.append(done))
    assert seen and seen[-1] == 1000000
    assert "skycmd.int8.version" in {m["key"] for m in skycmd.inspect_json(out)["metadata"]}
    with skycmd.Model.open(model_path, weights="q8") as a, skycmd.Model.open(out, weights="q8") as b:
        assert a.decide(example) == b.decide(example)
    with pytest.raises(ValueError):
        skycmd.quantize(model_path, tmp_path / "x.gguf", "f16", calibrated=True)
    with pytest.raises(skycmd.InvalidArgumentError) as e:
        skycmd.quantize(out, tmp_path / "x.gguf", calibrated=True)
    assert "already stores a calibrated int8 model" in str(e.value)
    assert not (tmp_path / "x.gguf").exists()


def test_quantize_calibrated_rows_answers_as_q8_row_at_load(model_path, tmp_path, example):
    out = tmp_path / "rows.gguf"
    skycmd.quantize(model_path, out, calibrated="q8_row")
    keys = {m["key"]: m for m in skycmd.inspect_json(out)["metadata"]}
    assert "skycmd.int8.row_scaled" in keys
    with skycmd.Model.open(model_path, weights="q8_row") as a, \
            skycmd.Model.open(out, weights="q8_row") as b:
        assert a.decide(example) == b.decide(example)
        assert b.get_int("int8_stored") == 2
    with pytest.raises(ValueError):
        skycmd.quantize(model_path, tmp_path / "x.gguf", calibrated="rows")


def test_progress_exception_cancels(model_path, tmp_path):
    out = tmp_path / "cancelled.gguf"
    calls = []

    def stop(done, total):
        calls.append(done)
        raise KeyError("enough")

    with pytest.raises(skycmd.CancelledError) as e:
        skycmd.quantize(model_path, out, skycmd.Type.Q8_0, progress=stop)
    assert e.value.status == 14 and e.value.code == "SKYCMD_E_CANCELLED"
    assert isinstance(e.value.__cause__, KeyError)
    assert len(calls) == 1  # not called again once it raised
    assert not out.exists()
    with pytest.raises(skycmd.CancelledError) as e:
        skycmd.quantize(model_path, out, "q8_0", progress=lambda d, t: False)
    assert e.value.__cause__ is None
    assert not out.exists()
    with pytest.raises(TypeError):
        skycmd.quantize(model_path, out, "q8_0", progress=42)  # type: ignore[arg-type]



@pytest.mark.parametrize("make", [KeyboardInterrupt, lambda: SystemExit(3)])
def test_progress_base_exception_propagates(model_path, tmp_path, make):
    """Ctrl-C or sys.exit() in a callback cancels the call (no output) and is raised as it
    is, not as a CancelledError that `except Exception` would catch."""
    out = tmp_path / "cancelled.gguf"
    raised = make()

    def progress(done, total):
        raise raised

    with pytest.raises(BaseException) as e:
        skycmd.quantize(model_path, out, "q8_0", progress=progress)
    assert e.value is raised and not out.exists()
    # the log path: with and without a progress callable, the call is cancelled likewise
    def log(level, msg):
        raise raised

    for progress in (None, lambda done, total: None):
        with pytest.raises(BaseException) as e:
            skycmd.quantize(model_path, out, "q8_0", progress=progress, log=log)
        assert e.value is raised and not out.exists()
    before = _skycmd.live_models()
    with pytest.raises(BaseException) as e:
        skycmd.Model.open(model_path, weights="q8", log=log)
    assert e.value is raised and _skycmd.live_models() == before
    # an ordinary exception in a log callable alone still cannot cancel: raised after
    def failing_log(level, msg):
        raise RuntimeError("log refused")

    with pytest.raises(RuntimeError, match="log refused"):
        skycmd.quantize(model_path, out, "q8_0", log=failing_log)


def test_convert_tokenizer_and_cancel(tmp_path, example):
    laya = tmp_path / "laya"
    skycmd.random_model("s1-pico", laya, layout="laya", seed=3)
    out = tmp_path / "converted.gguf"
    progress = []
    skycmd.convert(laya, out, name="converted", progress=lambda d, t: progress.append((d, t)))
    assert progress and progress[-1][0] == progress[-1][1]
    with skycmd.Model.open(out) as m:
        check_answers(m.decide(example), example)
        tok = skycmd.Tokenizer.open(laya / "tokenizer" / "tokenizer.json")
        for text in ("hello world", "vy 0 dx 36 up 9", "Zoë naïve — ünïcödé ✓"):
            assert tok.encode(text) == m.tokenizer.encode(text)
        assert tok.vocab_size == m.tokenizer.vocab_size
        tok.close()
        with pytest.raises(skycmd.MisuseError):
            tok.encode("x")
    cancelled = tmp_path / "cancelled.gguf"
    with pytest.raises(skycmd.CancelledError) as e:
        skycmd.convert(laya, cancelled, progress=lambda d, t: 1 / 0)
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert not cancelled.exists()


def test_seeded_random_model(tmp_path, example):
    a, b, c = (tmp_path / n for n in ("a.gguf", "b.gguf", "c.gguf"))
    skycmd.random_model("s1-pico", a, seed=7)
    skycmd.random_model("s1-pico", b, seed=7)
    skycmd.random_model("s1-pico", c, seed=8)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    with skycmd.Model.open(a) as m:
        check_answers(m.decide(example), example)
    with pytest.raises(skycmd.Error):
        skycmd.random_model("s1-gigantic", tmp_path / "d.gguf")


# ------------------------------------------------------------------ tokenizer -------------

def test_tokenizer(model):
    tok = model.tokenizer
    assert tok is model.tokenizer
    assert tok.vocab_size == model.get_int("vocab_size") > 0
    for text in ("hello world", "vy 0 dx 36 up 9 dn 7", "", "Zoë — ✓ 日本"):
        ids = tok.encode(text)
        assert all(0 <= i < tok.vocab_size for i in ids)
        assert tok.count(text) == len(ids)
        assert tok.decode(ids) == text
    assert tok.decode(iter(tok.encode("abc"))) == "abc"  # any iterable of ints
    assert isinstance(tok.token(tok.encode("hello")[0]), str)
    assert tok.token(-1) is None and tok.token(tok.vocab_size) is None
    specials = [tok.cls_id, tok.sep_id, tok.mask_id, tok.pad_id, tok.unk_id]
    assert all(s is None or 0 <= s < tok.vocab_size for s in specials)
    assert tok.cls_id is not None and tok.sep_id is not None
    assert tok.special_id("cls") == tok.cls_id == tok.special_id(skycmd.Special.CLS)
    with pytest.raises(skycmd.Error):
        tok.decode([tok.vocab_size + 5])


def test_tokenizer_open_errors(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(FileNotFoundError) as e:  # as Model.open
        skycmd.Tokenizer.open(missing)
    assert type(e.value) is skycmd.NoSuchFileError and e.value.code == "SKYCMD_E_IO"
    assert e.value.errno == errno.ENOENT and e.value.filename == str(missing)
    assert "missing.json" in e.value.message
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{")
    with pytest.raises(skycmd.Error):
        skycmd.Tokenizer.open(bad)


# ------------------------------------------------------------------ leaks -----------------

def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_leak_loop(model_path, example_text):
    """open/decide/close rounds (every tenth model dropped unclosed for the deallocator):
    every C model is freed and the RSS is flat between rounds 300 and 600."""
    start_models = _skycmd.live_models()
    bad = '{"state": "x", "questions": {"a": {"type": "choice", "instructions": "i"}}}'
    rss = {}
    for i in range(1, 601):
        m = skycmd.Model.open(model_path)
        m.decide(example_text)
        m.tokenizer.encode("hello world")
        with pytest.raises(skycmd.RequestError):
            m.decide(bad)
        if i % 10:
            m.close()
        del m
        if i in (300, 600):
            gc.collect()
            rss[i] = rss_bytes()
    gc.collect()
    assert _skycmd.live_models() == start_models
    growth = rss[600] - rss[300]
    print(f"python loop: RSS {rss[300] >> 10} KiB at round 300, {rss[600] >> 10} KiB at 600")
    assert growth < 2 << 20, f"RSS grew by {growth} bytes over 300 rounds"


def test_only_pyinit_exported():
    """The extension exports PyInit__skycmd alone (libskycmd linked into it stays private)."""
    import subprocess
    so = _skycmd.__file__
    try:
        out = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True,
                             text=True, check=True).stdout
    except FileNotFoundError:
        pytest.skip("nm (binutils) is not installed")
    names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    assert names == ["PyInit__skycmd"], names


def test_score_legend_with_object_levels(model):
    r = model.decide(skycmd.Request(state="x", questions={
        "s": skycmd.Score(["low", {"level": "mid", "n": [1, 2]}, "high"], instructions="how?"),
        "c": skycmd.Choice({"a": None, "b": "bee"}, instructions="which?"),
    }))
    assert r["s"].legend == {0: "low", 1: '{"level":"mid","n":[1,2]}', 2: "high"}
    assert [o.legend for o in r["s"].options] == ["low", '{"level":"mid","n":[1,2]}', "high"]
    assert json.loads(r.json)["answers"]["s"]["legend"]["1"] == {"level": "mid", "n": [1, 2]}
    assert r["c"].legend is None and all(o.legend is None for o in r["c"].options)
    assert list(r.scores) == ["s"] and list(r.choices) == ["c"] and r.nouls == {}


def test_log_callback(model_path, example):
    events = []
    with skycmd.Model.open(model_path, weights="q8", log=lambda level, msg: events.append((level, msg))) as m:
        check_answers(m.decide(example), example)
    assert events and all(level in (0, 1, 2) and isinstance(msg, str) and msg for level, msg in events)
    before = _skycmd.live_models()

    def fail(level, msg):
        raise RuntimeError("log refused")

    with pytest.raises(RuntimeError, match="log refused"):
        skycmd.Model.open(model_path, weights="q8", log=fail)
    assert _skycmd.live_models() == before
    with pytest.raises(TypeError, match="callable"):
        skycmd.Model.open(model_path, log="print")  # type: ignore[arg-type]


# ------------------------------------------------------------------ argument types --------

def test_argument_type_errors(model, example_text, tmp_path):
    """Arguments of the wrong Python type are TypeErrors naming the argument; one request
    where a sequence of them is expected is refused, not read character by character."""
    for one in (example_text, example_text.encode(), json.loads(example_text)):
        with pytest.raises(TypeError, match="decide_batch expects a sequence of requests"):
            model.decide_batch(one)
        with pytest.raises(TypeError, match="decide_each expects a sequence of requests"):
            model.decide_each(one)
        with pytest.raises(TypeError, match="decide_batch_async expects a sequence"):
            asyncio.run(model.decide_batch_async(one))
    with pytest.raises(TypeError, match="decide_batch expects a sequence of requests"):
        model._raw.decide_batch(example_text)
    with pytest.raises(TypeError, match="decide_each expects a sequence of requests"):
        model._raw.decide_each(example_text.encode())
    with pytest.raises(TypeError, match="preset"):
        skycmd.random_model(None, tmp_path / "x.gguf")  # type: ignore[arg-type]
    assert not (tmp_path / "x.gguf").exists()
    with pytest.raises(TypeError, match="get_int: name must be a str, not NoneType"):
        model.get_int(None)  # type: ignore[arg-type]
    tok = model.tokenizer
    with pytest.raises(TypeError, match="encode: text must be a str, not NoneType"):
        tok.encode(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="count: text must be a str, not bytes"):
        tok.count(b"abc")  # type: ignore[arg-type]
    # every id out of the int32 range is the same error, however large
    for bad in (10**12, 2**70, -(2**70), 2**31):
        with pytest.raises(skycmd.InvalidArgumentError):
            tok.decode([bad])
    assert tok.token(2**70) is None and tok._raw.special_id(2**70) is None
    with pytest.raises(TypeError):
        tok.decode(["a"])  # type: ignore[list-item]
