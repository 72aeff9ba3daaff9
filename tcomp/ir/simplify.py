"""Canonical form of integer index arithmetic.

Index expressions produced by splits, tiles and bound inference are affine in
the loop variables; they are brought to the form ``v0*c0 + v1*c1 + ... + c``
(terms in order of first appearance) so that printed IR and generated code stay
readable and the extents of bound inference fold to constants.

Given the ranges of the variables (``simplify(e, ranges)``, each loop variable in
``[0, extent - 1]``), division and remainder by a constant ``d`` also drop what the
ranges decide: ``x = Q + R`` with every coefficient of ``Q`` a multiple of ``d`` and
``R`` known to lie in ``[q d, q d + d - 1]`` gives ``x // d = Q / d + q`` and
``x % d = R - q d``; so ``(2 i + r) // 2`` is ``i`` and ``(2 i + r) % 2`` is ``r``
for ``r`` in ``[0, 1]``, the shape of every fused-then-split loop.
"""

from __future__ import annotations

import math

from .expr import Binary, Expr, IntImm, Var, binary
from .visitor import map_children

LinearForm = tuple[dict, int]  # {atom expr: coefficient}, constant


Ranges = dict  # Var -> (lowest, highest) value


def linear_form(e: Expr, ranges: Ranges | None = None) -> LinearForm:
    """Decompose an integer expression into coefficients of atoms plus a constant.

    Atoms are variables and the non-affine sub-expressions (kept as they are). With
    ``ranges``, a division or remainder by a constant that the ranges decide is
    resolved (module docstring).
    """
    if isinstance(e, IntImm):
        return {}, e.value
    if isinstance(e, Binary) and e.op in ("+", "-"):
        ta, ca = linear_form(e.a, ranges)
        tb, cb = linear_form(e.b, ranges)
        sign = 1 if e.op == "+" else -1
        return _add_terms(ta, tb, sign), ca + sign * cb
    if isinstance(e, Binary) and e.op == "*":
        ta, ca = linear_form(e.a, ranges)
        tb, cb = linear_form(e.b, ranges)
        if not ta:
            return {k: v * ca for k, v in tb.items() if v * ca != 0}, ca * cb
        if not tb:
            return {k: v * cb for k, v in ta.items() if v * cb != 0}, ca * cb
    if isinstance(e, Binary) and e.op in ("//", "%") and isinstance(e.b, IntImm) and e.b.value > 0:
        resolved = _divide(e.op, *linear_form(e.a, ranges), e.b.value, ranges, e.dtype)
        if resolved is not None:
            return resolved
    if isinstance(e, Var):
        return {e: 1}, 0
    if isinstance(e, Binary) and e.op == "^":  # a swizzle: constant when both sides are
        a, b = simplify(e.a, ranges), simplify(e.b, ranges)
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            return {}, a.value ^ b.value
        if isinstance(b, IntImm) and b.value == 0:
            return linear_form(a, ranges)
        return {Binary("^", a, b): 1}, 0
    return {simplify_children(e, ranges): 1}, 0


def _divide(op: str, terms: dict, constant: int, d: int, ranges: Ranges | None, dtype: str) -> LinearForm | None:
    """``(terms + constant) // d`` or ``% d`` as a linear form, or None when there is
    nothing to rewrite. With ``Q`` the multiples of ``d`` and ``R`` the rest:

    - where the ranges put ``R`` within one multiple of ``d`` the division is resolved;
    - else (with ranges) ``Q`` leaves it, ``Q / d + R // d`` and ``R % d``, and ``R``
      is split into ``g B + S`` with ``g`` a common factor of ``d`` and ``B``'s
      coefficients and ``S`` (the small terms and the constant) in ``[0, g - 1]``:
      ``R // d = B // (d / g)`` and ``R % d = g (B % (d / g)) + S``. A vectorized
      lane added to a thread's offset is such an ``S``."""
    multiples = {k: v for k, v in terms.items() if v % d == 0}
    rest = {k: v for k, v in terms.items() if v % d != 0}
    base, rest_constant = constant - constant % d, constant % d
    if rest and ranges is None:
        return None
    quotient = {k: v // d for k, v in multiples.items()}
    rest_range = _linear_range(rest, rest_constant, ranges) if rest else (rest_constant, rest_constant)
    if rest_range is not None and rest_range[0] // d == rest_range[1] // d:
        q = rest_range[0] // d
        return (quotient, base // d + q) if op == "//" else (rest, rest_constant - q * d)
    split = _common_factor(rest, rest_constant, d, ranges)
    if split is None:  # nothing splits off R: Q / d + R // d and R % d
        if not multiples and not base:
            return None
        atom = Binary(op, from_linear(rest, rest_constant, dtype), IntImm(d, dtype))
        return (_add_terms(quotient, {atom: 1}), base // d) if op == "//" else ({atom: 1}, 0)
    g, big, small = split
    reduced = {k: v // g for k, v in big.items()}
    if op == "//":
        if d == g:
            return _add_terms(quotient, reduced), base // d
        return _add_terms(quotient, {Binary("//", from_linear(reduced, 0, dtype), IntImm(d // g, dtype)): 1}), base // d
    if d == g:
        return small, rest_constant
    return _add_terms(small, {Binary("%", from_linear(reduced, 0, dtype), IntImm(d // g, dtype)): g}), rest_constant


def _common_factor(rest: dict, constant: int, d: int, ranges: Ranges) -> tuple[int, dict, dict] | None:
    """``(g, B, S)`` with ``rest = B + S``, ``g > 1`` dividing ``d`` and every coefficient
    of ``B``, and ``S + constant`` in ``[0, g - 1]``: the largest such ``g`` over the
    splits of ``rest`` at a coefficient size; None when there is none."""
    best = None
    for limit in sorted({abs(v) for v in rest.values()}) + [math.inf]:
        small = {k: v for k, v in rest.items() if abs(v) < limit}
        big = {k: v for k, v in rest.items() if abs(v) >= limit}
        g = math.gcd(d, *big.values()) if big else d
        low_high = _linear_range(small, constant, ranges) if small else (constant, constant)
        if g > (best[0] if best else 1) and low_high is not None and 0 <= low_high[0] and low_high[1] < g:
            best = (g, big, small)
    return best


def _linear_range(terms: dict, constant: int, ranges: Ranges | None) -> tuple[int, int] | None:
    """The lowest and highest value of ``terms + constant``, or None if an atom's is unknown."""
    lo = hi = constant
    for atom, coef in terms.items():
        r = value_range(atom, ranges)
        if r is None:
            return None
        a, b = coef * r[0], coef * r[1]
        lo, hi = lo + min(a, b), hi + max(a, b)
    return lo, hi


def value_range(e: Expr, ranges: Ranges | None) -> tuple[int, int] | None:
    """The lowest and highest value an integer expression takes when each variable stays
    in its range; None when that is not known."""
    if isinstance(e, IntImm):
        return e.value, e.value
    if isinstance(e, Var):
        return ranges.get(e) if ranges else None
    if not isinstance(e, Binary):
        return None
    if e.op in ("+", "-", "*"):
        a, b = value_range(e.a, ranges), value_range(e.b, ranges)
        if a is None or b is None:
            return None
        if e.op == "+":
            return a[0] + b[0], a[1] + b[1]
        if e.op == "-":
            return a[0] - b[1], a[1] - b[0]
        corners = [x * y for x in a for y in b]
        return min(corners), max(corners)
    if e.op in ("//", "%") and isinstance(e.b, IntImm) and e.b.value > 0:
        d = e.b.value
        r = value_range(e.a, ranges)
        if e.op == "//":
            return (r[0] // d, r[1] // d) if r is not None else None
        if r is not None and r[0] // d == r[1] // d:
            return r[0] % d, r[1] % d
        return 0, d - 1
    if e.op in ("min", "max"):
        a, b = value_range(e.a, ranges), value_range(e.b, ranges)
        if a is None or b is None:
            return None
        pick = min if e.op == "min" else max
        return pick(a[0], b[0]), pick(a[1], b[1])
    return None


def _atom_key(e: Expr):
    """Structural identity of an atom: equal keys, equal values (variables by identity)."""
    if isinstance(e, Var):
        return ("var", id(e))
    if isinstance(e, IntImm):
        return ("int", e.value)
    if isinstance(e, Binary):
        return (e.op, _atom_key(e.a), _atom_key(e.b))
    return ("node", id(e))


def _add_terms(terms: dict, more: dict, sign: int = 1) -> dict:
    """``terms + sign * more``, atoms that are the same expression merged (so that
    ``x // 4 * 128 - x // 4 * 128`` cancels even when the two ``x // 4`` were built apart)."""
    out = dict(terms)
    representative = {_atom_key(atom): atom for atom in terms}
    for atom, coef in more.items():
        rep = representative.setdefault(_atom_key(atom), atom)
        out[rep] = out.get(rep, 0) + sign * coef
    return {k: v for k, v in out.items() if v != 0}


def _merge_div_mod(terms: dict, constant: int, ranges: Ranges | None = None) -> LinearForm:
    """Rewrite ``(x // d) * c*d + (x % d) * c`` as ``x * c`` (what fused loops produce)."""
    changed = True
    while changed:
        changed = False
        for div in list(terms):
            if not (isinstance(div, Binary) and div.op == "//" and isinstance(div.b, IntImm)):
                continue
            d = div.b.value
            for mod in list(terms):
                if (isinstance(mod, Binary) and mod.op == "%" and isinstance(mod.b, IntImm)
                        and mod.b.value == d and _atom_key(mod.a) == _atom_key(div.a)
                        and terms[div] == terms[mod] * d):
                    c = terms.pop(mod)
                    terms.pop(div)
                    inner_terms, inner_const = linear_form(div.a, ranges)
                    terms = _add_terms(terms, inner_terms, c)
                    constant += inner_const * c
                    changed = True
                    break
            if changed:
                break
    return {k: v for k, v in terms.items() if v != 0}, constant


def from_linear(terms: dict, constant: int, dtype: str = "int32") -> Expr:
    result: Expr | None = None
    for atom, coef in terms.items():
        if coef == 0:
            continue
        mag = abs(coef)
        term = atom if mag == 1 else Binary("*", atom, IntImm(mag, dtype))
        if result is None:
            result = term if coef > 0 else Binary("-", IntImm(0, dtype), term)
        else:
            result = Binary("+" if coef > 0 else "-", result, term)
    if result is None:
        return IntImm(constant, dtype)
    if constant > 0:
        return Binary("+", result, IntImm(constant, dtype))
    if constant < 0:
        return Binary("-", result, IntImm(-constant, dtype))
    return result


def simplify_children(e: Expr, ranges: Ranges | None = None) -> Expr:
    return map_children(e, lambda c: simplify(c, ranges) if isinstance(c, Expr) else c)


def simplify(e: Expr, ranges: Ranges | None = None) -> Expr:
    """Canonicalize integer arithmetic; other expressions are simplified inside. With
    ``ranges`` (variable -> lowest and highest value), divisions and remainders that the
    ranges decide are resolved."""
    if e.dtype in ("int32", "int8") and isinstance(e, (Binary, IntImm, Var)):
        if isinstance(e, Binary) and e.op in ("max", "min", "/"):
            return simplify_children(e, ranges)
        terms, constant = _merge_div_mod(*linear_form(e, ranges), ranges)
        return from_linear(terms, constant, e.dtype)
    return simplify_children(e, ranges)


def is_const(e: Expr, value: int | None = None) -> bool:
    return isinstance(e, IntImm) and (value is None or e.value == value)


def difference(a: Expr, b: Expr) -> int | None:
    """``a - b`` when it is a constant, else None."""
    ta, ca = linear_form(a)
    tb, cb = linear_form(b)
    if _add_terms(ta, tb, -1):  # NOTE: atoms compared by structure (two ``x // 4`` built apart agree)
        return None
    return ca - cb


def add(a: Expr, b) -> Expr:
    return simplify(binary("+", a, b))
