"""Vector-lane analysis of integer index expressions.

A loop of ``width`` iterations over ``lane`` can become one 64- or 128-bit access
when every index it uses is ``base + stride * lane`` with ``stride`` 0 (the same
element for every lane) or 1 (consecutive elements), and, for a vector access,
``base`` is a multiple of ``width`` (the access is aligned).

Two pure analyses answer that:

``modular_set(e)``      ``(coeff, rem)`` such that ``e`` is always ``coeff * n + rem``
                        for some integer ``n`` (``coeff == 0``: ``e`` is the constant
                        ``rem``). Loop and thread variables are arbitrary integers.
``lane_form(e, lane, width)``  ``(base, stride)`` with ``e == base + stride * lane`` for
                        every ``lane`` in ``[0, width)``, or ``None``.
``uniform_condition(c, lane, width)``  a condition without ``lane`` that equals ``c``
                        for every lane (a tail guard ``base + lane < n`` with ``base`` and
                        ``n`` multiples of the width), or ``None``.
"""

from __future__ import annotations

from math import gcd

from .expr import And, Binary, Compare, Expr, IntImm, Var, binary, compare, logical_and
from .simplify import simplify
from .visitor import free_vars


def modular_set(e: Expr) -> tuple[int, int]:
    """``(coeff, rem)``: every value of ``e`` is ``rem`` modulo ``coeff``."""
    if isinstance(e, IntImm):
        return 0, e.value
    if isinstance(e, Binary):
        ca, ra = modular_set(e.a)
        cb, rb = modular_set(e.b)
        if e.op in ("+", "-"):
            coeff = gcd(ca, cb)
            rem = ra + rb if e.op == "+" else ra - rb
            return coeff, (rem % coeff if coeff else rem)
        if e.op == "*":
            # (ca*x + ra) * (cb*y + rb) = ca*cb*xy + ca*rb*x + cb*ra*y + ra*rb
            coeff = gcd(gcd(ca * cb, ca * rb), cb * ra)
            rem = ra * rb
            return coeff, (rem % coeff if coeff else rem)
        if e.op in ("//", "%") and cb == 0 and rb > 0:
            if ca == 0:
                return 0, (ra // rb if e.op == "//" else ra % rb)
            if e.op == "%":
                coeff = gcd(ca, rb)
                return coeff, ra % coeff
            if ca % rb == 0 and ra % rb == 0:
                return ca // rb, (ra // rb) % (ca // rb)
        if e.op in ("min", "max"):  # one of the two values: both residues must agree
            coeff = gcd(gcd(ca, cb), abs(ra - rb))
            return coeff, (ra % coeff if coeff else ra)
    return 1, 0


def is_multiple(e: Expr, n: int) -> bool:
    """Whether ``e`` is a multiple of ``n`` for every value of its variables."""
    coeff, rem = modular_set(e)
    return coeff % n == 0 and rem % n == 0


def lane_form(e: Expr, lane: Var, width: int) -> tuple[Expr, int] | None:
    """``(base, stride)`` such that ``e == base + stride * lane`` for ``lane`` in ``[0, width)``."""
    if isinstance(e, Var):
        return (IntImm(0), 1) if e is lane else (e, 0)
    if isinstance(e, IntImm):
        return e, 0
    if not isinstance(e, Binary):
        return None
    if lane not in free_vars(e):  # a min or max of tile bounds, say: the same for every lane
        return e, 0
    if e.op in ("+", "-"):
        a, b = lane_form(e.a, lane, width), lane_form(e.b, lane, width)
        if a is None or b is None:
            return None
        stride = a[1] + b[1] if e.op == "+" else a[1] - b[1]
        return simplify(binary(e.op, a[0], b[0])), stride
    if e.op == "*":
        a, b = lane_form(e.a, lane, width), lane_form(e.b, lane, width)
        if a is None or b is None:
            return None
        if a[1] == 0 and b[1] == 0:
            return simplify(binary("*", a[0], b[0])), 0
        const, other = (b, a) if isinstance(b[0], IntImm) and b[1] == 0 else (a, b)
        if not (isinstance(const[0], IntImm) and const[1] == 0):
            return None
        k = const[0].value
        return simplify(binary("*", other[0], k)), other[1] * k
    if e.op == "^":  # the same for every lane when both sides are
        a, b = lane_form(e.a, lane, width), lane_form(e.b, lane, width)
        if a is None or b is None or a[1] or b[1]:
            return None
        return simplify(binary("^", a[0], b[0])), 0
    if e.op in ("//", "%") and isinstance(e.b, IntImm) and e.b.value > 0:
        a = lane_form(e.a, lane, width)
        if a is None:
            return None
        base, stride = a
        if stride == 0:
            return simplify(binary(e.op, base, e.b)), 0
        d = e.b.value
        span = stride * width
        # lanes stay within one block of d when the block of span lanes is aligned and divides d
        if stride > 0 and d % span == 0 and is_multiple(base, span):
            if e.op == "//":
                return simplify(binary("//", base, d)), 0
            return simplify(binary("%", base, d)), stride
    return None


def uniform_condition(c: Expr, lane: Var, width: int) -> Expr | None:
    """``c`` rewritten without ``lane`` when it has the same value for all lanes."""
    if isinstance(c, And):
        a, b = uniform_condition(c.a, lane, width), uniform_condition(c.b, lane, width)
        return None if a is None or b is None else logical_and(a, b)
    if not isinstance(c, Compare):
        return None
    a, b = lane_form(c.a, lane, width), lane_form(c.b, lane, width)
    if a is None or b is None:
        return None
    if a[1] == 0 and b[1] == 0:
        return compare(c.op, a[0], b[0])
    # base + lane < n  <=>  base < n, when base and n are multiples of the width
    if c.op == "<" and a[1] == 1 and b[1] == 0 and is_multiple(a[0], width) and is_multiple(b[0], width):
        return compare("<", a[0], b[0])
    return None


__all__ = ["modular_set", "is_multiple", "lane_form", "uniform_condition"]
