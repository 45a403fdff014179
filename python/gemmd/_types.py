"""Element types: the job dtypes gemmd knows, the NumPy arrays that hold
them, and bfloat16, which NumPy has no type for and is carried in uint16
arrays of its bit patterns."""

from __future__ import annotations

from typing import Union

import numpy as np

from ._errors import Error, codes
from ._ffi import DTYPES

#: What may name a job's dtype: "fp64", "fp32", "tf32", "fp16", "bf16",
#: or a NumPy float type.
DType = Union[str, type, np.dtype, None]

# The NumPy type of each dtype's data; tf32 is fp32 data computed on
# TF32 tensor cores, bf16 is carried as its bit patterns.
STORAGE = {
    "fp64": np.dtype(np.float64),
    "fp32": np.dtype(np.float32),
    "tf32": np.dtype(np.float32),
    "fp16": np.dtype(np.float16),
    "bf16": np.dtype(np.uint16),
}

_BY_NUMPY = {np.dtype(np.float64): "fp64", np.dtype(np.float32): "fp32",
             np.dtype(np.float16): "fp16"}


# What gemmctl says of a .npy file of another type, after the file's
# name; here after the operand's.
_UNSUPPORTED = ("dtype '{}' unsupported: only little-endian float64 "
                "('<f8'), float32 ('<f4') and float16 ('<f2')")


def check_types(**arrays: np.ndarray) -> None:
    """Refuses, as gemmctl refuses such a file, an operand that is not
    float64, float32 or float16 (or uint16, bf16 bit patterns, which
    dtype_name takes only with dtype='bf16'): integers above 2**53 would
    be rounded without a word, and other types are no GEMM data. Error
    EDTYPE naming the operand."""
    for what, x in arrays.items():
        if x is None or x.dtype in _BY_NUMPY or x.dtype == np.uint16:
            continue
        raise Error(codes["EDTYPE"],
                    f"{what}: " + _UNSUPPORTED.format(x.dtype.str))


def dtype_name(dtype: DType, *arrays: np.ndarray) -> str:
    """The job dtype: the one asked for, else the one NumPy would compute
    the product of the arrays in (float64, float32 or float16)."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    if dtype is not None:
        try:
            return _BY_NUMPY[np.dtype(dtype)]
        except (KeyError, TypeError):
            raise TypeError(f"dtype {dtype!r}: want one of "
                            f"{', '.join(DTYPES)} or a NumPy float type")
    if len(arrays) == 2 and arrays[0].dtype == arrays[1].dtype and \
            arrays[0].dtype in _BY_NUMPY:  # the common case, at once
        return _BY_NUMPY[arrays[0].dtype]
    if any(x.dtype == np.uint16 for x in arrays):
        raise TypeError("uint16 arrays are taken as bfloat16 bit patterns "
                        "only with dtype='bf16'")
    found = np.result_type(*arrays)
    if found not in _BY_NUMPY:
        raise TypeError(f"arrays of {found}: want float64, float32 or "
                        "float16, or name a dtype")
    return _BY_NUMPY[found]


def to_bf16(x) -> np.ndarray:
    """bfloat16 bit patterns (uint16) of x, rounded to nearest even; NaN
    stays NaN. Values wider than float32 are rounded to float32 first.
    The result keeps x's shape and memory order."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, (bits >> 16) | 0x40, rounded).astype(np.uint16)


def from_bf16(bits) -> np.ndarray:
    """float32 values of bfloat16 bit patterns (uint16); exact."""
    wide = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16
    return np.asarray(wide, dtype=np.uint32).view(np.float32)


def as_storage(x: np.ndarray, name: str) -> np.ndarray:
    """x as the data of dtype name: itself when it already is (no copy),
    else a converted copy in the same memory order."""
    if x.dtype == STORAGE[name]:
        return x
    if name == "bf16":
        return to_bf16(x)
    return x.astype(STORAGE[name], copy=False)
