"""Client.gemm against numpy: every order and transpose of A and B, both
float dtypes, C with alpha and beta, out in either order, the dtype
argument, and what is refused before it is sent: int64 and empty
arrays as gemmctl refuses them, dtypes the engine does not run."""

import itertools

import numpy as np
import pytest

import gemmd
from conftest import check, rand

M, N, K = 37, 23, 19


def layouts(rng, rows, cols, dtype):
    """The same matrix as C order, Fortran order and a strided view."""
    base = rand(rng, (rows, cols), dtype)
    wide = rand(rng, (rows, 2 * cols), dtype)
    wide[:, ::2] = base
    return {"C": base, "F": np.asfortranarray(base), "view": wide[:, ::2]}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("trans_a,trans_b",
                         list(itertools.product([False, True], repeat=2)))
def test_orders_and_transposes(client, rng, dtype, trans_a, trans_b):
    a_all = layouts(rng, *((K, M) if trans_a else (M, K)), dtype)
    b_all = layouts(rng, *((N, K) if trans_b else (K, N)), dtype)
    for (na, a), (nb, b) in itertools.product(a_all.items(), b_all.items()):
        want = (a.T if trans_a else a).astype(np.float64) @ \
            (b.T if trans_b else b).astype(np.float64)
        got = client.gemm(a, b, trans_a=trans_a, trans_b=trans_b)
        assert got.dtype == dtype, (na, nb)
        check(got, want, dtype, K)
        # The result follows A's order when there is neither out nor C.
        assert got.flags.f_contiguous == (na == "F"), (na, nb)


def test_alpha_beta_c(client, rng):
    a, b = rand(rng, (M, K)), rand(rng, (K, N))
    for order in "CF":
        c = rand(rng, (M, N), order=order)
        got = client.gemm(a, b, c, alpha=1.5, beta=-0.5)
        check(got, 1.5 * a @ b - 0.5 * c, k=K)
        assert got.flags[order + "_CONTIGUOUS"], "result in C's order"
    c = rand(rng, (M, N))
    want = a @ b + 2 * c
    assert client.gemm(a, b, c, beta=2.0, out=c) is c  # in place
    check(c, want, k=K)
    with pytest.raises(ValueError, match="beta is not 0 but there is no C"):
        client.gemm(a, b, beta=1.0)


def test_out(client, rng):
    a, b = rand(rng, (M, K)), rand(rng, (K, N))
    for order in "CF":
        out = np.empty((M, N), order=order)
        assert client.gemm(a, b, out=out) is out
        check(out, a @ b, k=K)
    holder = np.zeros((M, 2 * N))
    out = holder[:, ::2]  # not contiguous: written through a copy
    assert client.gemm(a, b, out=out) is out
    check(holder[:, ::2], a @ b, k=K)
    assert not holder[:, 1::2].any()
    with pytest.raises(TypeError, match="out is float32"):
        client.gemm(a, b, out=np.empty((M, N), np.float32))
    with pytest.raises(ValueError, match="out is 2x2"):
        client.gemm(a, b, out=np.empty((2, 2)))
    ro = np.empty((M, N))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        client.gemm(a, b, out=ro)


def test_dtype_argument(client, rng):
    a32, b32 = rand(rng, (M, K), np.float32), rand(rng, (K, N), np.float32)
    got = client.gemm(a32, b32, dtype="fp64")
    assert got.dtype == np.float64
    check(got, a32.astype(np.float64) @ b32, np.float64, K)
    got = client.gemm(a32.astype(np.float64), b32, dtype=np.float32)
    assert got.dtype == np.float32
    # Mixed inputs compute in the type numpy would use.
    assert client.gemm(a32, b32.astype(np.float64)).dtype == np.float64
    with pytest.raises(TypeError, match="want one of"):
        client.gemm(a32, b32, dtype="fp8")
    with pytest.raises(TypeError, match="dtype='bf16'"):
        client.gemm(np.ones((2, 2), np.uint16), np.ones((2, 2), np.uint16))


# What gemmctl says of an int64 .npy file, after its name.
INT64 = ("dtype '<i8' unsupported: only little-endian float64 ('<f8'), "
         "float32 ('<f4') and float16 ('<f2')")


@pytest.mark.parametrize("what, args", [
    ("A", (np.ones((2, 2), np.int64), np.ones((2, 2)))),
    ("B", (np.ones((2, 2)), np.ones((2, 2), np.int64))),
    ("C", (np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2), np.int64))),
])
@pytest.mark.parametrize("dtype", [None, "fp64"])
def test_int64_refused_as_gemmctl_does(client, what, args, dtype):
    """Even where a dtype would convert them: above 2**53 an int64 would
    be rounded without a word."""
    with pytest.raises(gemmd.Error) as e:
        client.gemm(*args, dtype=dtype)
    assert e.value.name == "EDTYPE"
    assert e.value.message == f"{what}: {INT64}"


def _requests(client) -> int:
    return client.stats()["requests"]["total"]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_refused_before_sending(client, rng, dtype):
    """The CPU engine has no fp16 or bf16, and its ping says which dtypes
    it runs: the client refuses the job with the daemon's code and words,
    and the daemon never sees it; in a batch, that job alone fails."""
    a, b = rand(rng, (M, K), np.float32), rand(rng, (K, N), np.float32)
    assert dtype not in client.ping()["dtypes"]
    before = _requests(client)
    want = f"dtype {dtype} is unsupported by the cpu engine"
    for call in (client.gemm, client.submit_detached,
                 lambda *x, **kw: client.submit(*x, **kw).result()):
        with pytest.raises(gemmd.Error) as e:
            call(a, b, dtype=dtype)
        assert e.value.name == "EUNSUPPORTED"
        assert e.value.message == want
    got = client.batch([(a, b), gemmd.Job(a, b, dtype=dtype)])
    assert got[0].code == 0 and got[1].code == gemmd.codes["EUNSUPPORTED"]
    assert got[1].message == want and got[1].out is None
    assert _requests(client) == before + 1  # the batch's fp32 job alone


def test_bf16_bits(rng):
    x = rand(rng, (64, 64), np.float32)
    bits = gemmd.to_bf16(x)
    assert bits.dtype == np.uint16
    back = gemmd.from_bf16(bits)
    assert np.all(np.abs(back - x) <= np.abs(x) * 2.0**-8)
    assert gemmd.to_bf16(np.float32(1 + 2**-8)) == 0x3F80  # tie: even
    assert gemmd.to_bf16(np.float32(1 + 3 * 2**-8)) == 0x3F82
    assert np.isnan(gemmd.from_bf16(gemmd.to_bf16(np.float32("nan"))))


@pytest.mark.parametrize("a, b, text", [
    ((M, 0), (0, N), "K = 0: must be 1..1048576"),
    ((0, K), (K, N), "M = 0: must be 1..1048576"),
    ((M, K), (K, 0), "N = 0: must be 1..1048576"),
])
def test_empty_dimensions_refused_as_gemmctl_does(client, a, b, text):
    with pytest.raises(gemmd.Error) as e:
        client.gemm(np.empty(a), np.empty(b))
    assert e.value.name == "EDIM"
    assert e.value.message == text


def test_shapes_that_do_not_fit(client, rng):
    with pytest.raises(ValueError, match="inner dimensions differ"):
        client.gemm(rand(rng, (3, 4)), rand(rng, (5, 6)))
    with pytest.raises(ValueError, match="3-D"):
        client.gemm(np.ones((2, 2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="C is 2x2"):
        client.gemm(rand(rng, (3, 4)), rand(rng, (4, 5)), np.ones((2, 2)))


def test_tcp(daemon, rng):
    a, b = rand(rng, (M, K)), rand(rng, (K, N))
    with gemmd.Client(daemon.tcp) as c:
        check(c.gemm(a, b), a @ b, k=K)
        assert c.ping()["engine"] == "cpu"
