"""Client.batch and Client.submit: many jobs in one request, each with
its own status and timings; Futures, many in flight, from many threads."""

import concurrent.futures
import threading

import numpy as np
import pytest

import gemmd
from conftest import check, rand


def test_batch_results_and_timings(client, rng):
    shapes = [(5, 7, 3), (64, 32, 48), (1, 1, 1), (33, 17, 65)]
    ops = [(rand(rng, (m, k)), rand(rng, (k, n))) for m, n, k in shapes]
    results = client.batch(ops)
    assert len(results) == len(ops)
    for (a, b), r in zip(ops, results):
        assert r.ok and r.name == "OK" and r.message == ""
        check(r.out, a @ b, k=a.shape[1])
        assert r.timings.kernel_us > 0
        assert r.timings.total_us >= r.timings.kernel_us


def test_batch_job_forms_and_a_failing_job(client, rng):
    a, b, c = rand(rng, (8, 4)), rand(rng, (4, 6)), rand(rng, (8, 6))
    results = client.batch([
        gemmd.Job(a, b, c, alpha=2.0, beta=1.0),
        {"a": a, "b": b, "dtype": "fp16"},  # the CPU engine has no fp16
        (b, a, None, 1.0, 0.0, True, True),
    ])
    check(results[0].out, 2 * a @ b + c, k=4)
    assert not results[1].ok and results[1].name == "EUNSUPPORTED"
    assert results[1].out is None
    with pytest.raises(gemmd.Error, match="EUNSUPPORTED"):
        results[1].raise_for_status()
    check(results[2].out, b.T @ a.T, k=6)


def test_submit_futures(client, rng):
    ops = [(rand(rng, (40, 30)), rand(rng, (30, 20))) for _ in range(16)]
    futures = [client.submit(a, b) for a, b in ops]
    for (a, b), f in zip(ops, futures):
        check(f.result(timeout=60), a @ b, k=30)
    bad = client.submit(ops[0][0], ops[0][1], dtype="bf16")
    assert isinstance(bad.exception(timeout=60), gemmd.Error)
    assert not bad.cancel()  # on its way: not cancellable


def test_submit_done_callback(client, rng):
    a, b = rand(rng, (20, 10)), rand(rng, (10, 30))
    got = concurrent.futures.Future()
    client.submit(a, b).add_done_callback(lambda f: got.set_result(f))
    check(got.result(timeout=60).result(), a @ b, k=10)


def test_threads_share_a_client(client, rng):
    ops = [(rand(rng, (50, 40)), rand(rng, (40, 30))) for _ in range(4)]
    errors = []

    def work(a, b):
        try:
            for _ in range(10):
                check(client.gemm(a, b), a @ b, k=40)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=op) for op in ops]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_close_while_a_call_runs(daemon, rng):
    """close() from another thread waits for the call in progress to
    return before the connection goes; later calls raise."""
    c = gemmd.Client(daemon.ipc)
    a = rand(rng, (700, 700))
    got = concurrent.futures.Future()

    def call():
        try:
            got.set_result(c.gemm(a, a))
        except Exception as e:  # reported below
            got.set_exception(e)

    t = threading.Thread(target=call)
    t.start()
    while c.stats()["jobs"]["queued"] + c.stats()["jobs"]["inflight"] == 0 \
            and not got.done():
        pass
    c.close()
    t.join()
    check(got.result(), a @ a, k=700)
    with pytest.raises(gemmd.Error, match="closed"):
        c.ping()
