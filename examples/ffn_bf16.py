"""The FFN projection of DESIGN.md in bfloat16: Q = quantize(silu(bf16(A @ W)), 0.05, int8).

A and W are bfloat16, the matmul accumulates in float32, its result is rounded to
bfloat16 (a rounding point that every schedule keeps), then SiLU and int8 quantization
with a fixed scale. The schedule fuses everything into the matmul's output tile.

    tcomp check examples/ffn_bf16.py
    tcomp bench examples/ffn_bf16.py          # on a GPU
"""

import sys
from pathlib import Path

import tcomp as tc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sgemm_ladder import blocktile_2d  # noqa: E402  (the ladder's 2D blocktiling schedule)

SCALE = 0.05


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


def schedule(s, out):
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
