"""Arrays in shared-memory regions: jobs name them by offset, so their
bytes do not cross the socket (the daemon's bytes.in says so), results
land in the region, and the memory lives as long as its arrays. Plain
arrays of a MiB or more are staged through the library's own region
unless the client says no_shm."""

import gc

import numpy as np
import pytest

import gemmd
from conftest import check, rand

N = 256  # 512 KiB per fp64 matrix


def bytes_in(client):
    return client.stats()["bytes"]["in"]


def test_region_operands_move_no_bytes(client, daemon, rng):
    a, b = rand(rng, (N, N)), rand(rng, (N, N))
    with client.region(4 * N * N * 8 + 4096) as r:
        ra, rb = r.array(a), r.array(b)
        before = bytes_in(client)
        out = client.gemm(ra, rb)
        sent = bytes_in(client) - before
        check(out, a @ b, k=N)
        assert r.offset_of(out) is not None, "result not in the region"
        # A ping and the stats request count too; 2 operands would be 1 MiB.
        assert sent < 4096, f"{sent} bytes crossed the socket"
        # Staged: plain arrays do not cross the socket either.
        before = bytes_in(client)
        check(client.gemm(a, b), a @ b, k=N)
        assert bytes_in(client) - before < 4096
        # Without staging they do.
        with gemmd.Client(daemon.ipc, no_shm=True) as plain:
            before = bytes_in(client)
            check(plain.gemm(a, b), a @ b, k=N)
            assert bytes_in(client) - before >= 2 * N * N * 8
    assert client.stats()["regions"]["jobs"] >= 1


def test_region_arrays_in_place_and_mixed(client, rng):
    with client.region(1 << 20) as r:
        a = r.array(rand(rng, (30, 20)))
        b = rand(rng, (20, 10))  # on the heap: sent through the socket
        c = r.array(rand(rng, (30, 10)), order="F")
        want = a @ b + c
        assert client.gemm(a, b, c, beta=1.0, out=c) is c  # C in place
        check(c, want, k=20)
        ft = r.zeros((20, 30), order="F")
        ft[...] = a.T
        check(client.gemm(ft, b, trans_a=True), a @ b, k=20)


def test_region_full_and_closed(client):
    r = client.region(1 << 16)
    x = r.empty((64, 64))  # 32 KiB
    with pytest.raises(gemmd.Error) as e:
        r.empty((128, 128))
    assert e.value.name == "ENOMEM"
    r.close()
    with pytest.raises(gemmd.Error, match="closed"):
        r.empty(4)
    x[...] = 1.0  # still mapped while the array lives
    assert x.sum() == 64 * 64
    del x, r
    gc.collect()
    assert client.stats()["regions"]["count"] == 0


def test_region_space_is_reused(client):
    with client.region(1 << 16) as r:
        for _ in range(10):
            x = r.empty((90, 90))  # 63 KiB of the 64: one at a time
            del x


def test_region_outlives_client(daemon, rng):
    c = gemmd.Client(daemon.ipc)
    r = c.region(1 << 16)
    a = r.array(rand(rng, (16, 16)))
    c.close()
    a += 1  # the connection closes only when the region's arrays are gone
    with pytest.raises(gemmd.Error, match="closed"):
        c.gemm(a, a)
    del a, r
    gc.collect()


def test_region_needs_ipc(daemon):
    with gemmd.Client(daemon.tcp) as c:
        with pytest.raises(gemmd.Error) as e:
            c.region(4096)
        assert e.value.name == "EINVAL"


def test_batch_of_like_jobs_in_a_region(client, rng):
    """A batch of like jobs (one run) whose operands lie in a region:
    each job named by offset, each result in the region, in the
    request's order, beside a job of another shape from the heap."""
    a, b = rand(rng, (6, 24, 16)), rand(rng, (16, 8))
    other = (rand(rng, (5, 7)), rand(rng, (7, 3)))
    with client.region(1 << 20) as r:
        ra, rb = r.array(a), r.array(b)
        jobs = [(ra[i], rb) for i in range(3)] + [other] + \
            [(ra[i], rb) for i in range(3, 6)]
        results = client.batch(jobs)
        for i, res in zip([0, 1, 2, None, 3, 4, 5], results):
            if i is None:
                check(res.raise_for_status(), other[0] @ other[1], k=7)
                assert r.offset_of(res.out) is None
                continue
            check(res.raise_for_status(), a[i] @ b, k=16)
            assert r.offset_of(res.out) is not None
        assert results[0].timings.total_us > 0
