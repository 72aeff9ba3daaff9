"""The canonical form of an algorithm: its structure, shapes and dtypes, not its names.

``canonical_form(out)`` writes every tensor that ``out`` depends on in dependence order,
each named by its position (``t0``, ``t1``, ...), its axes by their position (``a0``, ...
for a compute's own axes, ``r0``, ... for its reduction axes, with extents), and every
expression node by its type and fields. Two algorithms that differ only in the names
of their tensors and axes have the same form; a different shape, dtype, constant or
operation gives another. ``workload_key(out)`` is its SHA-256, the key under which the
auto-scheduler's tuning database files its records.
"""

from __future__ import annotations

import hashlib
from dataclasses import fields

from ..ir.expr import Expr, Var
from .tensor import IterVar, Tensor, tensor_inputs


def canonical_form(out) -> str:
    """One line per tensor of the algorithm of ``out`` (a tensor or a list of them)."""
    outputs = list(out) if isinstance(out, (list, tuple)) else [out]
    order: list = []
    for o in outputs:
        for t in tensor_inputs(o):
            if t not in order:
                order.append(t)
    number = {t: f"t{n}" for n, t in enumerate(order)}
    lines = []
    for t in order:
        shape = ", ".join(str(d) for d in t.shape)
        if t.op is None or not hasattr(t.op, "body"):
            lines.append(f"{number[t]} = placeholder(({shape}), {t.dtype})")
            continue
        names = {ax: f"a{n}" for n, ax in enumerate(t.op.axis)}
        names.update({ax: f"r{n}<{ax.extent}>" for n, ax in enumerate(t.op.reduce_axis)})
        lines.append(f"{number[t]} = compute(({shape}), {t.dtype}, {_node(t.op.body, names, number)})")
    lines.append("outputs " + ", ".join(number[o] for o in outputs))
    return "\n".join(lines)


def workload_key(out) -> str:
    """The SHA-256 (hex) of :func:`canonical_form`."""
    return hashlib.sha256(canonical_form(out).encode()).hexdigest()


def _node(value, names: dict, number: dict) -> str:
    if isinstance(value, IterVar):
        return names.get(value, f"?{value.kind}<{value.extent}>")
    if isinstance(value, Var):
        return f"var<{value.dtype}>"
    if isinstance(value, Tensor):
        return number[value]
    if isinstance(value, Expr):
        parts = [_node(getattr(value, f.name), names, number) for f in fields(value)]
        return f"{type(value).__name__}({', '.join(parts)})"
    if isinstance(value, tuple):
        return "(" + ", ".join(_node(v, names, number) for v in value) + ")"
    return repr(value)
