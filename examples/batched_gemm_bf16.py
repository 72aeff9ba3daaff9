"""A batch of bfloat16 matrix products (attention's per-head products, a grouped layer):
C[h] = A[h] @ W[h] for every h, accumulated in float32 on the tensor cores.

The batch axis is bound to ``blockIdx.z``: each block computes one tile of one product, with
the schedules of ``examples/gemm_bf16.py`` (wgmma blocks where the shape allows, else
mma.sync warp tiles) applied to the last two axes.

    tcomp check examples/batched_gemm_bf16.py --shape B=2,M=128,N=128,K=64
    tcomp autoschedule examples/batched_gemm_bf16.py            # on a GPU: 8 x 1024^3
"""

import tcomp as tc
from gemm_bf16 import product_on_tensor_cores


def algorithm(B=8, M=1024, N=1024, K=1024):
    """C[h, i, j] = sum_k A[h, i, k] * W[h, k, j] with A, W in bfloat16 and C in float32."""
    A = tc.placeholder((B, M, K), "bfloat16", name="A")
    W = tc.placeholder((B, K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    return tc.compute((B, M, N), lambda h, i, j: tc.sum(tc.cast(A[h, i, k], "float32") *
                                                        tc.cast(W[h, k, j], "float32"), axis=k), name="C")


def schedule(s, out, **tile_overrides):
    """Each product as ``examples/gemm_bf16.py`` schedules one, the batch on ``blockIdx.z``
    (``wgmma=0`` asks for mma.sync)."""
    product_on_tensor_cores(s, out, "C", "A", "W", tile_overrides)


def mma_sync(s, out):
    """The products on mma.sync: :func:`schedule` with ``wgmma=0``."""
    schedule(s, out, wgmma=0)


SCHEDULES = {"schedule": schedule, "mma_sync": mma_sync}
