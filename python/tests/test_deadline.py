"""No call waits past its timeout: gemmd stopped (SIGSTOP) under
Client(timeout=...).gemm and .region, each raises TimeoutError within the
timeout and SLACK, and gemmd serves again once continued; killed (SIGKILL)
under a call with a long timeout, each raises TransportError within DEAD
seconds of the kill. Opening a client against a listener that accepts
nothing raises TimeoutError within the timeout too."""

import os
import signal
import socket
import subprocess
import time

import numpy as np
import pytest

import gemmd

TIMEOUT = 0.5  # seconds: the timeout of the calls a stop outlasts
SLACK = 0.4  # what a call may take past it on a loaded host
DEAD = 1.0  # the most a call may take to see the kill


def _gemm(c, rng):
    a, b = rng.standard_normal((64, 48)), rng.standard_normal((48, 32))
    np.testing.assert_allclose(c.gemm(a, b), a @ b, rtol=1e-12, atol=1e-12)


def _region(c, rng):
    r = c.region(1 << 20)
    x = r.array(rng.standard_normal((16, 16)))
    np.testing.assert_allclose(c.gemm(x, x), x @ x, rtol=1e-12, atol=1e-12)
    del x
    r.close()


CALLS = {"gemm": _gemm, "region": _region}


@pytest.mark.parametrize("call", CALLS)
def test_stopped(start_daemon, call):
    d = start_daemon()
    rng = np.random.default_rng()
    with gemmd.Client(d.ipc, timeout=TIMEOUT) as c:
        CALLS[call](c, rng)  # connected
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            with pytest.raises(gemmd.TimeoutError) as e:
                CALLS[call](c, rng)
            took = time.monotonic() - t0
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
        assert e.value.code == gemmd.codes["ETIMEDOUT"]
        assert TIMEOUT - 0.01 <= took <= TIMEOUT + SLACK, took
        CALLS[call](c, rng)  # served again


@pytest.mark.parametrize("call", CALLS)
def test_killed(start_daemon, call):
    d = start_daemon()
    rng = np.random.default_rng()
    with gemmd.Client(d.ipc, timeout=60) as c:
        CALLS[call](c, rng)
        os.kill(d.proc.pid, signal.SIGSTOP)
        killer = subprocess.Popen(
            ["sh", "-c", f"sleep 0.3; kill -KILL {d.proc.pid}"])
        t0 = time.monotonic()
        with pytest.raises(gemmd.TransportError) as e:
            CALLS[call](c, rng)
        took = time.monotonic() - t0
        killer.wait()
        d.proc.wait()
        assert e.value.code == gemmd.codes["ETRANSPORT"]
        assert took <= 0.3 + DEAD, took
        # Dead: the next call fails at once too.
        t0 = time.monotonic()
        with pytest.raises(gemmd.TransportError):
            CALLS[call](c, rng)
        assert time.monotonic() - t0 <= DEAD


def _deaf_listener():
    """A loopback TCP listener that accepts nothing, its backlog full: a
    dial to it retries its SYN for minutes. Its sockets, the listener
    first."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    socks = [listener]
    for _ in range(7):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(listener.getsockname())
        socks.append(s)
    time.sleep(0.2)  # the handshakes that fit are done
    return socks


def test_open_not_accepting():
    """Opening waits for the first dial within the client's timeout. A
    dial through nng now and then connects at once even so (a raw connect
    never did): each open returns in time, and most time out."""
    timed_out = 0
    for _ in range(4):
        socks = _deaf_listener()
        port = socks[0].getsockname()[1]
        t0 = time.monotonic()
        try:
            gemmd.Client(f"tcp://127.0.0.1:{port}", timeout=TIMEOUT).close()
        except gemmd.TimeoutError as e:
            assert e.code == gemmd.codes["ETIMEDOUT"]
            timed_out += 1
        took = time.monotonic() - t0
        for s in socks:
            s.close()
        assert took <= TIMEOUT + SLACK, took
    assert timed_out >= 1
