"""The operands of a matrix instruction's loop nest, read from the IR: the multiply-add
a tensorized nest holds, the 16-bit loads it multiplies, and its index expressions as
Python functions that lowering evaluates at sample points of the loops (``tensorize``
for mma.sync, ``warpgroup`` for wgmma and ``fragments`` for ldmatrix read them).
"""

from __future__ import annotations

import random

import numpy as np

from ..ir.expr import Binary, Cast, IntImm, Load, Var
from ..ir.simplify import simplify
from ..ir.stmt import Store
from ..target.instructions import MATRIX_OPERAND_DTYPES


def multiply_add(store: Store):
    """``(accumulator load, (a, b))`` of ``acc[i] = acc[i] + a * b`` with ``a`` and ``b``
    float32 casts of 16-bit float loads, or ``(None, None)``."""
    value = store.value
    if not (isinstance(value, Binary) and value.op == "+" and store.buffer.scope == "local"
            and store.buffer.dtype == "float32"):
        return None, None
    for acc, product in ((value.a, value.b), (value.b, value.a)):
        if isinstance(acc, Load) and acc.buffer is store.buffer and _same_index(acc.index, store.index) \
                and isinstance(product, Binary) and product.op == "*":
            factors = (product.a, product.b)
            loads = [operand_load(f) for f in factors]
            if None not in loads and loads[0].dtype == loads[1].dtype:
                return acc, factors
    return None, None


def _same_index(a, b) -> bool:
    return str(simplify(a)) == str(simplify(b))


def operand_load(e):
    """The 16-bit float load that ``e`` (a cast of it to float32) reads from memory every
    lane can read, or None."""
    inner = e.value if isinstance(e, Cast) and e.dtype == "float32" else e
    if isinstance(inner, Load) and inner.dtype in MATRIX_OPERAND_DTYPES and inner.buffer.scope in ("shared", "global"):
        return inner
    return None


def sample_environments(variables: list, extents: dict) -> list:
    """A few values of ``variables`` to check an index at: all zero, all at their last
    iteration, and two drawn at random (the same on every run)."""
    draw = random.Random(0)
    samples = [[0] * len(variables), [extents[v] - 1 for v in variables]]
    return samples + [[draw.randrange(extents[v]) for v in variables] for _ in range(2)]



class _NotAnIndex(Exception):
    pass


_PYTHON_OPS = {"+": "+", "-": "-", "*": "*", "//": "//", "%": "%", "^": "^"}


def index_function(e, params: list, arrays: bool = False):
    """``e`` (an integer index expression) as a Python function of ``params``, or None
    when it is not made of integer arithmetic on them. With ``arrays`` the function also
    takes numpy integer arrays (broadcast against one another) and returns one."""
    names = {v: f"v{n}" for n, v in enumerate(params)}
    extremes = {"min": "_minimum", "max": "_maximum"} if arrays else {"min": "min", "max": "max"}

    def text(x) -> str:
        if isinstance(x, IntImm):
            return str(x.value)
        if isinstance(x, Var) and x in names:
            return names[x]
        if isinstance(x, Binary) and x.op in ("min", "max"):
            return f"{extremes[x.op]}({text(x.a)}, {text(x.b)})"
        if isinstance(x, Binary) and x.op in _PYTHON_OPS:
            return f"({text(x.a)} {_PYTHON_OPS[x.op]} {text(x.b)})"
        raise _NotAnIndex(x)

    try:
        body = text(e)
    except _NotAnIndex:
        return None
    # NOTE: built from IR nodes only
    return eval(f"lambda {', '.join(names.values())}: {body}", {"_minimum": np.minimum, "_maximum": np.maximum})


__all__ = ["index_function", "multiply_add", "operand_load", "sample_environments"]
