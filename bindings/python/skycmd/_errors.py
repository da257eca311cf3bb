"""skycmd.Error and one subclass per libskycmd status; a file that does not exist is also
Python's FileNotFoundError."""
from __future__ import annotations

import errno as _errno
import os
from typing import Dict, Optional, Type

from . import _skycmd


class Error(Exception):
    """A libskycmd failure: ``status`` (the pinned skycmd_status number), ``code`` (its name,
    e.g. ``"SKYCMD_E_IO"``, the same in every binding), ``message`` (the library's message for
    this failure) and ``errno`` (the operating system's error behind it, e.g. ENOENT, or
    None)."""

    status: int
    code: str
    message: str

    def __init__(self, status: int, message: str, errno: Optional[int] = None) -> None:
        self.status = status
        self.code = _skycmd.status_name(status)
        self.message = message
        super().__init__(f"{self.code}: {message}")
        # after Exception/OSError.__init__, which would reset an OSError's errno
        self.errno = errno or None

    def __str__(self) -> str:  # also for the OSError subclasses (not "[Errno 2] ...")
        return f"{self.code}: {self.message}"

    def __reduce__(self):  # picklable across processes (concurrent.futures)
        return (_make_error, (self.status, self.message, self.errno or 0))


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
    is the ``__cause__``; a KeyboardInterrupt or SystemExit is raised itself instead)."""


class NoSuchFileError(IoError, FileNotFoundError):
    """SKYCMD_E_IO for a file that does not exist (errno ENOENT): also Python's
    FileNotFoundError (an OSError with ``errno`` and ``strerror``)."""


class DefaultModelNotFoundError(NotFoundError, FileNotFoundError):
    """SKYCMD_E_NOT_FOUND from ``default_model_path``: the built-in model is not installed
    where the library looks (or $SKYCMD_DEFAULT_MODEL names no file); also Python's
    FileNotFoundError."""


_BY_STATUS: Dict[int, Type[Error]] = {
    1: InvalidArgumentError, 2: MisuseError, 3: NoMemoryError, 4: IoError, 5: FormatError,
    6: UnsupportedError, 7: BusyError, 8: JsonError, 9: RequestError, 10: TooLargeError,
    11: VersionError, 12: NotFoundError, 13: InternalError, 14: CancelledError,
}


# (status, errno ENOENT) -> the class that is also FileNotFoundError
_NOT_FOUND: Dict[int, Type[Error]] = {4: NoSuchFileError, 12: DefaultModelNotFoundError}


def _make_error(status: int, message: str, errno: int = 0) -> Error:
    cls = _NOT_FOUND.get(status) if errno == _errno.ENOENT else None
    e = (cls or _BY_STATUS.get(status, Error))(status, message, errno)
    if cls is not None:
        e.strerror = os.strerror(errno)
    return e


_skycmd._set_error_factory(_make_error)
