"""A bfloat16 matrix product accumulated in float32, on the tensor cores: C = A @ W.

The schedule tiles C into blocks, the blocks into warp tiles, and each warp tile into
16 x 8 tiles of ``mma.sync.m16n8k16`` (``s[T].tensorize``): every lane of a warp holds
the four accumulators the instruction's layout gives it, and each k step of 16 is one
instruction per 16 x 8 tile. A and W are staged through shared memory a k step of BK at a
time, through 3-stage cp.async rings of 16-byte copies. A's operand registers are single
32-bit shared loads (two consecutive k); B's are two 16-bit loads side by side (no
ldmatrix yet).

    tcomp check examples/gemm_bf16.py
    tcomp bench examples/gemm_bf16.py          # on a GPU
"""

import tcomp as tc

#: the instruction's tile: rows, columns, k
MMA_M, MMA_N, MMA_K = 16, 8, 16


def algorithm(M=4096, N=4096, K=4096):
    """C = A @ W with A, W in bfloat16 and C in float32."""
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    return tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[k, j], "float32"),
                                                  axis=k), name="C")


def mma_warp_tiles(s, out, product, a, b, BM=128, BN=128, BK=32, WM=64, WN=32, vector=8, stages=0):
    """``out`` (the product itself or an elementwise consumer of it) in BM x BN blocks of
    WM x WN warp tiles, each a grid of 16 x 8 ``mma_m16n8k16`` tiles: lane ``l`` of a warp
    holds rows ``8 * r + l // 4`` and columns ``2 * (l % 4) + c`` of each (r, c in 0, 1),
    accumulated in registers over k steps of 16. ``a`` and ``b`` are staged in shared
    tiles of BM x BK and BK x BN, filled by all the block's threads ``vector`` elements
    (16 bytes) at a time; with ``stages`` (3 or more) the tiles are cp.async rings of
    that many k steps."""
    M, N = out.shape
    K = s[product].op.reduce_axis[0].extent
    if M < BM or N < BN or K % BK or BK % MMA_K:
        raise tc.ScheduleError(f"the mma tiles need M >= BM = {BM}, N >= BN = {BN} (a last block that does not fit "
                               f"is shifted inwards) and K a multiple of BK = {BK}, itself a multiple of {MMA_K}; "
                               f"the shape is {M} x {N} x {K}")
    acc = s.cache_write(product, "local") if product == out.name else s[product].op.output
    a_shared = s.cache_read(a, "shared", [acc])
    b_shared = s.cache_read(b, "shared", [acc])
    i, j = s[out].axis
    bi, bj, ii, jj = s[out].tile(i, j, BM, BN)
    wi, ii = s[out].split(ii, WM)
    wj, jj = s[out].split(jj, WN)
    mi, ii = s[out].split(ii, MMA_M)
    nj, jj = s[out].split(jj, MMA_N)
    row_half, group = s[out].split(ii, 8)
    t, col_half = s[out].split(jj, 2)
    s[out].reorder(bi, bj, wi, wj, group, t, mi, nj, row_half, col_half)
    warp = s[out].fuse(wi, wj)
    lane = s[out].fuse(group, t)
    s[out].bind(bi, "blockIdx.y")
    s[out].bind(bj, "blockIdx.x")
    s[out].bind(warp, "threadIdx.y")
    s[out].bind(lane, "threadIdx.x")
    for ax in (mi, nj, row_half, col_half):
        s[out].unroll(ax)
    s[acc].compute_at(s[out], lane)
    (k,) = s[acc].reduce_axis
    ko, ki = s[acc].split(k, BK)
    kt, ki = s[acc].split(ki, MMA_K)
    ci, cj = s[acc].axis
    tile_i, reg_i = s[acc].split(ci, 2)
    tile_j, reg_j = s[acc].split(cj, 2)
    s[acc].reorder(ko, kt, tile_i, tile_j, ki, reg_i, reg_j)
    for ax in (kt, tile_i, tile_j, reg_i, reg_j):
        s[acc].unroll(ax)
    warps = (BM // WM) * (BN // WN)
    for cache in (a_shared, b_shared):
        s[cache].compute_at(s[acc], ko)
        x, y = s[cache].axis
        flat = s[cache].fuse(x, y)
        if vector > 1:
            flat, lanes = s[cache].split(flat, vector)
            s[cache].vectorize(lanes)
        rest, thread = s[cache].split(flat, 32 * warps)
        ty, tx = s[cache].split(thread, 32)
        s[cache].bind(ty, "threadIdx.y")
        s[cache].bind(tx, "threadIdx.x")
        s[cache].unroll(rest)
        if stages:
            s[cache].pipeline(stages)
    s[acc].tensorize(ki, "mma_m16n8k16")


def mma_tiles_for(M: int, N: int, K: int) -> dict | None:
    """``mma_warp_tiles``' sizes for an M x N x K product: 128 x 128 blocks of four 64 x 64
    warp tiles (the fastest of ``benchmarks/gemm_bf16.py``'s variants on the H200), smaller
    ones for smaller outputs, k steps of 32 (16 where K is an odd multiple of 16) in
    3-stage rings; None where K is not a multiple of 16 or the output is under 32 x 32."""
    if K % MMA_K or M < 32 or N < 32:
        return None
    BK = 32 if K % 32 == 0 else 16
    if M >= 128 and N >= 128:
        return dict(BM=128, BN=128, BK=BK, WM=64, WN=64, stages=3)
    if M >= 64 and N >= 64:
        return dict(BM=64, BN=64, BK=BK, WM=32, WN=32, stages=3)
    return dict(BM=32, BN=32, BK=BK, WM=32, WN=32, stages=3)


def schedule(s, out):
    """The product on the tensor cores, tile sizes from :func:`mma_tiles_for`."""
    M, N = out.shape
    K = s["C"].op.reduce_axis[0].extent
    tiles = mma_tiles_for(M, N, K)
    if tiles is None:
        raise tc.ScheduleError(f"the mma schedule needs K a multiple of {MMA_K} and an output of at least 32 x 32; "
                               f"the shape is {M} x {N} x {K}")
    mma_warp_tiles(s, out, "C", "A", "W", **tiles)
