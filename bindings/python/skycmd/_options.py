"""The C option keys and the enums behind the keyword options."""
from __future__ import annotations

import enum
from typing import List, Optional, Tuple, Union

from . import _skycmd

OptionPairs = List[Tuple[int, Union[int, str]]]

# skycmd_option (pinned values of include/skycmd.h)
OPT_THREADS = 1
OPT_WEIGHTS = 2
OPT_ACTIVATIONS = 3
OPT_TYPE = 4
OPT_HEAD_TYPE = 5
OPT_SEED = 6
OPT_MASSIVE = 7
OPT_MAX_ARRAY = 8
OPT_JSON = 9
OPT_MAX_TOKENS = 10
OPT_LAYOUT = 11
OPT_NAME = 100
OPT_PRE = 101
OPT_MODEL_NAME = 102

_NAMES = {OPT_THREADS: "threads", OPT_WEIGHTS: "weights", OPT_ACTIVATIONS: "activations",
          OPT_TYPE: "type", OPT_HEAD_TYPE: "head_type", OPT_SEED: "seed",
          OPT_MASSIVE: "massive", OPT_MAX_ARRAY: "max_array", OPT_JSON: "json",
          OPT_MAX_TOKENS: "max_tokens", OPT_LAYOUT: "layout", OPT_NAME: "name", OPT_PRE: "pre",
          OPT_MODEL_NAME: "model_name"}


class Weights(enum.IntEnum):
    """How an open model keeps its matrices (SKYCMD_OPT_WEIGHTS)."""
    F32 = 0        #: widened to f32 at load, FMA products (the exact path; default)
    Q8 = 1         #: Q8_0 at load, calibrated outlier columns kept in f32
    Q8_PLAIN = 2   #: Q8_0 at load without calibration
    BF16X3 = 3     #: AMX-BF16 tiles (bf16 hi+lo, within 1e-4 of laya) where usable, else F32
    Q8_ROW = 4     #: int8, one scale per weight row and per activation row (fastest int8)


class Activations(enum.IntEnum):
    """int8 activation mode of a session (SKYCMD_OPT_ACTIVATIONS)."""
    Q8X2 = 0  #: two int8 passes: ~15-bit activations (default)
    Q8 = 1    #: one int8 pass: fastest


class Type(enum.IntEnum):
    """GGUF element types (ggml numbering) for convert and quantize."""
    F32 = 0
    F16 = 1
    Q8_0 = 8
    BF16 = 30


class Layout(enum.IntEnum):
    """What random_model writes."""
    GGUF = 0  #: one GGUF file
    LAYA = 1  #: a Laya checkpoint directory


class Special(enum.IntEnum):
    """Special tokens of a tokenizer."""
    CLS = 0
    SEP = 1
    MASK = 2
    PAD = 3
    UNK = 4


def _enum(kind, value):
    """An enum member from itself, its value, or its name in any case ("q8", "Q8_PLAIN",
    "q8-plain")."""
    if isinstance(value, str):
        key = value.upper().replace("-", "_")
        try:
            return kind[key]
        except KeyError:
            names = ", ".join(m.name.lower() for m in kind)
            raise ValueError(f"{kind.__name__.lower()} must be one of {names}, not {value!r}") from None
    return kind(value)


def add(pairs: OptionPairs, key: int, value: Optional[Union[int, str, bool]]) -> None:
    """Appends (key, value) unless value is None (None keeps the library's default). An
    integer outside the library's bounds for the key fails here, at the call that was given
    it, rather than at the first decide (session options are applied when a session is made)."""
    if value is None:
        return
    if isinstance(value, str):
        # the C API takes NUL-terminated strings: a NUL inside would silently cut the value
        if "\0" in value:
            raise ValueError(f"{_NAMES.get(key, f'option {key}')} must not contain a NUL "
                             "character")
        pairs.append((key, value))
        return
    value = int(value)
    lo, hi = _skycmd.option_bounds(key)
    if not lo <= value <= hi:
        from ._errors import InvalidArgumentError
        raise InvalidArgumentError(1, f"{_NAMES.get(key, key)}: {value} is outside [{lo}, {hi}]")
    pairs.append((key, value))
