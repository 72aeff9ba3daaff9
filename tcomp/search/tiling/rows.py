"""Row reductions that are not matrix products (a row's max for a per-row quantization
scale): a block per row, its threads on interleaved slices of the row, the slices
combined through shared memory."""

from __future__ import annotations

from .base import Rule
from .products import product_stage


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


__all__ = ["RowReduction"]
