"""The FFN projection of an LLM layer in bfloat16: Q = quantize(silu(bf16(A @ W)), 0.05, int8).

A and W are bfloat16, the matmul accumulates in float32, its result is rounded to
bfloat16 (a rounding point that every schedule keeps), then SiLU and int8 quantization
with a fixed scale. Both schedules fuse everything into the matmul's output tile:
``schedule`` on the tensor cores (``tensorize`` onto mma.sync, each lane's epilogue on
its own accumulators), ``cuda_cores`` the 2D blocktiling on the CUDA cores.

    tcomp check examples/ffn_bf16.py
    tcomp bench examples/ffn_bf16.py          # on a GPU
"""

import sys
from pathlib import Path

import tcomp as tc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_bf16 import mma_tiles_for, mma_warp_tiles, tensor_core_tiles, uses_wgmma  # noqa: E402  (tilings)
from sgemm_ladder import blocktile_2d  # noqa: E402  (the ladder's 2D blocktiling schedule)
from tcomp.search.tiling.skinny import one_kernel_sizes, stream_rows, stream_rows_in_blocks  # noqa: E402

SCALE = 0.05
#: streaming multiprocessors of the H200: a decode step's blocks should cover them
SMS = 132


def algorithm(M=1024, N=12288, K=4096):
    """Q = quantize(silu(bf16(A @ W)), 0.05, int8) with A, W in bfloat16."""
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[k, j], "float32"),
                                               axis=k), name="C")
    Cb = tc.compute((M, N), lambda i, j: tc.cast(C[i, j], "bfloat16"), name="Cb")
    Y = tc.compute((M, N), lambda i, j: tc.silu(Cb[i, j]), name="Y")
    return tc.compute((M, N), lambda i, j: tc.quantize(Y[i, j], SCALE, "int8"), name="Q")


def schedule(s, out, **tile_overrides):
    """Q in blocks of two warpgroups of wgmma (``gemm_bf16.wgmma_tiles_for``: at the default
    shape 128 x 256 blocks of ``wgmma.m64n256k16``, k steps of 64 in 4-stage rings in the
    128-byte swizzle that TMA fills, ``copy="tma"``: on an H100 0.070 ms against 0.075 for
    cp.async at 333 rows, 0.160-0.164 against 0.168-0.172 at 1024, 1.079 against 1.098 at
    7239, BENCHMARKS.md; cp.async where the operands' rows are not 16 bytes apart; the
    blocks of a column of blocks launched together), C
    accumulated in each thread's registers; the bf16 rounding, SiLU and quantization
    inlined into the epilogue each thread runs on its accumulators. Where wgmma does not
    fit the shape (or with ``wgmma=0``), blocks of warp tiles of mma.sync tiles
    (``gemm_bf16.mma_tiles_for``: at 16 to 31 rows of a wide W, 16 x 96 blocks with k
    whole, 39.8 us at 16 x 12288 x 4096 on an H100); where the output is under 16 x 32,
    :func:`cuda_cores`; 16 to 31 rows whose blocks leave SMs idle, :func:`decode`
    (:func:`decode_slices`); under 16 rows, :func:`stream`
    (W streamed once into registers). ``tile_overrides`` replace the tilings' arguments
    (``benchmarks/ffn_bf16.py --variant``)."""
    M, N = out.shape
    K = s["C"].op.reduce_axis[0].extent
    if M < 16 and stream_sizes(M, N, K) is not None:
        stream(s, out)
        return
    tiles = mma_tiles_for(M, N, K)
    if tiles is None:
        cuda_cores(s, out)
        return
    if not uses_wgmma(M, N, K, tile_overrides):
        tiles.update({key: value for key, value in tile_overrides.items() if key != "wgmma"})
        parts = decode_slices(M, N, K, tiles)
        if parts:
            decode(s, out, tiles, parts)
            return
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    if uses_wgmma(M, N, K, tile_overrides):  # TMA rings (cp.async where the rows are not 16 bytes apart)
        tile_overrides = {"copy": "tma", **tile_overrides}
    tensor_core_tiles(s, out, "C", "A", "W", tiles, tile_overrides)


def decode_slices(M: int, N: int, K: int, tiles: dict) -> int | None:
    """Slices of k for few rows (under 32: a decode step) whose blocks alone make less than
    0.85 of a wave (as ``decode_tiles`` counts them): the fewest of 2 and 4 that cover the
    SMs (else the most that divide K), or None."""
    blocks = -(-M // tiles["BM"]) * -(-N // tiles["BN"])
    fitting = [p for p in (2, 4) if K % (p * tiles["BK"]) == 0]
    if M >= 32 or blocks >= 0.85 * SMS or not fitting:
        return None
    return next((p for p in fitting if blocks * p >= SMS), fitting[-1])


def decode(s, out, tiles: dict, parts: int, threads=256):
    """A decode step: k in ``parts`` slices (``s.rfactor``, the slices on ``blockIdx.z``)
    so that the blocks cover the GPU, each slice's product on the tensor cores in
    ``tiles`` (:func:`mma_tiles_for`), then a second kernel in which each of ``threads``
    threads a block adds one output's slices and runs the bf16 rounding, SiLU and
    quantization on the complete sum."""
    partial = s.rfactor("C", parts)
    mma_warp_tiles(s, partial, partial.name, "A", "W", **tiles)
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    flat = s[out].fuse(*s[out].axis)
    block, thread = s[out].split(flat, threads)
    s[out].bind(block, "blockIdx.x")
    s[out].bind(thread, "threadIdx.x")
    s["C"].compute_at(s[out], thread)


def stream_parts(N: int, K: int, unroll: int, threads_wanted: int) -> int | None:
    """Slices of k for :func:`stream`: the fewest (a power of two from 16) whose threads,
    one per 8 columns a slice, reach ``threads_wanted``, each slice at least 32 values of
    k; None where none divides K in whole steps of ``unroll``."""
    fitting = [p for p in (16, 32, 64, 128, 256) if K % (p * unroll) == 0 and K // p >= 32]
    if not fitting or N % 8:
        return None
    return next((p for p in fitting if N // 8 * p >= threads_wanted), fitting[-1])


def stream_sizes(M: int, N: int, K: int) -> dict | None:
    """:func:`stream`'s helper and sizes, the fastest of ``benchmarks/decode_rows.py``'s
    on the H100. Up to 8 rows, ``stream_rows_in_blocks`` (one kernel; for one row of a
    narrow output, k over blocks as well and a second kernel) at the sizes of
    ``one_kernel_sizes`` (which the search's ``skinny_product`` rule seeds too). From 9
    rows (the registers of every row's accumulators), ``stream_rows``: 64 threads, eight
    loads each, k in the slices that give 32 K threads, the slices added by a second
    kernel. None where no slicing fits."""
    sizes = one_kernel_sizes(M, N, K, sms=SMS)
    if sizes is not None:
        return dict(sizes, one_kernel=True)
    parts = stream_parts(N, K, 8, 32 * 1024)
    return None if parts is None else dict(parts=parts, threads=64, unroll=8, one_kernel=False)


def stream(s, out):
    """A decode step of under 16 rows, W streamed once in 16-byte loads straight into
    registers, each thread 8 columns of every row (:func:`stream_sizes`): up to 8 rows
    in one kernel, k in slices on the threads of a block, added through shared memory
    (``stream_rows_in_blocks``); more in two, the slices on blocks of their own, added by
    a second kernel (``stream_rows``); either way in a fixed order, and the bf16
    rounding, SiLU and quantization run on the complete sum. At one row of 12288 x 4096
    on the H100: 39.7 us, 0.88 of the copy floor of W (PyTorch eager 105 us; 39.0 us
    against 48.0 us as CUDA graph replays)."""
    M, N = out.shape
    K = s["C"].op.reduce_axis[0].extent
    if M >= 16:
        raise tc.ScheduleError(f"the stream schedule is for a decode step of under 16 rows (its threads keep every "
                               f"row in registers; 16 or more go to the tensor cores); the shape has {M}")
    sizes = stream_sizes(M, N, K)
    if sizes is None:
        raise tc.ScheduleError(f"the stream schedule needs N a multiple of 8 and K a multiple of 16 slices of at "
                               f"least 32 values of k in whole steps of 8; the shape is {M} x {N} x {K}")
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    one_kernel = sizes.pop("one_kernel")
    (stream_rows_in_blocks if one_kernel else stream_rows)(s, out, "C", "A", "W", **sizes)


def cuda_cores(s, out):
    """Double-buffered 2D blocktiling of Q (128x128 tiles, 8x8 per thread, A transposed in
    shared memory); the bf16 rounding, SiLU and quantization are inlined into the
    epilogue that each thread runs on its own accumulators."""
    M, N = out.shape
    tile = 128 if M % 128 == 0 and N % 128 == 0 else 16
    thread_tile = 8 if tile == 128 else 4
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    blocktile_2d(s, out, s["C"], "A", "W", BM=tile, BN=tile, BK=8, TM=thread_tile, TN=thread_tile,
                 transpose_a=True, double_buffer=True)


SCHEDULES = {"schedule": schedule, "cuda_cores": cuda_cores, "stream": stream}
#: the shapes at which a schedule that does not take the default one is compiled and checked
SCHEDULE_SHAPES = {"stream": dict(M=1)}
