"""Canonical form of integer index arithmetic.

Index expressions produced by splits, tiles and bound inference are affine in
the loop variables; they are brought to the form ``v0*c0 + v1*c1 + ... + c``
(terms in order of first appearance) so that printed IR and generated code stay
readable and the extents of bound inference fold to constants.
"""

from __future__ import annotations

from .expr import Binary, Expr, IntImm, Var, binary
from .visitor import map_children

LinearForm = tuple[dict, int]  # {atom expr: coefficient}, constant


def linear_form(e: Expr) -> LinearForm:
    """Decompose an integer expression into coefficients of atoms plus a constant.

    Atoms are variables and the non-affine sub-expressions (kept as they are).
    """
    if isinstance(e, IntImm):
        return {}, e.value
    if isinstance(e, Binary) and e.op in ("+", "-"):
        ta, ca = linear_form(e.a)
        tb, cb = linear_form(e.b)
        sign = 1 if e.op == "+" else -1
        return _add_terms(ta, tb, sign), ca + sign * cb
    if isinstance(e, Binary) and e.op == "*":
        ta, ca = linear_form(e.a)
        tb, cb = linear_form(e.b)
        if not ta:
            return {k: v * ca for k, v in tb.items() if v * ca != 0}, ca * cb
        if not tb:
            return {k: v * cb for k, v in ta.items() if v * cb != 0}, ca * cb
    if isinstance(e, Binary) and e.op in ("//", "%") and isinstance(e.b, IntImm) and e.b.value > 0:
        d = e.b.value
        ta, ca = linear_form(e.a)
        if all(c % d == 0 for c in ta.values()):
            if e.op == "//":
                return {k: v // d for k, v in ta.items()}, ca // d
            return {}, ca % d
        if not ta:
            return {}, (ca // d) if e.op == "//" else (ca % d)
    if isinstance(e, Var):
        return {e: 1}, 0
    if isinstance(e, Binary) and e.op == "^":  # a swizzle: constant when both sides are
        a, b = simplify(e.a), simplify(e.b)
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            return {}, a.value ^ b.value
        if isinstance(b, IntImm) and b.value == 0:
            return linear_form(a)
        return {Binary("^", a, b): 1}, 0
    return {simplify_children(e): 1}, 0


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


def _merge_div_mod(terms: dict, constant: int) -> LinearForm:
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
                    inner_terms, inner_const = linear_form(div.a)
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


def simplify_children(e: Expr) -> Expr:
    return map_children(e, lambda c: simplify(c) if isinstance(c, Expr) else c)


def simplify(e: Expr) -> Expr:
    """Canonicalize integer arithmetic; other expressions are simplified inside."""
    if e.dtype in ("int32", "int8") and isinstance(e, (Binary, IntImm, Var)):
        if isinstance(e, Binary) and e.op in ("max", "min", "/"):
            return simplify_children(e)
        terms, constant = _merge_div_mod(*linear_form(e))
        return from_linear(terms, constant, e.dtype)
    return simplify_children(e)


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
