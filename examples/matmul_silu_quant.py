"""fp32 matmul + SiLU + int8 quantization with a fixed scale, the epilogue fused
into the matmul's output tile (one kernel, no intermediate in global memory).

    tcomp demo                                  # this example, in the simulator without a GPU
    tcomp check examples/matmul_silu_quant.py
"""

import os
import sys

import tcomp as tc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgemm_ladder import blocktile_2d  # noqa: E402  (the ladder's 2D blocktiling schedule)

SCALE = 0.05


def algorithm(M=4096, N=4096, K=4096):
    """Q = quantize(silu(A @ W), 0.05, int8), A and W in float32."""
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    Y = tc.compute((M, N), lambda i, j: tc.silu(C[i, j]), name="Y")
    return tc.compute((M, N), lambda i, j: tc.quantize(Y[i, j], SCALE, "int8"), name="Q")


def schedule(s, out):
    """The ladder's double-buffered, vectorized 2D blocktiling of Q; C accumulates in registers per thread
    tile, SiLU is inlined, and each thread quantizes its own 8x8 outputs straight from its accumulators."""
    M, N = out.shape
    tile = 128 if M % 128 == 0 and N % 128 == 0 else 16
    thread_tile = 8 if tile == 128 else 4
    s["Y"].compute_inline()
    blocktile_2d(s, out, s["C"], "A", "W", BM=tile, BN=tile, BK=8, TM=thread_tile, TN=thread_tile,
                 transpose_a=True, vector=4, double_buffer=True)
