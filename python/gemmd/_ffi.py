"""The C API of libgemmd.so.0 as cffi sees it (ABI mode: no compiler).

The declarations below restate gemmd.h's types and functions; cffi in
ABI mode lays the structs out from them, so they must match the header
field for field. The test suite compares every offset with the C
compiler's (tests/test_abi.py), so a change to gemmd.h that is not made
here too fails there rather than corrupting memory.
"""

from __future__ import annotations

import os
import subprocess

import cffi

#: Major version of the C library this package speaks to (its soname).
ABI_MAJOR = 0

CDEF = """
typedef struct gemmd_client gemmd_client;
typedef struct gemmd_region gemmd_region;

typedef struct gemmd_region_ref {
    gemmd_region *region;
    uint64_t offset;
} gemmd_region_ref;

typedef struct gemmd_timings {
    double queue_us;
    double h2d_us;
    double kernel_us;
    double d2h_us;
    double total_us;
    uint64_t start_seq;
} gemmd_timings;

typedef struct gemmd_job {
    int dtype;
    int layout;
    int kernel;
    int trans_a;
    int trans_b;
    uint32_t m, n, k;
    double alpha;
    double beta;
    const void *a;
    const void *b;
    const void *c;
    void *out;
    gemmd_region_ref a_ref, b_ref, c_ref, out_ref;
    int status;
    char message[97];
    gemmd_timings t;
} gemmd_job;

typedef struct gemmd_submit_opts {
    int priority;
    uint32_t deadline_ms;
} gemmd_submit_opts;

typedef struct gemmd_open_opts {
    unsigned flags;
    const char *tls_ca_file;
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *tls_server_name;
    const char *region_socket;
    unsigned connections;
    uint64_t staging_bytes;
} gemmd_open_opts;

typedef void (*gemmd_done_fn)(void *arg, int rv);

typedef struct gemmd_job_info {
    uint64_t id;
    int state;
    int status;
    char message[97];
    int has_result;
    int priority;
    int dtype, layout;
    uint32_t m, n, k;
    gemmd_timings t;
} gemmd_job_info;

int gemmd_open(const char *url, const gemmd_open_opts *opts,
               gemmd_client **out);
int gemmd_open_timeout(const char *url, const gemmd_open_opts *opts,
                       gemmd_client **out, int timeout_ms);
int gemmd_dial(gemmd_client *c, const char *url, const gemmd_open_opts *opts);
void gemmd_close(gemmd_client *c);
int gemmd_submit(gemmd_client *c, gemmd_job *jobs, uint32_t n,
                 const gemmd_submit_opts *opts, int timeout_ms);
int gemmd_submit_async(gemmd_client *c, gemmd_job *jobs, uint32_t n,
                       const gemmd_submit_opts *opts, int timeout_ms,
                       gemmd_done_fn done, void *arg);
int gemmd_ctrl(gemmd_client *c, const char *request, char **reply,
               int timeout_ms);
int gemmd_submit_detached(gemmd_client *c, gemmd_job *jobs, uint32_t n,
                          const gemmd_submit_opts *opts, uint64_t *ids,
                          int timeout_ms);
int gemmd_job_status(gemmd_client *c, uint64_t id, gemmd_job_info *info,
                     int timeout_ms);
int gemmd_wait(gemmd_client *c, uint64_t id, gemmd_job *job, int timeout_ms);
int gemmd_cancel(gemmd_client *c, uint64_t id, int *state, int timeout_ms);
const char *gemmd_job_state_name(int state);
int gemmd_drain(gemmd_client *c, int timeout_ms);
int gemmd_resume(gemmd_client *c, int timeout_ms);
int gemmd_region_create(gemmd_client *c, uint64_t bytes, gemmd_region **out);
int gemmd_region_create_timeout(gemmd_client *c, uint64_t bytes,
                                gemmd_region **out, int timeout_ms);
void *gemmd_region_ptr(const gemmd_region *r);
uint64_t gemmd_region_size(const gemmd_region *r);
uint64_t gemmd_region_id(const gemmd_region *r);
int gemmd_region_release(gemmd_region *r);
int gemmd_region_alloc(gemmd_region *r, uint64_t bytes, uint64_t align,
                       uint64_t *offset);
int gemmd_region_free(gemmd_region *r, uint64_t offset);
const char *gemmd_strerror(int code);
const char *gemmd_errname(int code);
const char *gemmd_last_error(void);
const char *gemmd_version(void);
"""

# Constants of gemmd.h that cffi in ABI mode does not read from it.
FOREVER = -1
OPEN_LAZY = 0x1
OPEN_NO_SHM = 0x2
PRIORITY_DEFAULT = 1
PRIORITY_MAX = 3
MAX_DIM = 1 << 20  # GEMMD_MAX_DIM: each of m, n, k
ROW_MAJOR, COL_MAJOR = 0, 1
DTYPES = {"fp64": 1, "fp32": 2, "tf32": 3, "fp16": 4, "bf16": 5}
KERNELS = {"default": 0, "cublas": 1, "tiled": 2}

ffi = cffi.FFI()
ffi.cdef(CDEF)
ffi.cdef("void free(void *);")


def _candidates() -> list[str]:
    """Where libgemmd.so.0 may be, most specific first: $GEMMD_LIBRARY,
    the libdir `meson install` put beside this package, the dynamic
    linker's own search, and pkg-config's libdir for gemmd."""
    soname = f"libgemmd.so.{ABI_MAJOR}"
    found = []
    if os.environ.get("GEMMD_LIBRARY"):
        found.append(os.environ["GEMMD_LIBRARY"])
    try:
        from . import _paths  # written by `meson install`

        found.append(os.path.join(_paths.LIBDIR, soname))
    except ImportError:
        pass
    found.append(soname)
    try:
        libdir = subprocess.run(
            ["pkg-config", "--variable=libdir", "gemmd"],
            capture_output=True, text=True, check=True).stdout.strip()
        if libdir:
            found.append(os.path.join(libdir, soname))
    except (OSError, subprocess.CalledProcessError):
        pass
    return found


def _load():
    errors = []
    for path in _candidates():
        try:
            return ffi.dlopen(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError(
        "gemmd: cannot load the client library libgemmd.so."
        f"{ABI_MAJOR} (install gemmd, or set GEMMD_LIBRARY to its "
        "path):\n  " + "\n  ".join(errors))


lib = _load()
libc = ffi.dlopen(None)

_major = int(ffi.string(lib.gemmd_version()).decode().split(".")[0])
if _major != ABI_MAJOR:
    raise ImportError(
        f"gemmd: libgemmd {ffi.string(lib.gemmd_version()).decode()} "
        f"has another ABI than this package's ({ABI_MAJOR})")


def text(p) -> str:
    """A C string (char * or char[]) as str; '' for NULL."""
    return "" if p == ffi.NULL else ffi.string(p).decode("utf-8", "replace")
