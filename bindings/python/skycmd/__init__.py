"""skycmd: System One decision models (ModernBERT + Laya head) through libskycmd.

    import skycmd
    with skycmd.Model.open("s1-pico.gguf", threads=2) as model:
        r = model.decide(skycmd.Request(state="...", questions={
            "action": skycmd.Choice({"thrust": "...", "glide": "..."}, instructions="..."),
        }))
        print(r["action"].choice, r["action"].confidence)
"""
from . import _skycmd
from ._errors import (BusyError, CancelledError, DefaultModelNotFoundError, Error,
                      FormatError, InternalError, InvalidArgumentError, IoError, JsonError,
                      MisuseError, NoMemoryError, NoSuchFileError, NotFoundError,
                      RequestError, TooLargeError, UnsupportedError, VersionError)
from ._files import convert, inspect, inspect_json, quantize, random_model
from ._model import Model, Tokenizer, default_model_path
from ._options import Activations, Layout, Special, Type, Weights
from ._requests import Choice, Noul, Request, Score
from ._response import Answer, Option, Response

__version__ = "0.1.0"

#: SKYCMD_VERSION_NUMBER of the header this extension was compiled with.
HEADER_VERSION_NUMBER: int = _skycmd.HEADER_VERSION_NUMBER


def check_version(header_version_number: int) -> None:
    """VersionError unless the running library is at least that version, same major."""
    _skycmd.check_version(header_version_number)


def library_version() -> str:
    """The running library's version, e.g. "0.1.0"."""
    return _skycmd.library_info()["version_string"]


def library_info() -> dict:
    """version_number, version_string, abi_version, build_id and cpu_features."""
    return _skycmd.library_info()


# Refuse a library older than the header at import (matters when linked as a shared library).
check_version(HEADER_VERSION_NUMBER)

__all__ = [
    "Activations", "Answer", "BusyError", "CancelledError", "Choice", "DefaultModelNotFoundError",
    "Error", "FormatError", "HEADER_VERSION_NUMBER", "InternalError", "InvalidArgumentError",
    "IoError", "JsonError", "Layout", "MisuseError", "Model", "NoMemoryError",
    "NoSuchFileError", "NotFoundError", "Noul", "Option",
    "Request", "RequestError", "Response", "Score", "Special", "TooLargeError", "Tokenizer",
    "Type", "UnsupportedError", "VersionError", "Weights", "check_version", "convert",
    "default_model_path", "inspect", "inspect_json", "library_info", "library_version", "quantize", "random_model",
]
