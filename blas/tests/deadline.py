"""numpy under the shim with gemmd stopped or killed around a call: the
call falls back to the host BLAS within GEMMD_BLAS_TIMEOUT_MS (and SLACK),
or, gemmd killed, at once (within DEAD seconds of the kill, whatever the
timeout), and every product is right. argv[1] is gemmd's pid, argv[2]
the case:

first  gemmd stopped before the program's first GEMM, which must make
       the shim's region: the region's hand-off times out, the host
       computes; continued, once the pause (GEMMD_BLAS_RETRY_MS, argv[3]
       seconds) is over, the GEMMs are gemmd's again, in a region.
kill   gemmd stopped under a GEMM, then killed: the call fails at once
       and the host computes it and the next ones.
killed gemmd killed between two GEMMs: the second finds it gone at once,
       and the host computes it and the next ones.
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np

SLACK = 0.5  # seconds a fallback may take past its timeout on a loaded host
DEAD = 1.0  # seconds after the kill within which the host has the call

rng = np.random.default_rng()
pid, case = int(sys.argv[1]), sys.argv[2]
timeout = int(os.environ["GEMMD_BLAS_TIMEOUT_MS"]) / 1e3


def dead(pid):
    """Whether pid has exited, reaped by its parent or not yet."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def check():
    """One GEMM through the shim, checked against one without BLAS;
    returns the seconds it took."""
    a, b = rng.uniform(-1, 1, (64, 48)), rng.uniform(-1, 1, (48, 32))
    t0 = time.monotonic()
    got = a @ b
    took = time.monotonic() - t0
    err = np.abs(got - (a[:, :, None] * b).sum(1)).max()
    assert err < 1e-12, err
    return took


if case == "first":
    os.kill(pid, signal.SIGSTOP)
    try:
        took = check()
    finally:
        os.kill(pid, signal.SIGCONT)
    assert took <= timeout + SLACK, f"the first call took {took:.3f} s"
    time.sleep(float(sys.argv[3]) + 0.2)
    check()
elif case == "kill":
    check()  # connected, with a region
    os.kill(pid, signal.SIGSTOP)
    killer = subprocess.Popen(["sh", "-c", f"sleep 0.3; kill -KILL {pid}"])
    took = check()
    killer.wait()
    assert took <= 0.3 + DEAD, f"the call took {took:.3f} s after the kill"
    assert check() <= DEAD
elif case == "killed":
    check()
    os.kill(pid, signal.SIGKILL)
    while not dead(pid):
        time.sleep(0.01)
    took = check()
    assert took <= DEAD, f"the call took {took:.3f} s after the kill"
    assert check() <= DEAD
else:
    sys.exit(f"unknown case {case}")
print(f"took {took:.3f}")
