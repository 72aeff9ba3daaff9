"""A product of 16-bit floats on the tensor cores, one warp per ``mma.sync.m16n8k16``:
the schedule helper :func:`mma_warp_tiles` (also used by the examples) and the rule
:class:`MmaTiling` that offers it to the search on targets that have the instruction."""

from __future__ import annotations

from ...errors import ScheduleError
from ...target.instructions import MMA_K, MMA_M, MMA_N
from .base import Rule
from .fills import cooperative_fill
from .products import aligned_lanes, copied_asynchronously, operands_of_16_bits, product_stage, staged_blocks
from .split_k import tensor_core_slices, tensor_core_slices_valid

#: elements of padding after each row of the shared tiles that ldmatrix reads (16 bytes)
MMA_PAD = 8


def mma_warp_tiles(s, out, product, a, b, BM=128, BN=128, BK=32, WM=64, WN=32, vector=8, stages=0, pad=MMA_PAD,
                   rows_fastest=False):
    """``out`` (the product itself or an elementwise consumer of it) in BM x BN blocks of
    WM x WN warp tiles, each a grid of 16 x 8 ``mma_m16n8k16`` tiles: lane ``l`` of a warp
    holds rows ``8 * r + l // 4`` and columns ``2 * (l % 4) + c`` of each (r, c in 0, 1),
    accumulated in registers over k steps of 16. ``a`` and ``b`` are staged in shared
    tiles of BM x BK and BK x BN, filled by all the block's threads ``vector`` elements
    (16 bytes) at a time, fewer where an operand's rows are not aligned to that
    (:func:`aligned_lanes`); with ``stages`` (3 or more) the tiles are cp.async rings of
    that many k steps (an operand whose rows allow no copy of 4 bytes is filled anew
    each k step instead). A k step past the end of K reads tiles padded with zeros
    (``tcomp.lower.padding``). A product with axes ahead of its rows and columns (``P[h, i, j] =
    sum_k A[i, k] W[h, k, j]``, the gate and up projections of SwiGLU over one stacked
    weight) computes every h of a lane's tile in the same k loop, from one tile of A.
    Each tile's rows are padded by ``pad`` elements (``storage_pad``):
    with 8, the eight 16-byte rows that one ldmatrix phase reads (lowering loads the
    operand fragments by ldmatrix, ``tcomp.lower.fragments``) fall in eight different
    groups of four banks, where unpadded 64- or 256-byte rows share banks 4 or 8 ways.

    ``out`` may have one axis ahead of its rows and columns, bound to ``blockIdx.z``: the
    slices of a split-K product (``s.rfactor``), each block reducing one slice of k.

    The blocks of a row of blocks are neighbours in launch order (``blockIdx.x`` runs over
    the columns); with ``rows_fastest`` those of a column are, so that the blocks running at
    once share columns of ``b`` (a wide ``b``, such as an FFN's weights, then crosses HBM
    about once instead of once per wave)."""
    *lead, M, N = out.shape
    if len(lead) > 1:
        raise ScheduleError(f"mma_warp_tiles tiles the last two axes of {out.name} and binds one axis ahead of "
                            f"them to blockIdx.z; {out.name} has {len(out.shape)} axes")
    K = s[product].op.reduce_axis[0].extent
    if not rows_fit(M, BM) or N < BN or BK % MMA_K:
        raise ScheduleError(f"the mma tiles need M >= BM = {BM} (or 9 to 15 rows and BM = {MMA_M}: the rows past M "
                            f"zero-filled), N >= BN = {BN} (a last block that does not fit is shifted inwards) "
                            f"and BK = {BK} a multiple of {MMA_K} (a k step past K is padded with zeros); the shape "
                            f"is {M} x {N} x {K}")
    acc, a_shared, b_shared, (bi, bj, ii, jj) = staged_blocks(s, out, product, a, b, BM, BN)
    wi, ii = s[out].split(ii, WM)
    wj, jj = s[out].split(jj, WN)
    mi, ii = s[out].split(ii, MMA_M)
    nj, jj = s[out].split(jj, MMA_N)
    row_half, group = s[out].split(ii, 8)
    t, col_half = s[out].split(jj, 2)
    s[out].reorder(bi, bj, wi, wj, group, t, mi, nj, row_half, col_half)
    warp = s[out].fuse(wi, wj)
    lane = s[out].fuse(group, t)
    s[out].bind(bi, "blockIdx.x" if rows_fastest else "blockIdx.y")
    s[out].bind(bj, "blockIdx.y" if rows_fastest else "blockIdx.x")
    s[out].bind(warp, "threadIdx.y")
    s[out].bind(lane, "threadIdx.x")
    for ax in (mi, nj, row_half):
        s[out].unroll(ax)
    s[out].vectorize(col_half)  # a thread's two columns in one store
    s[acc].compute_at(s[out], lane)
    (k,) = s[acc].reduce_axis
    ko, ki = s[acc].split(k, BK)
    kt, ki = s[acc].split(ki, MMA_K)
    *stacked, ci, cj = s[acc].axis
    tile_i, reg_i = s[acc].split(ci, 2)
    tile_j, reg_j = s[acc].split(cj, 2)
    s[acc].reorder(ko, kt, *stacked, tile_i, tile_j, ki, reg_i, reg_j)
    for ax in (kt, *stacked, tile_i, tile_j, reg_i, reg_j):
        s[acc].unroll(ax)
    warps = (BM // WM) * (BN // WN)
    for cache in (a_shared, b_shared):
        s[cache].compute_at(s[acc], ko)
        if pad:
            s[cache].storage_pad(s[cache].axis[-1], pad)
        lanes = aligned_lanes(cache, vector)
        cooperative_fill(s, cache, warps, 32, lanes)
        if stages and copied_asynchronously(cache, lanes):
            s[cache].pipeline(stages)
    s[acc].tensorize(ki, "mma_m16n8k16")


#: block widths of a decode step's k-whole tiling and the k step of each: 96-column blocks took
#: 16 x 12288 x 4096 in 39.8 us with k steps of 128 (40.4 us with 64), 64-column blocks 40.7 us
#: (H100, ``benchmarks/decode_rows.py``)
DECODE_BLOCK_WIDTHS = {96: 128, 64: 64}


def rows_fit(M: int, BM: int) -> bool:
    """Can blocks of ``BM`` rows tile ``M`` rows: ``M >= BM`` (a last block that does not fit
    is shifted inwards), or 9 to 15 rows in one row of 16-row blocks, the tile of ``a``
    zero-filled past M (``tcomp.lower.padding``) and the rows past M never stored: a decode
    step whose weights stored [N, K] no streaming rule takes (``weight_rows`` stops at 8
    rows). Not under 9: a warp's lanes hold 8 rows of the instruction's tile (lane / 4),
    and a thread loop over fewer rows than that would leave the warp short of lanes."""
    return M >= BM or (BM == MMA_M and M > MMA_M // 2)


def decode_tiles(M: int, N: int, K: int, sms: int) -> dict | None:
    """:func:`mma_warp_tiles`' sizes for 9 to 31 rows (a decode step; under 16, the blocks'
    rows past M zero-filled: :func:`rows_fit`), k whole (one kernel, the epilogue on the
    accumulators): 16-row blocks of 16 x 16 warp tiles in 4-stage
    rings, of the width (:data:`DECODE_BLOCK_WIDTHS`) whose blocks fill the waves of
    ``sms`` SMs best, among those that make at least 0.85 of a wave; None where none does
    (the caller cuts k into slices instead). At 12288 columns 96-wide blocks make one wave
    of 128 blocks where 64-wide ones make 1.45 waves, whose SMs with two blocks finish
    last: 39.8 us against 40.7 us (H100, ``benchmarks/decode_rows.py``); at 8192 columns
    64-wide blocks make one wave. k steps of 128 for 96-wide blocks and 64 for 64-wide
    ones, shorter where K is (:func:`decode_k_step`)."""
    if M >= 32 or not rows_fit(M, 16):
        return None

    def blocks(width: int) -> int:
        return -(-M // 16) * -(-N // width)

    def fullness(width: int) -> float:
        return blocks(width) / (-(-blocks(width) // sms) * sms)

    widths = [width for width in DECODE_BLOCK_WIDTHS if N >= width and blocks(width) >= 0.85 * sms]
    if not widths:
        return None
    width = max(widths, key=fullness)
    return dict(BM=16, BN=width, BK=decode_k_step(K, DECODE_BLOCK_WIDTHS[width]), WM=16, WN=16, stages=4)


def decode_k_step(K: int, longest: int = 64) -> int:
    """The k step of a decode step's tiles: ``longest`` where K holds it, else the longest
    of 64, 32 and 16 that K holds (16 where K is shorter: its one step padded with zeros)."""
    return next((step for step in (longest, 64, 32) if K >= step), 16)


class MmaTiling(Rule):
    """A product of 16-bit floats into float32 on the tensor cores: BM x BN blocks of
    WM x WN warp tiles of ``mma.sync.m16n8k16`` tiles (:func:`mma_warp_tiles`), k steps
    of BK staged in shared memory (cp.async rings of ``stages`` tiles, or one tile), the
    blocks launched row by row or (``rows_fastest``) column by column; where the output's
    blocks leave SMs idle, k in ``split_k`` slices on ``blockIdx.z``, added afterwards
    (``tensor_core_slices``)."""

    name = "mma_tiling"

    defaults = {"split_k": 1}

    def applies(self, group, space):
        product = product_stage(group, any_layout=True)
        return ("mma_m16n8k16" in space.target.matrix_instructions and product is not None
                and operands_of_16_bits(group, product[0]))

    def choices(self, group, space):
        return {"BM": [16, 64, 128], "BN": [32, 64, 96, 128, 256], "BK": [16, 32, 64, 128], "WM": [16, 32, 64],
                "WN": [16, 32, 64], "stages": [0, 3, 4], "rows_fastest": [False, True], "split_k": [1, 2, 4, 8]}

    def seeds(self, group, space):
        """:func:`decode_tiles` (k whole) where they apply."""
        *_, M, N = space.stages[group.anchor].shape
        K = space.stages[product_stage(group, any_layout=True)[0]].op.reduce_axis[0].extent
        tiles = decode_tiles(M, N, K, space.target.sms)
        return [] if tiles is None else [dict(tiles, rows_fastest=False, split_k=1)]

    def valid(self, group, space, p):
        *_, M, N = space.stages[group.anchor].shape
        K = space.stages[product_stage(group, any_layout=True)[0]].op.reduce_axis[0].extent
        # NOTE: a K that BK does not divide, or under one k step, is padded with zeros (tcomp.lower.padding)
        if p["BM"] % p["WM"] or p["BN"] % p["WN"] or (K < p["BK"] and p["BK"] > MMA_K) or not rows_fit(M, p["BM"]) \
                or N < p["BN"]:
            return False
        threads = 32 * (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
        # a fill's 16-byte vectors (eight 16-bit values) in whole warps: the threads may not divide
        # them (16 x 128 tiles of A on 6 warps: the second pass on 2), but no warp is split
        warp_fill = 8 * 32
        tiles = max(1, p["stages"])
        shared = (p["BM"] * (p["BK"] + MMA_PAD) + p["BK"] * (p["BN"] + MMA_PAD)) * 2 * tiles
        return (threads <= 512 and (p["BM"] * p["BK"]) % warp_fill == 0 and (p["BK"] * p["BN"]) % warp_fill == 0
                and shared <= space.target.smem_per_block
                and (not p["stages"] or not group.staged)
                and tensor_core_slices_valid(group, space, p, p["BM"], p["BN"], p["BK"]))

    def apply(self, s, group, p):
        product, a, b = product_stage(group, any_layout=True)
        out, tiled = tensor_core_slices(s, group, product, p["split_k"])
        mma_warp_tiles(s, out, tiled, a, b, BM=p["BM"], BN=p["BN"],
                       BK=p["BK"], WM=p["WM"], WN=p["WN"], stages=p["stages"],
                       rows_fastest=p.get("rows_fastest", False))


__all__ = ["DECODE_BLOCK_WIDTHS", "MMA_PAD", "MmaTiling", "decode_k_step", "decode_tiles", "mma_warp_tiles",
           "rows_fit"]
