"""The job table a request hands the library: C- and Fortran-contiguous
operands go as their own buffers (never copied), a batch of like jobs
reuses one checked plan with each job's arrays, and results are the same
bit for bit as those of the same inputs in a region."""

import numpy as np
import pytest

import gemmd
from gemmd._client import _Call
from gemmd._ffi import COL_MAJOR, ROW_MAJOR, ffi
from gemmd._plan import Run, plan, runs
from gemmd._table import JOB, table
from conftest import rand


def address(x):
    return x.__array_interface__["data"][0]


def test_job_record_matches_the_struct():
    t, jobs = table(2)
    assert JOB.itemsize == ffi.sizeof("gemmd_job")
    jobs[1].m, jobs[1].alpha, jobs[1].b_ref.offset = 7, 2.5, 4096
    jobs[1].t.kernel_us = 3.0
    assert t["m"][1] == 7 and t["alpha"][1] == 2.5
    assert t["b_offset"][1] == 4096 and t["t"]["kernel_us"][1] == 3.0
    assert t["m"][0] == 0


@pytest.mark.parametrize("order_a,order_b", [("C", "C"), ("F", "F"),
                                             ("C", "F"), ("F", "C")])
def test_contiguous_operands_are_their_own_buffers(client, rng, order_a,
                                                   order_b):
    a = rand(rng, (30, 20), np.float32, order_a)
    b = rand(rng, (20, 10), np.float32, order_b)
    out = np.empty((30, 10), np.float32, order=order_a)
    call = _Call(client, [Run.of(plan(a, b, out=out))], None, None)
    row = call.table[0]
    assert row["a"] == address(a) and row["b"] == address(b)
    assert row["out"] == address(out) and row["c"] == 0
    assert row["layout"] == (COL_MAJOR if order_a == "F" else ROW_MAJOR)
    assert bool(row["trans_b"]) == (order_a != order_b)
    # What the library is handed is the table itself.
    assert int(ffi.cast("uintptr_t", call.jobs)) == address(call.table)


def test_strided_operand_is_copied(client, rng):
    a = rand(rng, (30, 40))[:, ::2]
    call = _Call(client, [Run.of(plan(a, rand(rng, (20, 10))))], None, None)
    assert call.table[0]["a"] != address(a)
    assert call.runs[0].plan.a.flags.c_contiguous


def test_batch_of_like_jobs_is_planned_once(rng):
    a = rand(rng, (5, 16, 8), np.float32)
    b = np.asfortranarray(rand(rng, (8, 4), np.float32))
    got = runs([(a[i], b) for i in range(5)], None)
    assert len(got) == 1 and got[0].at == list(range(5))
    p = got[0].plan
    for i in range(5):
        q = plan(a[i], b)
        for f in ("dtype", "layout", "kernel", "trans_a", "trans_b", "m",
                  "n", "k", "alpha", "beta"):
            assert getattr(p, f) == getattr(q, f)
        assert address(got[0].a[i]) == address(a[i])
        assert got[0].a[i].shape == q.a.shape
        assert address(got[0].b[i]) == address(b)
        assert got[0].b[i].shape == q.b.shape


def test_batch_table_keeps_the_request_order(client, rng):
    a = rand(rng, (3, 6, 4), np.float32)
    b = rand(rng, (4, 5), np.float32)
    other = (rand(rng, (2, 4)), rand(rng, (4, 3)))
    jobs = [(a[0], b), other, (a[1], b), (a[2], b)]
    call = _Call(client, runs(jobs, None), None, None)
    t = call.table
    assert [int(x) for x in t["m"][:4]] == [6, 2, 6, 6]
    assert [int(x) for x in t["a"][:4]] == [address(a[0]), address(other[0]),
                                            address(a[1]), address(a[2])]
    outs = [t["out"][i] for i in (0, 2, 3)]
    assert len(set(outs)) == 3 and t["dtype"][1] != t["dtype"][0]


def test_batch_plans_check_every_new_shape(rng):
    ok = (rand(rng, (4, 3)), rand(rng, (3, 5)))
    bad = (rand(rng, (4, 3)), rand(rng, (4, 5)))
    with pytest.raises(ValueError, match="inner dimensions differ"):
        runs([ok, ok, bad], None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_results_match_the_region_path_bit_for_bit(client, rng, dtype,
                                                   order):
    a = rand(rng, (48, 40), dtype, order)
    b = rand(rng, (40, 24), dtype, order)
    c = rand(rng, (48, 24), dtype, order)
    plain = client.gemm(a, b, c, alpha=0.5, beta=2.0)
    many = client.batch([(a, b)] * 3)
    with client.region(1 << 20) as r:
        ra, rb, rc = r.array(a), r.array(b), r.array(c)
        shared = client.gemm(ra, rb, rc, alpha=0.5, beta=2.0)
        assert r.offset_of(shared) is not None
        alone = client.gemm(ra, rb)
    assert plain.flags.f_contiguous == (order == "F")
    assert np.array_equal(plain, shared)
    for res in many:
        assert np.array_equal(res.raise_for_status(), alone)
        assert res.out.flags.f_contiguous == (order == "F")
    assert not np.shares_memory(many[0].out, many[1].out)


def test_batch_results_keep_their_messages(client, rng):
    a, b = rand(rng, (8, 4)), rand(rng, (4, 6))
    results = client.batch([(a, b), (a, b, None, 1.0, 0.0, False, False,
                                     "bf16")])
    assert results[0].message == "" and isinstance(results[0].message, str)
    assert results[1].name == "EUNSUPPORTED" and "bf16" in results[1].message
    with pytest.raises(gemmd.Error):
        results[1].raise_for_status()
