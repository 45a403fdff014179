"""An unchanged numpy program, for the shim's tests: `a @ b` in every way
numpy turns into a BLAS GEMM (both float types, C and Fortran order,
transposed views, slices whose rows are longer than the matrix), from
several threads at once, and in a fork()ed child (whose GEMMs the host
BLAS computes: nng does not survive fork). Each product is checked
against one computed without BLAS. Prints "calls N", the GEMMs the
parent made."""

import os
import sys
import threading

import numpy as np

rng = np.random.default_rng()


def reference(a, b):
    """a @ b without BLAS: elementwise products, summed."""
    return (a.astype(np.float64)[:, :, None] * b.astype(np.float64)).sum(1)


def check(a, b):
    got = a @ b
    tol = (1e-12 if got.dtype == np.float64 else 1e-4) * a.shape[1]
    err = np.abs(got - reference(a, b)).max()
    assert err <= tol, f"{a.shape}@{b.shape} {got.dtype}: error {err}"
    return 1


def cases():
    calls = 0
    for dtype in (np.float64, np.float32):
        a = rng.uniform(-1, 1, (97, 61)).astype(dtype)
        b = rng.uniform(-1, 1, (61, 83)).astype(dtype)
        wide = rng.uniform(-1, 1, (97, 150)).astype(dtype)
        calls += check(a, b)
        calls += check(np.asfortranarray(a), b)
        calls += check(a, np.asfortranarray(b))
        calls += check(b.T, a.T)  # both Fortran-ordered views
        calls += check(wide[:, :61], b)  # lda 150 > 61
        calls += check(a, wide[:61, :83])  # ldb 150 > 83
    return calls


calls = cases()

errors = []


def worker():
    try:
        for _ in range(5):
            a = rng.uniform(-1, 1, (120, 80))
            b = rng.uniform(-1, 1, (80, 90))
            check(a, b)
    except AssertionError as e:
        errors.append(e)


threads = [threading.Thread(target=worker) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
calls += 4 * 5

pid = os.fork()
if pid == 0:
    try:
        check(rng.uniform(-1, 1, (70, 50)), rng.uniform(-1, 1, (50, 40)))
    except BaseException as e:
        print(f"child: {e}", file=sys.stderr)
        os._exit(1)
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert status == 0, "the fork()ed child's product was wrong"

print(f"calls {calls}")
