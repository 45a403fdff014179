"""numpy under the shim while gemmd stops answering: the call that times
out (GEMMD_BLAS_TIMEOUT_MS) and those after it, for GEMMD_BLAS_RETRY_MS,
are computed by the host BLAS; once the daemon goes on and the pause is
over, calls are gemmd's again, through a fresh region (the late job may
still write into the one it named). The call that times out returns
within GEMMD_BLAS_TIMEOUT_MS and 0.5 s. argv[1] is gemmd's pid, argv[2]
the pause in seconds."""

import os
import signal
import sys
import time

import numpy as np

rng = np.random.default_rng()
pid = int(sys.argv[1])


def check():
    a, b = rng.uniform(-1, 1, (64, 48)), rng.uniform(-1, 1, (48, 32))
    err = np.abs(a @ b - (a[:, :, None] * b).sum(1)).max()
    assert err < 1e-12, err


check()  # connected, with a region
os.kill(pid, signal.SIGSTOP)
try:
    t0 = time.monotonic()
    check()  # times out
    took = time.monotonic() - t0
    for _ in range(2):
        check()
finally:
    os.kill(pid, signal.SIGCONT)
timeout = int(os.environ["GEMMD_BLAS_TIMEOUT_MS"]) / 1e3
assert took <= timeout + 0.5, f"the call took {took:.3f} s"
time.sleep(float(sys.argv[2]))
for _ in range(3):
    check()
