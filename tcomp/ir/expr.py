"""Scalar expressions, shared by the tensor language and the loop-nest IR.

Grammar (every node is a frozen dataclass; identity is object identity)::

    Expr := Var(name, dtype)                      loop or index variable
          | IntImm(value, dtype) | FloatImm(value, dtype)
          | Binary(op, a, b)      op in + - * / // % max min
          | Compare(op, a, b)     op in < <= > >= == !=     (dtype "bool")
          | And(a, b)
          | Call(name, args)      a scalar function of the table (see below)
          | Cast(dtype, value)    a rounding point
          | Select(cond, a, b)
          | Load(buffer, index)   flat load from an IR buffer (loop IR only)
          | TensorRead(tensor, indices)   ``T[i, j]`` of a tensor (compute bodies only)
          | Reduce(combiner, source, axes) combiner in sum max min (a compute's whole body)

``Call``'s names are the keys of ``tcomp.ir.functions.SCALAR_FUNCTIONS``. Operands of a
Binary always have the same dtype: the smart constructors insert explicit Casts,
so that the reference evaluator and the code generator never promote types.
Arithmetic on 16- and 8-bit floats is done in float32 and rounded to the
operand type after every operation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..dtypes import INT_TYPES, check_dtype, is_float
from ..errors import LanguageError

_FLOAT_RANK = {"float8_e4m3": 0, "bfloat16": 1, "float16": 1, "float32": 2}
#: the largest whole power ``x ** n`` expands into a product
MAX_POWER = 8


class Expr:
    """Base class of scalar expressions; Python operators build new nodes."""

    dtype: str

    def __add__(self, other):
        return binary("+", self, other)

    def __radd__(self, other):
        return binary("+", other, self)

    def __sub__(self, other):
        return binary("-", self, other)

    def __rsub__(self, other):
        return binary("-", other, self)

    def __mul__(self, other):
        return binary("*", self, other)

    def __rmul__(self, other):
        return binary("*", other, self)

    def __truediv__(self, other):
        return binary("/", self, other)

    def __rtruediv__(self, other):
        return binary("/", other, self)

    def __floordiv__(self, other):
        return binary("//", self, other)

    def __rfloordiv__(self, other):
        return binary("//", other, self)

    def __mod__(self, other):
        return binary("%", self, other)

    def __neg__(self):
        return binary("-", zero_like(self), self)

    def __pow__(self, n):
        """``x ** n`` for a whole ``n`` from 1 to ``MAX_POWER``: the product ``x * x * ...``
        of ``n`` factors, left to right (what writing it out gives, no call)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_POWER:
            raise LanguageError(f"x ** n takes a whole n from 1 to {MAX_POWER} and becomes the product of n "
                                f"factors; got {n!r} (a fractional or negative power is tc.exp(n * tc.log(x)), "
                                f"a square root tc.sqrt, a reciprocal one tc.rsqrt)")
        product = self
        for _ in range(n - 1):
            product = product * self
        return product

    def __rpow__(self, base):
        raise LanguageError(f"{base!r} ** (an expression) is not a product; write tc.exp(x * math.log({base!r}))")

    def __lt__(self, other):
        return compare("<", self, other)

    def __le__(self, other):
        return compare("<=", self, other)

    def __gt__(self, other):
        return compare(">", self, other)

    def __ge__(self, other):
        return compare(">=", self, other)

    def __bool__(self):
        raise LanguageError(
            "a tensor expression has no truth value: a Python if, and, or or on it cannot be compiled. "
            "Choose between two values with tc.where(cond, a, b), cond a comparison such as x > 0.0 "
            "(<, <=, >, >=; several: nested tc.where), or use tc.maximum/tc.minimum/tc.clamp")

    __hash__ = object.__hash__

    def __str__(self) -> str:
        from .printer import expr_to_str

        return expr_to_str(self)


@dataclass(frozen=True, eq=False)
class Var(Expr):
    name: str
    dtype: str = "int32"

    def __repr__(self) -> str:
        return f"Var({self.name})"


@dataclass(frozen=True, eq=False)
class IntImm(Expr):
    value: int
    dtype: str = "int32"


@dataclass(frozen=True, eq=False)
class FloatImm(Expr):
    value: float
    dtype: str = "float32"


@dataclass(frozen=True, eq=False)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "dtype", "float32" if self.op == "/" and not is_float(self.a.dtype) else self.a.dtype)


@dataclass(frozen=True, eq=False)
class Compare(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str = "bool"


@dataclass(frozen=True, eq=False)
class And(Expr):
    a: Expr
    b: Expr
    dtype: str = "bool"


@dataclass(frozen=True, eq=False)
class Call(Expr):
    name: str
    args: tuple
    dtype: str


@dataclass(frozen=True, eq=False)
class Cast(Expr):
    dtype: str
    value: Expr


@dataclass(frozen=True, eq=False)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr
    dtype: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "dtype", self.a.dtype)


@dataclass(frozen=True, eq=False)
class TensorRead(Expr):
    """An element ``tensor[indices]`` of a ``tcomp.lang`` tensor, in a compute's body."""

    tensor: Any  # a tcomp.lang.tensor.Tensor
    indices: tuple
    dtype: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "dtype", self.tensor.dtype)


@dataclass(frozen=True, eq=False)
class Reduce(Expr):
    """A reduction of ``source`` over ``axes`` (IterVars of kind "reduce"); only ever a
    compute's whole body."""

    combiner: str  # "sum", "max", "min"
    source: Expr
    axes: tuple
    dtype: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "dtype", self.source.dtype)


@dataclass(frozen=True, eq=False)
class WarpShuffle(Expr):
    """``value`` as lane ``lane`` of this thread's warp holds it (``shfl.sync.idx``): every
    lane of the warp evaluates it together (``tcomp.lower.warp_shuffle``)."""

    value: Expr
    lane: Expr
    dtype: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "dtype", self.value.dtype)


@dataclass(frozen=True, eq=False)
class Load(Expr):
    buffer: Any  # tcomp.ir.stmt.Buffer
    index: Expr
    dtype: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "dtype", self.buffer.dtype)


# ----------------------------------------------------------------------------------------
# smart constructors


def const(value, dtype: str) -> Expr:
    """A literal of the given dtype."""
    if is_float(dtype):
        return FloatImm(float(value), dtype)
    return IntImm(int(value), dtype)


def zero_like(e: Expr) -> Expr:
    return const(0, e.dtype)


def as_expr(value, like: Expr | None = None) -> Expr:
    """Turn a Python number into a literal whose dtype follows ``like`` (weak typing)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        raise LanguageError("booleans are not tensor values")
    if isinstance(value, int):
        return const(value, like.dtype if like is not None and like.dtype != "bool" else "int32")
    if isinstance(value, float):
        if like is not None and is_float(like.dtype):
            return FloatImm(value, like.dtype)
        return FloatImm(value, "float32")
    raise LanguageError(f"cannot use {value!r} of type {type(value).__name__} in a tensor expression")


def promote(a: Expr, b: Expr) -> str:
    """The common dtype of two operands."""
    if a.dtype == b.dtype:
        return a.dtype
    fa, fb = is_float(a.dtype), is_float(b.dtype)
    if fa and fb:
        ra, rb = _FLOAT_RANK[a.dtype], _FLOAT_RANK[b.dtype]
        if ra == rb:
            return "float32"
        return a.dtype if ra > rb else b.dtype
    if fa:
        return a.dtype
    if fb:
        return b.dtype
    return "int32"


def cast(value, dtype: str) -> Expr:
    """An explicit conversion; a no-op when the dtype already matches."""
    check_dtype(dtype)
    e = as_expr(value)
    if e.dtype == dtype:
        return e
    if isinstance(e, IntImm) and dtype in INT_TYPES:
        return IntImm(e.value, dtype)
    if isinstance(e, (IntImm, FloatImm)) and dtype == "float32":
        return FloatImm(float(e.value), dtype)
    return Cast(dtype, e)


def binary(op: str, a, b) -> Expr:
    """Build ``a op b``, converting literals and inserting casts so both sides agree."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        raise LanguageError("binary operation needs at least one tensor expression")
    a = as_expr(a, b if isinstance(b, Expr) else None)
    b = as_expr(b, a)
    if a.dtype == "bool" or b.dtype == "bool":
        raise LanguageError(f"operator {op!r} does not take boolean operands")
    dtype = promote(a, b)
    if op in ("//", "%", "^") and is_float(dtype):
        raise LanguageError(f"operator {op!r} needs integer operands, got {a.dtype} and {b.dtype}")
    a, b = cast(a, dtype), cast(b, dtype)
    folded = _fold(op, a, b)
    if folded is not None:
        return folded
    if op == "/" and not is_float(dtype):
        a, b = cast(a, "float32"), cast(b, "float32")
    return Binary(op, a, b)


def _fold(op: str, a: Expr, b: Expr) -> Expr | None:
    """Constant folding and the identities that keep index arithmetic readable."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        x, y = a.value, b.value
        table = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                 "max": lambda: max(x, y), "min": lambda: min(x, y), "^": lambda: x ^ y}
        if op in table:
            return IntImm(table[op](), a.dtype)
        if op in ("//", "%") and y != 0:
            return IntImm(x // y if op == "//" else x % y, a.dtype)
        return None
    if not isinstance(a, IntImm) and not isinstance(b, IntImm):
        return None
    if op == "+":
        if isinstance(a, IntImm) and a.value == 0:
            return b
        if isinstance(b, IntImm) and b.value == 0:
            return a
    if op in ("-", "^") and isinstance(b, IntImm) and b.value == 0:
        return a
    if op == "*":
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm) and x.value == 1:
                return y
            if isinstance(x, IntImm) and x.value == 0:
                return x
    if op == "//" and isinstance(b, IntImm) and b.value == 1:
        return a
    if op == "%" and isinstance(b, IntImm) and b.value == 1:
        return IntImm(0, a.dtype)
    return None


def reduction_identity(combiner: str, dtype: str) -> Expr:
    """The value a ``combiner`` reduction ("sum", "max", "min") starts from: what combining
    it with any value leaves that value."""
    from ..dtypes import INT_RANGE

    if combiner == "sum":
        return cast(IntImm(0), dtype) if not is_float(dtype) else FloatImm(0.0, dtype)
    if is_float(dtype):
        return FloatImm(float("-inf") if combiner == "max" else float("inf"), dtype)
    lo, hi = INT_RANGE[dtype]
    return IntImm(lo if combiner == "max" else hi, dtype)


def compare(op: str, a, b) -> Expr:
    a = as_expr(a, b if isinstance(b, Expr) else None)
    b = as_expr(b, a)
    dtype = promote(a, b)
    return Compare(op, cast(a, dtype), cast(b, dtype))


def logical_and(*conds: Expr | None) -> Expr | None:
    """Conjunction of the given conditions, skipping None; None when there are none."""
    result = None
    for c in conds:
        if c is None:
            continue
        result = c if result is None else And(result, c)
    return result


def call(name: str, *args) -> Expr:
    exprs = [as_expr(x) for x in args]
    return Call(name, tuple(exprs), exprs[0].dtype)


def maximum(a, b) -> Expr:
    return binary("max", a, b)


def minimum(a, b) -> Expr:
    return binary("min", a, b)
