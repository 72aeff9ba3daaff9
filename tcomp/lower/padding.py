"""Zero padding: a tensorized product computes whole instruction tiles past its tensors' edges.

A matrix instruction multiplies whole tiles (16 values of k for ``mma.sync.m16n8k16`` and
wgmma, 16 or 64 rows): it cannot skip the products of a tile that runs past the end of
k, or the rows past the end of M. Lowering therefore pads instead of guarding, when a
product stage ``P`` (one of whose loops is tensorized) is

    P[.., i, j] = sum_k  f(A_tile[.., k, ..]) * g(B_tile[.., k, ..])

with ``A_tile`` and ``B_tile`` tiles in shared memory (caches computed at one of P's
loops), ``f`` and ``g`` reads or casts (which keep a zero a zero), and, in each factor, k
indexing a dimension of the tile's tensor whose extent is k's own:

- the tiles are **zero-filled**: where an element of a tile's region lies outside its
  tensor, the fill stores a zero instead of skipping it (``Store.in_bounds``; a cp.async
  copy that reads no bytes and zero-fills, ``src-size`` 0);
- ``P``'s guards on k running past its extent are **dropped**: every product of the tail's
  padding is ``0 * 0``, so the sum is the same (a zero added, exactly);
- where ``P`` lives in registers (a local accumulator), its guards on rows and columns
  past the tensor's edge are dropped too: those accumulators hold sums of zero rows that
  nothing stores (the stages that read them keep their own guards).

The guards stay in the program that ``tc.check`` models (the layouts' ``predicates``):
what it checks is the guarded program, and this padding computes the same values.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Binary, Cast, Reduce, TensorRead
from ..schedule.stage import Stage


@dataclass(frozen=True)
class ZeroPadding:
    """Which stages lowering pads: ``products`` drop their guards past the edges named
    (stage -> axes), ``tiles`` store zeros outside their tensor."""

    products: dict
    tiles: frozenset


def zero_padding(schedule, bodies: dict, scope_of) -> ZeroPadding:
    """The padding of every tensorized product of ``schedule`` that the module docstring's
    conditions allow (``bodies``: each stage's expression with inlined stages substituted;
    ``scope_of``: a stage's storage scope)."""
    products, tiles = {}, set()
    for stage, body in bodies.items():
        if not _tensorized(stage) or not isinstance(body, Reduce) or body.combiner != "sum":
            continue
        operand_tiles = _operand_tiles(schedule, stage, body, scope_of)
        if operand_tiles is None:
            continue
        axes = tuple(stage.reduce_axes)
        if scope_of(stage) == "local":
            axes += tuple(stage.root_axes)
        products[stage] = axes
        tiles.update(operand_tiles)
    return ZeroPadding(products, frozenset(tiles))


def _tensorized(stage: Stage) -> bool:
    return any(kind.startswith("tensorize") for kind in stage.annotations.values())


def _operand_tiles(schedule, stage: Stage, body: Reduce, scope_of):
    """The shared tiles the two factors of ``body`` read, when every reduction axis
    indexes, in each factor, a dimension of the tile's tensor of the axis's extent; else None."""
    source = body.source
    if not (isinstance(source, Binary) and source.op == "*"):
        return None
    tiles = []
    for factor in (source.a, source.b):
        read = factor.value if isinstance(factor, Cast) else factor
        if not isinstance(read, TensorRead):
            return None
        tile = schedule.stage_of(read.tensor)
        if tile is None or tile.attach.kind != "at" or scope_of(tile) != "shared":
            return None
        shape = read.tensor.shape
        for axis in stage.reduce_axes:
            dims = [d for d, index in enumerate(read.indices) if index is axis]
            if not dims or any(shape[d] != axis.extent for d in dims):
                return None
        tiles.append(tile)
    return tiles


__all__ = ["ZeroPadding", "zero_padding"]
