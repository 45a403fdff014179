#!/usr/bin/env python3
"""gemmd_py_bench - the Python client against the C library on the same
path, and against the memcpy bound, measured in the same run.

    PYTHONPATH=python GEMMD_LIBRARY=build/client/libgemmd.so.0 \\
        python3 bench/gemmd_py_bench.py [--gemmd PATH | --url URL]
        [--jobloop PATH] [--engine NAME] [--reps N] [--batch J]
        [--batch-reps N] [--sizes 1024,2048] [--dtypes fp32,fp64]
        [--big-reps N] [--rounds N]

Without --url it starts a gemmd (--gemmd, default build/daemon/gemmd;
--engine, default auto: the CUDA engine where there is one) on an
ipc:// socket in a temporary directory. The C side is gemmd_jobloop
(bench/gemmd_jobloop.c, built beside it): the same requests, with plain
pointers over the same socket, timed one by one. Python and C take
turns (--rounds) so that both see the same load on the host. Cases:

  single   one 64^3 fp32 job per request: p50 and p99 per call,
           Python ``c.gemm(a, b)`` against C; "+us" is Python's extra
  batch    one request of J 64^3 fp32 jobs: us per job, ``c.batch`` of
           (a, b) tuples against C
  big      one N^2 job (fp32 and fp64) through the socket (staged over
           ipc://): Python against C, and both against the bound, one
           thread's memcpy of the same bytes (A and B in, the result out)
           measured here, and the same on as many threads as libgemmd
           copies on ("copies": a staged job's bytes cross the host's
           memory once more, at best at that rate); "x" is bound time /
           time (1.0: the bound's rate).
           On the CUDA engine, where PyTorch sees the GPU, also "pcie":
           the slowest of A and B in, the kernel and C out, each alone
           from pinned memory, and "torch": in-process PyTorch doing the
           three one after another (the peer a user would otherwise run),
           and "py/bd": Python's time over the larger of copies and pcie

Every Python result is checked against NumPy in float64 with a tolerance
scaled to the dtype and K.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def options():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", help="a running gemmd's ipc:// or tcp:// URL")
    p.add_argument("--gemmd", default=os.path.join(ROOT, "build", "daemon",
                                                   "gemmd"))
    p.add_argument("--jobloop", default=os.path.join(ROOT, "build", "bench",
                                                     "gemmd_jobloop"))
    p.add_argument("--engine", default="auto")
    p.add_argument("--reps", type=int, default=2000)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--batch-reps", type=int, default=20)
    p.add_argument("--sizes", default="1024,2048")
    p.add_argument("--dtypes", default="fp32,fp64")
    p.add_argument("--big-reps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5,
                   help="Python and C alternate this many times")
    return p.parse_args()


def start(o, tmp):
    """A gemmd on an ipc:// socket in tmp, once its engine is ready."""
    import gemmd

    url = f"ipc://{tmp}/gemmd.sock"
    log = open(os.path.join(tmp, "gemmd.log"), "w+")
    proc = subprocess.Popen([o.gemmd, "--engine", o.engine, "--listen", url],
                            stderr=log)
    deadline = time.monotonic() + 60
    while True:
        try:
            with gemmd.Client(url, timeout=1) as c:
                if c.ping().get("ready", True):
                    return proc, url
        except gemmd.Error:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            sys.exit("gemmd did not start:\n" + log.read())
        time.sleep(0.05)


def check(got, a, b, dtype):
    want = a.astype(np.float64) @ b.astype(np.float64)
    eps = np.finfo(dtype).eps
    tol = 4 * eps * np.sqrt(a.shape[1]) * max(1.0, float(np.abs(want).max()))
    err = float(np.abs(got.astype(np.float64) - want).max())
    if not err <= tol:
        sys.exit(f"wrong result: max error {err:.3g} over {tol:.3g}")


def jobloop(o, url, **kw):
    """gemmd_jobloop's per-request times in us: (p50, p99, mean)."""
    args = [o.jobloop, "--url", url]
    for k, v in kw.items():
        args += [f"--{k}"] if v is True else [f"--{k}", str(v)]
    out = subprocess.run(args, capture_output=True, text=True)
    lines = out.stdout.split("\n")
    if out.returncode != 0 or len(lines) < 2 or lines[1] != "ok":
        sys.exit(f"{' '.join(args)}: {out.stderr.strip()}")
    return tuple(float(x) for x in lines[0].split())


def timed(fn, reps, layer=None):
    """fn()'s times in us, after one call untimed; with a Client as
    layer, what of each went outside the library's calls into layer."""
    fn()
    us = np.empty(reps)
    for i in range(reps):
        if layer is not None:
            layer.inside = 0
        t0 = time.perf_counter_ns()
        fn()
        us[i] = (time.perf_counter_ns() - t0) / 1e3
        if layer is not None:
            us[i] -= layer.inside / 1e3
    return us


def layer_us(fn, reps, c):
    """p50 in us of the Python layer's own time in fn(): its time less
    that spent in libgemmd (Client._call), which load on the host and
    the daemon's work do not inflate as they do the end-to-end time."""
    return float(np.median(timed(fn, reps, c)))


def side_by_side(o, fn, reps, url, **kw):
    """(p50, p99) of fn() and of gemmd_jobloop's same request, in us,
    taken in o.rounds alternating rounds so that both see the same load
    on the host: each the median over the rounds of the round's own."""
    py, cc = [], []
    each = max(reps // o.rounds, 1)
    for _ in range(o.rounds):
        us = np.sort(timed(fn, each))
        py.append((us[each // 2], us[int(each * 0.99)]))
        cc.append(jobloop(o, url, reps=each, **kw)[:2])
    return tuple(np.median(py, axis=0)), tuple(np.median(cc, axis=0))


def single(o, c, url, rng):
    a = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    b = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    check(c.gemm(a, b), a, b, np.float32)
    py, cc = side_by_side(o, lambda: c.gemm(a, b), o.reps, url, size=64,
                          jobs=1)
    print(f"single 64^3 fp32, {o.reps} calls (us per call)")
    print(f"  {'':8}{'p50':>9}{'p99':>9}")
    print(f"  {'python':8}{py[0]:9.1f}{py[1]:9.1f}")
    print(f"  {'C':8}{cc[0]:9.1f}{cc[1]:9.1f}")
    print(f"  {'+us':8}{py[0] - cc[0]:9.1f}{py[1] - cc[1]:9.1f}")
    print(f"  python layer alone (outside libgemmd): "
          f"{layer_us(lambda: c.gemm(a, b), o.reps, c):.1f} us per call")


def batch(o, c, url, rng):
    n = o.batch
    a = rng.uniform(-1, 1, (n, 64, 64)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, 64, 64)).astype(np.float32)
    jobs = [(a[i], b[i]) for i in range(n)]
    res = c.batch(jobs)
    for i in (0, n // 2, n - 1):
        check(res[i].raise_for_status(), a[i], b[i], np.float32)
    py, cc = side_by_side(o, lambda: c.batch(jobs), o.batch_reps, url,
                          size=64, jobs=n)
    print(f"batch of {n} 64^3 fp32, {o.batch_reps} requests (us per job, "
          "p50)")
    print(f"  python {py[0] / n:7.2f}   C {cc[0] / n:7.2f}   "
          f"+us {(py[0] - cc[0]) / n:6.2f}   python layer alone "
          f"{layer_us(lambda: c.batch(jobs), o.batch_reps, c) / n:.2f}")


def memcpy_us(nbytes, reps, threads=1):
    """memcpy of nbytes (NumPy's copyto, which lets go of the GIL) on
    threads at once, each a slice, best of reps."""
    from concurrent.futures import ThreadPoolExecutor

    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    cuts = np.linspace(0, nbytes, threads + 1, dtype=np.int64)
    parts = [(dst[x:y], src[x:y]) for x, y in zip(cuts, cuts[1:])]
    best = float("inf")
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(reps + 1):
            t0 = time.perf_counter_ns()
            list(pool.map(lambda p: np.copyto(*p), parts))
            best = min(best, (time.perf_counter_ns() - t0) / 1e3)
    return best


def copy_threads():
    """How many threads libgemmd copies staged operands on
    (client/gmc_stage.c, gmc_stage_threads: the cores online, 2 to 16)."""
    return min(max(os.cpu_count() or 1, 2), 16)


def cuda_torch():
    """PyTorch with a CUDA device, or None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def gpu_peer(torch, a, b, reps):
    """For a @ b on the GPU from pinned host memory, in ms, best of
    reps: the bound (the slowest of A and B in, the kernel, C out, each
    alone) and in-process PyTorch doing all three one after another."""
    ta, tb = torch.from_numpy(a).pin_memory(), torch.from_numpy(b).pin_memory()
    out = torch.empty((a.shape[0], b.shape[1]), dtype=ta.dtype).pin_memory()
    da, db = ta.to("cuda"), tb.to("cuda")
    dc = torch.empty(out.shape, dtype=ta.dtype, device="cuda")

    def best(*steps):
        t = float("inf")
        for _ in range(reps + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for step in steps:
                step()
            torch.cuda.synchronize()
            t = min(t, (time.perf_counter_ns() - t0) / 1e6)
        return t

    def h2d():
        da.copy_(ta, non_blocking=True)
        db.copy_(tb, non_blocking=True)

    def kernel():
        torch.matmul(da, db, out=dc)

    def d2h():
        out.copy_(dc, non_blocking=True)

    bound = max(best(h2d), best(kernel), best(d2h))
    return bound, best(h2d, kernel, d2h)


def big(o, c, url, rng):
    torch = cuda_torch() if c.ping().get("engine") == "cuda" else None
    threads = copy_threads()
    print(f"big jobs through the socket, p50 of {o.big_reps} (ms; "
          "x = bound / time)")
    print(f"  memcpy: one thread; copies: {threads} threads, as the library"
          " copies" + ("; bound: the larger of copies and pcie" if torch
                       else ""))
    print(f"  {'case':14}{'python':>9}{'C':>9}{'memcpy':>9}{'x py':>7}"
          f"{'copies':>9}{'x py':>7}{'x C':>7}{'py/C':>7}"
          + (f"{'pcie':>9}{'x py':>7}{'torch':>9}{'py/t':>7}{'py/bd':>7}"
             if torch else ""))
    for size in (int(s) for s in o.sizes.split(",")):
        for dt, name in ((np.float32, "fp32"), (np.float64, "fp64")):
            if name not in o.dtypes.split(","):
                continue
            a = rng.uniform(-1, 1, (size, size)).astype(dt)
            b = rng.uniform(-1, 1, (size, size)).astype(dt)
            check(c.gemm(a, b), a, b, dt)
            py, cc = side_by_side(o, lambda: c.gemm(a, b), o.big_reps,
                                  url, size=size, dtype=name)
            py, cc = py[0] / 1e3, cc[0] / 1e3
            one = memcpy_us(3 * a.nbytes, o.big_reps) / 1e3
            copies = memcpy_us(3 * a.nbytes, o.big_reps, threads) / 1e3
            line = (f"  {f'{size}^2 {name}':14}{py:9.2f}{cc:9.2f}"
                    f"{one:9.2f}{one / py:7.3f}{copies:9.2f}"
                    f"{copies / py:7.3f}{copies / cc:7.3f}{py / cc:7.3f}")
            if torch is not None:
                pcie, peer = gpu_peer(torch, a, b, o.big_reps)
                line += (f"{pcie:9.2f}{pcie / py:7.3f}{peer:9.2f}"
                         f"{py / peer:7.3f}{py / max(pcie, copies):7.3f}")
            print(line)


def main():
    o = options()
    import gemmd

    class Client(gemmd.Client):
        """A client that adds up the ns its calls spend in libgemmd."""

        inside = 0

        def _call(self, fn, *args):
            t0 = time.perf_counter_ns()
            try:
                return super()._call(fn, *args)
            finally:
                self.inside += time.perf_counter_ns() - t0

    tmp = tempfile.mkdtemp(prefix="gemmd-pybench.")
    proc = None
    try:
        url = o.url
        if url is None:
            proc, url = start(o, tmp)
        rng = np.random.default_rng()
        with Client(url) as c:
            print(f"gemmd {c.ping().get('version')}, engine "
                  f"{c.ping().get('engine')}, {url}")
            single(o, c, url, rng)
            batch(o, c, url, rng)
            big(o, c, url, rng)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
