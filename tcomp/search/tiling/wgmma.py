"""A product of 16-bit floats on Hopper's warpgroup instructions
(``wgmma.mma_async.m64nNk16``): the schedule helper :func:`wgmma_tiles` (also used by
the examples) and the rule :class:`WgmmaTiling` that offers it to the search on targets
that have the instructions, within their register file and shared memory."""

from __future__ import annotations

import math

from ...dtypes import itemsize
from ...errors import ScheduleError
from ...target import get_target
from ...target.instructions import WARPGROUP, WGMMA_K, WGMMA_M
from ...target.storage import SWIZZLE_ALIGNMENT
from .base import Rule
from .fills import blocked_fill, cooperative_fill, over_the_threads
from .products import (aligned_lanes, copied_asynchronously, copied_by_tma, operands_of_16_bits, product_stage,
                       staged_blocks)
from .split_k import tensor_core_slices, tensor_core_slices_valid

#: registers a wgmma thread needs besides its accumulators (ptxas: 118 with 64 of them)
WGMMA_OTHER_REGISTERS = 56
#: the same in a warp-specialized kernel compiled to its launch bounds (ptxas: 154 with
#: 128 of them for 128 x 256 blocks, 168 for the FFN's epilogue)
SPECIALIZED_OTHER_REGISTERS = 40


def wgmma_tiles(s, out, product, a, b, BM=128, BN=128, BK=64, stages=4, rows_fastest=False, swizzle=True,
                in_flight=1, stage_output=None, copy="cp.async", specialized=False, group_rows=0, persistent=0):
    """``out`` (the product itself or an elementwise consumer of it) in BM x BN blocks,
    each a column of BM / 64 warpgroups (``threadIdx.y``) that compute 64 x BN tiles with
    Hopper's ``wgmma.mma_async.m64n{BN}k16``: thread t of a warpgroup holds rows
    ``16 * (t // 32) + (t % 32) // 4 + 8 * rh`` and columns ``8 * nj + 2 * (t % 4) + c``
    of its tile (rh, c in 0, 1), BN / 2 float32 accumulators. ``a`` and ``b`` are staged
    in shared tiles of BM x BK and BK x BN stored in 8 x 8 blocks, the layout the
    instruction reads through its descriptors: with ``swizzle`` the 128-byte swizzle
    (``storage_swizzle``; BK and BN multiples of 64), filled row by row 16 bytes a thread,
    else 8 x 8 blocks (``storage_blocks``) filled as :func:`blocked_fill` says; with
    ``stages`` (2 or more) they are cp.async rings of that many k steps (16-byte copies, or
    narrower where an operand's rows are not aligned to 16 bytes, :func:`aligned_lanes`;
    an operand whose rows allow no copy of 4 bytes is filled anew each k step instead;
    a k step past the end of K reads tiles padded with zeros), and each k step's
    chain of instructions may run on while the next one is issued: ``in_flight`` chains
    (at most ``stages - 2``) are left running at the end of a k step, the copies going
    that many slots further behind (``pipeline(stages, reader_lag)``). A leading axis of
    the product (SwiGLU's stacked projections) is computed in the same k loop, one
    instruction per k step and slice; a leading axis of ``out`` is bound to
    ``blockIdx.z`` (split-K slices). ``rows_fastest`` as in :func:`mma_warp_tiles`;
    ``group_rows`` instead launches the blocks in groups of that many block rows
    (``blockIdx.y``), each group column by column (``blockIdx.x``), so that the blocks
    running together share fewer rows of A than a whole column of blocks does (Triton's
    grouped order; a group past the last block row stores nothing). ``persistent`` (a
    number of blocks, one an SM) launches that many blocks instead of one a tile, each
    taking the output's tiles ``blockIdx.x``, ``blockIdx.x + persistent``, ... in the
    launch order above (a serial loop around the k loop; the tiles past the output in the
    last round store nothing); a warp-specialized ring's producer then fills the next
    tile's slots while the consumers store the last one.

    With ``stage_output`` the epilogue writes the block's outputs into a shared tile
    (``cache_write``, its rows padded by 16 bytes against bank conflicts), and after a
    barrier the block copies the tile to ``out`` in 16-byte stores, whole rows of sectors:
    the fragment's own stores of an output narrower than 4 bytes (bf16, int8) leave
    32-byte sectors partly written. The tile takes the bytes of the rings, which the k
    loop is done with by then (``tcomp.lower.shared_reuse`` adds the barrier). None (the
    default) stages such an output where the tile fits shared memory
    (:func:`output_staged`).

    ``copy="tma"`` fills the rings by TMA copies instead (``pipeline(copy="tma")``: the
    block's first thread copies each tile in boxes of 128-byte rows, which land in the
    swizzle, each tile stored 128-byte column after column, ``storage_swizzle(panels=
    True)``), where both operands' rows start 16 bytes apart; else by cp.async. With
    ``specialized`` as well a producer warpgroup of its own issues the TMA copies and
    the warpgroups computing release the slots through mbarriers
    (``pipeline(specialized=True)``, ``tcomp.lower.warp_roles``)."""
    *lead, M, N = out.shape
    if len(lead) > 1:
        raise ScheduleError(f"wgmma_tiles tiles the last two axes of {out.name} and binds one axis ahead of them "
                            f"to blockIdx.z; {out.name} has {len(out.shape)} axes")
    K = s[product].op.reduce_axis[0].extent
    if swizzle and (BK % 64 or BN % 64):
        raise ScheduleError(f"the 128-byte swizzle stores rows of 64 16-bit values: BK and BN must be multiples of 64; "
                            f"they are {BK} and {BN}")
    if BM % WGMMA_M or BN % 8 or not 8 <= BN <= 256 or M < BM or N < BN or BK % WGMMA_K:
        raise ScheduleError(f"the wgmma tiles need BM a multiple of {WGMMA_M}, BN a multiple of 8 up to 256, "
                            f"M >= BM, N >= BN (a last block that does not fit is shifted inwards) and BK a multiple "
                            f"of {WGMMA_K} (a k step past K is padded with zeros); BM = {BM}, BN = {BN}, BK = {BK} "
                            f"and the shape is {M} x {N} x {K}")
    if stage_output is None:
        stage_output = output_staged(out, product, BM, BN, BK, stages, beside_rings=bool(persistent))
    writer = s.cache_write(out, "shared") if stage_output else None
    acc, a_shared, b_shared, (bi, bj, ii, jj) = staged_blocks(s, out, product, a, b, BM, BN)
    if persistent:
        tiles = -(-M // BM) * -(-N // BN)
        if not 0 < persistent <= tiles:
            raise ScheduleError(f"persistent={persistent}: a persistent launch takes from 1 block to one a tile; "
                                f"{M} x {N} in {BM} x {BN} blocks is {tiles} tiles")
        if group_rows:
            group, bi = s[out].split(bi, group_rows)
            s[out].reorder(group, bj, bi, ii, jj)
            tile = s[out].fuse(s[out].fuse(group, bj), bi)
        else:
            outer, inner = (bj, bi) if rows_fastest else (bi, bj)
            s[out].reorder(outer, inner, ii, jj)
            tile = s[out].fuse(outer, inner)
        rounds, blocks = s[out].split(tile, persistent)
        s[out].reorder(blocks, rounds, ii, jj)
        s[out].bind(blocks, "blockIdx.x")
        bj = rounds  # the innermost loop over tiles, where a tile's epilogue is computed
    elif group_rows:
        group, bi = s[out].split(bi, group_rows)
        s[out].reorder(group, bj, bi, ii, jj)
        bj = s[out].fuse(bj, bi)
        s[out].bind(bj, "blockIdx.x")
        s[out].bind(group, "blockIdx.y")
    else:
        s[out].bind(bi, "blockIdx.x" if rows_fastest else "blockIdx.y")
        s[out].bind(bj, "blockIdx.y" if rows_fastest else "blockIdx.x")
    fragments = out
    if writer is not None:
        _copy_out(s, out, writer, bj, ii, jj, BM)
        fragments = writer
        *_, ii, jj = s[writer].axis
    group_row, ii = s[fragments].split(ii, WGMMA_M)
    warp, ii = s[fragments].split(ii, 16)
    row_half, quad_row = s[fragments].split(ii, 8)
    col_block, jj = s[fragments].split(jj, 8)
    quad_col, col_half = s[fragments].split(jj, 2)
    s[fragments].reorder(group_row, warp, quad_row, quad_col, col_block, row_half, col_half)
    thread = s[fragments].fuse(s[fragments].fuse(warp, quad_row), quad_col)
    s[fragments].bind(group_row, "threadIdx.y")
    s[fragments].bind(thread, "threadIdx.x")
    for ax in (col_block, row_half):
        s[fragments].unroll(ax)
    s[fragments].vectorize(col_half)
    s[acc].compute_at(s[fragments], thread)
    (k,) = s[acc].reduce_axis
    ko, ki = s[acc].split(k, BK)
    kt, ki = s[acc].split(ki, WGMMA_K)
    *stacked, ci, cj = s[acc].axis
    s[acc].reorder(ko, kt, *stacked, ki, ci, cj)
    for ax in (kt, *stacked, ci, cj):
        s[acc].unroll(ax)
    caches = (a_shared, b_shared)
    tma = copy == "tma" and swizzle and stages and all(aligned_lanes(c) * itemsize(c.dtype) == 16 for c in caches)
    for cache in caches:
        s[cache].compute_at(s[acc], ko)
        lanes = aligned_lanes(cache)
        if swizzle:
            s[cache].storage_swizzle(**({"panels": True} if tma else {}))  # NOTE: defaults left out of the trace
            cooperative_fill(s, cache, BM // WGMMA_M, WARPGROUP, lanes)
        else:
            s[cache].storage_blocks(8, 8)
            blocked_fill(s, cache, BM // WGMMA_M, WARPGROUP, lanes)
        if stages and (tma or copied_asynchronously(cache, lanes)):
            tma_options = {"copy": "tma", **({"specialized": True} if specialized else {})} if tma else {}
            s[cache].pipeline(stages, reader_lag=min(in_flight, stages - 2), **tma_options)
    s[acc].tensorize(ki, f"wgmma_m64n{BN}k16")


def row_group(block_rows: int) -> int:
    """Block rows a group of :func:`wgmma_tiles`' grouped launch order holds for a column
    of ``block_rows`` blocks: 0 (the column whole) up to 24; else the divisor from 12 to 24
    nearest 16, so that no group has rows past the output (their blocks would run the k
    loop on zeros), or 16. On an H100 groups of 16 or 19 block rows took 0.198 ms against
    0.206 for a column first at 4096^3 (cp.async), 1.528 against 1.534 ms at 8192^3 (TMA
    and a producer warpgroup), 1.058 against 1.072 ms for the FFN projection at 7239 rows
    (57 block rows); groups of 8 lost 4% at 8192^3 and 15% at 7239 rows, where 7 of their
    64 rows were past the output (BENCHMARKS.md, 28th session)."""
    if block_rows <= 24:
        return 0
    divisors = [g for g in range(12, 25) if block_rows % g == 0]
    return min(divisors, key=lambda g: (abs(g - 16), g)) if divisors else 16


#: bytes of padding after each row of a staged output tile (keeps 16-byte rows aligned)
OUTPUT_ROW_PAD = 16


def output_staged(out, product, BM: int, BN: int, BK: int, stages: int, target=None,
                  beside_rings: bool = False) -> bool:
    """Does :func:`wgmma_tiles` stage ``out``'s tile in shared memory by default? Where
    ``out`` is a stage after the product whose elements are under 4 bytes (a pair of them
    leaves a 32-byte sector partly written) and its padded tile fits ``target``'s
    (default: ``DEFAULT_TARGET``) shared memory, in the rings' bytes (``beside_rings``:
    in bytes of its own, a persistent block's)."""
    size = itemsize(out.dtype)
    if out.name == product or size >= 4:
        return False
    return shared_bytes(BM, BN, BK, stages, size, beside_rings) <= get_target(target).smem_per_block


def shared_bytes(BM: int, BN: int, BK: int, stages: int, output_itemsize: int = 0, beside_rings: bool = False) -> int:
    """Shared memory of :func:`wgmma_tiles`' blocks: the rings of 16-bit operand tiles on
    the swizzle's alignment; a staged output tile (``output_itemsize`` > 0, its rows
    padded) takes the rings' bytes once the k loop is done with them
    (``tcomp.lower.shared_reuse``), so the block needs the larger of the two; in a
    persistent block (``beside_rings``) the rings fill with the next tile's k steps
    meanwhile, so it needs both."""
    rings = (BM + BN) * BK * 2 * max(stages, 1)
    tile = BM * (BN * output_itemsize + OUTPUT_ROW_PAD) if output_itemsize else 0
    return (rings + tile if beside_rings else max(rings, tile)) + SWIZZLE_ALIGNMENT


def _copy_out(s, out, writer, block_axis, rows, cols, BM: int) -> None:
    """``writer`` (the epilogue into a shared tile) computed at ``out``'s ``block_axis``,
    and ``out``'s rows x cols of the block copied from it by all the block's threads,
    16 bytes a thread and store, consecutive threads along a row."""
    s[writer].compute_at(s[out], block_axis)
    *_, columns = s[writer].axis
    s[writer].storage_pad(columns, OUTPUT_ROW_PAD // itemsize(writer.dtype))
    flat = s[out].fuse(rows, cols)
    flat, lanes = s[out].split(flat, 16 // itemsize(out.dtype))
    s[out].vectorize(lanes)
    over_the_threads(s, out, flat, BM // WGMMA_M, WARPGROUP)


class WgmmaTiling(Rule):
    """A product of 16-bit floats into float32 on Hopper's warpgroup instructions: BM x BN
    blocks of BM / 64 warpgroups of ``wgmma.m64n{BN}k16`` (:func:`wgmma_tiles`), k steps of
    BK in cp.async rings of ``stages`` tiles in the 128-byte swizzle, one k step's chain
    left running while the next is issued, the blocks launched row by row or
    (``rows_fastest``) column by column, a whole column or (``grouped``) groups of
    :func:`row_group` block rows at a time; where the output's blocks leave SMs idle, k in
    ``split_k`` slices on ``blockIdx.z``, added afterwards (``tensor_core_slices``); the
    rings filled by cp.async or (``copy="tma"``, where the operands are 2-D tensors whose
    rows start 16 bytes apart) by TMA boxes, which (``specialized``) a producer warpgroup
    of its own may issue; such a kernel may also run ``persistent``: one block an SM
    taking the tiles in turn, where the tiles are more than one wave and no slices of k,
    its producer filling the next tile's slots while the consumers store the last one
    (``persistent``: the target's SMs; its staged output tile then needs bytes of its own
    beside the rings)."""

    name = "wgmma_tiling"

    defaults = {"split_k": 1, "copy": "cp.async", "specialized": False, "grouped": False, "persistent": 0}

    def applies(self, group, space):
        product = product_stage(group, any_layout=True)
        return ("wgmma" in space.target.matrix_instructions and product is not None
                and operands_of_16_bits(group, product[0]))

    def choices(self, group, space):
        return {"BM": [64, 128, 192, 256], "BN": [64, 128, 192, 256], "BK": [64, 128], "stages": [3, 4],
                "rows_fastest": [False, True], "grouped": [False, True], "split_k": [1, 2, 4, 8],
                "copy": ["cp.async", "tma"], "specialized": [False, True], "persistent": [0, space.target.sms]}

    def seeds(self, group, space):
        """Where 128 x 256 blocks (of all the products of a batch) give nine SMs in ten a
        block, the wide tiling of ``examples/gemm_bf16.py``: k steps of 64 in 4-stage
        rings, a column of blocks first where the output is at least as wide as tall, in
        groups of :func:`row_group` block rows; TMA boxes from a producer warpgroup first,
        then cp.async. On an H100 at
        4096^3 with a bf16 C they took 0.185 and 0.186 ms (cuBLAS 0.179), where a 16-trial
        search without them found 0.213 ms at best (BENCHMARKS.md, 30th session)."""
        *batch, M, N = space.stages[group.anchor].shape
        BM, BN = 128, 256
        if math.prod(batch) * -(-M // BM) * -(-N // BN) < 0.9 * space.target.sms:  # a batch's products count too
            return []
        rows_fastest = N >= M
        wide = dict(BM=BM, BN=BN, BK=64, stages=4, rows_fastest=rows_fastest, split_k=1, persistent=0,
                    grouped=bool(rows_fastest and row_group(-(-M // BM))))
        return [dict(wide, copy="tma", specialized=True), dict(wide, copy="cp.async", specialized=False)]

    def valid(self, group, space, p):
        *_, M, N = space.stages[group.anchor].shape
        K = space.stages[product_stage(group, any_layout=True)[0]].op.reduce_axis[0].extent
        # NOTE: a K that BK does not divide, or under one k step, is padded with zeros (tcomp.lower.padding)
        if (K < p["BK"] and p["BK"] > 64) or M < p["BM"] or N < p["BN"] or group.staged:
            return False
        if p.get("grouped") and not (p.get("rows_fastest") and p.get("split_k", 1) == 1
                                     and row_group(-(-M // p["BM"]))):
            return False  # groups of block rows: a column first, taller than one group, no slices of k
        if p.get("copy") == "tma" and not copied_by_tma(group):
            return False
        specialized = p.get("specialized", False)
        if specialized and p.get("copy") != "tma":
            return False
        persistent = p.get("persistent", 0)
        if persistent and not (specialized and p.get("split_k", 1) == 1
                               and -(-M // p["BM"]) * -(-N // p["BN"]) > space.target.sms):
            return False  # one block an SM pays only where a producer runs ahead, over more than one wave
        threads = WARPGROUP * (p["BM"] // WGMMA_M + specialized)  # a producer warpgroup of its own
        # NOTE: a specialized kernel is compiled to its launch bounds, which ptxas meets
        # with fewer registers besides the accumulators (154 a thread for 128 of them)
        registers = p["BN"] // 2 + (SPECIALIZED_OTHER_REGISTERS if specialized else WGMMA_OTHER_REGISTERS)
        # an output tile is staged only if it fits (beside the rings where the block is persistent)
        shared = shared_bytes(p["BM"], p["BN"], p["BK"], p["stages"])
        return (threads * registers <= space.target.regs_per_sm and shared <= space.target.smem_per_block
                and tensor_core_slices_valid(group, space, p, p["BM"], p["BN"], p["BK"]))

    def apply(self, s, group, p):
        product, a, b = product_stage(group, any_layout=True)
        out, tiled = tensor_core_slices(s, group, product, p["split_k"])
        M = out.shape[-2]
        wgmma_tiles(s, out, tiled, a, b, BM=p["BM"], BN=p["BN"], BK=p["BK"], stages=p["stages"],
                    rows_fastest=p.get("rows_fastest", False), copy=p.get("copy", "cp.async"),
                    specialized=p.get("specialized", False),
                    group_rows=row_group(-(-M // p["BM"])) if p.get("grouped") else 0,
                    persistent=p.get("persistent", 0))


__all__ = ["OUTPUT_ROW_PAD", "SPECIALIZED_OTHER_REGISTERS", "WGMMA_OTHER_REGISTERS", "WgmmaTiling", "output_staged", "row_group", "shared_bytes", "wgmma_tiles"]
