"""How arrays become a job without needless copies: operands in the
other order go as their transposes, with the flag flipped; only strided
views, other types, and a C in the other order are copied."""

import numpy as np

from gemmd._ffi import COL_MAJOR, ROW_MAJOR
from gemmd._plan import plan


def shares(x, y):
    return np.shares_memory(x, y)


def test_fortran_a_c_b_no_copy():
    a = np.asfortranarray(np.ones((4, 3)))
    b = np.ones((3, 5))
    p = plan(a, b)
    assert p.layout == COL_MAJOR  # A's order
    assert p.a is a and not p.trans_a
    assert shares(p.b, b) and p.trans_b  # B sent as B^T, Fortran
    p = plan(a, b, out=np.empty((4, 5)))  # C-order out: row-major job
    assert p.layout == ROW_MAJOR
    assert shares(p.a, a) and p.trans_a
    assert p.b is b and not p.trans_b


def test_transposed_views_need_no_copy():
    a = np.ones((3, 4))
    p = plan(a.T, np.ones((3, 5)))  # a.T is Fortran-contiguous
    assert shares(p.a, a) and p.m == 4 and p.k == 3


def test_copies_only_where_needed():
    a = np.ones((4, 6))[:, ::2]  # strided: copied
    b = np.ones((3, 5), np.float32)  # another type: converted
    c = np.asfortranarray(np.ones((4, 5)))
    p = plan(a, b, c, out=np.empty((4, 5)))
    assert not shares(p.a, a) and p.a.flags.c_contiguous
    assert p.b.dtype == np.float64
    assert not shares(p.c, c) and p.c.flags.c_contiguous  # C has no flag
    p = plan(np.ones((4, 3)), np.ones((3, 5)), c)
    assert p.layout == COL_MAJOR and p.c is c  # layout follows C


def test_float32_stays_float32():
    a = np.ones((4, 3), np.float32)
    p = plan(a, np.ones((3, 5), np.float32))
    assert p.dtype == "fp32" and p.a is a
