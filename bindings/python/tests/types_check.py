"""Typed use of the package: `mypy --strict` must accept this file (test_types.py)."""
import asyncio
from typing import Dict, List, Optional

import skycmd


def answer(path: str) -> Dict[str, Optional[float]]:
    with skycmd.Model.open(path, threads=1, weights="q8", max_tokens=512) as model:
        request = skycmd.Request(state="vy 0", questions={
            "a": skycmd.Choice({"x": "ex", "y": None}, instructions="which?"),
            "b": skycmd.Noul(instructions="is it?", criteria={"true": "yes"}),
            "c": skycmd.Score(["low", "high"], instructions="how much?"),
        })
        r: skycmd.Response = model.decide(request)
        batch: List[skycmd.Response] = model.decide_batch([request, "{}", {"state": "s"}])
        again: skycmd.Response = asyncio.run(model.decide_async(state="vy 0", questions=request.questions))
        tokens: List[int] = model.tokenizer.encode("hello")
        text: str = model.tokenizer.decode(tokens)
        size: int = model.tokenizer.vocab_size
        legend: Optional[Dict[int, str]] = r["c"].legend
        choice: Optional[str] = r["a"].choice
        p: Dict[str, float] = r["a"].probabilities
        del batch, again, text, size, legend, choice, p
        streamed: List[str] = []
        for item in model.decide_each([request, "{"], group=8):
            if isinstance(item, skycmd.Error):
                streamed.append(item.code)
            else:
                streamed.append(item["a"].id)
        ids: List[str] = list(r)
        del streamed, ids
        return {a.id: a.confidence for a in r.values()}


async def builtin() -> str:
    path: str = skycmd.default_model_path()
    try:
        m: skycmd.Model = await skycmd.Model.open_default_async(threads=1)
        m2: skycmd.Model = await skycmd.Model.open_async(path, weights="f32")
        m3: skycmd.Model = skycmd.Model.open_default(max_tokens=256)
    except FileNotFoundError as e:
        assert isinstance(e, skycmd.Error)
        return e.code
    m.close()
    m2.close()
    m3.close()
    return path


def files(src: str, out: str) -> str:
    def progress(done: int, total: int) -> None:
        pass
    skycmd.quantize(src, out, skycmd.Type.Q8_0, progress=progress)
    skycmd.random_model("s1-pico", out, seed=1, layout="gguf")
    try:
        skycmd.convert(src, out, progress=progress)
    except skycmd.Error as e:
        status: int = e.status
        code: str = e.code
        return f"{status} {code} {e.message}"
    return skycmd.inspect(out)
