"""gemmd from Python: numpy arrays in and out, a batch with per-job
timings, and zero-copy arrays in shared memory.

    python3 numpy_gemm.py [URL]     # default: $GEMMD_URL, else the system socket
"""

import sys

import numpy as np

import gemmd

url = sys.argv[1] if len(sys.argv) > 1 else None
rng = np.random.default_rng()

with gemmd.Client(url, timeout=30) as c:
    print("daemon", c.ping()["version"], "engine", c.ping()["engine"])

    # One product; a Fortran-ordered A is sent as it lies.
    a = np.asfortranarray(rng.standard_normal((300, 200)))
    b = rng.standard_normal((200, 100))
    out = c.gemm(a, b)
    assert np.allclose(out, a @ b)

    # alpha * A^T B + beta * C, in float32.
    at = rng.standard_normal((200, 300)).astype(np.float32)
    cc = rng.standard_normal((300, 100)).astype(np.float32)
    out = c.gemm(at, b.astype(np.float32), cc, alpha=2.0, beta=0.5,
                 trans_a=True)
    assert np.allclose(out, 2 * at.T @ b.astype(np.float32) + 0.5 * cc,
                       rtol=1e-4, atol=1e-4)

    # Many jobs in one request, each with its timings.
    jobs = [(rng.standard_normal((n, n)), rng.standard_normal((n, n)))
            for n in (64, 128, 256)]
    for (x, y), r in zip(jobs, c.batch(jobs)):
        assert r.ok and np.allclose(r.out, x @ y)
        print(f"{x.shape[0]:4d}^3  kernel {r.timings.kernel_us:9.1f} us"
              f"  total {r.timings.total_us:9.1f} us")

    # Shared memory: no operand byte crosses the socket (ipc:// only).
    if (url or "ipc://").startswith("ipc://"):
        with c.region(16 << 20) as r:
            ra, rb = r.array(a), r.array(b)
            out = c.gemm(ra, rb)  # the result lives in the region too
            assert np.allclose(out, a @ b)
            print("region jobs:", c.stats()["regions"]["jobs"])

    # Something running in the background.
    future = c.submit(b.T, b)
    assert np.allclose(future.result(), b.T @ b)
print("ok")
