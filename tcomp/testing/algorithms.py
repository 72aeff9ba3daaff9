"""The algorithms that the test suites and the schedule fuzzer share, at any shape.

Each returns its tensors in the order they are defined, placeholders first, with the
names the tests' messages and schedules use (``A``, ``W``, ``k``, ``C``, ...).
"""

from __future__ import annotations

import tcomp as tc


def matmul(M: int, N: int, K: int) -> tuple:
    """``C[i, j] = sum_k A[i, k] * W[k, j]`` in float32. Returns ``(A, W, C)``."""
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    return A, W, C


def matmul_silu_quant(M: int, N: int, K: int, scale: float) -> tuple:
    """``Q = quantize(silu(A @ W), scale, int8)`` in float32; C and Y are stages of
    their own. Returns ``(A, W, C, Y, Q)``."""
    A, W, C = matmul(M, N, K)
    Y = tc.compute((M, N), lambda i, j: tc.silu(C[i, j]), name="Y")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(Y[i, j], scale, "int8"), name="Q")
    return A, W, C, Y, Q


def swiglu_quant(M: int, N: int, K: int, scale: float) -> tuple:
    """``G = A @ Wg``, ``U = A @ Wu``, ``H = silu(G) * U``, ``Q = quantize(H, scale,
    int8)`` in float32. Returns ``(A, Wg, Wu, G, U, H, Q)``."""
    A = tc.placeholder((M, K), "float32", name="A")
    Wg = tc.placeholder((K, N), "float32", name="Wg")
    Wu = tc.placeholder((K, N), "float32", name="Wu")
    kg = tc.reduce_axis(K, name="kg")
    ku = tc.reduce_axis(K, name="ku")
    G = tc.compute((M, N), lambda i, j: tc.sum(A[i, kg] * Wg[kg, j], axis=kg), name="G")
    U = tc.compute((M, N), lambda i, j: tc.sum(A[i, ku] * Wu[ku, j], axis=ku), name="U")
    H = tc.compute((M, N), lambda i, j: tc.silu(G[i, j]) * U[i, j], name="H")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(H[i, j], scale, "int8"), name="Q")
    return A, Wg, Wu, G, U, H, Q


def rowmax_quant(M: int, N: int) -> tuple:
    """``R[i] = max_k |X[i, k]|``, ``Q[i, j] = quantize(X[i, j], R[i] / 127.0, int8)``.
    Returns ``(X, R, Q)``."""
    X = tc.placeholder((M, N), "float32", name="X")
    k = tc.reduce_axis(N, name="k")
    R = tc.compute((M,), lambda i: tc.max(tc.abs(X[i, k]), axis=k), name="R")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(X[i, j], R[i] / 127.0, "int8"), name="Q")
    return X, R, Q


def elementwise_chain(M: int, N: int) -> tuple:
    """``B = X * 2 + Z``, ``S = silu(B)``, ``O = S * 0.5 - Z``. Returns ``(X, Z, B, S, O)``."""
    X = tc.placeholder((M, N), "float32", name="X")
    Z = tc.placeholder((M, N), "float32", name="Z")
    B = tc.compute((M, N), lambda i, j: X[i, j] * 2.0 + Z[i, j], name="B")
    S = tc.compute((M, N), lambda i, j: tc.silu(B[i, j]), name="S")
    O = tc.compute((M, N), lambda i, j: S[i, j] * 0.5 - Z[i, j], name="O")
    return X, Z, B, S, O


def activation_chain(M: int, N: int) -> tuple:
    """Every scalar function and ``tc.where`` in one chain: ``B = X * 2 + Z``, ``G`` the tanh
    form of GELU of B (with ``B ** 3``), ``S = where(G > 0, sqrt(G + 1) * erf(B),
    log(|B| + 1) * rsqrt(|Z| + 1))``, ``O = S * 0.5 - Z``. Returns ``(X, Z, B, G, S, O)``."""
    X = tc.placeholder((M, N), "float32", name="X")
    Z = tc.placeholder((M, N), "float32", name="Z")
    B = tc.compute((M, N), lambda i, j: X[i, j] * 2.0 + Z[i, j], name="B")
    G = tc.compute((M, N), lambda i, j: 0.5 * B[i, j] * (1.0 + tc.tanh(0.7978845608 * (B[i, j] + 0.044715 *
                                                                                       B[i, j] ** 3))), name="G")
    S = tc.compute((M, N), lambda i, j: tc.where(G[i, j] > 0.0, tc.sqrt(G[i, j] + 1.0) * tc.erf(B[i, j]),
                                                 tc.log(tc.abs(B[i, j]) + 1.0) * tc.rsqrt(tc.abs(Z[i, j]) + 1.0)),
                   name="S")
    O = tc.compute((M, N), lambda i, j: S[i, j] * 0.5 - Z[i, j], name="O")
    return X, Z, B, G, S, O


def row_norm(M: int, N: int) -> tuple:
    """A LayerNorm without its affine part, two statistics of which the second reads the
    first: ``Sx`` (the row's sum), ``D = X - Sx / N``, ``Sd`` (the sum of ``D^2``) and
    ``O = D * rsqrt(Sd / N + 1e-5)``. Returns ``(X, Sx, D, Sd, O)``."""
    X = tc.placeholder((M, N), "float32", name="X")
    k = tc.reduce_axis(N, name="k")
    Sx = tc.compute((M,), lambda i: tc.sum(X[i, k], axis=k), name="Sx")
    D = tc.compute((M, N), lambda i, j: X[i, j] - Sx[i] / float(N), name="D")
    k2 = tc.reduce_axis(N, name="k2")
    Sd = tc.compute((M,), lambda i: tc.sum(D[i, k2] * D[i, k2], axis=k2), name="Sd")
    O = tc.compute((M, N), lambda i, j: D[i, j] * tc.rsqrt(Sd[i] / float(N) + 1e-5), name="O")
    return X, Sx, D, Sd, O


def ffn_bf16(M: int, N: int, K: int, scale: float) -> tuple:
    """The bfloat16 FFN pipeline: bfloat16 inputs, a float32 sum ``C``, the bfloat16 rounding
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
