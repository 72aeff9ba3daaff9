"""A bfloat16 matrix product accumulated in float32, on the tensor cores: C = A @ W.

The schedule tiles C into blocks, the blocks into warp tiles, and each warp tile into
16 x 8 tiles of ``mma.sync.m16n8k16`` (``s[T].tensorize``): every lane of a warp holds
the four accumulators the instruction's layout gives it, and each k step of 16 is one
instruction per 16 x 8 tile. A and W are staged through shared memory a k step of BK at a
time, through 4-stage cp.async rings of 16-byte copies into tiles whose rows are padded by
16 bytes; the operand fragments come from them by ldmatrix (``tcomp.lower.fragments``).
0.443 ms at 4096^3 on the H200, 0.405x cuBLAS bf16 (BENCHMARKS.md).

    tcomp check examples/gemm_bf16.py
    tcomp bench examples/gemm_bf16.py          # on a GPU
"""

import tcomp as tc
from tcomp.search.rules import MMA_K, mma_warp_tiles  # noqa: F401  (blocks, warp tiles, mma.sync tiles)


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
    32 rows (a decode step) 16 x 128 blocks of four 16 x 32 warp tiles, k steps of 64 in
    4-stage rings (the weights stream through). None where K is not a multiple of 16 or
    the output is under 16 x 32."""
    if K % MMA_K or M < 16 or N < 32:
        return None
    BK = 32 if K % 32 == 0 else 16
    if M < 32:
        wide = N >= 128
        return dict(BM=16, BN=128 if wide else 32, BK=64 if K % 64 == 0 else BK, WM=16, WN=32 if wide else 16,
                    stages=4)
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
        raise tc.ScheduleError(f"the mma schedule needs K a multiple of {MMA_K} and an output of at least 16 x 32; "
                               f"the shape is {M} x {N} x {K}")
    return tiles


def schedule(s, out):
    """The product on the tensor cores, tile sizes from :func:`mma_tiles_for`."""
    M, N = out.shape
    mma_warp_tiles(s, out, "C", "A", "W", **required_mma_tiles(M, N, s["C"].op.reduce_axis[0].extent))
