"""SwiGLU with per-row float8 quantization, in bfloat16:

    G = bf16(A @ W_g),  U = bf16(A @ W_u),  Z = bf16(bf16(silu(G)) * U)
    R[i] = max_j |Z[i, j]|,  Q = quantize(Z, float32(R[i]) / 448, float8_e4m3)

The gate and up weights come stacked, ``W[0] = W_g`` and ``W[1] = W_u`` (as the merged
``gate_up_proj`` of LLM inference engines), so that the two projections are one product
``P[h, i, j] = sum_k A[i, k] W[h, k, j]`` whose k loop feeds both from one tile of A. The
rounding points are PyTorch eager's: each projection's result, SiLU's and the product's
are bfloat16.

The quantization needs the whole row's max, so the schedule runs in two phases (two
kernels): Z on the tensor cores (``wgmma_tiles``, or ``mma_warp_tiles`` on shapes wgmma
does not fit: each thread holds the gate and the up accumulators of the same outputs and
computes Z from them), then one block per row that takes the row's max in slices
combined in a tree of shuffles and quantizes the row. ``tc.check`` refuses a schedule
that quantizes with a partial max.

    tcomp check examples/swiglu_fp8.py --shape M=64,N=64,K=64
    tcomp bench examples/swiglu_fp8.py          # on a GPU
"""

import sys
from pathlib import Path

import tcomp as tc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_bf16 import required_mma_tiles, tensor_core_tiles, uses_wgmma  # noqa: E402  (tilings)
from tcomp.search.tiling import rows_in_blocks  # noqa: E402

FP8_MAX = 448.0
#: threads of the quantizing phase's blocks, each with its own partial max of the row
ROW_THREADS = 256
#: threads of a warp: the tree of shuffles needs whole warps
WARP = 32


def algorithm(M=1024, N=12288, K=4096):
    """Q = quantize(Z, rowmax|Z| / 448, float8_e4m3), Z = SwiGLU of A with the stacked
    gate and up weights W (2 x K x N), all in bfloat16."""
    A = tc.placeholder((M, K), "bfloat16", name="A")
    Z = swiglu(A, tc.placeholder((2, K, N), "bfloat16", name="W"))
    n = tc.reduce_axis(N, name="n")
    R = tc.compute((M,), lambda i: tc.max(tc.abs(Z[i, n]), axis=n), name="R")
    # the scale in float32, as PyTorch's ``amax / 448`` of a float32 view of Z
    return tc.compute((M, N), lambda i, j: tc.quantize(Z[i, j], tc.cast(R[i], "float32") / FP8_MAX, "float8_e4m3"),
                      name="Q")


def swiglu(A, W):
    """Z = bf16(bf16(silu(bf16(A @ W[0]))) * bf16(A @ W[1])) of a bf16 A (M x K) and the
    stacked gate and up weights W (2 x K x N): the stacked product ``P`` and the stages
    ``G``, ``U``, ``S`` and ``Z`` that :func:`project_on_tensor_cores` schedules."""
    (M, K), N = A.shape, W.shape[2]
    k = tc.reduce_axis(K, name="k")
    P = tc.compute((2, M, N), lambda h, i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[h, k, j], "float32"),
                                                     axis=k), name="P")
    G = tc.compute((M, N), lambda i, j: tc.cast(P[0, i, j], "bfloat16"), name="G")
    U = tc.compute((M, N), lambda i, j: tc.cast(P[1, i, j], "bfloat16"), name="U")
    S = tc.compute((M, N), lambda i, j: tc.cast(tc.silu(G[i, j]), "bfloat16"), name="S")
    return tc.compute((M, N), lambda i, j: tc.cast(S[i, j] * U[i, j], "bfloat16"), name="Z")


#: the wgmma tiling of Z from 256 rows on: two warpgroups of 64 x 128 tiles of both
#: projections (one m64n256k16 a k step of 16: 128 accumulators a thread), 4-stage rings,
#: so that the copies run two k steps ahead, filled by TMA boxes (one per projection and
#: 128-byte column of W's tile) that a producer warpgroup of its own issues. With
#: :func:`quantize_rows`, 0.319-0.322 ms at 1024 x 12288 x 4096 on an H100 in two calls
#: (TMA without the producer: 0.318 in both), against 0.420 ms for the cp.async rings and
#: the old quantizing phase (BENCHMARKS.md, 24th session); rows whose bytes 16 does not
#: divide fall back to cp.async
WGMMA_TILES = dict(BM=128, BN=128, stages=4, copy="tma", specialized=True)


def schedule(s, out, quantize="rows", **tile_overrides):
    """Phase 1: Z by :func:`project_on_tensor_cores`. Phase 2: :func:`quantize_rows`, or
    with ``quantize="partial_maxima"`` :func:`quantize_rows_in_partial_maxima`.
    ``tile_overrides`` replace the tilings' arguments (``benchmarks/swiglu_fp8.py
    --variant``)."""
    if quantize not in QUANTIZE_PHASES:
        raise tc.ScheduleError(f"quantize must be one of {', '.join(map(repr, QUANTIZE_PHASES))}, got {quantize!r}")
    project_on_tensor_cores(s, s["Z"].op.output, tile_overrides)
    QUANTIZE_PHASES[quantize](s, out)


def project_on_tensor_cores(s, Z, tile_overrides: dict) -> None:
    """Z (stage ``Z``, computed from the stacked product ``P`` of ``A`` and ``W`` through
    the stages ``G``, ``U`` and ``S``) in blocks of warpgroups of ``wgmma``
    (``gemm_bf16.wgmma_tiles_for``, and :data:`WGMMA_TILES` from 256 rows on), both
    projections from the same tile of A (each thread holds two accumulators per output;
    one instruction as wide as both where W's tile holds their columns one after the
    other), the roundings and SiLU inlined into its epilogue; where wgmma does not fit
    the shape (or with ``wgmma=0``) warp tiles of mma.sync tiles
    (``gemm_bf16.mma_tiles_for``, the warp tiles' columns halved)."""
    M, N = Z.shape
    product = s["P"].op
    K = product.reduce_axis[0].extent
    a, b = (t.name for t in product.input_tensors())
    tiles = {}
    if not uses_wgmma(M, N, K, tile_overrides):
        tiles = required_mma_tiles(M, N, K)
        tiles["WN"] = max(16, tiles["WN"] // 2)  # the gate's and the up projection's accumulators
    elif M >= 256:
        tile_overrides = {**WGMMA_TILES, **tile_overrides}
    for name in ("G", "U", "S"):
        s[name].compute_inline()
    tensor_core_tiles(s, Z, "P", a, b, tiles, tile_overrides)


def quantize_rows(s, out):
    """One block per row of Q (``rows_in_blocks``, the row operators' schedule): the row of
    Z staged in shared memory 16 bytes a copy, |Z|'s max in interleaved slices, combined
    in a tree of warp shuffles, the row quantized 8 elements a thread and store (fewer
    where a row is shorter than a warp's 8 elements a lane; rows under 32 elements take
    :func:`quantize_rows_in_partial_maxima`)."""
    N = out.shape[1]
    if N < WARP:
        return quantize_rows_in_partial_maxima(s, out)
    rows_in_blocks(s, out, "Z", readers=["R", out.name], statistics=["R"], threads=None, combine="tree")


def quantize_rows_in_partial_maxima(s, out, threads=ROW_THREADS, vector=8):
    """One block per row of Q: ``threads`` partial maxima of |Z| (thread t reads t,
    t + threads, ... so that a warp reads consecutive elements) in shared memory, their
    max after a barrier, then the row quantized ``vector`` elements per thread at once."""
    M, N = out.shape
    threads = min(threads, N)
    parts = threads if N % threads == 0 else 1
    i, j = s[out].axis
    s[out].bind(i, "blockIdx.x")
    if N % (threads * vector) == 0:
        j, lanes = s[out].split(j, vector)
        s[out].vectorize(lanes)
    _, tj = s[out].split(j, threads)
    s[out].bind(tj, "threadIdx.x")
    R = s["R"].op.output
    if parts > 1:
        partial = s.rfactor(R, parts, interleaved=True)
        s[partial].set_scope("shared")
        s[partial].compute_at(s[out], i)
        s[partial].bind(s[partial].axis[0], "threadIdx.x")
    s[R].set_scope("shared")
    s[R].compute_at(s[out], i)


#: the schedules of the quantizing phase: ``schedule(quantize=...)``
QUANTIZE_PHASES = {"rows": quantize_rows, "partial_maxima": quantize_rows_in_partial_maxima}

SCHEDULES = {"schedule": schedule}
