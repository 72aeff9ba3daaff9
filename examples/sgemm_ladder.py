"""The SGEMM ladder's kernels (docs/references.md) as tcomp schedules of one fp32 matmul algorithm.

Each ``schedule_*`` function reproduces one rung of that ladder:
naive, coalesced, shared-memory blocking, 1D blocktiling, 2D blocktiling, 2D blocktiling
with a transposed A tile and vector loads, the same double buffered, and warptiling.
``schedule`` is the 2D blocktiling.

    tcomp check examples/sgemm_ladder.py
    python benchmarks/sgemm_ladder.py          # on a GPU
"""

import tcomp as tc


def algorithm(M=4096, N=4096, K=4096):
    """C = A @ B in float32."""
    A = tc.placeholder((M, K), "float32", name="A")
    B = tc.placeholder((K, N), "float32", name="B")
    k = tc.reduce_axis(K, name="k")
    return tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * B[k, j], axis=k), name="C")


def _register_accumulator(s, out):
    """Accumulate in registers (a ``float acc`` per output) and write C once."""
    CL = s.cache_write(out, "local")
    return CL


def _one_thread_per_element(s, out, row_thread, col_thread):
    """32x32 blocks, one thread per element of C, the rows on ``row_thread``."""
    CL = _register_accumulator(s, out)
    i, j = s[out].axis
    bi, bj, ti, tj = s[out].tile(i, j, 32, 32)
    block = {"threadIdx.x": "blockIdx.x", "threadIdx.y": "blockIdx.y"}
    s[out].bind(bi, block[row_thread])
    s[out].bind(bj, block[col_thread])
    s[out].bind(ti, row_thread)
    s[out].bind(tj, col_thread)
    s[CL].compute_at(s[out], tj)


def schedule_naive(s, out):
    """Kernel 1: one thread per element, threadIdx.x picks the row (uncoalesced)."""
    _one_thread_per_element(s, out, "threadIdx.x", "threadIdx.y")


def schedule_coalesced(s, out):
    """Kernel 2: consecutive threads own consecutive columns, so loads of B coalesce."""
    _one_thread_per_element(s, out, "threadIdx.y", "threadIdx.x")


def _cooperative_fill(s, cache, threads_y, threads_x, vector=1):
    """Spread a shared tile's fill over the block's threads, consecutive threads on
    consecutive elements of a row (coalesced); with ``vector`` > 1 each thread moves
    that many consecutive elements with one vector load (and store, where the tile's
    layout keeps them consecutive)."""
    a, b = s[cache].axis
    fused = s[cache].fuse(a, b)
    if vector > 1:
        fused, lanes = s[cache].split(fused, vector)
        s[cache].vectorize(lanes)
    rest, tid = s[cache].split(fused, threads_y * threads_x)
    ty, tx = s[cache].split(tid, threads_x)
    s[cache].bind(ty, "threadIdx.y")
    s[cache].bind(tx, "threadIdx.x")
    s[cache].unroll(rest)


def schedule_shared(s, out, tile=32):
    """Kernel 3: the block stages 32x32 chunks of A and B in shared memory."""
    CL = _register_accumulator(s, out)
    AS = s.cache_read("A", "shared", [CL])
    BS = s.cache_read("B", "shared", [CL])
    i, j = s[out].axis
    bi, bj, ti, tj = s[out].tile(i, j, tile, tile)
    s[out].bind(bi, "blockIdx.y")
    s[out].bind(bj, "blockIdx.x")
    s[out].bind(ti, "threadIdx.y")
    s[out].bind(tj, "threadIdx.x")
    s[CL].compute_at(s[out], tj)
    (k,) = s[CL].reduce_axis
    ko, ki = s[CL].split(k, tile)
    s[AS].compute_at(s[CL], ko)
    s[BS].compute_at(s[CL], ko)
    _cooperative_fill(s, AS, tile, tile)
    _cooperative_fill(s, BS, tile, tile)


def schedule_blocktile_1d(s, out, BM=64, BN=64, BK=8, TM=8):
    """Kernel 4: each thread computes TM vertically adjacent outputs."""
    CL = _register_accumulator(s, out)
    AS = s.cache_read("A", "shared", [CL])
    BS = s.cache_read("B", "shared", [CL])
    i, j = s[out].axis
    bi, bj, ii, tx = s[out].tile(i, j, BM, BN)
    ty, ri = s[out].split(ii, TM)
    s[out].reorder(bi, bj, ty, tx, ri)
    s[out].bind(bi, "blockIdx.y")
    s[out].bind(bj, "blockIdx.x")
    s[out].bind(ty, "threadIdx.y")
    s[out].bind(tx, "threadIdx.x")
    s[CL].compute_at(s[out], tx)
    ci, cj = s[CL].axis
    (k,) = s[CL].reduce_axis
    ko, ki = s[CL].split(k, BK)
    s[CL].reorder(ko, ki, ci, cj)
    s[CL].unroll(ci)
    s[AS].compute_at(s[CL], ko)
    s[BS].compute_at(s[CL], ko)
    _cooperative_fill(s, AS, BM // TM, BN)
    _cooperative_fill(s, BS, BM // TM, BN)
    s[out].unroll(ri)


def schedule_blocktile_2d(s, out, BM=128, BN=128, BK=8, TM=8, TN=8):
    """Kernel 5: each thread computes a TM x TN square from register copies of A and B."""
    CL = _register_accumulator(s, out)
    blocktile_2d(s, out, CL, "A", "B", BM, BN, BK, TM, TN)


def _k_steps(s, CL, AS, BS, AL, BL, BK, k_unroll=1):
    """The accumulator's loops inside a thread: k steps of BK, then each k, then the
    thread's outputs (unrolled, so they stay in registers). The shared tiles AS and BS
    are filled at each k step, the register fragments AL and BL at each k. With
    ``k_unroll`` > 1 the loop over the k of a step is split by it and the inner part
    unrolled too (fewer loop branches and index updates per FMA; the whole step
    unrolled takes Numba minutes to compile)."""
    ci, cj = s[CL].axis
    (k,) = s[CL].reduce_axis
    ko, ki = s[CL].split(k, BK)
    s[CL].reorder(ko, ki, ci, cj)
    s[CL].unroll(ci)
    s[CL].unroll(cj)
    if k_unroll > 1:
        ki_o, ki = s[CL].split(ki, k_unroll)
        s[CL].unroll(ki)
    s[AS].compute_at(s[CL], ko)
    s[BS].compute_at(s[CL], ko)
    s[AL].compute_at(s[CL], ki)
    s[BL].compute_at(s[CL], ki)
    for L in (AL, BL):
        for ax in s[L].axis:
            s[L].unroll(ax)


def blocktile_2d(s, out, CL, a, b, BM=128, BN=128, BK=8, TM=8, TN=8, transpose_a=False, k_unroll=1,
                 vector=1, double_buffer=False):
    """The 2D blocktiling schedule of ``out``, whose matmul accumulates in stage ``CL``
    (computed in registers at each thread's tile) from inputs named ``a`` and ``b``.
    Anything between CL and out (an epilogue) must be inlined into out."""
    AS = s.cache_read(a, "shared", [CL])
    BS = s.cache_read(b, "shared", [CL])
    AL = s.cache_read(AS, "local", [CL])
    BL = s.cache_read(BS, "local", [CL])
    i, j = s[out].axis
    bi, bj, ii, jj = s[out].tile(i, j, BM, BN)
    ty, ri = s[out].split(ii, TM)
    tx, rj = s[out].split(jj, TN)
    s[out].reorder(bi, bj, ty, tx, ri, rj)
    s[out].bind(bi, "blockIdx.y")
    s[out].bind(bj, "blockIdx.x")
    s[out].bind(ty, "threadIdx.y")
    s[out].bind(tx, "threadIdx.x")
    s[out].unroll(ri)
    s[out].unroll(rj)
    s[CL].compute_at(s[out], tx)
    _k_steps(s, CL, AS, BS, AL, BL, BK, k_unroll)
    if transpose_a:
        row, kk = s[AS].axis
        s[AS].storage_order(kk, row)
    _cooperative_fill(s, AS, BM // TM, BN // TN, vector)
    _cooperative_fill(s, BS, BM // TM, BN // TN, vector)
    if double_buffer:
        s[AS].double_buffer()
        s[BS].double_buffer()


def schedule_vectorized(s, out, BK=8):
    """Kernel 6: A's tile stored transposed in shared memory, so each thread's TM values
    of one k are contiguous and load as 128-bit words, like B's."""
    CL = _register_accumulator(s, out)
    blocktile_2d(s, out, CL, "A", "B", BK=BK, transpose_a=True, vector=4)


def schedule_double_buffered(s, out):
    """Kernel 6 with the next k step's tiles loaded into registers while the current
    ones are multiplied (the ladder's later kernels prefetch the same way)."""
    CL = _register_accumulator(s, out)
    blocktile_2d(s, out, CL, "A", "B", transpose_a=True, vector=4, double_buffer=True)


def schedule_vectorized_bk16(s, out):
    """Kernel 9's autotuned shape on the A6000: kernel 6 with a k step of 16."""
    schedule_vectorized(s, out, BK=16)


def schedule_warptiled(s, out, BM=128, BN=128, BK=16, WM=64, WN=64, WNITER=4, TM=8, TN=4, k_unroll=4):
    """Kernel 10: each warp computes a WM x WN piece of the block tile, and each of its
    threads a TM x TN sub-tile at every WSUBN-th column of it (WNITER of them): the
    warp's lanes read neighbouring fragments of shared memory together. The thread's
    strided sub-tiles are kept compact in registers. The k loop of a step is unrolled
    by ``k_unroll`` (4: +10% on the H200 over 1, see BENCHMARKS.md)."""
    CL = _register_accumulator(s, out)
    AS = s.cache_read("A", "shared", [CL])
    BS = s.cache_read("B", "shared", [CL])
    AL = s.cache_read(AS, "local", [CL])
    BL = s.cache_read(BS, "local", [CL])
    wmiter = WM * WN // (32 * TM * TN * WNITER)
    wsubm, wsubn = WM // wmiter, WN // WNITER
    i, j = s[out].axis
    bi, bj, ii, jj = s[out].tile(i, j, BM, BN)
    wi, iw = s[out].split(ii, WM)
    wj, jw = s[out].split(jj, WN)
    wsi, isub = s[out].split(iw, wsubm)
    wsj, jsub = s[out].split(jw, wsubn)
    ti, ri = s[out].split(isub, TM)
    tj, rj = s[out].split(jsub, TN)
    s[out].reorder(bi, bj, wi, wj, ti, tj, wsi, wsj, ri, rj)
    warp = s[out].fuse(wi, wj)
    lane = s[out].fuse(ti, tj)
    s[out].bind(bi, "blockIdx.y")
    s[out].bind(bj, "blockIdx.x")
    s[out].bind(warp, "threadIdx.y")
    s[out].bind(lane, "threadIdx.x")
    for ax in (wsi, wsj, ri, rj):
        s[out].unroll(ax)
    s[CL].compute_at(s[out], lane)
    _k_steps(s, CL, AS, BS, AL, BL, BK, k_unroll)
    row, kk = s[AS].axis
    s[AS].storage_order(kk, row)
    warps = (BM // WM) * (BN // WN)
    _cooperative_fill(s, AS, warps, 32, 4)
    _cooperative_fill(s, BS, warps, 32, 4)
    s[AS].double_buffer()
    s[BS].double_buffer()


SCHEDULES = {
    "naive": schedule_naive,
    "coalesced": schedule_coalesced,
    "shared": schedule_shared,
    "blocktile_1d": schedule_blocktile_1d,
    "blocktile_2d": schedule_blocktile_2d,
    "vectorized": schedule_vectorized,
    "vectorized_bk16": schedule_vectorized_bk16,
    "double_buffered": schedule_double_buffered,
    "warptiled": schedule_warptiled,
}

schedule = schedule_blocktile_2d
