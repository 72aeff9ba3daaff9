"""A bfloat16 elementwise chain with a broadcast bias, as an MLP's up projection ends
(GELU with the tanh approximation, then a residual):

    H = bf16(X + B[j])                       the bias, one value per column
    G = bf16(0.5 * H * (1 + tanh(0.7978845608 * (H + 0.044715 * H^3))))
    Y = bf16(G + R)                          the residual

Three stages, and the bias is read as ``B[j]``: one row, broadcast down the rows. GELU
is one stage (its input appears twice in it, and a stage read by two stages would stay
at root in the search's space). The hand schedule runs the
chain in one kernel, the output flattened into vectors of 8 elements (16 bytes) per
thread; the bias's 8 lanes are contiguous in ``j`` because N is a multiple of 8, so
its reads are 16-byte loads too.

    tcomp check examples/gelu_chain.py
    tcomp autoschedule examples/gelu_chain.py --shape M=64,N=64 --model-only
"""

import tcomp as tc

#: sqrt(2 / pi), in the tanh approximation of GELU
SQRT_2_OVER_PI = 0.7978845608028654


def gelu_tanh(x):
    """0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) of an expression ``x``."""
    return 0.5 * x * (1.0 + tc.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))


def algorithm(M=8192, N=8192):
    """Y = bf16(gelu_tanh(bf16(X + B[j])) + R), X, B, R in bfloat16, GELU in float32."""
    X = tc.placeholder((M, N), "bfloat16", name="X")
    B = tc.placeholder((N,), "bfloat16", name="B")
    R = tc.placeholder((M, N), "bfloat16", name="R")
    H = tc.compute((M, N), lambda i, j: tc.cast(tc.cast(X[i, j], "float32") + tc.cast(B[j], "float32"), "bfloat16"),
                   name="H")
    G = tc.compute((M, N), lambda i, j: tc.cast(gelu_tanh(tc.cast(H[i, j], "float32")), "bfloat16"), name="G")
    return tc.compute((M, N), lambda i, j: tc.cast(tc.cast(G[i, j], "float32") + tc.cast(R[i, j], "float32"),
                                                   "bfloat16"), name="Y")


def schedule(s, out, threads=256, vector=8):
    """One kernel: every stage inlined, the output flattened into vectors of ``vector``
    elements, ``threads`` threads a block."""
    for name in ("H", "G"):
        s[name].compute_inline()
    i, j = s[out].axis
    flat = s[out].fuse(i, j)
    flat, lanes = s[out].split(flat, vector)
    s[out].vectorize(lanes)
    block, thread = s[out].split(flat, threads)
    s[out].bind(block, "blockIdx.x")
    s[out].bind(thread, "threadIdx.x")
