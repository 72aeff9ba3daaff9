"""Row reductions that are not matrix products (a row's max for a per-row quantization
scale): a block per row, its threads on interleaved slices of the row, the slices
combined through shared memory. :func:`rows_in_blocks` goes further: a row's statistics
and their consumers in one kernel (softmax, RMSNorm, LayerNorm)."""

from __future__ import annotations

from .base import Rule
from .products import product_stage


def rows_in_blocks(s, out, source: str, readers: list, statistics: list, inline: tuple = (), threads: int = 256,
                   vector: int = 8, slices: int | None = None) -> None:
    """``out`` (rows x N) in one kernel, a block of ``threads`` per row:

    1. The row of ``source`` (the tensor the row operator reads) is copied once into
       shared memory, ``vector`` elements per thread and copy, for the stages ``readers``
       that read it.
    2. Then ``inline`` stages are inlined into their consumers (an elementwise stage
       between statistics, softmax's ``exp(x - max)``).
    3. Each of ``statistics`` (reductions along the row, in the order they depend on each
       other: softmax's max, then its sum) is cut into ``slices`` interleaved slices in
       shared memory (``s.rfactor``), one per thread of the first ``slices``. After a
       barrier, every thread adds the slices into its own register in the same fixed
       order. A thread's path is a slice and then all the slices, so the default is the
       divisor of the row's length nearest its square root, at most ``threads``
       (:func:`row_slices`: 64 for 4096).
    4. ``out``'s elements are written ``vector`` per thread and store.

    A row whose length ``threads * vector`` does not divide ends in a guarded pass.
    ``tc.check`` holds that no statistic is read before its last slice is added."""
    if slices is None:
        slices = row_slices(out.shape[-1], threads)
    row_cache = s.cache_read(source, "shared", list(readers))
    for name in inline:
        s[name].compute_inline()
    row, j = s[out].axis
    s[out].bind(row, "blockIdx.x")
    j, lanes = s[out].split(j, vector)
    steps, thread = s[out].split(j, threads)
    s[out].reorder(thread, steps, lanes)
    s[out].bind(thread, "threadIdx.x")
    s[out].vectorize(lanes)
    for name in statistics:
        partial = s.rfactor(name, slices, interleaved=True)
        s[name].compute_at(s[out], row)
        s[partial].set_scope("shared")
        s[partial].compute_at(s[out], row)
        s[partial].bind(s[partial].axis[0], "threadIdx.x")
    s[row_cache].compute_at(s[out], row)
    _, columns = s[row_cache].axis
    columns, copy_lanes = s[row_cache].split(columns, vector)
    s[row_cache].vectorize(copy_lanes)
    _, copier = s[row_cache].split(columns, threads)
    s[row_cache].bind(copier, "threadIdx.x")


def row_slices(length: int, threads: int) -> int:
    """The slices :func:`rows_in_blocks` cuts a row's statistic into by default: of the
    divisors of ``length`` up to ``threads``, the one nearest ``sqrt(length)`` (a slice of
    ``length / slices`` values, then ``slices`` values added by every thread)."""
    divisors = [d for d in range(1, min(length, threads) + 1) if length % d == 0]
    return min(divisors, key=lambda d: (length // d + d, -d))


class RowReduction(Rule):
    """A reduction along rows that is not a matrix product (a row's max or sum): one block
    of ``threads`` threads per output element, each thread reducing an interleaved slice
    of the row (consecutive threads on consecutive elements) into shared memory, then one
    thread combining the slices (``s.rfactor(..., interleaved=True)``)."""

    name = "row_reduction"

    def applies(self, group, space):
        stage = space.stages[group.anchor]
        return (stage.reduction and not group.fused and product_stage(group) is None
                and len(stage.op.reduce_axis) == 1)

    def choices(self, group, space):
        return {"threads": [32, 64, 128, 256, 512]}

    def valid(self, group, space, p):
        extent = space.stages[group.anchor].op.reduce_axis[0].extent
        return extent % p["threads"] == 0 and extent >= 2 * p["threads"]

    def apply(self, s, group, p):
        stage = s[group.anchor]
        partial = s.rfactor(stage.op.output, p["threads"], interleaved=True)
        axes = list(stage.axis)
        row = axes[0]
        for ax in axes[1:]:
            row = stage.fuse(row, ax)
        stage.bind(row, "blockIdx.x")
        s[partial].set_scope("shared")
        s[partial].compute_at(stage, row)
        s[partial].bind(s[partial].axis[0], "threadIdx.x")


__all__ = ["RowReduction", "rows_in_blocks"]
