"""Sixteen decode rows on mma.sync with the weights' fragments loaded straight from global
memory: the schedule helper :func:`mma_rows`.

At 16 rows each element of the weights ``b`` is used by one warp once, so staging it
through shared memory (cp.async rings, ldmatrix, a barrier a k step: ``mma_warp_tiles``)
buys no reuse. Here each warp computes a 16-row tile of ``8 * tiles`` columns over one
slice of k, reading its B fragments from ``b`` itself. The tile's columns are interleaved
so that those loads are 16 bytes wide: lane group ``g = lane // 4`` (the column a B
fragment gives a lane) of n8 tile ``c`` computes column ``g * tiles + c``, so one lane's
columns of one k row are ``tiles`` consecutive elements, and the four rows of a k step of
16 that a B fragment spans are four vector loads for all the warp tile's n8 tiles
(``tcomp.lower.fragments`` packs them, :class:`~tcomp.ir.stmt.RegisterPairLoad`). The
``slices`` warps of a block sum slices of k; their partial tiles meet in shared memory and
the block adds them in a fixed order (the same bits every run) before running ``out``'s
stages (bf16 rounding, SiLU, quantization) on the whole sum: one kernel.

The rule :class:`MmaRows` offers it to the search for a 16-row product of two 16-bit
operands whose weights are stored ``[K, N]``. It has no seeds: no size of it has been
measured on a GPU yet, so the cost model screens its draws like any other rule's.
"""

from __future__ import annotations

from ...errors import ScheduleError
from .base import Rule
from .products import operands_of_16_bits
from .skinny import add_slices, streamed_lanes, streamed_product

#: the rows of one mma.m16n8k16 tile: the rows this helper takes
ROWS = 16


def mma_rows(s, out, product: str, a: str, b: str, tiles: int = 8, slices: int = 8, unroll: int = 2) -> None:
    """``product`` (``C[i, j] = sum_k a[i, k] * b[k, j]`` in float32 from two 16-bit
    operands, 16 rows) in blocks of ``8 * tiles`` columns and ``slices`` warps, each warp
    a slice of k, ``unroll`` k steps of 16 a loop iteration; then ``out`` (the product or
    an elementwise stage after it, the stages between inlined by the caller) by the same
    ``32 * slices`` threads, the warps' slices added in a fixed order (see the module
    docstring)."""
    *lead, M, N = s[product].op.output.shape
    K = s[product].op.reduce_axis[0].extent
    columns = 8 * tiles
    if lead or M != ROWS:
        raise ScheduleError(f"mma_rows computes one {ROWS}-row tile of mma.m16n8k16 a warp: {product} must be "
                            f"{ROWS} x N; it is {' x '.join(map(str, s[product].op.output.shape))}")
    if tiles not in (2, 4, 8):
        raise ScheduleError(f"mma_rows loads a lane's columns of a k row as one vector of 2, 4 or 8 elements: "
                            f"tiles = {tiles}")
    if slices < 2 or slices & (slices - 1):
        raise ScheduleError(f"mma_rows cuts k into a power of two of slices, at least 2 (one a warp): slices = "
                            f"{slices}")
    if N % columns or K % (slices * 16 * unroll):
        raise ScheduleError(f"mma_rows needs whole blocks of {columns} columns (N = {N}) and whole slices of k in "
                            f"steps of {16 * unroll} ({slices} x {16 * unroll} must divide K = {K})")
    partial = s.rfactor(product, slices)
    acc = s.cache_write(partial, "local")
    consumer = s[out]
    i, j = consumer.axis
    block, in_block = consumer.split(j, columns)
    consumer.reorder(block, i, in_block)
    consumer.bind(block, "blockIdx.x")
    outputs = consumer.fuse(i, in_block)
    each, threads = consumer.split(outputs, 32 * slices)
    warp, lane = consumer.split(threads, 32)
    consumer.reorder(block, warp, lane, each)
    consumer.bind(warp, "threadIdx.y")
    consumer.bind(lane, "threadIdx.x")
    s[partial].set_scope("shared")
    s[partial].compute_at(consumer, block)
    _warp_tile(s, partial, acc, tiles, unroll)
    add_slices(s, out, product, each, slices)


def _warp_tile(s, partial, acc, tiles: int, unroll: int) -> None:
    """Each warp's slice of ``partial`` (its leading axis, on ``threadIdx.y``) as one 16 x
    ``8 * tiles`` tile of mma.m16n8k16 with interleaved columns, accumulated in ``acc``."""
    stage = s[partial]
    part, rows, cols = stage.axis
    row_half, group = stage.split(rows, 8)
    group_column, tile = stage.split(cols, tiles)  # column = group_column * tiles + tile
    pair, col_half = stage.split(group_column, 2)
    stage.reorder(part, group, pair, tile, row_half, col_half)
    lane = stage.fuse(group, pair)
    stage.bind(part, "threadIdx.y")
    stage.bind(lane, "threadIdx.x")
    for axis in (tile, row_half, col_half):
        stage.unroll(axis)
    s[acc].compute_at(stage, lane)
    (k,) = s[acc].reduce_axis
    k_step, k_in = s[acc].split(k, 16 * unroll)
    k_unrolled, k_tile = s[acc].split(k_in, 16)
    slice_axis, acc_rows, acc_cols = s[acc].axis
    tile_i, reg_i = s[acc].split(acc_rows, 2)
    reg_j, tile_j = s[acc].split(acc_cols, tiles)
    s[acc].reorder(k_step, k_unrolled, slice_axis, tile_i, tile_j, k_tile, reg_i, reg_j)
    for axis in (k_unrolled, slice_axis, tile_i, tile_j, reg_i, reg_j):
        s[acc].unroll(axis)
    s[acc].tensorize(k_tile, "mma_m16n8k16")


class MmaRows(Rule):
    """A product of exactly 16 rows (a decode step) of two 16-bit operands, the weights
    stored ``[K, N]``, and the elementwise stages after it: :func:`mma_rows` with
    ``tiles`` n8 tiles a warp, ``slices`` warps a block (each a slice of k) and ``unroll``
    k steps of 16 a loop iteration. A reassociation, which ``tc.check`` reports."""

    name = "mma_rows"

    def applies(self, group, space):
        streamed = streamed_product(group)
        if streamed is None or group.staged or not operands_of_16_bits(group, streamed[0]):
            return False
        *lead, M, _ = space.stages[streamed[0]].shape
        return not lead and M == ROWS

    def choices(self, group, space):
        return {"tiles": [4, 8], "slices": [2, 4, 8, 16], "unroll": [1, 2, 4]}

    def valid(self, group, space, p):
        product, _, b = streamed_product(group)
        op = space.stages[product].op
        N, K = op.output.shape[-1], op.reduce_axis[0].extent
        lanes = streamed_lanes(op, b)  # a lane's columns of a row are one aligned vector
        return (p["tiles"] <= lanes and N % (8 * p["tiles"]) == 0 and K % (p["slices"] * 16 * p["unroll"]) == 0
                and 32 * p["slices"] <= space.target.max_threads_per_block
                and p["slices"] * ROWS * 8 * p["tiles"] * 4 <= space.target.smem_per_block // 2)

    def apply(self, s, group, p):
        product, a, b = streamed_product(group)
        mma_rows(s, s[group.anchor].op.output, product, a, b, tiles=p["tiles"], slices=p["slices"],
                 unroll=p["unroll"])
