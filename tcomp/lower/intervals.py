"""Symbolic intervals of index expressions: ``[min, min + extent)`` with a constant extent.

Bound inference asks, for a consumer's loop iteration, which indices of a
producer it reads. Loop variables outside the attach point are fixed (a point
``[v, v + 1)``), loops inside range over their whole extent. For affine index
expressions (all that splits and tiles produce) the result is exact; floor
division and modulo from fused loops are over-approximated.

A region with regular gaps, such as a thread's sub-tiles that lie 16 columns apart
in a warp tile (``16 * w + r`` with ``r < 4``), is a :class:`StridedInterval`: its
``extent`` counts only the indices it holds, so a buffer for it has no holes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LoweringError
from ..ir.expr import Binary, Expr, IntImm, Var, binary
from ..ir.simplify import difference, linear_form, simplify
from ..ir.visitor import free_vars


@dataclass(frozen=True)
class Interval:
    min: Expr
    extent: int

    @staticmethod
    def point(e: Expr) -> "Interval":
        return Interval(simplify(e), 1)

    def __repr__(self) -> str:
        return f"[{self.min}, +{self.extent})"


@dataclass(frozen=True)
class StridedInterval(Interval):
    """``{min + sum(c_k * stride_k) : 0 <= c_k < count_k}``: ``pieces`` is
    ``((stride, count), ...)`` with strides decreasing, each larger than the span of
    the pieces after it (so every index has one set of ``c_k``); ``extent`` is the
    product of the counts. Index ``min + x`` is stored at ``compress(x)``."""

    pieces: tuple = ()

    def expand(self, compact: Expr) -> Expr:
        """The offset from ``min`` of the ``compact``-th index of the region."""
        offset: Expr = IntImm(0)
        inner = self.extent
        for stride, count in self.pieces:
            inner //= count
            offset = binary("+", offset, binary("*", binary("%", binary("//", compact, inner), count), stride))
        return simplify(offset)

    def compress(self, offset: Expr) -> Expr:
        """The position in the compact region of the index ``min + offset``."""
        position: Expr = IntImm(0)
        above = None
        for stride, count in self.pieces:
            part = offset if above is None else binary("%", offset, above)
            position = binary("+", binary("*", position, count), binary("//", part, stride))
            above = stride
        return simplify(position)

    def __repr__(self) -> str:
        parts = " + ".join(f"{stride}*[0, {count})" for stride, count in self.pieces)
        return f"[{self.min} + {parts}]"


def strided_interval(e: Expr, env: dict) -> StridedInterval | None:
    """The region of affine ``e`` as a :class:`StridedInterval` when it has gaps, else None.

    Each term over ranging variables (``env`` holds ``[0, n)`` with ``n > 1``) must have a
    positive coefficient and range from 0; the coefficients must leave every index
    distinct (mixed radix). Fixed variables and the constant make up ``min``.
    """
    terms, const = linear_form(e)
    ranging = {v: iv.extent for v, iv in env.items()
               if iv.extent > 1 and isinstance(iv.min, IntImm) and iv.min.value == 0}
    pieces, fixed = [], {}
    for atom, coef in terms.items():
        atom_vars = free_vars(atom)
        if not atom_vars & set(ranging):
            fixed[atom] = coef
            continue
        if not atom_vars <= set(ranging) or coef <= 0:
            return None
        # a ranging loop, or a // or % of ranging loops (such as the digits of another
        # strided region's position): taken as independent, a superset of the reads
        span = value_range(atom, ranging)
        if span is None or span[0] != 0:
            return None
        pieces.append((coef, span[1] + 1))
    pieces.sort(reverse=True)
    span = 1
    for stride, count in reversed(pieces):
        if stride < span:
            return None  # two indices would collide
        span = stride * (count - 1) + span
    size = 1
    for _, count in pieces:
        size *= count
    if not pieces or size == span:
        return None  # no gaps: a plain interval says the same
    base: Expr = IntImm(const)
    for atom, coef in fixed.items():
        value = env[atom].min if isinstance(atom, Var) and atom in env else atom
        base = binary("+", base, binary("*", value, coef))
    return StridedInterval(simplify(base), size, tuple(pieces))


def interval(e: Expr, env: dict) -> Interval:
    """The interval of ``e`` when each Var in ``env`` ranges over its Interval.

    Variables absent from ``env`` are fixed symbols (loops enclosing the region).
    """
    if isinstance(e, IntImm):
        return Interval(e, 1)
    if isinstance(e, Var):
        return env.get(e, Interval(e, 1))
    if isinstance(e, Binary):
        a = interval(e.a, env)
        b = interval(e.b, env)
        if e.op == "+":
            return Interval(simplify(binary("+", a.min, b.min)), a.extent + b.extent - 1)
        if e.op == "-":
            hi_b = binary("+", b.min, b.extent - 1)
            return Interval(simplify(binary("-", a.min, hi_b)), a.extent + b.extent - 1)
        if e.op == "*":
            if isinstance(a.min, IntImm) and a.extent == 1:
                a, b = b, a
            if isinstance(b.min, IntImm) and b.extent == 1:
                c = b.min.value
                if c >= 0:
                    return Interval(simplify(binary("*", a.min, c)), (a.extent - 1) * c + 1)
                hi = binary("+", a.min, a.extent - 1)
                return Interval(simplify(binary("*", hi, c)), (a.extent - 1) * (-c) + 1)
            if a.extent == 1 and b.extent == 1:
                return Interval.point(binary("*", a.min, b.min))
        if e.op in ("//", "%") and isinstance(b.min, IntImm) and b.extent == 1 and b.min.value > 0:
            return _div_mod(e.op, a, b.min.value)
        if e.op in ("max", "min") and a.extent == 1 and b.extent == 1:
            return Interval.point(binary(e.op, a.min, b.min))
        if e.op in ("max", "min") and (a.extent == 1 or b.extent == 1):
            # clamping a range to a point (an index kept inside a tensor) narrows it:
            # [op(lo, c), op(lo, c) + extent) holds every op(x, c) for x in [lo, lo + extent)
            ranging, point = (a, b) if b.extent == 1 else (b, a)
            return Interval(simplify(binary(e.op, ranging.min, point.min)), ranging.extent)
    raise LoweringError(f"cannot infer the region read by index expression {e}: "
                        "only affine indices (and // or % by constants) are supported")


def _div_mod(op: str, a: Interval, d: int) -> Interval:
    if a.extent == 1:
        return Interval.point(binary(op, a.min, d))
    terms, const = linear_form(a.min)
    divisible = all(c % d == 0 for c in terms.values())
    if op == "//":
        if divisible:
            base = simplify(binary("+", binary("//", binary("-", a.min, const), d), const // d))
            return Interval(base, (const % d + a.extent - 1) // d + 1)
        return Interval(simplify(binary("//", a.min, d)), (a.extent - 1) // d + 2)
    if divisible and const % d + a.extent <= d:
        return Interval(IntImm(const % d), a.extent)
    return Interval(IntImm(0), d)


def union(intervals: list) -> Interval:
    """The smallest interval covering all of them; their mins must differ by constants."""
    base = intervals[0]
    lo, hi = 0, base.extent
    for iv in intervals[1:]:
        delta = difference(iv.min, base.min)
        if delta is None:
            raise LoweringError(f"the regions {base} and {iv} read from one tensor are not at a "
                                "constant distance; bound inference cannot cover them with one buffer")
        lo, hi = min(lo, delta), max(hi, delta + iv.extent)
    return Interval(simplify(binary("+", base.min, lo)), hi - lo)


def value_range(e: Expr, extents: dict) -> tuple | None:
    """(lowest, highest) value of ``e`` when each Var v ranges over [0, extents[v]); None if unknown."""
    terms, const = linear_form(e)
    lo = hi = const
    for atom, coef in terms.items():
        if isinstance(atom, Var):
            if atom not in extents:
                return None
            a_lo, a_hi = 0, extents[atom] - 1
        elif isinstance(atom, Binary) and atom.op in ("//", "%") and isinstance(atom.b, IntImm) \
                and atom.b.value > 0:
            inner = value_range(atom.a, extents)
            if inner is None or inner[0] < 0:
                return None
            d = atom.b.value
            a_lo, a_hi = (inner[0] // d, inner[1] // d) if atom.op == "//" else (0, min(d - 1, inner[1]))
        elif isinstance(atom, Binary) and atom.op in ("min", "max"):
            ra, rb = value_range(atom.a, extents), value_range(atom.b, extents)
            if ra is None or rb is None:
                return None
            pick = min if atom.op == "min" else max
            a_lo, a_hi = pick(ra[0], rb[0]), pick(ra[1], rb[1])
        else:
            return None
        lo += min(coef * a_lo, coef * a_hi)
        hi += max(coef * a_lo, coef * a_hi)
    return lo, hi


def upper_bound(e: Expr, extents: dict) -> int | None:
    r = value_range(e, extents)
    return None if r is None else r[1]
