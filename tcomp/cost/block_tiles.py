"""Which tile of a tensor each block of a grid reads, for the cost model's L2 term.

A read's index depends on the block's coordinates (``blockIdx.x/y/z``) and on the
thread's and the loops' variables. Set the latter to zero and what is left is the
block's *origin* in the tensor: two blocks with the same origin read the same tile. The
grid dimensions an index depends on say as much when each coordinate is a tile's number
along one axis; they do not when one coordinate carries two (a grouped launch order:
``blockIdx.x`` runs over the rows of a group and then over the columns, so A's tile is
``blockIdx.x % G`` plus the group's first row and W's is ``blockIdx.x // G``). The
origins, evaluated for every block, tell either case apart.
"""

from __future__ import annotations

import numpy as np

from ..ir.expr import Binary, Call, Cast, Expr, IntImm, Var
from ..ir.simplify import simplify
from ..ir.stmt import BLOCK_TAGS
from ..ir.visitor import free_vars, substitute

#: the integer operators an origin may hold, on numpy arrays of int64
_OPERATORS = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide, "%": np.mod,
              "min": np.minimum, "max": np.maximum}


def block_origin(index: Expr, loops) -> Expr | None:
    """``index`` with every variable of ``loops`` that is not a block's coordinate set to
    zero and the blocks' coordinates named by their tags (``Var("blockIdx.x")``); None
    where it holds something :func:`tiles_of_blocks` cannot evaluate."""
    block_of = {f.var: f.kind for f in loops if f.kind in BLOCK_TAGS}
    mapping = {v: Var(block_of[v]) if v in block_of else IntImm(0) for v in free_vars(index)}
    origin = simplify(substitute(index, mapping))
    return origin if _evaluable(origin) else None


def mixes_coordinates(origin: Expr) -> bool:
    """Does ``origin`` divide a block's coordinate or take its remainder (one coordinate
    carrying two tile numbers)? Where no origin does, the grid dimensions a read depends
    on tell as much as the origins, at no cost."""
    if isinstance(origin, Binary):
        if origin.op in ("//", "%") and free_vars(origin.a):
            return True
        return mixes_coordinates(origin.a) or mixes_coordinates(origin.b)
    if isinstance(origin, Call):
        return any(mixes_coordinates(a) for a in origin.args)
    if isinstance(origin, Cast):
        return mixes_coordinates(origin.value)
    return False


def _evaluable(e: Expr) -> bool:
    if isinstance(e, (IntImm, Var)):
        return True
    if isinstance(e, Binary):
        return e.op in _OPERATORS and _evaluable(e.a) and _evaluable(e.b)
    if isinstance(e, Call):
        return e.name in ("min", "max") and all(_evaluable(a) for a in e.args)
    if isinstance(e, Cast):
        return _evaluable(e.value)
    return False


def tiles_of_blocks(origins, grid: tuple) -> np.ndarray:
    """One integer a block (in the order of their linear index, ``blockIdx.x`` fastest):
    equal for two blocks exactly where every origin of ``origins`` is."""
    total = grid[0] * grid[1] * grid[2]
    ids = np.arange(total, dtype=np.int64)
    coordinates = {"blockIdx.x": ids % grid[0], "blockIdx.y": (ids // grid[0]) % grid[1],
                   "blockIdx.z": ids // (grid[0] * grid[1])}
    values = [np.broadcast_to(_evaluate(o, coordinates), (total,)) for o in origins]
    if not values:
        return np.zeros(total, dtype=np.int64)
    key = np.zeros(total, dtype=np.int64)
    for v in values:  # pairs of numbers made one, compacted after each step (no overflow)
        _, number = np.unique(np.asarray(v, dtype=np.int64), return_inverse=True)
        _, key = np.unique(key * (int(number.max()) + 1) + number, return_inverse=True)
    return key.reshape(total).astype(np.int64)


def _evaluate(e: Expr, coordinates: dict):
    if isinstance(e, IntImm):
        return np.int64(e.value)
    if isinstance(e, Var):
        return coordinates[e.name]
    if isinstance(e, Binary):
        return _OPERATORS[e.op](_evaluate(e.a, coordinates), _evaluate(e.b, coordinates))
    if isinstance(e, Call):
        values = [_evaluate(a, coordinates) for a in e.args]
        combine = np.minimum if e.name == "min" else np.maximum
        result = values[0]
        for v in values[1:]:
            result = combine(result, v)
        return result
    if isinstance(e, Cast):
        return _evaluate(e.value, coordinates)
    raise ValueError(f"an origin holds {type(e).__name__}, which tiles_of_blocks does not evaluate")


__all__ = ["block_origin", "mixes_coordinates", "tiles_of_blocks"]
