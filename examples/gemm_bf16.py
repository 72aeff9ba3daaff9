"""A bfloat16 matrix product accumulated in float32, on the tensor cores: C = A @ W.

The schedule tiles C into blocks, the blocks into warp tiles, and each warp tile into
16 x 8 tiles of ``mma.sync.m16n8k16`` (``s[T].tensorize``): every lane of a warp holds
the four accumulators the instruction's layout gives it, and each k step of 16 is one
instruction per 16 x 8 tile. A and W are staged through shared memory a k step of BK at a
time. Operands reach the instruction through plain shared-memory loads packed two to a
register (no ldmatrix, no cp.async pipeline yet).

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


def mma_warp_tiles(s, out, product, a, b, BM=128, BN=128, BK=32, WM=64, WN=32):
    """``out`` (the product itself or an elementwise consumer of it) in BM x BN blocks of
    WM x WN warp tiles, each a grid of 16 x 8 ``mma_m16n8k16`` tiles: lane ``l`` of a warp
    holds rows ``8 * r + l // 4`` and columns ``2 * (l % 4) + c`` of each (r, c in 0, 1),
    accumulated in registers over k steps of 16. ``a`` and ``b`` are staged in shared
    tiles of BM x BK and BK x BN, filled by all the block's threads."""
    M, N = out.shape
    K = s[product].op.reduce_axis[0].extent
    if M % MMA_M or N % MMA_N or K % BK or BK % MMA_K:
        raise tc.ScheduleError(f"the mma tiles need M a multiple of {MMA_M}, N of {MMA_N} and K of BK = {BK} "
                               f"(a multiple of {MMA_K}); the shape is {M} x {N} x {K}")
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
        rest, thread = s[cache].split(flat, 32 * warps)
        ty, tx = s[cache].split(thread, 32)
        s[cache].bind(ty, "threadIdx.y")
        s[cache].bind(tx, "threadIdx.x")
        s[cache].unroll(rest)
    s[acc].tensorize(ki, "mma_m16n8k16")


def schedule(s, out):
    """128 x 128 blocks of eight 64 x 32 warp tiles (k steps of 32); 64 x 64 blocks of
    four 32 x 32 warp tiles where the output is smaller than 128 x 128."""
    M, N = out.shape
    if M >= 128 and N >= 128:
        mma_warp_tiles(s, out, "C", "A", "W", BM=128, BN=128, BK=32, WM=64, WN=32)
    else:
        mma_warp_tiles(s, out, "C", "A", "W", BM=64, BN=64, BK=32, WM=32, WN=32)
