"""One exception type with the code's name and message, and subclasses
for a busy daemon, a timeout and a transport failure; the codes as the
library names them."""

import os
import signal
import time

import pytest

import gemmd
from conftest import rand


def test_codes_and_names():
    assert gemmd.codes["OK"] == 0
    assert gemmd.codes["EBUSY"] == 14  # the wire's value, never renumbered
    assert gemmd.errname(gemmd.codes["EDIM"]) == "EDIM"
    assert gemmd.strerror(gemmd.codes["EBUSY"]) == "queue full, try again later"
    e = gemmd.Error(gemmd.codes["EDIM"], "m is 0")
    assert (e.code, e.name, e.message, str(e)) == (7, "EDIM", "m is 0",
                                                   "EDIM: m is 0")
    assert issubclass(gemmd.TimeoutError, TimeoutError)
    assert issubclass(gemmd.TransportError, ConnectionError)


def test_no_daemon_is_a_transport_error(tmp_path):
    with pytest.raises(gemmd.TransportError) as e:
        gemmd.Client(f"ipc://{tmp_path}/none.sock")
    assert e.value.name == "ETRANSPORT"
    # The library's words, the same for every client of it.
    assert e.value.message == \
        f"no gemmd listening at {tmp_path}/none.sock (is it running?)"


def test_engine_check_counts_against_the_timeout(start_daemon, rng):
    """The first job of a client asks the daemon which dtypes its engine
    runs; against a stopped daemon that ping's silence is the call's,
    within its one timeout, not a timeout for the ping and another for
    the job."""
    d = start_daemon()
    a = rng.standard_normal((8, 8))
    with gemmd.Client(d.ipc, timeout=1.0) as c:
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            with pytest.raises(gemmd.TimeoutError):
                c.gemm(a, a)
            took = time.monotonic() - t0
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
    assert took < 1.8


def test_no_connection_in_time_is_a_timeout(tmp_path, rng):
    with gemmd.Client(f"ipc://{tmp_path}/none.sock", lazy=True,
                      timeout=0.2) as c:
        with pytest.raises(gemmd.TimeoutError) as e:
            c.gemm(rand(rng, (4, 4)), rand(rng, (4, 4)))
    assert e.value.name == "ETIMEDOUT"


def test_bad_url():
    with pytest.raises(gemmd.Error) as e:
        gemmd.Client("http://example.com")
    assert e.value.name == "EINVAL"


def test_drained_is_busy(start_daemon, rng):
    d = start_daemon()
    with gemmd.Client(d.ipc) as c:
        c.drain()
        assert c.stats()["draining"] is True
        with pytest.raises(gemmd.BusyError) as e:
            c.gemm(rand(rng, (4, 4)), rand(rng, (4, 4)))
        assert e.value.name == "EDRAINING"
        c.resume()
        c.gemm(rand(rng, (4, 4)), rand(rng, (4, 4)))


def test_full_queue_is_busy(start_daemon, rng):
    d = start_daemon("--set", "queue_depth=2")
    a = rand(rng, (4, 4))
    with gemmd.Client(d.ipc) as c:
        with pytest.raises(gemmd.BusyError) as e:
            c.batch([(a, a)] * 3)  # more than the queue holds: refused whole
        assert e.value.name == "EBUSY"
        assert c.stats()["jobs"]["ok"] == 0


def test_env_url(daemon, monkeypatch, rng):
    monkeypatch.setenv("GEMMD_URL", daemon.ipc)
    with gemmd.Client() as c:
        assert c.ping()["ok"] is True


def test_closed_client(daemon):
    c = gemmd.Client(daemon.ipc)
    c.close()
    c.close()
    with pytest.raises(gemmd.Error, match="closed"):
        c.stats()


def test_forked_child_gets_an_error_not_a_panic(client, daemon, rng):
    """nng panics when used again after fork(): in a child the package
    raises instead, and the parent's client goes on."""
    a = rand(rng, (4, 4))
    client.gemm(a, a)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            try:
                client.gemm(a, a)
            except gemmd.Error as e:
                assert "fork()ed child" in e.message
            try:
                gemmd.Client(daemon.ipc)
            except gemmd.Error as e:
                assert "spawn" in e.message
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert status == 0
    client.gemm(a, a)
