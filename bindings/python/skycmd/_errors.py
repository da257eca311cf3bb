"""skycmd.Error and one subclass per libskycmd status."""
from __future__ import annotations

from typing import Dict, Type

from . import _skycmd


class Error(Exception):
    """A libskycmd failure: ``status`` (the pinned skycmd_status number), ``code`` (its name,
    e.g. ``"SKYCMD_E_IO"``) and ``message`` (the library's message for this failure)."""

    status: int
    code: str
    message: str

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.code = _skycmd.status_name(status)
        self.message = message
        super().__init__(f"{self.code}: {message}")

    def __reduce__(self):  # picklable across processes (concurrent.futures)
        return (_make_error, (self.status, self.message))


class InvalidArgumentError(Error):
    """SKYCMD_E_INVALID_ARGUMENT: a parameter is out of its documented range."""


class MisuseError(Error):
    """SKYCMD_E_MISUSE: a closed handle or a call out of order."""


class NoMemoryError(Error):
    """SKYCMD_E_NOMEM: an allocation failed."""


class IoError(Error):
    """SKYCMD_E_IO: a file could not be opened, read or written."""


class FormatError(Error):
    """SKYCMD_E_FORMAT: a file's bytes are damaged or inconsistent."""


class UnsupportedError(Error):
    """SKYCMD_E_UNSUPPORTED: valid, but not something this build can do."""


class BusyError(Error):
    """SKYCMD_E_BUSY: the object is still in use."""


class JsonError(Error):
    """SKYCMD_E_JSON: a request body is not well-formed JSON (HTTP 400)."""


class RequestError(Error):
    """SKYCMD_E_REQUEST: a well-formed request is invalid (HTTP 422)."""


class TooLargeError(Error):
    """SKYCMD_E_TOO_LARGE: a size, count or depth limit was exceeded (HTTP 413)."""


class VersionError(Error):
    """SKYCMD_E_VERSION: the library is older than the header the binding was built with."""


class NotFoundError(Error):
    """SKYCMD_E_NOT_FOUND: a named key, tensor, model or index is absent."""


class InternalError(Error):
    """SKYCMD_E_INTERNAL: an invariant failed (a bug, please report)."""


class CancelledError(Error):
    """SKYCMD_E_CANCELLED: a progress callback asked to stop (its exception, if it raised one,
    is the ``__cause__``)."""


_BY_STATUS: Dict[int, Type[Error]] = {
    1: InvalidArgumentError, 2: MisuseError, 3: NoMemoryError, 4: IoError, 5: FormatError,
    6: UnsupportedError, 7: BusyError, 8: JsonError, 9: RequestError, 10: TooLargeError,
    11: VersionError, 12: NotFoundError, 13: InternalError, 14: CancelledError,
}


def _make_error(status: int, message: str) -> Error:
    return _BY_STATUS.get(status, Error)(status, message)


_skycmd._set_error_factory(_make_error)
