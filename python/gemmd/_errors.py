"""gemmd's one exception type and the codes it carries.

Every failure the library or the daemon reports is an :class:`Error`
with the code's number, its name (``"EBUSY"``) and a message. Three kinds
a caller may want to handle on their own have subclasses: the daemon
refused the request whole and nothing ran (:class:`BusyError`), the call
ran out of time (:class:`TimeoutError`), the connection failed
(:class:`TransportError`).
"""

from __future__ import annotations

import builtins

from ._ffi import lib, text


def _names() -> dict[str, int]:
    codes, code = {}, 0
    while (name := text(lib.gemmd_errname(code))) != "E?":
        codes[name] = code
        code += 1
    return codes


#: Every code the library knows, by name: ``codes["EBUSY"] == 14``. The
#: numbers are the wire's (proto/PROTOCOL.md) and never change.
codes: dict[str, int] = _names()


def errname(code: int) -> str:
    """The name of a code, ``"EBUSY"``; ``"E?"`` for an unknown one."""
    return text(lib.gemmd_errname(code))


def strerror(code: int) -> str:
    """The text of a code, ``"queue full, try again later"``."""
    return text(lib.gemmd_strerror(code))


class Error(Exception):
    """A call failed, or a job did.

    Attributes:
        code: the error code (an int, the same the daemon sends).
        name: its name, e.g. ``"EDIM"``.
        message: the detail the library or the daemon gave.
    """

    def __init__(self, code: int, message: str = ""):
        self.code = code
        self.name = errname(code)
        self.message = message or strerror(code)
        super().__init__(f"{self.name}: {self.message}")


class BusyError(Error):
    """The daemon refused the whole request and nothing ran: its queue
    is full (EBUSY), it is draining (EDRAINING) or stopping (ESHUTDOWN).
    Retry later, or elsewhere."""


class TimeoutError(Error, builtins.TimeoutError):
    """No answer within the call's timeout (ETIMEDOUT). Whether the jobs
    ran is unknown; a reply that comes later is dropped."""


class TransportError(Error, ConnectionError):
    """The daemon could not be reached, or the connection dropped before
    the reply (ETRANSPORT). Whether the jobs ran is unknown."""


_CLASSES = {
    codes["EBUSY"]: BusyError,
    codes["EDRAINING"]: BusyError,
    codes["ESHUTDOWN"]: BusyError,
    codes["ETIMEDOUT"]: TimeoutError,
    codes["ETRANSPORT"]: TransportError,
}


def error(code: int, message: str = "") -> Error:
    """The exception for code: its subclass where it has one."""
    return _CLASSES.get(code, Error)(code, message)


def last_error(code: int) -> Error:
    """The exception for a call that just returned code on this thread,
    with the library's detail of it."""
    return error(code, text(lib.gemmd_last_error()))
