"""gemmd: GEMM on a gemmd daemon's GPUs (or CPUs), from NumPy.

    import numpy as np, gemmd

    with gemmd.Client() as c:           # $GEMMD_URL, else the system socket
        a = np.random.rand(512, 256)
        b = np.random.rand(256, 384)
        out = c.gemm(a, b)              # a @ b, computed by the daemon

The package wraps the C client library, libgemmd.so.0 (cffi, ABI mode:
nothing is compiled at install). See :class:`Client` for the calls.
"""

from ._client import Client, Job, JobInfo, Result, Timings
from ._errors import (BusyError, Error, TimeoutError, TransportError, codes,
                      errname, strerror)
from ._ffi import ffi as _ffi
from ._ffi import lib as _lib
from ._region import Region
from ._types import from_bf16, to_bf16

__version__ = "0.1.0"


def library_version() -> str:
    """The version of the libgemmd.so loaded, "MAJOR.MINOR.PATCH"."""
    return _ffi.string(_lib.gemmd_version()).decode()


__all__ = [
    "Client", "Job", "JobInfo", "Result", "Timings", "Region",
    "Error", "BusyError", "TimeoutError", "TransportError",
    "codes", "errname", "strerror", "to_bf16", "from_bf16",
    "library_version", "__version__",
]
