"""The gemmd client: one connection to a daemon, any number of requests
in flight on it, from any thread."""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Union

import numpy as np

from ._errors import (Error, TimeoutError, TransportError, codes, errname,
                      error, last_error)
from ._ffi import (COL_MAJOR, DTYPES, FOREVER, OPEN_LAZY, OPEN_NO_SHM,
                   PRIORITY_DEFAULT, ffi, lib, libc, text)
from . import _handle
from ._handle import Handle, in_callback
from ._plan import Plan, Run, finish, plan
from ._plan import runs as batch_runs
from ._region import Region, _Memory
from ._table import address, addresses, fill_runs, pointer, table
from ._types import STORAGE, DType

_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
_UNSET: Any = object()


@dataclass(frozen=True)
class Timings:
    """Microseconds a job spent in each phase, as the daemon measured
    them (proto/PROTOCOL.md, "Timings"); 0 for phases it never reached."""

    queue_us: float = 0.0
    h2d_us: float = 0.0
    kernel_us: float = 0.0
    d2h_us: float = 0.0
    total_us: float = 0.0
    start_seq: int = 0  # place in the daemon's start order, from 1

    @classmethod
    def _of(cls, t) -> "Timings":
        return cls(t.queue_us, t.h2d_us, t.kernel_us, t.d2h_us, t.total_us,
                   t.start_seq)


@dataclass
class Job:
    """One GEMM of a :meth:`Client.batch`: the arguments of
    :meth:`Client.gemm`."""

    a: Any
    b: Any
    c: Any = None
    alpha: float = 1.0
    beta: float = 0.0
    trans_a: bool = False
    trans_b: bool = False
    dtype: DType = None
    out: Optional[np.ndarray] = None
    kernel: Optional[str] = None


@dataclass
class Result:
    """What became of one job: its result, status and timings."""

    out: Optional[np.ndarray]
    code: int
    message: str
    timings: Timings = field(default_factory=Timings)

    @property
    def ok(self) -> bool:
        """Whether the job succeeded (``out`` holds its result)."""
        return self.code == 0

    @property
    def name(self) -> str:
        """The status's name: ``"OK"``, ``"EDIM"``, ..."""
        return errname(self.code)

    def raise_for_status(self) -> np.ndarray:
        """The result, or the job's Error raised."""
        if self.code:
            raise error(self.code, self.message)
        return self.out

    @classmethod
    def _of_row(cls, out, code: int, said: bytes, table: np.ndarray,
                row: int) -> "Result":
        """The Result of a row of a request's job table. Its timings are
        read from the table when first asked for: most callers never ask,
        and a batch's thousands of Timings would cost more than the rest
        of its results."""
        r = _new(cls)
        r.__dict__ = {"out": out, "code": code,
                      "message": said.decode("utf-8", "replace") if said
                      else "", "_row": (table, row)}
        return r

    def __getattr__(self, name: str):
        row = self.__dict__.get("_row") if name == "timings" else None
        if row is None:
            raise AttributeError(name)
        self.timings = Timings(*row[0]["t"][row[1]].tolist())
        self.__dict__.pop("_row", None)
        return self.timings


_new = object.__new__


@dataclass(frozen=True)
class JobInfo:
    """What the daemon knows of a detached job (:meth:`Client.status`)."""

    id: int
    state: str  # queued, running, done, failed, canceled, expired
    code: int
    message: str
    has_result: bool
    priority: int
    dtype: str
    layout: str  # "row" or "col"
    m: int
    n: int
    k: int
    timings: Timings


def _ms(timeout: Optional[float], zero_ok: bool = False) -> int:
    """Seconds (None: no limit) as the library's milliseconds."""
    if timeout is None:
        return FOREVER
    if timeout < 0 or (timeout == 0 and not zero_ok):
        raise ValueError(f"timeout {timeout}: want seconds > 0, or None")
    return min(math.ceil(timeout * 1000), 2**31 - 1)


def _as_job(spec) -> Job:
    if isinstance(spec, Job):
        return spec
    if isinstance(spec, dict):
        return Job(**spec)
    return Job(*spec)


class Client:
    """A connection to a gemmd daemon.

    ``url`` is ``ipc:///path``, ``tcp://host:port`` or
    ``tls+tcp://host:port``; None means ``$GEMMD_URL``, else
    ``ipc:///run/gemmd/gemmd.sock``. ``timeout`` (seconds, None: no limit)
    is every call's default, opening included. Opening dials the daemon
    and fails with :class:`TransportError` when it cannot be reached
    (:class:`TimeoutError` when the dial has not ended within
    ``timeout``), unless ``lazy``: then calls wait, within their timeout,
    for a connection made in the background. The ``tls_*`` files are for ``tls+tcp://``.
    ``connections`` (0: 1 over ``ipc://``, 4 over TCP, the others
    dialed by the first large request) connections to the daemon carry
    large requests striped over them; over ``ipc://`` arrays are staged through
    shared memory of ``staging_bytes`` (default 256 MiB) unless
    ``no_shm`` (see gemmd.h, ``gemmd_open_opts``).

    All methods may be called from any thread, concurrently. A request
    runs at most once: after TimeoutError or TransportError, whether its
    jobs ran is unknown, and retrying is the caller's decision.
    """

    def __init__(self, url: Optional[str] = None,
                 timeout: Optional[float] = 60.0, *, lazy: bool = False,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None,
                 tls_server_name: Optional[str] = None,
                 region_socket: Optional[str] = None,
                 connections: int = 0, staging_bytes: int = 0,
                 no_shm: bool = False):
        open_ms = _ms(timeout)
        self.timeout = timeout
        self._closed = True
        if _handle.forked:
            raise Error(codes["EINVAL"],
                        "gemmd cannot be used in a fork()ed child of a "
                        "process that loaded it (nng does not survive "
                        "fork): start workers with the 'spawn' or "
                        "'forkserver' method")
        keep = []

        def cstr(s):
            if s is None:
                return ffi.NULL
            keep.append(ffi.new("char[]", s.encode()))
            return keep[-1]

        opts = ffi.new("gemmd_open_opts *")
        opts.flags = (OPEN_LAZY if lazy else 0) | \
            (OPEN_NO_SHM if no_shm else 0)
        opts.tls_ca_file = cstr(tls_ca)
        opts.tls_cert_file = cstr(tls_cert)
        opts.tls_key_file = cstr(tls_key)
        opts.tls_server_name = cstr(tls_server_name)
        opts.region_socket = cstr(region_socket)
        opts.connections = connections
        opts.staging_bytes = staging_bytes
        out = ffi.new("gemmd_client **")
        rv = lib.gemmd_open_timeout(cstr(url), opts, out, open_ms)
        if rv != 0:
            raise last_error(rv)
        self._handle = Handle(out[0])
        self._closed = False
        self._memories: "weakref.WeakSet[_Memory]" = weakref.WeakSet()
        self._memories_lock = threading.Lock()
        self._engine: Optional[dict] = None  # its ping, once asked

    # ---- lifetime ----

    def close(self) -> None:
        """Closes the connection. Requests in flight fail (ECANCELED).
        Regions made on this client stay usable until their arrays are
        gone; the connection closes after them."""
        if not self._closed:
            self._closed = True
            self._handle.drop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if not getattr(self, "_closed", True):
            self.close()

    def _hold(self):
        """The gemmd_client, held until _handle.drop(): a close() from
        another thread meanwhile closes it only once the call has
        returned."""
        try:
            if self._closed:
                raise RuntimeError
            self._handle.hold()
        except RuntimeError:
            raise Error(codes["EINVAL"], "the client is closed") from None
        if self._handle.ptr is None:
            self._handle.drop()
            raise Error(codes["EINVAL"], "the client is its parent's: "
                        "this is a fork()ed child")
        return self._handle.ptr

    @contextlib.contextmanager
    def _use(self):
        """The gemmd_client, held for the with block (see _hold)."""
        ptr = self._hold()
        try:
            yield ptr
        finally:
            self._handle.drop()

    def _call(self, fn, *args) -> int:
        """fn(the gemmd_client, *args), the client held meanwhile."""
        ptr = self._hold()
        try:
            return fn(ptr, *args)
        finally:
            self._handle.drop()

    def _timeout(self, timeout, zero_ok=False) -> int:
        return _ms(self.timeout if timeout is _UNSET else timeout, zero_ok)

    # ---- jobs ----

    def gemm(self, a, b, c=None, alpha: float = 1.0, beta: float = 0.0,
             trans_a: bool = False, trans_b: bool = False,
             dtype: DType = None, out: Optional[np.ndarray] = None, *,
             kernel: Optional[str] = None, priority: Optional[int] = None,
             deadline: Optional[float] = None,
             timeout: Optional[float] = _UNSET) -> np.ndarray:
        """Returns ``alpha * op(A) @ op(B) + beta * C`` computed by the
        daemon, op() transposing where trans_a / trans_b say.

        Arrays may be in C or Fortran order; the result is in the order
        of ``out``, else of ``c``, else of ``a``, and no operand is
        copied that can be sent as it lies (see the package README).
        ``dtype``: "fp64", "fp32", "tf32", "fp16", "bf16" or a NumPy
        float type; None: the inputs' (float64, float32 or float16).
        bf16 data is carried as uint16 bit patterns (:func:`to_bf16`),
        and a bf16 result is such an array. ``out``: an array of the
        result's shape and dtype to write into. ``kernel``: "default",
        "cublas" or "tiled". ``priority`` 0..3 (default 1);
        ``deadline`` (seconds): fail the job if it has not started by
        then. Arrays in one of this client's regions are named by offset
        instead of being sent; with such inputs and no ``out``, the
        result is put in the region too when it fits.

        Raises :class:`Error` (a subclass where one fits) when the job
        or the request fails.
        """
        p = plan(a, b, c, alpha, beta, trans_a, trans_b, dtype, out, kernel)
        timeout = self._check_engine([p], timeout)
        if p.refused is None and not self._memories:
            return self._one(p, priority, deadline, timeout)
        return self._run([Run.of(p)], priority, deadline,
                         timeout)[0].raise_for_status()

    def batch(self, jobs: Iterable[Union[Job, dict, tuple]], *,
              priority: Optional[int] = None, deadline: Optional[float] = None,
              timeout: Optional[float] = _UNSET) -> list[Result]:
        """Sends the jobs as one request; returns each one's
        :class:`Result` (result, status, timings). A job may fail while
        the others succeed. Each job is a :class:`Job`, a dict of its
        fields, or a tuple ``(a, b, ...)`` in Job's order. Raises
        :class:`Error` only when the whole request fails."""
        runs = batch_runs(jobs, lambda j: plan(**vars(_as_job(j))))
        timeout = self._check_engine([r.plan for r in runs], timeout)
        return self._run(runs, priority, deadline, timeout)

    def submit(self, a, b, c=None, alpha: float = 1.0, beta: float = 0.0,
               trans_a: bool = False, trans_b: bool = False,
               dtype: DType = None, out: Optional[np.ndarray] = None, *,
               kernel: Optional[str] = None, priority: Optional[int] = None,
               deadline: Optional[float] = None,
               timeout: Optional[float] = _UNSET) -> "Future[np.ndarray]":
        """As :meth:`gemm`, without waiting: returns a Future of its
        result (or its Error). The request is on its way when this
        returns; many may be in flight at once. Callbacks added to the
        Future run on a thread of the library: keep them short. The
        arrays must not be changed until the Future is done."""
        p = plan(a, b, c, alpha, beta, trans_a, trans_b, dtype, out, kernel)
        timeout = self._check_engine([p], timeout)
        fut: Future = Future()
        fut.set_running_or_notify_cancel()
        if p.refused is not None:
            fut.set_exception(p.refused)
            return fut
        call = _Call(self, [Run.of(p)], priority, deadline)
        call.future = fut
        call.arg = ffi.new_handle(call)
        _inflight.add(call)
        rv = self._call(lib.gemmd_submit_async, call.jobs, call.count,
                                    call.opts, self._timeout(timeout),
                                    _done, call.arg)
        if rv != 0:
            _inflight.discard(call)
            raise last_error(rv)
        return fut

    def _check_engine(self, plans: list[Plan], timeout):
        """Marks refused the plans whose dtype the daemon's engine does
        not run, with the error the daemon would give (EUNSUPPORTED), so
        that they are not sent: the engine's dtypes come from its ping
        (PROTOCOL.md 7), asked once per client. Returns what is left of
        the call's timeout: the ping counts against it, and one that
        times out or finds no daemon raises as the call would have.
        Another refusal of the ping, or a daemon that lists no dtypes,
        leaves the daemon to decide."""
        timeout = self.timeout if timeout is _UNSET else timeout
        if self._engine is None:
            start = time.monotonic()
            try:
                self._engine = self.ping(timeout=timeout)
            except (TimeoutError, TransportError):
                raise
            except Error:
                return timeout
            if timeout is not None:
                timeout = max(timeout - (time.monotonic() - start), 0.001)
        dtypes = self._engine.get("dtypes")
        if not isinstance(dtypes, list):
            return timeout
        for p in plans:
            if p.dtype not in dtypes:
                p.refused = Error(
                    codes["EUNSUPPORTED"],
                    f"dtype {p.dtype} is unsupported by the "
                    f"{self._engine.get('engine', 'daemon')} engine")
        return timeout

    def _one(self, p: Plan, priority, deadline, timeout) -> np.ndarray:
        """One job, none of its arrays in a region, waited for: set in
        this thread's own gemmd_job, which the library no longer touches
        once the call has returned, so nothing is allocated for it but
        its result."""
        slot = getattr(_mine, "slot", None)
        if slot is None:
            slot = _mine.slot = (ffi.new("gemmd_job *"),
                                 ffi.new("gemmd_submit_opts *"))
        job, opts = slot
        _options(opts, priority, deadline)
        if p.out is None:
            p.out = np.empty((p.m, p.n), STORAGE[p.dtype], p.order)
        _Call._fill_one(job, p)
        rv = self._call(lib.gemmd_submit, job, 1, opts,
                        self._timeout(timeout))
        if rv != 0:
            raise last_error(rv)
        if job.status != 0:
            raise error(job.status, text(job.message))
        return finish(p)

    def _run(self, runs: list[Run], priority, deadline, timeout):
        call = _Call(self, runs, priority, deadline)
        if call.sent:
            rv = self._call(lib.gemmd_submit, call.jobs, call.count,
                                  call.opts, self._timeout(timeout))
            if rv != 0:
                raise last_error(rv)
        return call.results()

    # ---- detached jobs ----

    def submit_detached(self, a, b, c=None, alpha: float = 1.0,
                        beta: float = 0.0, trans_a: bool = False,
                        trans_b: bool = False, dtype: DType = None, *,
                        kernel: Optional[str] = None,
                        priority: Optional[int] = None,
                        deadline: Optional[float] = None,
                        timeout: Optional[float] = _UNSET) -> int:
        """Queues the job detached and returns its id at once; the daemon
        keeps its result for :meth:`wait`, from any connection or process
        of the same user (or TLS certificate), for its ``detach_keep_s``;
        to anyone else the id is unknown."""
        p = plan(a, b, c, alpha, beta, trans_a, trans_b, dtype, None, kernel)
        timeout = self._check_engine([p], timeout)
        if p.refused is not None:
            raise p.refused
        call = _Call(self, [Run.of(p)], priority, deadline, result=False)
        ids = ffi.new("uint64_t[1]")
        rv = self._call(lib.gemmd_submit_detached, call.jobs, 1, call.opts,
                                       ids, self._timeout(timeout))
        if rv != 0:
            raise last_error(rv)
        return int(ids[0])

    def status(self, job_id: int, *,
               timeout: Optional[float] = _UNSET) -> JobInfo:
        """The state of detached job ``job_id``; Error ENOTFOUND when the
        daemon does not know it (never, or no longer)."""
        info = ffi.new("gemmd_job_info *")
        rv = self._call(lib.gemmd_job_status, job_id, info,
                                  self._timeout(timeout))
        if rv != 0:
            raise last_error(rv)
        return JobInfo(
            id=int(info.id), state=text(lib.gemmd_job_state_name(info.state)),
            code=info.status, message=text(info.message),
            has_result=bool(info.has_result), priority=info.priority,
            dtype=_DTYPE_NAMES.get(info.dtype, "?"),
            layout="col" if info.layout else "row",
            m=info.m, n=info.n, k=info.k, timings=Timings._of(info.t))

    def wait(self, job_id: int, *,
             timeout: Optional[float] = _UNSET) -> np.ndarray:
        """Waits for detached job ``job_id`` and takes its result (the
        daemon then no longer holds it). ``timeout`` 0 asks once.
        Raises TimeoutError when it has not finished in time (wait
        again), Error when it failed, was canceled, or its result expired
        or was taken."""
        job = ffi.new("gemmd_job *")
        rv = self._call(lib.gemmd_wait, job_id, job,
                            self._timeout(timeout, zero_ok=True))
        try:
            if rv != 0:
                raise error(rv, text(job.message) or
                            text(lib.gemmd_last_error()))
            if job.status != 0:
                raise error(job.status, text(job.message))
            dtype = STORAGE[_DTYPE_NAMES[job.dtype]]
            size = job.m * job.n * dtype.itemsize
            flat = np.frombuffer(ffi.buffer(job.out, size), dtype=dtype)
            return flat.reshape((job.m, job.n),
                                order="F" if job.layout else "C").copy(
                                    order="K")
        finally:
            libc.free(job.out)

    def cancel(self, job_id: int, *,
               timeout: Optional[float] = _UNSET) -> str:
        """Cancels detached job ``job_id``; returns its state after:
        "canceled", or "running" for one that runs to its end (its result
        is dropped)."""
        state = ffi.new("int *")
        rv = self._call(lib.gemmd_cancel, job_id, state,
                              self._timeout(timeout))
        if rv != 0:
            raise last_error(rv)
        return text(lib.gemmd_job_state_name(state[0]))

    # ---- the daemon ----

    def ctrl(self, request: dict, *,
             timeout: Optional[float] = _UNSET) -> dict:
        """Sends a control request (``{"op": ...}``) and returns the
        daemon's reply document; Error with the daemon's code when it
        refuses."""
        reply = ffi.new("char **")
        rv = self._call(lib.gemmd_ctrl, json.dumps(request).encode(), reply,
                            self._timeout(timeout))
        if rv != 0:
            raise last_error(rv)
        try:
            return json.loads(text(reply[0]))
        finally:
            libc.free(reply[0])

    def ping(self, *, timeout: Optional[float] = _UNSET) -> dict:
        """The daemon's answer to a ping: its version, engine, uptime."""
        return self.ctrl({"op": "ping"}, timeout=timeout)

    def jobs(self, *, timeout: Optional[float] = _UNSET) -> list[dict]:
        """The jobs of this client's user (or certificate) the daemon
        holds: queued and running ones, and detached ones in any state,
        each a dict (PROTOCOL.md 7.4: "detached", "job" or "request" and
        "index", "state", "owner", "dtype", "m", "n", "k", ...); an
        admin's list is everyone's."""
        return self.ctrl({"op": "jobs"}, timeout=timeout)["jobs"]

    def stats(self, *, timeout: Optional[float] = _UNSET) -> dict:
        """The daemon's statistics (README.md, "Stats", lists the keys)."""
        return self.ctrl({"op": "stats"}, timeout=timeout)["stats"]

    def drain(self, *, timeout: Optional[float] = _UNSET) -> None:
        """New jobs are refused (BusyError, EDRAINING) while queued ones
        finish; :meth:`resume` undoes it."""
        rv = self._call(lib.gemmd_drain, self._timeout(timeout))
        if rv != 0:
            raise last_error(rv)

    def resume(self, *, timeout: Optional[float] = _UNSET) -> None:
        """Accept jobs again after :meth:`drain`."""
        rv = self._call(lib.gemmd_resume, self._timeout(timeout))
        if rv != 0:
            raise last_error(rv)

    # ---- regions ----

    def region(self, nbytes: int,
               timeout: Optional[float] = _UNSET) -> Region:
        """A shared-memory region of nbytes (``ipc://`` only): arrays
        made in it are read and written by the daemon in place. The daemon
        must have made it within ``timeout`` (TimeoutError; the regions
        made before stay usable)."""
        ms = self._timeout(timeout)
        with self._use():
            r = Region(self._handle, nbytes, ms)
        with self._memories_lock:
            self._memories.add(r._memory)
        return r

    def _memory_list(self) -> list:
        """The memories of this client's regions, which may be closed but
        still hold arrays."""
        if not self._memories:
            return []
        with self._memories_lock:
            return list(self._memories)


_inflight: set = set()
#: Each thread's gemmd_job and options for Client._one.
_mine = threading.local()


def _options(opts, priority, deadline):
    """opts (a gemmd_submit_opts *) set from a call's arguments."""
    opts.priority = PRIORITY_DEFAULT if priority is None else priority
    opts.deadline_ms = 0 if deadline is None else \
        max(1, math.ceil(deadline * 1000))
    return opts


class _Call:
    """One request's jobs as the library sees them, with everything they
    point to kept alive until it is answered: one job table (_table.JOB),
    over which ``jobs`` is the gemmd_job[], filled a run (_plan.Run) at a
    time: the fields a run's jobs share from one tuple, the operands'
    addresses a column at a time."""

    def __init__(self, client: Client, runs: list[Run], priority, deadline,
                 result: bool = True):
        self.client = client
        self.runs = runs
        self.future: Optional[Future] = None
        self.sent = sent = [r for r in runs if r.plan.refused is None]
        self.total = sum(len(r.at) for r in runs)  # refused ones too
        self.count = sum(len(r.at) for r in sent)
        self.table, self.jobs = table(self.count)
        self.opts = _options(ffi.new("gemmd_submit_opts *"), priority,
                             deadline)
        # Regions are looked for only where this client has any.
        self.memories = client._memory_list()
        self.rows = self._rows()
        # Each run's results, and their addresses where a block gives them.
        self.outs, self.out_at = self._results(sent) if result else \
            ([[None] * len(r.at) for r in sent], [None] * len(sent))
        if sent:
            self._fill(sent)

    def _rows(self) -> list:
        """Each sent run's rows of the table: the jobs keep their order
        in the request, less those refused before sending."""
        if len(self.sent) == len(self.runs):
            return [r.at for r in self.sent]
        kept = np.zeros(self.total, bool)
        for r in self.sent:
            kept[r.at] = True
        row = np.cumsum(kept) - 1
        return [row[r.at] for r in self.sent]

    def _results(self, sent: list[Run]) -> tuple[list, list]:
        """Each sent run's result arrays, and their addresses when they
        are views of a block (else None): the caller's ``out``; else in
        the region of an input when there is room, so that the result
        does not cross the socket either; else on the heap, one block for
        all the results of a shape, dtype and order (each result a view
        of it, which keeps it alive): a batch's results are allocated
        once, not job by job."""
        outs: list = [None] * len(sent)
        out_at: list = [None] * len(sent)
        groups: dict = {}
        for i, r in enumerate(sent):
            p = r.plan
            if p.out is not None:
                outs[i] = [p.out]
            elif self.memories:
                outs[i] = [self._in_region(p, ins)
                           for ins in zip(r.a, r.b, [p.c] * len(r.at))]
            else:
                groups.setdefault((p.m, p.n, p.dtype, p.layout), []).append(i)
        for (m, n, name, layout), like in groups.items():
            count = sum(len(sent[i].at) for i in like)
            shape = (count, n, m) if layout == COL_MAJOR else (count, m, n)
            block = np.empty(shape, STORAGE[name])
            at = address(block) + block.strides[0] * np.arange(
                count, dtype=np.uint64)
            views = list(block.transpose(0, 2, 1) if layout == COL_MAJOR
                         else block)
            start = 0
            for i in like:
                end = start + len(sent[i].at)
                outs[i], out_at[i] = views[start:end], at[start:end]
                start = end
        for r, o in zip(sent, outs):
            if len(o) == 1:  # the plan's result, as finish() reads it
                r.plan.out = o[0]
        return outs, out_at

    def _in_region(self, p: Plan, inputs) -> np.ndarray:
        """A result of p's shape in the region of one of its inputs, when
        there is room; else on the heap."""
        shape, dtype = (p.m, p.n), STORAGE[p.dtype]
        for x in inputs:
            ref = self._ref(x) if x is not None else None
            region = ref[0].region() if ref else None
            if region is not None and not region.closed:
                try:
                    return region.empty(shape, dtype, p.order)
                except Error:
                    break
        return np.empty(shape, dtype=dtype, order=p.order)

    def _ref(self, x: np.ndarray):
        """(region memory, offset) of x when it lies in one of the
        client's regions (as they were when the call began)."""
        for mem in self.memories:
            at = mem.offset_of(x)
            if at is not None:
                return mem, at
        return None

    def _fill(self, sent: list[Run]) -> None:
        """The job table: the fields each run shares, then the operands,
        by address, or by region and offset where they lie in one of the
        client's regions."""
        if self.count == 1 and not self.memories:  # cheaper through cffi
            self._fill_one(self.jobs[0], sent[0].plan)
            return
        which = np.empty(self.count, np.intp)
        for i, rows in enumerate(self.rows):
            which[rows] = i
        shared = [(DTYPES[p.dtype], p.layout, p.kernel, p.trans_a, p.trans_b,
                   p.m, p.n, p.k, p.alpha, p.beta)
                  for p in (r.plan for r in sent)]
        if self.memories:
            fill_runs(self.table, shared, which, {})
            for r, rows, outs in zip(sent, self.rows, self.outs):
                for row, a, b, out in zip(rows, r.a, r.b, outs):
                    self._fill_refs(self.table[row:row + 1],
                                    {"a": a, "b": b, "c": r.plan.c,
                                     "out": out})
            return
        columns = {name: np.zeros(self.count, np.uint64)
                   for name in ("a", "b", "c", "out")}
        for i, (r, rows, outs) in enumerate(zip(sent, self.rows, self.outs)):
            order = r.plan.order
            columns["a"][rows] = addresses(r.a, order)
            columns["b"][rows] = addresses(r.b, order)
            columns["out"][rows] = addresses(outs, order) \
                if self.out_at[i] is None else self.out_at[i]
            if r.plan.c is not None:
                columns["c"][rows] = address(r.plan.c)
        fill_runs(self.table, shared, which, columns)

    @staticmethod
    def _fill_one(j, p: Plan) -> None:
        """One job's fields set in the struct itself, operands by
        address."""
        j.dtype, j.layout, j.kernel = DTYPES[p.dtype], p.layout, p.kernel
        j.trans_a, j.trans_b = p.trans_a, p.trans_b
        j.m, j.n, j.k, j.alpha, j.beta = p.m, p.n, p.k, p.alpha, p.beta
        j.a, j.b, j.c, j.out = (pointer(p.a), pointer(p.b), pointer(p.c),
                                pointer(p.out))

    def _fill_refs(self, row, operands: dict) -> None:
        """One job's operands: by offset where they lie in a region,
        else by address."""
        refs = {}
        for name, x in operands.items():
            if x is None:
                continue
            ref = self._ref(x)
            if ref and name == "out" and not self._may_write(ref, x, refs):
                ref = None
            if ref:
                refs[name] = (ref, x.nbytes)
                row[name + "_region"] = int(ffi.cast("uintptr_t", ref[0].ptr))
                row[name + "_offset"] = ref[1]
            else:
                row[name] = address(x)

    @staticmethod
    def _may_write(ref, x: np.ndarray, refs: dict) -> bool:
        """Whether the daemon may write the result at ref: it must be
        exactly C's place or overlap no input in a region (else the result
        comes back through the socket)."""
        for name, ((region, at), nbytes) in refs.items():
            if region is not ref[0]:
                continue
            if name == "c" and at == ref[1]:
                continue
            if at < ref[1] + x.nbytes and ref[1] < at + nbytes:
                return False
        return True

    def results(self) -> list[Result]:
        """Each job's Result, in the request's order."""
        t = self.table[:self.count]
        status, messages = t["status"].tolist(), t["message"].tolist()
        out: list = [None] * self.total
        for r in self.runs:
            if r.plan.refused is not None:
                for i in r.at:
                    out[i] = Result(None, r.plan.refused.code,
                                    r.plan.refused.message)
        for r, rows, outs in zip(self.sent, self.rows, self.outs):
            if len(outs) == 1:
                outs = [finish(r.plan)]
            for i, row, x in zip(r.at, rows, outs):
                code = status[row]
                out[i] = Result._of_row(x if code == 0 else None, code,
                                        messages[row], t, row)
        return out

    def complete(self, rv: int) -> None:
        """The completion of gemmd_submit_async: the Future's outcome."""
        _inflight.discard(self)
        try:
            if rv != 0:
                raise error(rv, text(self.jobs[0].message))
            self.future.set_result(self.results()[0].raise_for_status())
        except Exception as e:  # the Future carries it to the caller
            self.future.set_exception(e)


@ffi.callback("void(void *, int)")
def _done(arg, rv):
    with in_callback():
        ffi.from_handle(arg).complete(rv)
