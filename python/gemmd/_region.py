"""Shared-memory regions: NumPy arrays that gemmd reads and writes in
place, so that jobs naming them move no operand bytes through the socket.
"""

from __future__ import annotations

import weakref
from typing import Optional, Sequence, Union

import numpy as np

from ._errors import Error, codes, error, last_error
from ._ffi import ffi, lib
from ._handle import Counted, Handle

ALIGN = 256  # what DMA likes; also the region allocator's default


class _Memory(Counted):
    """The region itself: released (handed back to the daemon, unmapped
    here) when the Region was closed and no array lives in it."""

    def __init__(self, handle: Handle, nbytes: int, region: "Region",
                 timeout_ms: int):
        super().__init__()
        self.region = weakref.ref(region)  # while it is open
        out = ffi.new("gemmd_region **")
        rv = lib.gemmd_region_create_timeout(handle.ptr, nbytes, out,
                                             timeout_ms)
        if rv != 0:
            raise last_error(rv)
        handle.hold()
        self.handle = handle
        self.ptr = out[0]
        self.base = int(ffi.cast("uintptr_t", lib.gemmd_region_ptr(self.ptr)))
        self.nbytes = int(lib.gemmd_region_size(self.ptr))

    def offset_of(self, x: np.ndarray) -> Optional[int]:
        """Where x's bytes start in the region, when all of them lie in
        it; else None."""
        at = x.__array_interface__["data"][0] - self.base
        if 0 <= at and at + x.nbytes <= self.nbytes:
            return at
        return None

    @property
    def gone(self) -> bool:
        """Whether its client was closed under it, at exit: gemmd_close
        released the region and its blocks."""
        return self.handle.ptr is None

    def free(self) -> None:
        if not self.gone:
            lib.gemmd_region_release(self.ptr)
        self.handle.drop()


def _free_block(memory: _Memory, offset: int):
    def free(_cdata):
        if not memory.gone:
            lib.gemmd_region_free(memory.ptr, offset)
        memory.drop()
    return free


class Region:
    """Memory this process shares with its daemon (``Client.region``).

    Arrays made with :meth:`empty`, :meth:`zeros` or :meth:`array` live in
    it; a job whose operands and result are such arrays names them by
    offset, and the daemon reads and writes them in place. Regions cost
    about a millisecond per MiB to make (the daemon registers them with
    its engine): make one up front and reuse it. Its space is taken by an
    array until the array is garbage: then it is free again.

    :meth:`close` (or leaving a ``with`` block) lets no new array in; the
    memory is handed back once the last of its arrays is gone.
    """

    def __init__(self, handle: Handle, nbytes: int, timeout_ms: int):
        if nbytes <= 0:
            raise ValueError("a region needs nbytes > 0")
        self._memory = _Memory(handle, int(nbytes), self, timeout_ms)
        self._closed = False
        self._finalizer = weakref.finalize(self, self._memory.drop)

    @property
    def nbytes(self) -> int:
        """Its size in bytes."""
        return self._memory.nbytes

    @property
    def id(self) -> int:
        """The id jobs name it by on the wire."""
        return int(lib.gemmd_region_id(self._memory.ptr))

    def empty(self, shape: Union[int, Sequence[int]], dtype=np.float64,
              order: str = "C") -> np.ndarray:
        """An uninitialised array in the region. Raises Error (ENOMEM)
        when no free space of the region fits it."""
        if self._closed:
            raise Error(codes["EINVAL"], "the region is closed")
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = max(count * dtype.itemsize, 1)
        offset = ffi.new("uint64_t *")
        rv = lib.gemmd_region_alloc(self._memory.ptr, nbytes, ALIGN, offset)
        if rv != 0:
            raise error(rv, f"no {nbytes} bytes free in the region of "
                        f"{self.nbytes}")
        self._memory.hold()
        at = ffi.gc(ffi.cast("char *", self._memory.base + offset[0]),
                    _free_block(self._memory, offset[0]))
        flat = np.frombuffer(ffi.buffer(at, nbytes), dtype=dtype,
                             count=count)
        return flat.reshape(shape, order=order)

    def zeros(self, shape, dtype=np.float64, order: str = "C") -> np.ndarray:
        """An array of zeros in the region."""
        x = self.empty(shape, dtype, order)
        x[...] = 0
        return x

    def array(self, obj, dtype=None, order: str = "K") -> np.ndarray:
        """A copy of obj in the region (order "K": obj's own order)."""
        src = np.asarray(obj, dtype=dtype)
        if order == "K":
            order = "F" if src.flags.f_contiguous and \
                not src.flags.c_contiguous else "C"
        x = self.empty(src.shape, src.dtype, order)
        x[...] = src
        return x

    def offset_of(self, x: np.ndarray) -> Optional[int]:
        """Where x's bytes start in the region, when all of them lie in
        it (a job naming x then sends none of them); else None."""
        return self._memory.offset_of(x)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """No new arrays; the memory goes back once its arrays are gone."""
        if not self._closed:
            self._closed = True
            self._finalizer()

    def __enter__(self) -> "Region":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<gemmd.Region id={self.id} nbytes={self.nbytes}>"
