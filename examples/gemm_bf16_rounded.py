"""A bfloat16 matrix product rounded to bfloat16: C = bf16(A @ W), what ``torch.matmul`` of
two bf16 tensors (cuBLAS) computes and writes.

The sum is accumulated in float32 (P) and rounded once, in the epilogue, to the bfloat16
C: half the bytes of ``examples/gemm_bf16.py``'s float32 C, so that the two products write
as much as cuBLAS does. The schedules are ``examples/gemm_bf16.py``'s: the rounding runs
on each thread's accumulators, and the bf16 tile is staged in shared memory and stored in
16-byte rows (``wgmma_tiles``' ``stage_output``).

    tcomp check examples/gemm_bf16_rounded.py --shape M=128,N=256,K=64
    tcomp bench examples/gemm_bf16_rounded.py          # on a GPU
"""

import sys
from pathlib import Path

import tcomp as tc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_bf16 import product_on_tensor_cores  # noqa: E402  (the tilings of the float32 product)


def algorithm(M=4096, N=4096, K=4096):
    """C = bf16(A @ W) with A, W in bfloat16, the sum P accumulated in float32."""
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    P = tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[k, j], "float32"), axis=k),
                   name="P")
    return tc.compute((M, N), lambda i, j: tc.cast(P[i, j], "bfloat16"), name="C")


def schedule(s, out, **tile_overrides):
    """The product on the tensor cores as ``examples/gemm_bf16.py`` tiles it, C's rounding
    in the epilogue."""
    product_on_tensor_cores(s, out, "P", "A", "W", tile_overrides)


def mma_sync(s, out):
    """The product on mma.sync: :func:`schedule` with ``wgmma=0``."""
    schedule(s, out, wgmma=0)


SCHEDULES = {"schedule": schedule, "mma_sync": mma_sync}
