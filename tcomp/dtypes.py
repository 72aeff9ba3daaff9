"""The scalar types tcomp knows, with their host (numpy / ml_dtypes) counterparts."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .errors import LanguageError

#: name -> numpy dtype used on the host
HOST_DTYPES = {
    "float32": np.dtype(np.float32),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float16": np.dtype(np.float16),
    "int8": np.dtype(np.int8),
    "int32": np.dtype(np.int32),
    "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "bool": np.dtype(np.bool_),
}

#: the integer type that carries a 16/8-bit float on the device
DEVICE_STORAGE = {
    "bfloat16": np.dtype(np.uint16),
    "float16": np.dtype(np.uint16),
    "float8_e4m3": np.dtype(np.uint8),
}

FLOAT_TYPES = ("float32", "bfloat16", "float16", "float8_e4m3")
INT_TYPES = ("int8", "int32")

#: saturation range of the narrow types, used by casts
INT_RANGE = {"int8": (-128, 127), "int32": (-(2**31), 2**31 - 1)}
FP8_E4M3_MAX = 448.0


def check_dtype(dtype: str) -> str:
    """Return ``dtype`` if tcomp supports it, else raise a LanguageError naming the choices."""
    if dtype not in HOST_DTYPES or dtype == "bool":
        choices = ", ".join(d for d in HOST_DTYPES if d != "bool")
        raise LanguageError(f"unknown dtype {dtype!r}; tcomp supports {choices}")
    return dtype


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_TYPES


def itemsize(dtype: str) -> int:
    return HOST_DTYPES[dtype].itemsize


def host_dtype(dtype: str) -> np.dtype:
    return HOST_DTYPES[dtype]


def dtype_of_host(np_dtype) -> str | None:
    """The tcomp name of a numpy dtype, or None."""
    np_dtype = np.dtype(np_dtype)
    for name, dt in HOST_DTYPES.items():
        if dt == np_dtype:
            return name
    return None
