"""The cost model's worked examples (docs/references.md) as tcomp algorithms and
schedules, for the cost-model tests. Every number the tests check comes out of
``tc.estimate`` run on these schedules; nothing here computes a formula.
"""

from __future__ import annotations

import tcomp as tc

# the running example: Qwen3-8B's FFN projection, 1024 tokens
M, K, N = 1024, 4096, 12288
MiB = 1024 * 1024


# ---------------------------------------------------------------------------- output tiles in shared memory


def projection(M=M, K=K, N=N):
    """C = A @ W in bf16 with an fp32 accumulator, rounded to bf16 once K is done."""
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[k, j], "float32"),
                                               axis=k), name="C")
    return tc.compute((M, N), lambda i, j: tc.cast(C[i, j], "bfloat16"), name="Cb")


def _fill(s, cache, threads_y, threads_x, vector=1):
    """Spread a shared tile's fill over the block's threads_y x threads_x threads,
    consecutive threads on consecutive elements (``vector`` elements a thread each step)."""
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


def tile_in_shared(s, out, m, n, k_step, threads_y=16, threads_x=16, vector=1):
    """One block per m x n output tile, the A and W tiles of each k
    step and the fp32 accumulator all in shared memory; 16 x 16 threads each own an
    (m/16) x (n/16) piece of the accumulator. ``out`` is ``cast(C, bf16)``."""
    C = s["C"]
    AS = s.cache_read("A", "shared", [C])
    WS = s.cache_read("W", "shared", [C])
    i, j = s[out].axis
    bi, bj, ii, jj = s[out].tile(i, j, m, n)
    ty, ri = s[out].split(ii, m // threads_y)
    tx, rj = s[out].split(jj, n // threads_x)
    s[out].reorder(bi, bj, ty, tx, ri, rj)
    s[out].bind(bi, "blockIdx.y")
    s[out].bind(bj, "blockIdx.x")
    s[out].bind(ty, "threadIdx.y")
    s[out].bind(tx, "threadIdx.x")
    C.compute_at(s[out], bj)
    C.set_scope("shared")
    ci, cj = C.axis
    (k,) = C.reduce_axis
    cty, cri = C.split(ci, m // threads_y)
    ctx, crj = C.split(cj, n // threads_x)
    ko, ki = C.split(k, k_step)
    C.reorder(cty, ctx, ko, ki, cri, crj)
    C.bind(cty, "threadIdx.y")
    C.bind(ctx, "threadIdx.x")
    s[AS].compute_at(C, ko)
    s[WS].compute_at(C, ko)
    _fill(s, AS, threads_y, threads_x, vector)
    _fill(s, WS, threads_y, threads_x, vector)


def section_5_2_2(tile):
    """The projection with an output tile of ``tile`` x ``tile`` and k = 32."""
    out = projection()
    s = tc.create_schedule(out)
    tile_in_shared(s, out, tile, tile, 32)
    return s


def section_5_1_5():
    """The residency example's kernel: 128 x 128 tile, k step 64, 256 threads, the BF16 A and W
    tiles (16 KiB each) and the FP32 accumulator (64 KiB) in shared memory; each thread
    moves 16 bytes (8 bf16) per load."""
    out = projection()
    s = tc.create_schedule(out)
    tile_in_shared(s, out, 128, 128, 64, vector=8)
    return s


# ---------------------------------------------------------------------------- unfused elementwise kernels


def elementwise(s, t, threads=256):
    """One thread per element: the flattened tensor in blocks of ``threads``."""
    i, j = s[t].axis
    fused = s[t].fuse(i, j)
    bx, tx = s[t].split(fused, threads)
    s[t].bind(bx, "blockIdx.x")
    s[t].bind(tx, "threadIdx.x")


def activation_chain(quantize: bool):
    """T = SiLU(G), Z = T * U, optionally Q = quantize(Z, 0.05, int8); G, U [1024, 12288] bf16."""
    G = tc.placeholder((M, N), "bfloat16", name="G")
    U = tc.placeholder((M, N), "bfloat16", name="U")
    T = tc.compute((M, N), lambda i, j: tc.silu(G[i, j]), name="T")
    Z = tc.compute((M, N), lambda i, j: T[i, j] * U[i, j], name="Z")
    if not quantize:
        return Z
    return tc.compute((M, N), lambda i, j: tc.quantize(Z[i, j], 0.05, "int8"), name="Q")


def example_5_4(fused_steps: int, quantize: bool):
    """``fused_steps`` = 0: every step its own kernel; 2: SiLU and the multiply in one
    kernel (T inlined); 3: all three in one kernel (T and Z inlined)."""
    out = activation_chain(quantize)
    s = tc.create_schedule(out)
    names = ["T", "Z", "Q"] if quantize else ["T", "Z"]
    inlined = {0: [], 2: ["T"], 3: ["T", "Z"]}[fused_steps]
    for name in names:
        if name in inlined:
            s[name].compute_inline()
        else:
            elementwise(s, s[name].tensor)
    return s


# ---------------------------------------------------------------------------- a quantized matmul

QM, QK, QN = 4096, 4096, 1536


def quantized_matmul():
    """A [4096, 4096] fp16, quantized to fp8 with a per-row scale from the row's max;
    W [4096, 1536] fp8; the fp16 output dequantized with the same scale."""
    A = tc.placeholder((QM, QK), "float16", name="A")
    W = tc.placeholder((QK, QN), "float8_e4m3", name="W")
    r = tc.reduce_axis(QK, name="r")
    R = tc.compute((QM,), lambda i: tc.max(tc.abs(A[i, r]), axis=r), name="R")
    Aq = tc.compute((QM, QK), lambda i, k: tc.quantize(A[i, k], R[i] / 448.0, "float8_e4m3"), name="Aq")
    k = tc.reduce_axis(QK, name="k")
    C = tc.compute((QM, QN), lambda i, j: tc.sum(tc.cast(Aq[i, k], "float32") * tc.cast(W[k, j], "float32"),
                                                 axis=k), name="C")
    return tc.compute((QM, QN), lambda i, j: tc.cast(C[i, j] * (tc.cast(R[i], "float32") / 448.0), "float16"),
                      name="Out")


def _tiled_matmul(s, out, AS, m=128, n=128, k_step=32, tm=8, tn=8):
    """128 x 128 output tiles, fp32 accumulators in registers, the fp8 A-side tile
    (stage ``AS``) and the W tile in shared memory per k step."""
    C = s["C"]
    WS = s.cache_read("W", "shared", [C])
    i, j = s[out].axis
    bi, bj, ii, jj = s[out].tile(i, j, m, n)
    ty, ri = s[out].split(ii, tm)
    tx, rj = s[out].split(jj, tn)
    s[out].reorder(bi, bj, ty, tx, ri, rj)
    s[out].bind(bi, "blockIdx.y")
    s[out].bind(bj, "blockIdx.x")
    s[out].bind(ty, "threadIdx.y")
    s[out].bind(tx, "threadIdx.x")
    s[out].unroll(ri)
    s[out].unroll(rj)
    C.compute_at(s[out], tx)
    ci, cj = C.axis
    (k,) = C.reduce_axis
    ko, ki = C.split(k, k_step)
    C.reorder(ko, ki, ci, cj)
    C.unroll(ci)
    C.unroll(cj)
    s[AS].compute_at(C, ko)
    s[AS].set_scope("shared")
    s[WS].compute_at(C, ko)
    _fill(s, AS, m // tm, n // tn)
    _fill(s, WS, m // tm, n // tn)


def example_5_8(fused: bool):
    """Quantization run as its own kernel (one block per row: the row sits in 8 KiB of
    shared memory, its max is taken into a register and the row is quantized from
    there), then the matmul reads the fp8 result; or fused: the row max in a kernel of
    its own, and the quantization computed into the matmul's shared A tile at each k
    step, from fp16 A read by that block."""
    out = quantized_matmul()
    s = tc.create_schedule(out)
    R, Aq = s["R"], s["Aq"]
    RL = s.cache_write("R", "local")  # the row max accumulates in a register
    (i,) = R.axis
    R.bind(i, "blockIdx.x")
    s[RL].compute_at(R, i)
    if fused:
        _tiled_matmul(s, out, "Aq")
    else:
        AS = s.cache_read("A", "shared", [s[RL], Aq])
        Aq.reverse_compute_at(R, i)
        qi, qk = Aq.axis
        ko, tx = Aq.split(qk, 256)
        Aq.bind(tx, "threadIdx.x")
        s[AS].compute_at(R, i)
        _fill(s, AS, 1, 256)
        _tiled_matmul(s, out, s.cache_read("Aq", "shared", [s["C"]]))
    return s
