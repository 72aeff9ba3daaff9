"""Correctly rounded float32 division by a constant, with one multiplication and two FMAs.

``x / c`` compiles to ``div.rn.f32``: a reciprocal on the special-function unit, five
FMAs, a range check and a branch. When ``c`` is a constant, Markstein's correction gives
the same correctly rounded quotient from ``r = RN(1/c)``:

    q0 = RN(x * r)               # within about an ulp of x / c
    e  = fma(-q0, c, x)          # the remainder x - q0 * c, exactly
    q  = fma(e, r, q0)           # RN(x / c)

The correction is exact for every ``x`` when ``q0`` is close enough to ``x / c``, which
depends on ``c``'s significand alone (both sides scale by powers of two, as long as nothing
overflows or underflows). :func:`correction_is_exact` checks it for one constant over all
2^23 significands of ``x`` in [1, 2), emulating each rounding exactly in float64; the code
generator uses the correction only for constants that pass, and only where the quotient
is rounded to an integer and clamped to a small range (``tc.quantize`` to int8), so that
an underflowing remainder (|x / c| far below 1/2) or an overflowing product (far above the
clamp) cannot change the result.

Where the dividend is a 16- or 8-bit float converted to float32 (a bfloat16 stage, say),
there are few enough dividends to try them all: :func:`reciprocal_is_exact_on` says
whether ``RN(x * r)`` equals ``RN(x / c)``, bit for bit, for every value of that dtype
(for bfloat16 and c = 0.05 it does: r = 20 exactly), and then one multiplication does.
"""

from __future__ import annotations

import functools
import os

import ml_dtypes
import numpy as np

from .environment import cache_dir

#: every value of each narrow float dtype, as float32
_NARROW_DTYPES = {"bfloat16": (ml_dtypes.bfloat16, np.uint16), "float16": (np.float16, np.uint16),
                  "float8_e4m3": (ml_dtypes.float8_e4m3fn, np.uint8)}


def divide(x: np.ndarray, c: float) -> np.ndarray:
    """The GPU's ``q0, e, q`` sequence above, emulated exactly: float32 ``x`` by ``c``."""
    x = np.asarray(x, dtype=np.float32)
    c32 = np.float32(c)
    r32 = np.float32(1.0) / c32
    q0 = x * r32  # float32 product: correctly rounded
    # x - q0 * c: the product has 48 bits and the difference fits float64 exactly
    e32 = (x.astype(np.float64) - q0.astype(np.float64) * np.float64(c32)).astype(np.float32)
    return _round_sum_to_float32(q0.astype(np.float64), e32.astype(np.float64) * np.float64(r32))


def is_correctly_rounded(x: np.ndarray, c: float, q: np.ndarray) -> np.ndarray:
    """Is float32 ``q`` RN32(x / c), element by element? Decided by the exact remainder
    ``x - q * c`` (float64 holds it exactly for ``q`` near ``x / c``) against half the gaps
    to ``q``'s neighbours, times ``c``; on a tie ``q`` must be even."""
    c64 = np.float64(np.float32(c))
    x64 = np.asarray(x, dtype=np.float32).astype(np.float64)
    q = np.asarray(q, dtype=np.float32)
    q64 = q.astype(np.float64)
    rem = (x64 - q64 * c64) * np.sign(c64)  # x / c - q, times |c|
    above = (np.nextafter(q, np.float32(np.inf)).astype(np.float64) - q64) * abs(c64) / 2
    below = (q64 - np.nextafter(q, np.float32(-np.inf)).astype(np.float64)) * abs(c64) / 2
    even = (q.view(np.int32) & 1) == 0
    inside = (rem < above) & (rem > -below)
    tie = ((rem == above) | (rem == -below)) & even
    return inside | tie


def _round_sum_to_float32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """RN32(a + b) exactly, for float64 ``a`` and ``b`` whose sum is a normal float32 (an
    FMA's single rounding). The float64 sum is rounded once more to float32; that double
    rounding can only err where the float64 sum lies exactly halfway between two float32
    values (its 29 low significand bits 1 followed by zeros), and there the exact error of
    the float64 sum (TwoSum) says which way the exact sum lies."""
    s = a + b
    r = s.astype(np.float32)
    on_mid = np.flatnonzero((s.view(np.uint64) & 0x1FFFFFFF) == 0x10000000)
    if on_mid.size:
        sa, sb, ss = a[on_mid], b[on_mid], s[on_mid]
        bb = ss - sa
        err = (sa - (ss - bb)) + (sb - bb)  # TwoSum: ss + err == sa + sb exactly
        d = ss - r[on_mid].astype(np.float64)
        move = np.sign(err) == np.sign(d)
        towards = np.where(d > 0, np.float32(np.inf), np.float32(-np.inf))
        r[on_mid] = np.where(move, np.nextafter(r[on_mid], towards), r[on_mid])
    return r


@functools.lru_cache(maxsize=256)
def correction_is_exact(c: float) -> bool:
    """Does the sequence above give RN32(x / c) for every float32 significand of x?

    The answer takes about a second to compute; it is kept in the kernel cache directory
    (one file per constant), so that other processes (the search's screening processes,
    forked before any of them has asked) read it instead."""
    c32 = np.float32(c)
    if not np.isfinite(c32) or c32 == 0 or abs(float(c32)) < 2.0**-100 or abs(float(c32)) > 2.0**100:
        return False

    path = cache_dir() / f"division-correction-v1-{int(c32.view(np.uint32)):08x}"
    try:
        return {"exact": True, "inexact": False}[path.read_text()]
    except (OSError, KeyError):
        pass  # NOTE: not decided yet (or a damaged file): decide again
    x = (np.arange(2**23, dtype=np.int64) | 0x3F800000).astype(np.int32).view(np.float32)  # [1, 2)
    # NOTE: numpy's float32 division is IEEE's: correctly rounded, the quotient to match
    exact = all((divide(part, c32) == part / c32).all() for part in np.array_split(x, 8))
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.write_text("exact" if exact else "inexact")
    os.replace(tmp, path)
    return bool(exact)


def narrow_values(dtype: str) -> np.ndarray:
    """Every value of the 16- or 8-bit float ``dtype`` (NaNs included), as float32."""
    storage, bits = _NARROW_DTYPES[dtype]
    return np.arange(np.iinfo(bits).max + 1, dtype=np.int64).astype(bits).view(storage).astype(np.float32)


@functools.lru_cache(maxsize=256)
def reciprocal_is_exact_on(c: float, dtype: str) -> bool:
    """Is ``RN32(x * RN32(1/c))`` the same float32 as ``RN32(x / c)`` for every ``x`` of the
    narrow float ``dtype``? (NaN for NaN; numpy's float32 arithmetic is IEEE's.)"""
    c32 = np.float32(c)
    if dtype not in _NARROW_DTYPES or not np.isfinite(c32) or c32 == 0:
        return False
    x = narrow_values(dtype)
    with np.errstate(all="ignore"):
        quotient, product = x / c32, x * (np.float32(1.0) / c32)
    same = (quotient.view(np.uint32) == product.view(np.uint32)) | (np.isnan(quotient) & np.isnan(product))
    return bool(same.all())
