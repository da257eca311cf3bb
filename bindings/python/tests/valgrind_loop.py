"""valgrind_loop.py MODEL REQUEST ROUNDS - every entry point of the extension, success and
error paths, for bindings/run-tests.sh to run under valgrind (PYTHONMALLOC=malloc): no
invalid access and no definitely-lost block may come from the extension or the library."""
import os
import sys
import tempfile

import skycmd

model_path, request_path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(request_path, encoding="utf-8") as f:
    request = f.read()
bad_request = '{"state": "x", "questions": {"a": {"type": "choice", "instructions": "i"}}}'
# default_model_path: found (the model itself) and, in the loop, not found
os.environ["SKYCMD_DEFAULT_MODEL"] = model_path
skycmd.Model.open_default(threads=1).close()
os.environ["SKYCMD_DEFAULT_MODEL"] = model_path + ".missing"
with tempfile.TemporaryDirectory() as tmp:
    skycmd.random_model("s1-pico", os.path.join(tmp, "laya"), layout="laya", seed=1)
    for i in range(rounds):
        m = skycmd.Model.open(model_path, threads=1)
        m.decide(request)
        m.decide_batch([request, request])
        # the stream: answers and per-item errors (bad JSON, invalid request) in one group
        items = list(m.decide_each([request, "{", bad_request, request], group=3))
        assert [type(x) for x in items] == [skycmd.Response, skycmd.JsonError,
                                            skycmd.RequestError, skycmd.Response], items
        tok = m.tokenizer
        tok.decode(tok.encode("hello world"))
        for call, error in ((lambda: m.decide(bad_request), skycmd.RequestError),
                            (lambda: m.decide_batch([request, "{"]), skycmd.JsonError),
                            (lambda: skycmd.Model.open(model_path + ".missing"), skycmd.IoError),
                            (lambda: skycmd.Tokenizer.open(model_path + ".missing"), skycmd.IoError),
                            (skycmd.default_model_path, skycmd.NotFoundError)):
            try:
                call()
            except error:
                pass
        if i % 2:
            m.close()  # the others are freed by the deallocator
        del m, tok
        try:
            skycmd.quantize(model_path, os.path.join(tmp, "q.gguf"), "q8_0",
                            progress=lambda d, t: 1 / 0)
        except skycmd.CancelledError:
            pass
    skycmd.quantize(model_path, os.path.join(tmp, "q.gguf"), "q8_0")
    skycmd.convert(os.path.join(tmp, "laya"), os.path.join(tmp, "c.gguf"))
    skycmd.inspect_json(model_path)
    # the log callback (an int8 load logs each matrix), and an exception in it failing the
    # load; q8_plain, not the calibrated q8: the calibration's f32 passes are FMA products,
    # which valgrind computes in software (each q8 load took 140 s under it, 0.1 s natively)
    skycmd.Model.open(model_path, weights="q8_plain", log=lambda level, message: None).close()
    try:
        skycmd.Model.open(model_path, weights="q8_plain", log=lambda level, message: 1 / 0)
    except ZeroDivisionError:
        pass
    with skycmd.Tokenizer.open(os.path.join(tmp, "laya", "tokenizer", "tokenizer.json")) as t:
        t.encode("x")
    with open(model_path, "rb") as f:
        with skycmd.Model.open_buffer(f.read()) as m:
            m.decide(request)
assert skycmd._skycmd.live_models() == 0
print(f"python valgrind loop: {rounds} rounds done")
