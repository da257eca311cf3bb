"""Model (a shared, thread-safe handle with a pool of C sessions) and Tokenizer."""
from __future__ import annotations

import asyncio
import functools
import itertools
import os
from concurrent.futures import Executor
from typing import (Any, AsyncIterable, AsyncIterator, Callable, Dict, Iterable, Iterator,
                    List, Mapping, Optional, Sequence, Tuple, Union)

from . import _skycmd
from ._errors import Error, _make_error
from ._options import (OPT_ACTIVATIONS, OPT_MAX_TOKENS, OPT_MODEL_NAME, OPT_THREADS,
                       OPT_WEIGHTS, Activations, OptionPairs, Special, Weights, _enum, add)
from ._requests import Question, Request, RequestLike, encode_request
from ._response import Response, from_raw

PathLike = Union[str, "os.PathLike[str]"]
#: log(level, message): 0 debug, 1 info, 2 warning.
Log = Callable[[int, str], Any]


class Tokenizer:
    """A byte-level BPE tokenizer: ``Model.tokenizer`` (borrowed; it keeps the model object
    alive and fails with MisuseError once the model is closed) or ``Tokenizer.open(path)``
    for a Hugging Face tokenizer.json."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    @classmethod
    def open(cls, tokenizer_json: PathLike) -> "Tokenizer":
        """Open a tokenizer.json (and the tokenizer_config.json beside it, if any). A path
        that does not exist raises ``skycmd.NoSuchFileError`` (an ``IoError`` that is also
        ``FileNotFoundError``, with ``filename``), as ``Model.open`` does."""
        try:
            return cls(_skycmd.tokenizer_open_json(tokenizer_json))
        except FileNotFoundError as e:
            e.filename = os.fspath(tokenizer_json)
            raise

    def encode(self, text: str) -> List[int]:
        """Token ids exactly as HF tokenizers gives them with add_special_tokens=False."""
        return self._raw.encode(text)

    def count(self, text: str) -> int:
        """The number of token ids of ``text`` (no list is made)."""
        return self._raw.count(text)

    def decode(self, ids: Iterable[int]) -> str:
        return self._raw.decode(list(ids))

    def token(self, id: int) -> Optional[str]:
        """The vocabulary entry of an id (byte-level form, e.g. "Ġthe"), None if out of range."""
        return self._raw.token(id)

    @property
    def vocab_size(self) -> int:
        return self._raw.vocab_size

    def special_id(self, which: Union[Special, str]) -> Optional[int]:
        """The id of a special token ("cls", "sep", "mask", "pad", "unk"), None if absent."""
        return self._raw.special_id(int(_enum(Special, which)))

    @property
    def cls_id(self) -> Optional[int]:
        return self.special_id(Special.CLS)

    @property
    def sep_id(self) -> Optional[int]:
        return self.special_id(Special.SEP)

    @property
    def mask_id(self) -> Optional[int]:
        return self.special_id(Special.MASK)

    @property
    def pad_id(self) -> Optional[int]:
        return self.special_id(Special.PAD)

    @property
    def unk_id(self) -> Optional[int]:
        return self.special_id(Special.UNK)

    def close(self) -> None:
        """Release an opened tokenizer now (a borrowed one just lets go of its model)."""
        self._raw.close()

    def __enter__(self) -> "Tokenizer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _open_options(weights, max_tokens, model_name, threads, activations):
    pairs: OptionPairs = []
    if weights is not None:
        add(pairs, OPT_WEIGHTS, _enum(Weights, weights))
    add(pairs, OPT_MAX_TOKENS, max_tokens)
    add(pairs, OPT_MODEL_NAME, model_name)
    session: OptionPairs = []
    add(session, OPT_THREADS, threads)
    if activations is not None:
        add(session, OPT_ACTIVATIONS, _enum(Activations, activations))
    return pairs, session


def default_model_path() -> str:
    """Where the library finds the built-in model s1-pico-flappy.gguf
    (skycmd_default_model_path): ``$SKYCMD_DEFAULT_MODEL``, else beside libskycmd, else the
    data directory it was configured with. The wheel links libskycmd into its extension
    module, so "beside libskycmd" is site-packages/skycmd/: a wheel finds the model in the
    data directory of the libskycmd it was built against (``/usr/share/skycmd/models`` for
    the Debian package) or through ``$SKYCMD_DEFAULT_MODEL``. None there: raises
    ``skycmd.DefaultModelNotFoundError`` (also ``FileNotFoundError``), naming the places
    looked in."""
    return _skycmd.default_model_path()


class Model:
    """An open decision model. Share one Model between threads: each concurrent call takes
    its own C session from the model's pool, and the GIL is released while it computes.
    ``close()`` (or leaving a ``with`` block) frees the model once running calls end; later
    calls raise MisuseError."""

    __slots__ = ("_raw", "_tokenizer", "__weakref__")

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._tokenizer: Optional[Tokenizer] = None

    @classmethod
    def open(cls, path: PathLike, *, threads: Optional[int] = None,
             weights: Union[Weights, str, None] = None,
             activations: Union[Activations, str, None] = None,
             max_tokens: Optional[int] = None, model_name: Optional[str] = None,
             log: Optional[Log] = None) -> "Model":
        """Open a GGUF model (memory-mapped; the GIL is released while it loads).

        threads: compute threads of each session (0 = one per core); weights: "f32"
        (default, exact), "q8" (Q8_0 with calibrated outliers), "q8_plain" or "q8_row" (one
        scale per row, the fastest int8); activations:
        "q8x2" (default) or "q8"; max_tokens: the sequence budget instead of the model's
        decision.max_tokens; model_name: the "model" reported in responses; log(level,
        message): events of the load, e.g. the int8 relayout of the weights (level 0 debug,
        1 info, 2 warning); an exception in it fails the open. A path that does not exist
        raises ``skycmd.NoSuchFileError``: an ``IoError`` that is also ``FileNotFoundError``."""
        pairs, session = _open_options(weights, max_tokens, model_name, threads, activations)
        try:
            return cls(_skycmd.Model.open(path, pairs, session, log))
        except FileNotFoundError as e:
            e.filename = os.fspath(path)
            raise

    @classmethod
    def open_default(cls, *, threads: Optional[int] = None,
                     weights: Union[Weights, str, None] = None,
                     activations: Union[Activations, str, None] = None,
                     max_tokens: Optional[int] = None, model_name: Optional[str] = None,
                     log: Optional[Log] = None) -> "Model":
        """Open the built-in model s1-pico-flappy.gguf (``skycmd.default_model_path()``) with
        the options of ``open``. Not installed: ``skycmd.DefaultModelNotFoundError`` (a
        ``NotFoundError`` that is also ``FileNotFoundError``)."""
        return cls.open(default_model_path(), threads=threads, weights=weights,
                        activations=activations, max_tokens=max_tokens,
                        model_name=model_name, log=log)

    @classmethod
    async def open_async(cls, path: PathLike, *, threads: Optional[int] = None,
                         weights: Union[Weights, str, None] = None,
                         activations: Union[Activations, str, None] = None,
                         max_tokens: Optional[int] = None, model_name: Optional[str] = None,
                         log: Optional[Log] = None,
                         executor: Optional[Executor] = None) -> "Model":
        """``open`` on a thread of ``executor`` (the loop's default one if None): the GIL is
        released while the model loads, so the event loop keeps running. The options of
        ``open`` (``log`` is called on that thread)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, functools.partial(
            cls.open, path, threads=threads, weights=weights, activations=activations,
            max_tokens=max_tokens, model_name=model_name, log=log))

    @classmethod
    async def open_default_async(cls, *, threads: Optional[int] = None,
                                 weights: Union[Weights, str, None] = None,
                                 activations: Union[Activations, str, None] = None,
                                 max_tokens: Optional[int] = None,
                                 model_name: Optional[str] = None, log: Optional[Log] = None,
                                 executor: Optional[Executor] = None) -> "Model":
        """``open_default`` on a thread of ``executor``, as ``open_async``."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, functools.partial(
            cls.open_default, threads=threads, weights=weights, activations=activations,
            max_tokens=max_tokens, model_name=model_name, log=log))

    @classmethod
    def open_buffer(cls, data: Union[bytes, bytearray, memoryview], *,
                    threads: Optional[int] = None, weights: Union[Weights, str, None] = None,
                    activations: Union[Activations, str, None] = None,
                    max_tokens: Optional[int] = None,
                    model_name: Optional[str] = None, log: Optional[Log] = None) -> "Model":
        """Open a model from the bytes of a GGUF file. Nothing is copied: the model holds on
        to the buffer (a bytearray cannot be resized meanwhile) until it is closed."""
        pairs, session = _open_options(weights, max_tokens, model_name, threads, activations)
        return cls(_skycmd.Model.open_buffer(data, pairs, session, log))

    @property
    def name(self) -> str:
        return self._raw.name

    @property
    def closed(self) -> bool:
        return self._raw.closed

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer (borrowed)."""
        if self._tokenizer is None:
            self._tokenizer = Tokenizer(self._raw.tokenizer())
        return self._tokenizer

    def get_int(self, name: str) -> int:
        """A hyper-parameter, e.g. "embedding_length", "block_count", "vocab_size",
        "decision.max_tokens", "parameters" (NotFoundError if absent)."""
        return self._raw.get_int(name)

    @property
    def idle_sessions(self) -> int:
        """C sessions waiting in the pool (one is made per concurrent call, then reused)."""
        return self._raw.idle_sessions

    def decide(self, request: Optional[RequestLike] = None, *, state: Any = None,
               questions: Optional[Mapping[str, Question]] = None,
               model: Optional[str] = None) -> Response:
        """Answer every question of a request: a Request, a dict, JSON text, or the SDK-style
        keywords ``state=`` and ``questions=``. The GIL is released while it computes."""
        return from_raw(self._raw.decide(_request(request, state, questions, model)))

    def decide_batch(self, requests: Sequence[RequestLike]) -> List[Response]:
        """Answer several requests together (their sequences share the model's batches; each
        answer equals what decide gives alone). All or nothing: an error names the request."""
        _check_sequence("decide_batch", requests)
        raw = self._raw.decide_batch([encode_request(r) for r in requests])
        return [from_raw(r) for r in raw]

    def decide_each(self, requests: Iterable[RequestLike], *,
                    group: int = 32) -> Iterator[Union[Response, Error]]:
        """Answer a stream of requests, each on its own account: an iterator with one item
        per request, in input order: its ``Response``, or the ``skycmd.Error`` instance of its
        failure (returned, not raised: a malformed JSON text is a ``JsonError``, an invalid
        request a ``RequestError``, an object that cannot be encoded as a request an
        ``InvalidArgumentError`` with the encoding error as ``__cause__``), so one bad item
        never ends the stream. As ``asyncio.gather(..., return_exceptions=True)``: test
        ``isinstance(item, skycmd.Error)``.

        ``requests`` is any iterable (a generator, a file's lines, ...), read lazily ``group``
        requests at a time; each group is answered by one library call whose sequences share
        the model's batches (each answer equals what ``decide`` gives alone), with the GIL
        released. Nothing more than one group is held. What fails a whole group (the model
        closed meanwhile: ``MisuseError``, out of memory in the library) is the error of each
        of its requests, as in the other bindings."""
        _check_group(group)
        _check_sequence("decide_each", requests)
        return self._each(iter(requests), group)

    def _each(self, requests: Iterator[RequestLike],
              group: int) -> Iterator[Union[Response, Error]]:
        while True:
            chunk = list(itertools.islice(requests, group))
            if not chunk:
                return
            encoded, failed = _encode_group(chunk)
            yield from _merge(len(chunk), failed, _decide_group(self._raw, encoded))

    def decide_each_async(self, requests: Union[Iterable[RequestLike], AsyncIterable[RequestLike]],
                          *, group: int = 32, executor: Optional[Executor] = None
                          ) -> AsyncIterator[Union[Response, Error]]:
        """``decide_each`` as an async iterator (``async for item in
        model.decide_each_async(requests)``): each group is answered on a thread of
        ``executor`` (the loop's default one if None) while the event loop keeps running.
        ``requests`` may be an iterable or an async iterable."""
        _check_group(group)
        _check_sequence("decide_each_async", requests)
        return self._each_async(requests, group, executor)

    async def _each_async(self, requests: Union[Iterable[RequestLike], AsyncIterable[RequestLike]],
                          group: int, executor: Optional[Executor]
                          ) -> AsyncIterator[Union[Response, Error]]:
        loop = asyncio.get_running_loop()

        async def answer(chunk: List[RequestLike]) -> List[Union[Response, Error]]:
            encoded, failed = _encode_group(chunk)
            raw = await loop.run_in_executor(executor, _decide_group, self._raw, encoded)
            return _merge(len(chunk), failed, raw)

        source = requests if isinstance(requests, AsyncIterable) else _as_async(requests)
        chunk: List[RequestLike] = []
        async for r in source:
            chunk.append(r)
            if len(chunk) == group:
                for item in await answer(chunk):
                    yield item
                chunk = []
        if chunk:
            for item in await answer(chunk):
                yield item

    async def decide_async(self, request: Optional[RequestLike] = None, *, state: Any = None,
                           questions: Optional[Mapping[str, Question]] = None,
                           model: Optional[str] = None,
                           executor: Optional[Executor] = None) -> Response:
        """``decide`` on a thread of ``executor`` (the loop's default one if None), so the
        event loop keeps running while the model computes."""
        body = _request(request, state, questions, model)
        loop = asyncio.get_running_loop()
        raw = await loop.run_in_executor(executor, self._raw.decide, body)
        return from_raw(raw)

    async def decide_batch_async(self, requests: Sequence[RequestLike], *,
                                 executor: Optional[Executor] = None) -> List[Response]:
        _check_sequence("decide_batch_async", requests)
        bodies = [encode_request(r) for r in requests]
        loop = asyncio.get_running_loop()
        raw = await loop.run_in_executor(executor, functools.partial(self._raw.decide_batch, bodies))
        return [from_raw(r) for r in raw]

    def close(self) -> None:
        """Close the model (idempotent). Calls running on other threads finish first."""
        self._raw.close()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<skycmd.Model closed>"
        return f"<skycmd.Model {self.name!r}>"


def _request(request, state, questions, model) -> Union[str, bytes]:
    if request is None:
        if questions is None:
            raise TypeError("decide needs a request, or state= and questions=")
        return Request(state=state, questions=questions, model=model).to_json()
    if state is not None or questions is not None or model is not None:
        raise TypeError("give either a request or state=/questions=/model=, not both")
    return encode_request(request)


def _check_sequence(what: str, requests: Any) -> None:
    """One request where many are expected is refused: iterating a JSON text would make each
    character a "request", a dict each of its keys."""
    if isinstance(requests, (str, bytes, bytearray, memoryview, Mapping, Request)):
        raise TypeError(f"{what} expects a sequence of requests, not a single "
                        f"{type(requests).__name__} (wrap one request in a list)")


def _check_group(group: int) -> None:
    if not isinstance(group, int) or isinstance(group, bool) or group < 1:
        raise ValueError(f"group must be a positive int, not {group!r}")


async def _as_async(items: Iterable[RequestLike]) -> AsyncIterator[RequestLike]:
    for item in items:
        yield item


def _encode_group(chunk: List[RequestLike]) -> Tuple[List[Union[str, bytes]], Dict[int, Error]]:
    """The JSON texts of a group's requests, and the errors of those that cannot be encoded
    (by position): a streamed item's failure, not the stream's."""
    encoded: List[Union[str, bytes]] = []
    failed: Dict[int, Error] = {}
    for i, r in enumerate(chunk):
        try:
            encoded.append(encode_request(r))
        except (TypeError, ValueError) as e:
            err = _make_error(1, f"not a request: {e}")
            err.__cause__ = e
            failed[i] = err
    return encoded, failed


def _decide_group(raw_model: Any, encoded: List[Union[str, bytes]]) -> List[Any]:
    """The extension's items for a group; a failure of the whole group (a closed model, no
    memory) becomes each request's error, so the stream goes on as in the other bindings."""
    try:
        items: List[Any] = raw_model.decide_each(encoded)
    except Error as e:
        return [_make_error(e.status, e.message, e.errno or 0) for _ in encoded]
    return items


def _merge(n: int, failed: Dict[int, Error], raw: List[Any]) -> List[Union[Response, Error]]:
    """A group's n items in order: the encoding failures in their places, the rest from the
    extension (a response tuple, or the exception instance of that request's failure)."""
    answered = iter(raw)
    out: List[Union[Response, Error]] = []
    for i in range(n):
        if i in failed:
            out.append(failed[i])
        else:
            r = next(answered)
            out.append(r if isinstance(r, Error) else from_raw(r))
    return out
