"""The algorithms that the test suites and the schedule fuzzer share, at any shape.

Each returns its tensors in the order they are defined, placeholders first, with the
names the tests' messages and schedules use (``A``, ``W``, ``k``, ``C``, ...).
"""

from __future__ import annotations

import tcomp as tc


def matmul_silu_quant(M: int, N: int, K: int, scale: float) -> tuple:
    """``Q = quantize(silu(A @ W), scale, int8)`` in float32; C and Y are stages of
    their own. Returns ``(A, W, C, Y, Q)``."""
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    Y = tc.compute((M, N), lambda i, j: tc.silu(C[i, j]), name="Y")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(Y[i, j], scale, "int8"), name="Q")
    return A, W, C, Y, Q


def ffn_bf16(M: int, N: int, K: int, scale: float) -> tuple:
    """DESIGN.md's pipeline: bfloat16 inputs, a float32 sum ``C``, the bfloat16 rounding
    point ``Cb``, ``Y = silu(Cb)``, ``Q = quantize(Y, scale, int8)``. Returns
    ``(A, W, C, Cb, Y, Q)``."""
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[k, j], "float32"),
                                               axis=k), name="C")
    Cb = tc.compute((M, N), lambda i, j: tc.cast(C[i, j], "bfloat16"), name="Cb")
    Y = tc.compute((M, N), lambda i, j: tc.silu(Cb[i, j]), name="Y")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(Y[i, j], scale, "int8"), name="Q")
    return A, W, C, Cb, Y, Q
