"""A real gemmd (CPU engine) for the tests, started from $GEMMD on
temporary ipc:// and tcp:// sockets; the tests are skipped without it.
Operands are fresh random values each run (never zeros); numpy is the
reference."""

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time

import numpy as np
import pytest

import gemmd


def _free_port() -> int:
    """A free port below the kernel's ephemeral range, where no other
    process's outgoing connection can take it before gemmd binds it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random(os.getpid() * 7919 + time.monotonic_ns())
    for _ in range(1000):
        port = rng.randrange(1024, max(low, 2048))
        with socket.socket() as s:
            try:
                s.bind(("", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


class Daemon:
    """One gemmd process and where it listens."""

    def __init__(self, *options: str):
        binary = os.environ.get("GEMMD")
        if not binary:
            pytest.skip("GEMMD (the path of a built gemmd) is not set")
        self.dir = tempfile.mkdtemp(prefix="gemmd-py.")
        self.ipc = f"ipc://{self.dir}/gemmd.sock"
        self.tcp = f"tcp://127.0.0.1:{_free_port()}"
        self.log = open(os.path.join(self.dir, "gemmd.log"), "w+")
        self.proc = subprocess.Popen(
            [binary, "--engine", "cpu", "--listen", self.ipc, "--listen",
             self.tcp, "--set", "cpu_threads=1", *options],
            stderr=self.log)
        # Ready: its engine warm (the CPU engine sizes its pieces first,
        # which a loaded host can make take a second).
        deadline = time.monotonic() + 20
        while True:
            try:
                with gemmd.Client(self.ipc, timeout=1) as c:
                    if c.ping().get("ready", True):
                        return
            except gemmd.Error:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise RuntimeError("gemmd did not start:\n" + self.log.read())
            time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def daemon():
    d = Daemon()
    yield d
    d.stop()


@pytest.fixture
def start_daemon():
    """Starts a gemmd of the test's own, with extra options."""
    started = []

    def start(*options):
        started.append(Daemon(*options))
        return started[-1]

    yield start
    for d in started:
        d.stop()


@pytest.fixture
def client(daemon):
    with gemmd.Client(daemon.ipc, timeout=60) as c:
        yield c


@pytest.fixture
def rng():
    return np.random.default_rng()


def rand(rng, shape, dtype=np.float64, order="C"):
    """Uniform in [-1, 1), never all zeros."""
    x = rng.uniform(-1, 1, size=shape).astype(dtype)
    return np.asarray(x, order=order)


def check(got, want, dtype=np.float64, k=1):
    """got matches want within what the dtype's rounding over k terms
    allows."""
    eps = np.finfo(dtype).eps
    tol = 4 * eps * np.sqrt(k) * max(1.0, float(np.abs(want).max()))
    assert got.shape == want.shape
    err = float(np.abs(got.astype(np.float64) - want).max())
    assert err <= tol, f"max error {err:.3g} over tolerance {tol:.3g}"
