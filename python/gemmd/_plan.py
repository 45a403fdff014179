"""How NumPy arrays become one gemmd job, without needless copies.

A job has one layout for all its matrices, row-major (C order) or
column-major (Fortran order), and a transpose flag for each of A and B.
An array that is contiguous in the other order is the transpose of one
contiguous in the job's: it is sent as it is, with its flag flipped. So
A and B are copied only when they are contiguous in neither order (a
strided view) or hold another type than the job's. C and the result have
no flag: the layout is the result's order when ``out`` is given, else
C's, else A's (Fortran only when A is Fortran and not C contiguous), and
a C in the other order is the one operand that is copied for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._errors import Error, codes
from ._ffi import COL_MAJOR, KERNELS, MAX_DIM, ROW_MAJOR
from ._types import STORAGE, DType, as_storage, check_types, dtype_name


@dataclass
class Plan:
    """One job, ready to send: its fields and the arrays it names. a and
    b are contiguous in the layout's order (with trans flags to match),
    c and out too; target is the caller's ``out`` when the result has to
    be copied into it afterwards (it was not contiguous)."""

    dtype: str
    layout: int
    kernel: int
    trans_a: bool
    trans_b: bool
    m: int
    n: int
    k: int
    alpha: float
    beta: float
    a: np.ndarray
    b: np.ndarray
    c: Optional[np.ndarray]
    out: Optional[np.ndarray]
    target: Optional[np.ndarray] = None
    #: Set when the client refuses the job itself, as the daemon would
    #: (its engine does not run the dtype): it is not sent.
    refused: Optional[Error] = None

    @property
    def order(self) -> str:
        return "F" if self.layout == COL_MAJOR else "C"


def _matrix(x, what: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{what} is {x.ndim}-D: want a 2-D matrix")
    return x


def _order_of(x: np.ndarray) -> Optional[str]:
    """'C' or 'F' when x is contiguous in that order, 'C' first."""
    if x.flags.c_contiguous:
        return "C"
    return "F" if x.flags.f_contiguous else None


def _place(x: np.ndarray, order: str) -> tuple[np.ndarray, bool]:
    """x laid out in order: itself, its transpose (True: flip the job's
    flag), or, when it is contiguous in neither order, a copy."""
    if x.flags.c_contiguous if order == "C" else x.flags.f_contiguous:
        return x, False
    if _order_of(x) is not None:
        return x.T, True
    return np.asarray(x, order=order), False


def plan(a, b, c=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
         dtype: DType = None, out=None, kernel: Optional[str] = None) -> Plan:
    """The job for C <- alpha * op(A) @ op(B) + beta * C; see the module's
    comment for how arrays are laid out. ``out`` is not allocated here:
    the caller decides where the result lives (a region or the heap)."""
    a, b = _matrix(a, "A"), _matrix(b, "B")
    c = None if c is None else _matrix(c, "C")
    if out is not None and not isinstance(out, np.ndarray):
        raise TypeError("out must be a NumPy array")
    check_types(A=a, B=b, C=c)
    name = dtype_name(dtype, a, b)
    if kernel is not None and kernel not in KERNELS:
        raise ValueError(f"kernel {kernel!r}: want one of {', '.join(KERNELS)}")
    m, k = a.shape[::-1] if trans_a else a.shape
    kb, n = b.shape[::-1] if trans_b else b.shape
    if k != kb:
        raise ValueError(f"op(A) is {m}x{k}, op(B) is {kb}x{n}: inner "
                         "dimensions differ")
    for what, v in (("M", m), ("N", n), ("K", k)):
        if not 1 <= v <= MAX_DIM:  # in gemmctl's words
            raise Error(codes["EDIM"], f"{what} = {v}: must be 1..{MAX_DIM}")
    for x, what in ((c, "C"), (out, "out")):
        if x is not None and x.shape != (m, n):
            raise ValueError(f"{what} is {x.shape[0]}x{x.shape[1]}, "
                             f"op(A) @ op(B) is {m}x{n}")
    if beta != 0 and c is None:
        raise ValueError("beta is not 0 but there is no C")
    if out is not None:
        if out.dtype != STORAGE[name]:
            raise TypeError(f"out is {out.dtype}; a {name} result is "
                            f"{STORAGE[name]}")
        if not out.flags.writeable:
            raise ValueError("out is read-only")
    order = ((out is not None and _order_of(out))
             or (c is not None and _order_of(c))
             or ("F" if _order_of(a) == "F" else "C"))
    a, flip_a = _place(as_storage(a, name), order)
    b, flip_b = _place(as_storage(b, name), order)
    if c is not None:
        c = np.asarray(as_storage(c, name), order=order)
    p = Plan(dtype=name, layout=COL_MAJOR if order == "F" else ROW_MAJOR,
             kernel=KERNELS[kernel or "default"],
             trans_a=bool(trans_a) != flip_a, trans_b=bool(trans_b) != flip_b,
             m=m, n=n, k=k, alpha=float(alpha), beta=float(beta),
             a=a, b=b, c=c, out=None)
    if out is not None and _order_of(out) == order:
        p.out = out
    elif out is not None:
        p.target = out
    return p


def _as_given(sent: np.ndarray, x: np.ndarray) -> Optional[bool]:
    """How plan() sends x: False as it lies, True as its transpose,
    None as a copy."""
    if sent is x:
        return False
    if sent.T.shape == x.shape and sent.T.strides == x.strides and \
            sent.__array_interface__["data"] == x.__array_interface__["data"]:
        return True
    return None


@dataclass
class Run:
    """Jobs of one request that share a Plan, checked once: the plan (its
    a and b are the first job's), each job's place in the request, and
    each one's A and B laid out as the plan lays out the first's."""

    plan: Plan
    at: list[int]
    a: list[np.ndarray]
    b: list[np.ndarray]
    #: Whether the jobs' A and B are sent as their transposes.
    flips: tuple[bool, bool] = (False, False)

    @classmethod
    def of(cls, p: Plan, at: int = 0) -> "Run":
        """The run of one job."""
        return cls(p, [at], [p.a], [p.b])


def runs(specs, as_plan) -> list[Run]:
    """The request's jobs as runs: as_plan(spec) for each, except that a
    job given as a tuple (a, b) of two arrays shaped, strided and typed
    as an earlier one's, whose arrays went as they lie, joins that one's
    run with its own arrays: everything plan() checks and decides depends
    on nothing else. So a batch of like jobs is checked once, and the
    table is filled a run at a time."""
    seen: dict = {}
    out = []
    for i, spec in enumerate(specs):
        if type(spec) is not tuple or len(spec) != 2 or \
                type(spec[0]) is not np.ndarray or \
                type(spec[1]) is not np.ndarray:
            out.append(Run.of(as_plan(spec), i))
            continue
        a, b = spec
        key = (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype)
        r = seen.get(key)
        if r is None:
            r = Run.of(plan(a, b), i)
            r.flips = (_as_given(r.plan.a, a), _as_given(r.plan.b, b))
            if None not in r.flips:
                seen[key] = r
            out.append(r)
            continue
        r.at.append(i)
        r.a.append(a.T if r.flips[0] else a)
        r.b.append(b.T if r.flips[1] else b)
    return out


def finish(p: Plan) -> np.ndarray:
    """The caller's result once p.out holds the job's: copied into the
    caller's ``out`` where it could not be written in place."""
    if p.target is not None:
        p.target[...] = p.out
        return p.target
    return p.out
