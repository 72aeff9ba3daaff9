"""Qwen3-8B's FFN block in bfloat16 (hidden size H = 4096, intermediate size F = 12288), one
tcomp program of three kernels, and a PyTorch module that calls it as one operator:

    N = bf16(X * rsqrt(mean(X^2) + eps) * gamma)             RMSNorm (examples/rmsnorm.py)
    G = bf16(N @ W[0]),  U = bf16(N @ W[1])                    the stacked gate/up projection
    Z = bf16(bf16(silu(G)) * U)                                SwiGLU, in the projection's epilogue
    Y = bf16(X + bf16(Z @ W_down))                             the down projection and the residual

The roundings are PyTorch eager's for the same layer in bf16 (each matmul's result, SiLU's,
the product's, the normalized row and the sum). The schedule gives each line its kernel:
the row operators' RMSNorm (a block per row, the statistic in a tree of shuffles), both
projections from one tile of N on the tensor cores (``swiglu_fp8``'s first phase), and
the down projection with the residual added in its epilogue.

Under 16 rows (a decode step) both products stream their weights instead (:func:`decode`).

    tcomp check examples/qwen3_ffn.py --shape M=64,H=64,F=128
    python -c "import qwen3_ffn; ..."      # Qwen3FFN(gamma, w_gate_up, w_down, rows) in a model
"""

import sys
from pathlib import Path

import tcomp as tc

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rmsnorm  # noqa: E402
from gemm_bf16 import product_on_tensor_cores  # noqa: E402
from ffn_bf16 import stream_sizes  # noqa: E402
from swiglu_fp8 import project_on_tensor_cores, swiglu  # noqa: E402
from tcomp.search.tiling.skinny import SKINNY_ROWS, stream_rows_in_blocks  # noqa: E402

#: Qwen3-8B's sizes
HIDDEN, INTERMEDIATE = 4096, 12288


def algorithm(M=1024, H=HIDDEN, F=INTERMEDIATE):
    """Y = X + down(SwiGLU(gate_up(RMSNorm(X) * gamma))) for M rows of X, all bfloat16."""
    X = tc.placeholder((M, H), "bfloat16", name="X")
    gamma = tc.placeholder((H,), "bfloat16", name="gamma")
    W = tc.placeholder((2, H, F), "bfloat16", name="W")
    W_down = tc.placeholder((F, H), "bfloat16", name="W_down")
    h = tc.reduce_axis(H, name="h")
    SS = tc.compute((M,), lambda i: tc.sum(tc.cast(X[i, h], "float32") * tc.cast(X[i, h], "float32"), axis=h),
                    name="SS")
    N = tc.compute((M, H), lambda i, j: tc.cast(tc.cast(X[i, j], "float32") * tc.rsqrt(SS[i] / float(H) + rmsnorm.EPS)
                                                * tc.cast(gamma[j], "float32"), "bfloat16"), name="N")
    Z = swiglu(N, W)
    f = tc.reduce_axis(F, name="f")
    D = tc.compute((M, H), lambda i, j: tc.sum(tc.cast(Z[i, f], "float32") * tc.cast(W_down[f, j], "float32"),
                                               axis=f), name="D")
    return tc.compute((M, H), lambda i, j: tc.cast(tc.cast(X[i, j], "float32")
                                                   + tc.cast(tc.cast(D[i, j], "bfloat16"), "float32"), "bfloat16"),
                      name="Y")


def schedule(s, out, stream_sizes=None, gate_up=None, down=None):
    """Three kernels: N by ``rmsnorm.schedule`` (its row staged in shared memory, the sum
    of squares in a tree), Z by ``swiglu_fp8.project_on_tensor_cores`` (both projections
    from one tile of N, SwiGLU in the epilogue), Y by ``gemm_bf16.product_on_tensor_cores``
    with the residual's read and add in the epilogue. Under 16 rows (a decode step) both
    products by :func:`decode` instead. ``gate_up`` and ``down`` replace the tilings'
    arguments of the two products (``benchmarks/qwen3_request.py --variant``)."""
    norm = s["N"].op.output
    rmsnorm.schedule(s, norm)
    if out.shape[0] < SKINNY_ROWS:
        decode(s, out, stream_sizes)
        return
    project_on_tensor_cores(s, s["Z"].op.output, dict(gate_up or {}))
    product_on_tensor_cores(s, out, "D", "Z", "W_down", dict(down or {}))


def decode(s, out, sizes=None):
    """Both products of a decode step with their weights streamed once in 16-byte loads
    into registers, k in slices on a block's threads added through shared memory in a
    fixed order (``stream_rows_in_blocks``; the stacked gate/up product as one, each
    thread holding both projections' sums for its columns, SwiGLU on the whole sums; the
    down projection's k over blocks as well where its columns leave SMs idle, as
    ``ffn_bf16.stream_sizes`` chooses). ``sizes`` replace the chosen sizes of both (small
    shapes in tests)."""
    M, H = out.shape
    F = s["Z"].op.output.shape[1]
    for name in ("G", "U", "S"):
        s[name].compute_inline()
    for consumer, product, a, b, (N, K) in ((s["Z"].op.output, "P", "N", "W", (F, H)),
                                            (out, "D", "Z", "W_down", (H, F))):
        chosen = dict(sizes) if sizes else stream_sizes(M, N, K)
        if chosen is None or not chosen.pop("one_kernel", True):
            raise tc.ScheduleError(f"the decode schedule streams {product} ({M} x {N} x {K}) in one kernel per "
                                   f"product; no sizes of ffn_bf16.stream_sizes fit that shape (pass sizes)")
        stream_rows_in_blocks(s, consumer, product, a, b, **chosen)


SCHEDULES = {"schedule": schedule}


def operator(rows: int, hidden: int = HIDDEN, intermediate: int = INTERMEDIATE, name: str | None = None):
    """The block at ``rows`` rows, built and registered as the PyTorch operator ``name``
    (default ``qwen3::ffn_{rows}x{hidden}x{intermediate}``): ``op(X, gamma, W, W_down) -> Y``."""
    import tcomp.torch

    out = algorithm(rows, hidden, intermediate)
    s = tc.create_schedule(out)
    schedule(s, out)
    return tcomp.torch.custom_op(tc.build(s), name or f"qwen3::ffn_{rows}x{hidden}x{intermediate}")


def module(gamma, w_gate_up, w_down, rows: int):
    """A ``torch.nn.Module`` of the block with these weights (bf16 tensors: gamma [H],
    the stacked gate and up weights [2, H, F], the down weights [F, H]) for inputs of
    ``rows`` rows: ``forward(x)`` calls the tcomp operator."""
    import torch

    hidden, intermediate = w_down.shape[1], w_down.shape[0]
    op = operator(rows, hidden, intermediate)

    class Qwen3FFN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gamma = torch.nn.Parameter(gamma, requires_grad=False)
            self.w_gate_up = torch.nn.Parameter(w_gate_up, requires_grad=False)
            self.w_down = torch.nn.Parameter(w_down, requires_grad=False)

        def forward(self, x):
            return op(x, self.gamma, self.w_gate_up, self.w_down)

    return Qwen3FFN()
