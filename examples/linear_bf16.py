"""A bfloat16 linear layer's product: Y = A @ W.T with W stored as [N, K], the layout in which
``torch.nn.Linear`` keeps its weight, accumulated in float32 on the tensor cores.

Each k step reads a BN x BK tile of W's rows: for wgmma that is the K-major B operand the
instruction reads natively (no transpose), for mma.sync the "col" B fragment that ldmatrix
loads without ``.trans``. The schedules are those of ``examples/gemm_bf16.py``; lowering
reads the layout from the algorithm.

    tcomp check examples/linear_bf16.py --shape M=128,N=128,K=96
    tcomp autoschedule examples/linear_bf16.py                  # on a GPU: 4096^3
"""

import tcomp as tc
from gemm_bf16 import product_on_tensor_cores


def algorithm(M=4096, N=4096, K=4096):
    """Y[i, j] = sum_k A[i, k] * W[j, k] with A, W in bfloat16 and Y in float32."""
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((N, K), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    return tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[j, k], "float32"),
                                                  axis=k), name="Y")


def schedule(s, out, **tile_overrides):
    """On wgmma where the shape allows, else on mma.sync, with ``examples/gemm_bf16.py``'s
    tile sizes (``wgmma=0`` asks for mma.sync)."""
    product_on_tensor_cores(s, out, "Y", "A", "W", tile_overrides)


def mma_sync(s, out):
    """The product on mma.sync: :func:`schedule` with ``wgmma=0``."""
    schedule(s, out, wgmma=0)


SCHEDULES = {"schedule": schedule, "mma_sync": mma_sync}
