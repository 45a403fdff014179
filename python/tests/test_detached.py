"""Detached jobs: ids at once, status, wait (once), cancel."""

import os

import numpy as np
import pytest

import gemmd
from conftest import check, rand


def test_detached_round_trip(client, rng):
    a, b = rand(rng, (30, 20)), rand(rng, (20, 10), order="F")
    job = client.submit_detached(a, b)
    assert isinstance(job, int) and job > 0
    info = client.status(job)
    assert info.id == job and info.state in ("queued", "running", "done")
    assert (info.m, info.n, info.k, info.dtype) == (30, 10, 20, "fp64")
    check(client.wait(job), a @ b, k=20)
    assert client.status(job).has_result is False
    with pytest.raises(gemmd.Error) as e:
        client.wait(job)
    assert e.value.name == "ENOTFOUND"


def test_jobs_lists_detached_jobs(client, daemon, rng):
    """Over tcp:// (anonymous, no admin) a client sees its own jobs, and
    the admin (uid 0 over ipc://, as the tests run) sees them too, with
    their owner."""
    a, b = rand(rng, (6, 5)), rand(rng, (5, 4))
    with gemmd.Client(daemon.tcp) as anon:
        job = anon.submit_detached(a, b)
        mine = anon.jobs()
    listed = [j for j in mine if j.get("job") == job]
    assert len(listed) == 1 and listed[0]["detached"] is True
    assert (listed[0]["m"], listed[0]["n"], listed[0]["k"]) == (6, 4, 5)
    assert all(j["owner"] == "anonymous" for j in mine)
    if os.getuid() == 0:
        assert any(j.get("job") == job and j["owner"] == "anonymous"
                   for j in client.jobs())


def test_detached_layout_follows_a(client, rng):
    a = rand(rng, (12, 8), order="F")
    b = rand(rng, (8, 6))
    job = client.submit_detached(a, b)
    out = client.wait(job)
    assert out.flags.f_contiguous and client.status(job).layout == "col"
    check(out, a @ b, k=8)


def test_cancel_and_unknown(client, rng):
    job = client.submit_detached(rand(rng, (10, 10)), rand(rng, (10, 10)))
    assert client.cancel(job) in ("canceled", "running")
    with pytest.raises(gemmd.Error) as e:
        client.wait(job, timeout=5)
    assert e.value.name in ("ECANCELED", "ENOTFOUND")
    with pytest.raises(gemmd.Error) as e:
        client.status(12345)
    assert e.value.name == "ENOTFOUND"


def test_wait_times_out(client, rng):
    big = rand(rng, (1200, 1200))
    job = client.submit_detached(big, big)
    with pytest.raises(gemmd.TimeoutError):
        client.wait(job, timeout=0)
    check(client.wait(job, timeout=120), big @ big, k=1200)
