"""A batch of bfloat16 matrix products rounded to bfloat16: C[h] = bf16(A[h] @ W[h]), what
``torch.matmul`` of two 3-D bf16 tensors (cuBLAS's batched product) computes and writes.

``examples/batched_gemm_bf16.py`` with the float32 sums P rounded once, in the epilogue,
to a bf16 C: half its bytes written, as much as cuBLAS writes. The schedules are
``examples/gemm_bf16.py``'s on the last two axes, the batch on ``blockIdx.z``.

    tcomp check examples/batched_gemm_bf16_rounded.py --shape B=2,M=128,N=128,K=64
    tcomp autoschedule examples/batched_gemm_bf16_rounded.py       # on a GPU: 8 x 1024^3
"""

import tcomp as tc
from gemm_bf16 import product_on_tensor_cores


def algorithm(B=8, M=1024, N=1024, K=1024):
    """C[h, i, j] = bf16(sum_k A[h, i, k] * W[h, k, j]) with A, W in bfloat16, the sum P in
    float32."""
    A = tc.placeholder((B, M, K), "bfloat16", name="A")
    W = tc.placeholder((B, K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    P = tc.compute((B, M, N), lambda h, i, j: tc.sum(tc.cast(A[h, i, k], "float32") *
                                                     tc.cast(W[h, k, j], "float32"), axis=k), name="P")
    return tc.compute((B, M, N), lambda h, i, j: tc.cast(P[h, i, j], "bfloat16"), name="C")


def schedule(s, out, **tile_overrides):
    """Each product as ``examples/gemm_bf16.py`` schedules one, C's rounding in the
    epilogue, the batch on ``blockIdx.z`` (``wgmma=0`` asks for mma.sync)."""
    product_on_tensor_cores(s, out, "P", "A", "W", tile_overrides)


def mma_sync(s, out):
    """The products on mma.sync: :func:`schedule` with ``wgmma=0``."""
    schedule(s, out, wgmma=0)


SCHEDULES = {"schedule": schedule, "mma_sync": mma_sync}
