"""Lifetimes of the library's objects under Python's garbage collector.

A ``gemmd_client`` is closed once nothing needs it: its Client was
closed and every region made on it was released (``gemmd_close`` would
unmap a region that NumPy arrays still point into). A region is
released once it was closed and no array lives in it. The last of these
may be dropped by a completion callback, which runs on a thread of the
library where ``gemmd_close`` must not be called; such work is moved to
a thread of its own. At exit, what is still open is closed.

nng does not survive fork(): a child process can use neither its
parent's connections nor a new one (nng panics). In a fork()ed child
every handle is dropped without a call into the library, and opening a
client raises an Error instead of aborting the process.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from typing import Callable

from ._ffi import lib

_callback = threading.local()


class in_callback:
    """Context manager marking the current thread as running a completion
    callback of the library."""

    def __enter__(self):
        _callback.active = True

    def __exit__(self, *exc):
        _callback.active = False


def run_blocking(fn: Callable[[], object]) -> None:
    """Calls fn now, or on a new thread when this thread is the library's
    (in a completion callback)."""
    if getattr(_callback, "active", False):
        threading.Thread(target=fn, daemon=True).start()
    else:
        fn()


class Counted:
    """Something freed by free() once its count of users drops to 0."""

    def __init__(self):
        self._users = 1
        self._lock = threading.Lock()

    def hold(self) -> None:
        with self._lock:
            if self._users == 0:
                raise RuntimeError("already freed")
            self._users += 1

    def drop(self) -> None:
        with self._lock:
            self._users -= 1
            last = self._users == 0
        if last:
            run_blocking(self.free)

    def free(self) -> None:
        raise NotImplementedError


_open: "weakref.WeakSet[Handle]" = weakref.WeakSet()


class Handle(Counted):
    """A gemmd_client pointer, closed when its last user drops it."""

    def __init__(self, ptr):
        super().__init__()
        self.ptr = ptr
        _open.add(self)

    def free(self) -> None:
        ptr, self.ptr = self.ptr, None
        _open.discard(self)
        if ptr is not None:
            lib.gemmd_close(ptr)


#: Whether this process is a fork()ed child of one that loaded gemmd.
forked = False


def _after_fork_in_child() -> None:
    global forked
    forked = True
    for h in list(_open):
        h.ptr = None
    _open.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _close_all() -> None:
    """Closes what is still open before the interpreter goes, so that no
    completion calls into it after. Arrays still in a region then point
    at memory that is gone: their finalizers know (Handle.ptr is None)."""
    for h in list(_open):
        h.free()
