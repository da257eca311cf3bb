"""Handle-less calls on files: inspect, convert, quantize, random_model."""
from __future__ import annotations

import json as _json
import os
from typing import Any, Callable, Dict, Optional, Union

from . import _skycmd
from ._options import (OPT_HEAD_TYPE, OPT_JSON, OPT_LAYOUT, OPT_MASSIVE, OPT_MAX_ARRAY,
                       OPT_NAME, OPT_PRE, OPT_SEED, OPT_TYPE, OPT_WEIGHTS, Layout, OptionPairs,
                       Type, Weights, _enum, add)

PathLike = Union[str, "os.PathLike[str]"]
#: progress(done, total): raise (or return False) to cancel the call: CancelledError, the
#: exception its __cause__; a KeyboardInterrupt or SystemExit is raised again unchanged.
Progress = Callable[[int, int], Any]
#: log(level, message): 0 debug, 1 info, 2 warning. An exception in it is raised when the call
#: returns (and, with progress, cancels the call at its next report); a KeyboardInterrupt or
#: SystemExit cancels the call at its next report even without progress, and is raised as is.
Log = Callable[[int, str], Any]


def _inspect(path: PathLike, pairs: OptionPairs) -> str:
    try:
        return _skycmd.inspect(path, pairs)
    except FileNotFoundError as e:  # as Model.open: the path as given
        e.filename = os.fspath(path)
        raise


def inspect(path: PathLike, *, max_array: Optional[int] = None) -> str:
    """A GGUF file's header, metadata and tensor table as text (``skycmd inspect``). A path
    that does not exist raises ``skycmd.NoSuchFileError`` (also ``FileNotFoundError``, with
    ``filename``), as ``Model.open`` does."""
    pairs: OptionPairs = []
    add(pairs, OPT_MAX_ARRAY, max_array)
    return _inspect(path, pairs)


def inspect_json(path: PathLike, *, max_array: Optional[int] = None) -> Dict[str, Any]:
    """The same as one JSON document, parsed."""
    pairs: OptionPairs = [(OPT_JSON, 1)]
    add(pairs, OPT_MAX_ARRAY, max_array)
    return _json.loads(_inspect(path, pairs))


def _types(pairs: OptionPairs, type, head_type) -> None:
    if type is not None:
        add(pairs, OPT_TYPE, _enum(Type, type))
    if head_type is not None:
        add(pairs, OPT_HEAD_TYPE, _enum(Type, head_type))


def convert(laya_dir: PathLike, out_path: PathLike, *, type: Union[Type, str, None] = None,
            head_type: Union[Type, str, None] = None, name: Optional[str] = None,
            pre: Optional[str] = None, progress: Optional[Progress] = None,
            log: Optional[Log] = None) -> None:
    """Convert a Laya checkpoint directory to one GGUF file. The GIL is released; progress is
    called from the converting thread. On failure (or cancellation) no output file exists."""
    pairs: OptionPairs = []
    _types(pairs, type, head_type)
    add(pairs, OPT_NAME, name)
    add(pairs, OPT_PRE, pre)
    _skycmd.convert(laya_dir, out_path, pairs, progress, log)


def quantize(in_path: PathLike, out_path: PathLike, type: Union[Type, str] = Type.Q8_0, *,
             head_type: Union[Type, str, None] = None, calibrated: Union[bool, str] = False,
             progress: Optional[Progress] = None, log: Optional[Log] = None) -> None:
    """Re-type the tensors of a GGUF file (every metadata key kept). The GIL is released.

    calibrated=True (or "q8") stores the int8 model that Weights.Q8 makes at load (no other
    type then): a model opened from out_path with Weights.Q8 skips the calibration and
    answers exactly as one opened from in_path with Weights.Q8. calibrated="q8_row" does the
    same for Weights.Q8_ROW."""
    pairs: OptionPairs = []
    if calibrated:
        if calibrated not in (True, "q8", "q8_row"):
            raise ValueError("quantize: calibrated is True, \"q8\" or \"q8_row\"")
        if head_type is not None or _enum(Type, type) != Type.Q8_0:
            raise ValueError("quantize: calibrated=True writes Q8_0 and keeps every other tensor's type")
        pairs.append((OPT_WEIGHTS, int(Weights.Q8_ROW if calibrated == "q8_row" else Weights.Q8)))
    else:
        _types(pairs, type, head_type)
    _skycmd.quantize(in_path, out_path, pairs, progress, log)


def random_model(preset: str, out_path: PathLike, *, seed: Optional[int] = None,
                 massive: Optional[int] = None,
                 layout: Union[Layout, str, None] = None) -> None:
    """Write a random model ("s1-pico", "s1-nano", "s1-micro", "base", "large"), deterministic
    from ``seed``, as a GGUF file or a Laya directory (``layout="laya"``)."""
    if not isinstance(preset, str):
        raise TypeError(f"random_model: preset must be a str (e.g. \"s1-pico\"), not "
                        f"{type(preset).__name__}")
    pairs: OptionPairs = []
    add(pairs, OPT_SEED, seed)
    add(pairs, OPT_MASSIVE, massive)
    if layout is not None:
        add(pairs, OPT_LAYOUT, _enum(Layout, layout))
    _skycmd.random_model(preset.encode(), out_path, pairs)
