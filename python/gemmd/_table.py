"""A request's jobs as one NumPy structured array laid out as gemmd.h's
``gemmd_job[]``, handed to the library as one buffer (``ffi.from_buffer``):
a batch is filled column by column, not job by job through cffi.

The layout is read from cffi's own view of the struct (offsets and
size), which tests/test_abi.py checks against the C compiler's.
"""

from __future__ import annotations

import numpy as np

from ._ffi import ffi


def _field(*path: str) -> int:
    """The offset in gemmd_job of a (possibly nested) field."""
    return ffi.offsetof("gemmd_job", *path)


def _dtype() -> np.dtype:
    names, formats, offsets = [], [], []

    def add(name, fmt, at):
        names.append(name)
        formats.append(fmt)
        offsets.append(at)

    for name in ("dtype", "layout", "kernel", "trans_a", "trans_b"):
        add(name, "<i4", _field(name))
    for name in ("m", "n", "k"):
        add(name, "<u4", _field(name))
    add("alpha", "<f8", _field("alpha"))
    add("beta", "<f8", _field("beta"))
    for name in ("a", "b", "c", "out"):
        add(name, "<u8", _field(name))
        add(name + "_region", "<u8", _field(name + "_ref", "region"))
        add(name + "_offset", "<u8", _field(name + "_ref", "offset"))
    add("status", "<i4", _field("status"))
    message = dict(ffi.typeof("gemmd_job").fields)["message"].type
    add("message", f"S{ffi.sizeof(message)}", _field("message"))
    add("t", [("queue_us", "<f8"), ("h2d_us", "<f8"), ("kernel_us", "<f8"),
              ("d2h_us", "<f8"), ("total_us", "<f8"), ("start_seq", "<u8")],
        _field("t"))
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": ffi.sizeof("gemmd_job")})


#: One gemmd_job as a NumPy record.
JOB = _dtype()

#: The fields of a job the request sets that the jobs of a run
#: (_plan.Run) share; the rest it sets are each job's own operands, a, b,
#: c and out, and the others are the reply's.
SHARED = ("dtype", "layout", "kernel", "trans_a", "trans_b", "m", "n", "k",
          "alpha", "beta")


def _view(fields) -> np.dtype:
    """A view of a JOB array that reads and writes only fields."""
    return np.dtype({"names": list(fields),
                     "formats": [JOB.fields[f][0] for f in fields],
                     "offsets": [JOB.fields[f][1] for f in fields],
                     "itemsize": JOB.itemsize})


_SHARED = _view(SHARED)


def fill_runs(t: np.ndarray, shared: list, which: np.ndarray,
              operands: dict) -> None:
    """Sets what the request says of t's first len(which) jobs: job i the
    SHARED fields of run which[i] (shared: one tuple per run, in SHARED's
    order) and its operands' addresses from operands ("a", "b", "c",
    "out": a column of len(which) each), a column at a time."""
    n = len(which)
    t[:n].view(_SHARED)[:] = np.array(shared, _SHARED)[which]
    for name, column in operands.items():
        t[name][:n] = column


def table(n: int):
    """(array, cdata): n zeroed jobs, and the gemmd_job[] over the same
    memory, which keeps the array alive."""
    # Zeroed as bytes: NumPy 2 zeroes a structured dtype field by field.
    t = np.zeros(max(n, 1) * JOB.itemsize, np.uint8).view(JOB)
    return t, ffi.from_buffer("gemmd_job[]", t)


def address(x) -> int:
    """Where the data of x starts, x contiguous in C or Fortran order
    (0 for None): its own buffer, never a copy."""
    if x is None:
        return 0
    return int(_cast(_UINTPTR,
                     _from_buffer(x if x.flags.c_contiguous else x.T)))


def addresses(xs: list, order: str) -> np.ndarray:
    """address() of each of xs, all contiguous in order ("C" or "F"), as
    one uint64 array: the pointers are taken and converted in C."""
    if not xs:
        return np.zeros(0, np.uint64)
    views = xs if order == "C" else [x.T for x in xs]
    ptrs = ffi.new("char *[]", [_from_buffer(_CHARS, x) for x in views])
    return np.frombuffer(ffi.buffer(ptrs), np.uint64).copy()


def pointer(x):
    """As address(), as a cdata (char[] over x's buffer, or NULL)."""
    if x is None:
        return ffi.NULL
    return _from_buffer(x if x.flags.c_contiguous else x.T)


_cast, _from_buffer = ffi.cast, ffi.from_buffer
_UINTPTR, _CHARS = ffi.typeof("uintptr_t"), ffi.typeof("char[]")
