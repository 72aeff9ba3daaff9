"""Value expressions the kernel writer emits in fewer instructions than their operators:
a clamp that an int8 conversion repeats, a division by a constant that a multiplication
by its reciprocal computes exactly, a rounding and clamp to int8 done in one helper."""

from __future__ import annotations

import numpy as np

from ..ir.expr import Binary, Call, Cast, Expr, FloatImm
from ..target.storage import NARROW_FLOATS
from .exact_division import reciprocal_is_exact_on


def clamped_within(e: Expr, lo: float, hi: float) -> bool:
    """Is ``e`` ``min(max(x, a), b)`` with ``lo <= a`` and ``b <= hi``? Then clamping it to
    [lo, hi] again changes nothing, NaN included (a clamp is idempotent)."""
    if not (isinstance(e, Binary) and e.op == "min" and isinstance(e.b, FloatImm) and e.b.value <= hi):
        return False
    inner = e.a
    return isinstance(inner, Binary) and inner.op == "max" and isinstance(inner.b, FloatImm) and \
        inner.b.value >= lo


def constant_divisor(e: Expr):
    """``c`` when ``e`` is a float32 ``x / c`` with ``c`` a constant; else None."""
    if not (isinstance(e, Binary) and e.op == "/" and e.dtype == "float32"):
        return None
    b = e.b.value if isinstance(e.b, Cast) else e.b
    return float(b.value) if isinstance(b, FloatImm) else None


def exact_reciprocal(e: Expr):
    """``RN(1/c)`` when ``e`` is ``float32(x) / c`` for a 16/8-bit float ``x`` and a
    constant ``c`` whose reciprocal gives the same quotient for every such ``x``
    (``exact_division.reciprocal_is_exact_on``); else None."""
    divisor = constant_divisor(e)
    if divisor is None or not isinstance(e.a, Cast) or e.a.value.dtype not in NARROW_FLOATS:
        return None
    if not reciprocal_is_exact_on(divisor, e.a.value.dtype):
        return None
    return float(np.float32(1.0) / np.float32(divisor))


def rounded_and_clamped(e: Expr, lo: float, hi: float):
    """``(x, a, b)`` when ``e`` is ``min(max(round(x), a), b)`` with integer bounds inside
    [lo, hi]; else None."""
    if not clamped_within(e, lo, hi):
        return None
    inner, a, b = e.a.a, e.a.b.value, e.b.value
    if not (isinstance(inner, Call) and inner.name == "round" and float(a).is_integer() and float(b).is_integer()):
        return None
    return inner.args[0], a, b


__all__ = ["clamped_within", "constant_divisor", "exact_reciprocal", "rounded_and_clamped"]
