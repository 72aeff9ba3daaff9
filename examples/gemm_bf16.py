"""A bfloat16 matrix product accumulated in float32, on the tensor cores: C = A @ W.

The schedule tiles C into 128 x 256 blocks of two warpgroups, each computing a 64 x 256
tile with Hopper's ``wgmma.mma_async.m64n256k16`` (``s[T].tensorize``): every thread
holds the 128 accumulators the instruction's layout gives it, and each k step of 16 is one
instruction per warpgroup, reading A and W straight from shared memory. They are staged a
k step of 64 at a time through 4-stage cp.async rings of 16-byte copies into tiles in the
128-byte swizzle (``storage_swizzle``), one k step's instructions left running while the
next are issued (``tcomp.lower.warpgroup``), so that the copies run two k steps ahead.
0.229 ms at 4096^3 on the H200, 0.77x cuBLAS bf16 (BENCHMARKS.md). ``mma_sync`` is the
same product on ``mma.sync.m16n8k16`` warp tiles fed by ldmatrix (0.451 ms, 0.39x).

    tcomp check examples/gemm_bf16.py
    tcomp bench examples/gemm_bf16.py          # on a GPU
"""

import math

import tcomp as tc
from tcomp.target import H200
from tcomp.search.tiling import MMA_K, mma_warp_tiles, wgmma_tiles  # noqa: F401  (blocks, warp or warpgroup tiles)
from tcomp.search.tiling.mma_sync import decode_tiles
from tcomp.search.tiling.wgmma import row_group


def algorithm(M=4096, N=4096, K=4096):
    """C = A @ W with A, W in bfloat16 and C in float32."""
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    return tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[k, j], "float32"),
                                                  axis=k), name="C")


def mma_tiles_for(M: int, N: int, K: int) -> dict | None:
    """``mma_warp_tiles``' sizes for an M x N x K product: 128 x 128 blocks of four 64 x 64
    warp tiles in 4-stage rings, the blocks of a column of blocks launched together where
    the output is wider than tall (the fastest of ``benchmarks/gemm_bf16.py``'s and
    ``benchmarks/ffn_bf16.py``'s variants on the H200), smaller ones in 3-stage rings for
    smaller outputs, k steps of 32 (16 where K is an odd multiple of 16); for fewer than
    32 rows (a decode step) ``decode_tiles`` where 16-row blocks alone fill the SMs'
    waves (at 12288 columns 16 x 96 blocks of 16 x 16 warp tiles, k whole), else 16 x 128
    blocks of four 16 x 32 warp tiles (whose callers cut k into slices); k steps of 64 or
    128 in 4-stage rings (the weights stream through). A K that the k step does not divide is padded with zeros in
    its last step. None where the output is under 16 x 32."""
    if M < 16 or N < 32:
        return None
    BK = 16 if K <= 16 or K % 32 == 16 else 32
    if M < 32:
        decode_BK = 64 if K >= 64 else BK
        wide = N >= 128
        return decode_tiles(M, N, K, H200.sms) or dict(BM=16, BN=128 if wide else 32, BK=decode_BK, WM=16,
                                                       WN=32 if wide else 16, stages=4)
    if M >= 128 and N >= 128:
        # rows fastest where the output has more block columns than rows (a wide weight)
        return dict(BM=128, BN=128, BK=BK, WM=64, WN=64, stages=4, rows_fastest=N > M)
    if M >= 64 and N >= 64:
        return dict(BM=64, BN=64, BK=BK, WM=32, WN=32, stages=3)
    return dict(BM=32, BN=32, BK=BK, WM=32, WN=32, stages=3)


def required_mma_tiles(M: int, N: int, K: int) -> dict:
    """:func:`mma_tiles_for`, or a ``ScheduleError`` naming the shapes it needs."""
    tiles = mma_tiles_for(M, N, K)
    if tiles is None:
        raise tc.ScheduleError(f"the mma schedule needs an output of at least 16 x 32; the shape is {M} x {N} x {K} "
                               f"(`tcomp autoschedule` finds a schedule for any shape)")
    return tiles


def wgmma_tiles_for(M: int, N: int, K: int, stacked: int = 1, batch: int = 1) -> dict | None:
    """``wgmma_tiles``' sizes for an M x N x K product (``stacked`` products sharing the A
    tile, SwiGLU's two projections; ``batch`` products of their own, each its blocks,
    whose blocks count together): blocks of two warpgroups of 128 rows (64 where the
    output has fewer), k steps of 64 in cp.async rings in the 128-byte swizzle, one k
    step's chain of instructions left running while the next is issued, the blocks of a
    column launched together where the output is wider than tall (for 128 x 256 blocks,
    at least as wide as tall: at 4096^3 on an H100 0.195 ms against 0.205 ms, at 8192^3
    1.505 against 1.528, ``benchmarks/gemm_bf16.py --match "4 stages"``), in groups of
    16 to 24 block rows where a column has more (:func:`_ordered`). Where the output still
    gives nine SMs in ten a block and 4 stages of the tiles fit shared memory, 256 columns of
    ``wgmma.m64n256k16`` in 4-stage rings (one block an SM, copies two k steps ahead);
    else 128 columns (64 where the output has fewer) in 3-stage rings (two blocks an SM).
    On the H200 the wide blocks took 0.229 ms at 4096^3 against 0.275 ms, and the FFN
    projection 0.192 ms against 0.230 ms (``benchmarks/gemm_bf16.py``,
    ``benchmarks/ffn_bf16.py --variant``); at 2048 x 2048 x 8192 (128 blocks for 132 SMs)
    the search's 128 x 256 blocks took 0.108 ms on the H100 against 0.142 ms for 128 x 128.
    Where 192 x 192 blocks (three warpgroups of ``m64n192k16``) leave an SM less work in
    all its waves than 128 x 256 (333 rows of the FFN: 128 blocks, one wave, against 144
    in two), those. A K that 64 does not divide is padded with zeros in its last k step
    (its only one where K < 64). None where M or N is under 64."""
    if M < 64 or N < 64:
        return None
    BM, BK = (128 if M >= 128 else 64), 64
    wide_ring = 4 * (BM + stacked * 256) * BK * 2  # bytes of bfloat16 tiles in 4 stages
    if N >= 256 and wide_ring <= H200.smem_per_block and batch * blocks(M, N, BM, 256) >= 0.9 * H200.sms:
        if stacked == 1 and M >= 192 and \
                waves(M, N, 192, 192, batch) * 192 * 192 < waves(M, N, BM, 256, batch) * BM * 256:
            return _ordered(dict(BM=192, BN=192, BK=BK, stages=4), M, N > M)
        return _ordered(dict(BM=BM, BN=256, BK=BK, stages=4), M, N >= M)
    return _ordered(dict(BM=BM, BN=128 if N >= 128 else 64, BK=BK, stages=3), M, N > M)


def _ordered(tiles: dict, M: int, rows_fastest: bool) -> dict:
    """``tiles`` with the blocks' launch order: along a row, or a column first
    (``rows_fastest``), in groups of ``row_group`` block rows where a column has more
    than 24 blocks (``tcomp.search.tiling.wgmma.row_group`` says what they measured)."""
    group = row_group(-(-M // tiles["BM"])) if rows_fastest else 0
    return dict(tiles, rows_fastest=rows_fastest, **({"group_rows": group} if group else {}))


def blocks(M: int, N: int, BM: int, BN: int) -> int:
    """BM x BN blocks that cover an M x N output."""
    return math.ceil(M / BM) * math.ceil(N / BN)


def waves(M: int, N: int, BM: int, BN: int, batch: int = 1) -> int:
    """Rounds of the SMs (one block each) that BM x BN blocks of ``batch`` M x N outputs
    take."""
    return math.ceil(batch * blocks(M, N, BM, BN) / H200.sms)


def uses_wgmma(M: int, N: int, K: int, overrides: dict) -> bool:
    """Do the schedules run on wgmma (the default where :func:`wgmma_tiles_for` fits the
    shape; ``wgmma=0`` among ``overrides`` asks for mma.sync)?"""
    wanted = overrides.get("wgmma", 1)
    if wanted and wgmma_tiles_for(M, N, K) is None:
        if "wgmma" in overrides:
            raise tc.ScheduleError(f"the wgmma schedule needs M and N of at least 64; the product is "
                                   f"{M} x {N} x {K}")
        return False
    return bool(wanted)


def tensor_core_tiles(s, out, product: str, a: str, b: str, tiles: dict, overrides: dict) -> None:
    """``wgmma_tiles`` with :func:`wgmma_tiles_for`'s sizes where :func:`uses_wgmma`, else
    ``mma_warp_tiles`` with ``tiles`` (mma.sync); ``overrides`` (the benchmarks'
    ``--variant``) replace the sizes either way."""
    M, N = out.shape[-2:]
    K = s[product].op.reduce_axis[0].extent
    batch = math.prod(out.shape[:-2])  # products of their own (on blockIdx.z)
    stacked = math.prod(s[product].op.output.shape[:-2]) // batch  # products sharing a block's A tile
    sizes = {key: value for key, value in overrides.items() if key != "wgmma"}
    if uses_wgmma(M, N, K, overrides):
        tiles = {**wgmma_tiles_for(M, N, K, stacked, batch), **sizes}
        if "group_rows" not in sizes:  # the groups of the block rows asked for (none along a row)
            order = tiles.pop("rows_fastest")
            tiles = _ordered({key: value for key, value in tiles.items() if key != "group_rows"}, M, order)
        wgmma_tiles(s, out, product, a, b, **tiles)
    else:
        mma_warp_tiles(s, out, product, a, b, **{**tiles, **sizes})


def product_on_tensor_cores(s, out, product: str, a: str, b: str, tile_overrides: dict) -> None:
    """``out`` (the product ``product`` of ``a`` and ``b``, any layout the tilings take, a
    batch axis ahead included) on wgmma where the shape allows (:func:`wgmma_tiles_for`),
    else on mma.sync (:func:`mma_tiles_for`, or a ``ScheduleError`` naming the shapes it
    needs); ``wgmma=0`` among ``tile_overrides`` asks for mma.sync, the others replace tile
    sizes."""
    M, N = out.shape[-2:]
    K = s[product].op.reduce_axis[0].extent
    tiles = {} if uses_wgmma(M, N, K, tile_overrides) else required_mma_tiles(M, N, K)
    tensor_core_tiles(s, out, product, a, b, tiles, tile_overrides)


def schedule(s, out, **tile_overrides):
    """The product on the tensor cores (:func:`product_on_tensor_cores`)."""
    product_on_tensor_cores(s, out, "C", "A", "W", tile_overrides)


def mma_sync(s, out):
    """The product on mma.sync: :func:`schedule` with ``wgmma=0``."""
    schedule(s, out, wgmma=0)


SCHEDULES = {"schedule": schedule, "mma_sync": mma_sync}
