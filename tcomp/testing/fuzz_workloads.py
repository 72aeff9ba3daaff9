"""The schedule fuzzer's workloads: the shared algorithms (:mod:`tcomp.testing.algorithms`)
at tiny shapes, each with a way to draw its inputs, and the strategy that draws one at
a random shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from hypothesis import strategies as st

import tcomp as tc
from tcomp.dtypes import host_dtype
from tcomp.testing import algorithms


@dataclass(frozen=True)
class FuzzWorkload:
    """An algorithm at one tiny shape, with a way to draw its inputs."""

    name: str
    shape: dict
    out: tc.Tensor
    inputs: list  # placeholders, in the module's argument order
    make_inputs: Callable  # numpy Generator -> list of arrays, in argument order
    reduction_length: int = 1  # the longest reduction (float tolerance grows with it)

    def feeds(self, arrays) -> dict:
        return dict(zip(self.inputs, arrays))

    def expression(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.shape.items())
        return f"WORKLOADS[{self.name!r}]({args})"


def _normal(rng, shape, dtype="float32"):
    return rng.standard_normal(shape).astype(np.float32).astype(host_dtype(dtype))


def matmul(M=6, N=5, K=7) -> FuzzWorkload:
    """C[i, j] = sum_k A[i, k] * W[k, j]."""
    A, W, C = algorithms.matmul(M, N, K)
    return FuzzWorkload("matmul", dict(M=M, N=N, K=K), C, [A, W],
                        lambda rng: [_normal(rng, (M, K)), _normal(rng, (K, N))], K)


def matmul_silu_quant(M=6, N=5, K=7, scale=0.1) -> FuzzWorkload:
    """Q = quantize(silu(A @ W), scale, int8); C and Y are stages of their own."""
    A, W, C, Y, Q = algorithms.matmul_silu_quant(M, N, K, scale)
    return FuzzWorkload("matmul_silu_quant", dict(M=M, N=N, K=K), Q, [A, W],
                        lambda rng: [_normal(rng, (M, K)), _normal(rng, (K, N))], K)


def swiglu_quant(M=6, N=5, K=7, scale=0.05) -> FuzzWorkload:
    """G = A @ Wg;  U = A @ Wu;  H = silu(G) * U;  Q = quantize(H, scale, int8)."""
    A, Wg, Wu, G, U, H, Q = algorithms.swiglu_quant(M, N, K, scale)
    return FuzzWorkload("swiglu_quant", dict(M=M, N=N, K=K), Q, [A, Wg, Wu],
                        lambda rng: [_normal(rng, (M, K)), _normal(rng, (K, N)), _normal(rng, (K, N))], K)


def rowmax_quant(M=6, N=7) -> FuzzWorkload:
    """R[i] = max_k |X[i, k]|;  Q[i, j] = quantize(X[i, j], R[i] / 127.0, int8)."""
    X, R, Q = algorithms.rowmax_quant(M, N)
    return FuzzWorkload("rowmax_quant", dict(M=M, N=N), Q, [X], lambda rng: [_normal(rng, (M, N))], N)


def elementwise_chain(M=6, N=7) -> FuzzWorkload:
    """B = X * 2 + Z;  S = silu(B);  O = S * 0.5 - Z."""
    X, Z, B, S, O = algorithms.elementwise_chain(M, N)
    return FuzzWorkload("elementwise_chain", dict(M=M, N=N), O, [X, Z],
                        lambda rng: [_normal(rng, (M, N)), _normal(rng, (M, N))], 1)


def activation_chain(M=6, N=7) -> FuzzWorkload:
    """B = X * 2 + Z;  G = gelu(B) (tanh form);  S = where(G > 0, sqrt, erf; log, rsqrt);  O = S * 0.5 - Z."""
    X, Z, B, G, S, O = algorithms.activation_chain(M, N)
    return FuzzWorkload("activation_chain", dict(M=M, N=N), O, [X, Z],
                        lambda rng: [_normal(rng, (M, N)), _normal(rng, (M, N))], 1)


def row_norm(M=6, N=7) -> FuzzWorkload:
    """Sx = sum_k X;  D = X - Sx / N;  Sd = sum_k D^2;  O = D * rsqrt(Sd / N + 1e-5)."""
    X, Sx, D, Sd, O = algorithms.row_norm(M, N)
    return FuzzWorkload("row_norm", dict(M=M, N=N), O, [X], lambda rng: [_normal(rng, (M, N))], N)


def ffn_bf16(M=6, N=5, K=7, scale=0.1) -> FuzzWorkload:
    """bfloat16 inputs, a float32 sum, a bfloat16 rounding point, SiLU, int8 quantize."""
    A, W, C, Cb, Y, Q = algorithms.ffn_bf16(M, N, K, scale)
    return FuzzWorkload("ffn_bf16", dict(M=M, N=N, K=K), Q, [A, W],
                        lambda rng: [_normal(rng, (M, K), "bfloat16"), _normal(rng, (K, N), "bfloat16")], K)


#: name -> builder taking shape keywords
WORKLOADS: dict = {
    "matmul": matmul,
    "matmul_silu_quant": matmul_silu_quant,
    "swiglu_quant": swiglu_quant,
    "rowmax_quant": rowmax_quant,
    "elementwise_chain": elementwise_chain,
    "activation_chain": activation_chain,
    "row_norm": row_norm,
    "ffn_bf16": ffn_bf16,
}

_DIM = st.integers(4, 9)
_RED = st.integers(4, 12)


def workloads(name: str):
    """A strategy for workload ``name`` at a random tiny shape (M, N in 4..9, K in 4..12)."""
    build = WORKLOADS[name]
    if name in ("rowmax_quant", "elementwise_chain", "activation_chain", "row_norm"):
        n = _RED if name in ("rowmax_quant", "row_norm") else _DIM
        return st.builds(build, M=_DIM, N=n)
    return st.builds(build, M=_DIM, N=_DIM, K=_RED)

