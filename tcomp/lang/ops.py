"""Scalar functions and reductions of the tensor language.

The functions of one operand or more that the code generator emits as calls (``tc.exp``,
``tc.silu``, ...) are made from the table ``tcomp.ir.functions.SCALAR_FUNCTIONS``; the
ones here are compositions of IR nodes (``tc.cast``, ``tc.clamp``, ``tc.quantize``) and
the reductions.
"""

from __future__ import annotations

from ..dtypes import FP8_E4M3_MAX, INT_RANGE, check_dtype, is_float
from ..errors import LanguageError
from ..ir.expr import Expr, Select, as_expr, binary, call, promote
from ..ir.expr import cast as _cast
from ..ir.functions import SCALAR_FUNCTIONS, ScalarFunction
from .tensor import IterVar, Reduce


def _reduction(combiner: str, expr, axis) -> Reduce:
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if not axes or not all(isinstance(a, IterVar) and a.kind == "reduce" for a in axes):
        raise LanguageError(f"tc.{combiner}: axis= must be one or more tc.reduce_axis, got {axis!r}")
    return Reduce(combiner, as_expr(expr), axes)


def sum(expr, axis) -> Reduce:  # noqa: A001 - mirrors numpy's name on purpose
    """Sum of ``expr`` over the reduction axes, accumulated in ``expr``'s dtype."""
    return _reduction("sum", expr, axis)


def max(expr, axis) -> Reduce:  # noqa: A001
    """Maximum of ``expr`` over the reduction axes."""
    return _reduction("max", expr, axis)


def min(expr, axis) -> Reduce:  # noqa: A001
    """Minimum of ``expr`` over the reduction axes."""
    return _reduction("min", expr, axis)


def cast(x, dtype: str) -> Expr:
    """Convert to ``dtype``: a rounding point (round to nearest even for floats;
    toward zero and saturating for float -> int; saturating to +-448 for float8_e4m3)."""
    return _cast(x, dtype)


def _float(x) -> Expr:
    e = as_expr(x)
    if not is_float(e.dtype):
        raise LanguageError(f"expected a floating-point expression, got {e.dtype}")
    return e


def _language_function(fn: ScalarFunction):
    """The public ``tc.<name>`` of a scalar function of the table."""

    def apply(*operands) -> Expr:
        if len(operands) != fn.arity:
            raise LanguageError(f"tc.{fn.name} takes {fn.arity} operand{'s' if fn.arity > 1 else ''}, "
                                f"got {len(operands)}")
        return call(fn.name, *(_float(x) if fn.floats_only else as_expr(x) for x in operands))

    apply.__name__ = apply.__qualname__ = fn.name
    apply.__doc__ = fn.doc
    return apply


#: ``tc.exp``, ``tc.silu``, ...: one public function for each entry of the table of
#: scalar functions (``tcomp.ir.functions``), re-exported by ``tcomp`` itself
SCALAR_FUNCTION_API = {name: _language_function(fn) for name, fn in SCALAR_FUNCTIONS.items()}
globals().update(SCALAR_FUNCTION_API)


def maximum(a, b) -> Expr:
    """Elementwise max of two expressions."""
    return binary("max", a, b)


def minimum(a, b) -> Expr:
    """Elementwise min of two expressions."""
    return binary("min", a, b)


def where(cond, a, b) -> Expr:
    """``a`` where ``cond`` holds, else ``b``, elementwise: ``cond`` is a comparison of two
    expressions (``x > 0.0``; ``<``, ``<=``, ``>``, ``>=``), ``a`` and ``b`` expressions or
    numbers, promoted to their common dtype. Both are computed, one is kept (a select, no
    branch); for several conditions nest them: ``tc.where(x < lo, lo, tc.where(x > hi,
    hi, x))``."""
    if not isinstance(cond, Expr) or cond.dtype != "bool":
        raise LanguageError(f"tc.where takes a comparison of expressions as its condition (such as X[i] > 0.0), "
                            f"not {cond!r}")
    a = as_expr(a, b if isinstance(b, Expr) else None)
    b = as_expr(b, a)
    dtype = promote(a, b)
    return Select(cond, _cast(a, dtype), _cast(b, dtype))


def clamp(x, lo, hi) -> Expr:
    """min(max(x, lo), hi)."""
    return minimum(maximum(x, lo), hi)


def quantize(x, scale, dtype: str) -> Expr:
    """Quantize ``x`` with ``scale`` (a float or a scalar expression such as ``R[i] / 448.0``).

    ``"int8"``: ``clamp(round(x / scale), -128, 127)``; ``"float8_e4m3"``: ``x / scale``
    saturated to +-448 and rounded to nearest even. The division is done in float32.
    """
    check_dtype(dtype)
    scaled = binary("/", _cast(_float(x), "float32"), _cast(as_expr(scale), "float32"))
    if dtype == "int8":
        lo, hi = INT_RANGE["int8"]
        return _cast(clamp(call("round", scaled), float(lo), float(hi)), "int8")
    if dtype == "float8_e4m3":
        return _cast(clamp(scaled, -FP8_E4M3_MAX, FP8_E4M3_MAX), "float8_e4m3")
    raise LanguageError(f"tc.quantize supports 'int8' and 'float8_e4m3', not {dtype!r}")
