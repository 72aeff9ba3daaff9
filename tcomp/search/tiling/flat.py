"""The fallback tiling of any other kernel (elementwise chains, and reductions that no
other rule takes): its output flattened and split over blocks, threads and vector lanes."""

from __future__ import annotations

from .base import Rule
from .products import product_stage


class FlatTiling(Rule):
    """The kernel's output flattened, split into vectors of ``vector`` elements, blocks of
    ``threads`` threads, one vector per thread. Elementwise stages inside are inlined;
    a reduction (any that the matrix rules do not take) runs serially in each thread."""

    name = "flat_tiling"

    def applies(self, group, space):
        return not group.fused and not group.row_members and product_stage(group) is None

    def choices(self, group, space):
        return {"threads": [64, 128, 256, 512, 1024], "vector": [1, 2, 4, 8]}

    def valid(self, group, space, p):
        anchor = space.stages[group.anchor]
        if p["vector"] > 1 and (anchor.reduction or anchor.shape[-1] % p["vector"]):
            return False
        size = 1
        for extent in anchor.shape:
            size *= extent
        return p["threads"] <= space.target.max_threads_per_block and p["threads"] * p["vector"] <= max(size, 64)

    def apply(self, s, group, p):
        stage = s[group.anchor]
        axes = list(stage.axis)
        flat = axes[0]
        for ax in axes[1:]:
            flat = stage.fuse(flat, ax)
        if p["vector"] > 1:
            flat, lanes = stage.split(flat, p["vector"])
            stage.vectorize(lanes)
        block, thread = stage.split(flat, p["threads"])
        stage.bind(block, "blockIdx.x")
        stage.bind(thread, "threadIdx.x")


__all__ = ["FlatTiling"]
