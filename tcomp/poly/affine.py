"""Index expressions as isl text.

The polyhedral model is built from isl's text syntax: a set such as
``{ C_update[i, j, k] : 0 <= i < 8 and 0 <= j < 8 and 0 <= k < 16 }`` or a map
``{ Y[i, j] -> C[i, j] }``. This module turns tcomp index expressions (what the
tensor language and bound inference produce: ``+ - *`` by constants, ``//`` and
``%`` by positive constants, ``min``/``max``) into that syntax. Anything else
(a product of two loop variables, a tensor read inside an index) is not affine:
:class:`NonAffine` tells the caller to over-approximate.
"""

from __future__ import annotations

from ..ir.expr import And, Binary, Cast, Compare, IntImm, Var


class NonAffine(Exception):
    """An expression that isl cannot represent exactly."""


def aff(e, names: dict) -> str:
    """``e`` as an isl quasi-affine expression; ``names`` maps each Var to its isl name."""
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, Var):
        try:
            return names[e]
        except KeyError:
            raise NonAffine(f"variable {e.name} is not a loop of this statement") from None
    if isinstance(e, Cast) and e.dtype in ("int32", "int8") and e.value.dtype in ("int32", "int8"):
        return aff(e.value, names)
    if isinstance(e, Binary):
        if e.op in ("+", "-"):
            return f"({aff(e.a, names)} {e.op} {aff(e.b, names)})"
        if e.op == "*":
            if isinstance(e.b, IntImm):
                return f"{e.b.value}*({aff(e.a, names)})"
            if isinstance(e.a, IntImm):
                return f"{e.a.value}*({aff(e.b, names)})"
            raise NonAffine(f"product of two non-constant expressions: {e}")
        if e.op in ("//", "%") and isinstance(e.b, IntImm) and e.b.value > 0:
            inner = aff(e.a, names)
            if e.op == "//":
                return f"floor(({inner})/{e.b.value})"
            return f"(({inner}) mod {e.b.value})"
        if e.op in ("max", "min"):
            return f"{e.op}({aff(e.a, names)}, {aff(e.b, names)})"
    raise NonAffine(f"not an affine index expression: {e}")


_COMPARE = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "="}


def condition(e, names: dict) -> str:
    """A boolean predicate (comparisons joined by ``and``) as an isl constraint."""
    if isinstance(e, And):
        return f"({condition(e.a, names)}) and ({condition(e.b, names)})"
    if isinstance(e, Compare):
        a, b = aff(e.a, names), aff(e.b, names)
        if e.op == "!=":
            return f"({a} < {b} or {a} > {b})"
        if e.op in _COMPARE:
            return f"{a} {_COMPARE[e.op]} {b}"
    raise NonAffine(f"not an affine condition: {e}")


def box(dims, extents) -> str:
    """``0 <= d < extent`` for every dimension."""
    return " and ".join(f"0 <= {d} < {n}" for d, n in zip(dims, extents)) or "true"


def tuple_text(name: str, items) -> str:
    return f"{name}[{', '.join(str(x) for x in items)}]"
