"""Small algorithms and helpers shared by the tests.

Each builder returns a :class:`Workload`: the tensors by name, the output, a way to
draw fresh inputs, and an independent float64 numpy reference (written here from the
math, not from ``tc.evaluate``). ``run`` builds a schedule, poisons the outputs (NaN,
or a sentinel for integer outputs) so that an element the kernel never writes cannot
pass, launches it in the simulator and returns the outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import tcomp as tc
from tcomp.dtypes import host_dtype
from tcomp.testing import algorithms

#: value an int8 output holds before the kernel runs; no test's reference produces it
INT8_SENTINEL = -77


@dataclass
class Workload:
    tensors: dict  # name -> tc.Tensor
    out: tc.Tensor
    inputs: list  # placeholders, in argument order
    make_inputs: Callable  # rng -> list of numpy arrays, in argument order
    reference: Callable  # list of numpy inputs -> float64 (or int) numpy result
    extra: dict = field(default_factory=dict)

    def __getitem__(self, name: str) -> tc.Tensor:
        return self.tensors[name]

    def schedule(self):
        return tc.create_schedule(self.out)

    def feeds(self, arrays) -> dict:
        return dict(zip(self.inputs, arrays))


# ---------------------------------------------------------------------------- builders


def matmul(M=37, N=29, K=19, dtype="float32") -> Workload:
    """C[i, j] = sum_k A[i, k] * W[k, j]."""
    A = tc.placeholder((M, K), dtype, name="A")
    W = tc.placeholder((K, N), dtype, name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")

    def make(rng):
        return [rng.standard_normal((M, K)).astype(dtype), rng.standard_normal((K, N)).astype(dtype)]

    def ref(xs):
        a, w = (x.astype(np.float64) for x in xs)
        return a @ w

    return Workload({"A": A, "W": W, "C": C}, C, [A, W], make, ref)


def tiled_matmul(M, N, K, bk=4, threads=(4, 4), vector=1, dtype="float32"):
    """``matmul`` with block tiles of ``threads`` (one output a thread), the k loop in
    steps of ``bk`` and both operands in shared tiles filled cooperatively (``vector``
    lanes a load). Returns the workload, the schedule and the tiles by operand name."""
    w = matmul(M, N, K, dtype)
    C = w["C"]
    s = w.schedule()
    CL = s.cache_write(C, "local")
    caches = {name: s.cache_read(name, "shared", [CL]) for name in ("A", "W")}
    i, j = s[C].axis
    bi, bj, ti, tj = s[C].tile(i, j, *threads)
    s[C].bind(bi, "blockIdx.y")
    s[C].bind(bj, "blockIdx.x")
    s[C].bind(ti, "threadIdx.y")
    s[C].bind(tj, "threadIdx.x")
    s[CL].compute_at(s[C], tj)
    ko, ki = s[CL].split(s[CL].reduce_axis[0], bk)
    for cache in caches.values():
        s[cache].compute_at(s[CL], ko)
        a, b = s[cache].axis
        fused = s[cache].fuse(a, b)
        if vector > 1:
            fused, lanes = s[cache].split(fused, vector)
            s[cache].vectorize(lanes)
        rest, tid = s[cache].split(fused, threads[0] * threads[1])
        ty, tx = s[cache].split(tid, threads[1])
        s[cache].bind(ty, "threadIdx.y")
        s[cache].bind(tx, "threadIdx.x")
        s[cache].unroll(rest)
    return w, s, caches


def json_from_a_process_without_the_simulator(args: list, timeout: float = 600):
    """Run ``python ARGS`` from the project's root without NUMBA_ENABLE_CUDASIM (offline
    PTX needs the real compiler) and return the JSON of the last line it prints."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, *args], cwd=Path(__file__).resolve().parents[1], env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def silu64(x):
    return x / (1.0 + np.exp(-x))


def quantize_int8_64(x, scale):
    """int8 quantization in float64: round half to even, saturate."""
    return np.clip(np.rint(x / scale), -128, 127).astype(np.int64)


def matmul_silu_quant(M=37, N=29, K=19, scale=0.05) -> Workload:
    """Q = quantize(silu(A @ W), scale, int8) with a fixed scale; C and Y are stages of their own."""
    A, W, C, Y, Q = algorithms.matmul_silu_quant(M, N, K, scale)

    def make(rng):
        return [rng.standard_normal((M, K)).astype("float32"),
                rng.standard_normal((K, N)).astype("float32")]

    def ref(xs):
        a, w = (x.astype(np.float64) for x in xs)
        return quantize_int8_64(silu64(a @ w), scale)

    return Workload({"A": A, "W": W, "C": C, "Y": Y, "Q": Q}, Q, [A, W], make, ref,
                    extra={"scale": scale})


def elementwise_chain(M=37, N=29) -> Workload:
    """B = X * 2 + Z;  S = silu(B);  O = S * 0.5 - Z  (three stages, two inputs)."""
    X = tc.placeholder((M, N), "float32", name="X")
    Z = tc.placeholder((M, N), "float32", name="Z")
    B = tc.compute((M, N), lambda i, j: X[i, j] * 2.0 + Z[i, j], name="B")
    S = tc.compute((M, N), lambda i, j: tc.silu(B[i, j]), name="S")
    O = tc.compute((M, N), lambda i, j: S[i, j] * 0.5 - Z[i, j], name="O")

    def make(rng):
        return [rng.standard_normal((M, N)).astype("float32"),
                rng.standard_normal((M, N)).astype("float32")]

    def ref(xs):
        x, z = (v.astype(np.float64) for v in xs)
        return silu64(x * 2.0 + z) * 0.5 - z

    return Workload({"X": X, "Z": Z, "B": B, "S": S, "O": O}, O, [X, Z], make, ref)


def rowmax_quant(M=13, N=29) -> Workload:
    """R[i] = max_k |X[i, k]|;  Q[i, j] = quantize(X[i, j], R[i] / 127.0, int8)."""
    X = tc.placeholder((M, N), "float32", name="X")
    k = tc.reduce_axis(N, name="k")
    R = tc.compute((M,), lambda i: tc.max(tc.abs(X[i, k]), axis=k), name="R")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(X[i, j], R[i] / 127.0, "int8"), name="Q")

    def make(rng):
        return [rng.standard_normal((M, N)).astype("float32")]

    def ref(xs):
        # the scale is a float32 division in the algorithm; reproduce it exactly, the rest
        # in float64 (x / scale in float32 and float64 round to the same integer except at
        # exact ties, which random data does not hit)
        x = xs[0]
        r = np.abs(x).max(axis=1)
        scale = (r / np.float32(127.0)).astype(np.float32)
        return np.clip(np.rint(x.astype(np.float64) / scale[:, None].astype(np.float64)), -128, 127)

    return Workload({"X": X, "R": R, "Q": Q}, Q, [X], make, ref)


# ---------------------------------------------------------------------------- running


def int_sentinel(dtype: str, avoid=None) -> int:
    """The value an integer output holds before the kernel runs: one that ``avoid`` (the
    expected result) does not contain, so an element the kernel skips cannot pass."""
    sentinel = INT8_SENTINEL if dtype == "int8" else int(np.iinfo(np.int32).min) + 7
    if avoid is None:
        return sentinel
    present = set(np.unique(np.asarray(avoid)).tolist())
    return next(v for v in [sentinel] + list(range(-128, 128)) if v not in present)


def poisoned(shape, dtype: str, avoid=None) -> np.ndarray:
    """An output array that fails every comparison until the kernel overwrites it:
    NaN for float outputs, :func:`int_sentinel` for integer outputs."""
    host = host_dtype(dtype)
    if dtype in ("int8", "int32"):
        return np.full(shape, int_sentinel(dtype, avoid), dtype=host)
    return np.full(shape, np.nan, dtype=np.float32).astype(host)


def run(s, inputs, expected=None, outputs=None):
    """Build ``s``, call it on ``inputs`` with poisoned outputs, return the outputs.

    ``outputs`` defaults to the schedule's output tensors; ``expected`` (one array per
    output, or one array) steers the choice of the integer sentinel.
    """
    mod = tc.build(s)
    tensors = list(outputs or s.outputs)
    if expected is None:
        expected = [None] * len(tensors)
    elif len(tensors) == 1:
        expected = [expected]
    outs = [poisoned(t.shape, t.dtype, e) for t, e in zip(tensors, expected)]
    mod(*inputs, *outs)
    return outs[0] if len(outs) == 1 else outs


def run_and_compare(s, w: Workload, rng, rtol=1e-5, atol=1e-5, ref_tol=None, max_off=2):
    """Run schedule ``s`` of workload ``w`` on fresh inputs; compare the output with
    ``tc.evaluate`` and with the workload's float64 reference. Returns the output."""
    xs = w.make_inputs(rng)
    want = tc.evaluate(w.out, w.feeds(xs))
    got = run(s, xs, expected=want)
    if w.out.dtype == "int8":
        sentinel = int_sentinel("int8", want)
        check_int8(got, want, max_diff=1, max_off=max_off, sentinel=sentinel)
        check_int8(got, w.reference(xs).astype(np.int8), max_diff=1, max_off=max_off, sentinel=sentinel)
    else:
        check_float(got, want, rtol=rtol, atol=atol)
        check_float(got, w.reference(xs), **(ref_tol or {"rtol": rtol, "atol": atol}))
    return got


def check_float(got, want, rtol=1e-5, atol=1e-5):
    """All finite (no poisoned element left) and close to ``want``."""
    got = np.asarray(got, dtype=np.float64)
    assert np.isfinite(got).all(), f"{np.count_nonzero(~np.isfinite(got))} elements not written"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def check_int8(got, want, max_diff=0, max_off=0, sentinel=None):
    """Every element written (none holds ``sentinel``, by default the one :func:`run`
    chose for ``want``), and equal to ``want`` except at most ``max_off`` elements off by
    at most ``max_diff`` (a float32 value within rounding error of a .5 boundary may
    quantize either way)."""
    got = np.asarray(got)
    assert got.dtype == np.int8
    want = np.asarray(want)
    assert got.shape == want.shape
    unwritten = got == (int_sentinel("int8", want) if sentinel is None else sentinel)
    assert not unwritten.any(), (f"{np.count_nonzero(unwritten)} elements not written, "
                                 f"first at {np.argwhere(unwritten)[0]}")
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert diff.max() <= max_diff, (
        f"{np.count_nonzero(diff > max_diff)} elements differ by more than {max_diff}; "
        f"max diff {diff.max()}; first at {np.argwhere(diff > max_diff)[0]}")
    assert np.count_nonzero(diff) <= max_off, f"{np.count_nonzero(diff)} elements differ by one step"


def matmul_tol(K: int) -> dict:
    """float32 matmul against float64: error grows with the reduction length."""
    return {"rtol": 1e-4, "atol": 1e-5 * K}


def assert_ir(s, expected: str) -> None:
    """``str(tc.lower(s))`` equals ``expected`` (dedented; surrounding blank lines ignored)."""
    import textwrap

    got = str(tc.lower(s)).strip("\n")
    want = textwrap.dedent(expected).strip("\n")
    if got != want:
        import difflib

        diff = "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), "expected", "lowered",
                                              lineterm=""))
        raise AssertionError(f"lowered IR differs from the golden printout:\n{diff}\n\nfull IR:\n{got}")


def vector_op(n=10, name="O"):
    """O[i] = X[i] * 2 + 1 over a 1-D tensor: the smallest schedulable algorithm."""
    X = tc.placeholder((n,), "float32", name="X")
    O = tc.compute((n,), lambda i: X[i] * 2.0 + 1.0, name=name)
    return X, O


def check_16_bit_product(s, M: int, N: int, K: int, dtype: str, rng, rounded: bool = False) -> None:
    """Build ``s`` (C = A @ W, A and W of ``dtype`` bfloat16 or float16, C float32), run it on
    fresh inputs into a NaN-poisoned C and check C against float64 within the bound of a
    float32 sum of K exact products: ``2 K 2^-24 sum_k |a_ik w_kj|``. With ``rounded`` C is
    bfloat16 (the sum rounded once): half a bf16 step more, ``2^-8 |c|``."""
    import ml_dtypes

    narrow = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[dtype]
    a = rng.standard_normal((M, K)).astype(narrow)
    w = rng.standard_normal((K, N)).astype(narrow)
    got = np.full((M, N), np.nan, ml_dtypes.bfloat16 if rounded else np.float32)
    tc.build(s)(a, w, got)
    got = got.astype(np.float64)
    want = a.astype(np.float64) @ w.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(w).astype(np.float64)
    assert not np.isnan(got).any()
    assert np.all(np.abs(got - want) <= 2 * K * 2.0 ** -24 * scale + (2.0 ** -8 * np.abs(want) if rounded else 0))


def product_16_bit(M: int, N: int, K: int, b_layout: str = "kn", batch: int = 0):
    """``(A, W, C)``: C = A @ W in float32 from bfloat16 operands, W stored as [K, N]
    (``"kn"``) or [N, K] (``"nk"``, torch.nn.Linear's weight); with ``batch`` a leading
    axis on all three."""
    lead = (batch,) if batch else ()
    A = tc.placeholder(lead + (M, K), "bfloat16", name="A")
    W = tc.placeholder(lead + ((K, N) if b_layout == "kn" else (N, K)), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")

    def w(b, k, j):
        return W[(*b, *((k, j) if b_layout == "kn" else (j, k)))]

    C = tc.compute(lead + (M, N), lambda *ax: tc.sum(tc.cast(A[(*ax[:-2], ax[-2], k)], "float32") *
                                                     tc.cast(w(ax[:-2], k, ax[-1]), "float32"), axis=k), name="C")
    return A, W, C


def check_product(s, A, W, C, rng) -> None:
    """Build ``s`` (a schedule of :func:`product_16_bit`'s C), run it on fresh inputs into a
    NaN-poisoned C, compare with ``tc.evaluate`` within the bound of a float32 sum of K
    exact products."""
    import ml_dtypes

    K = A.shape[-1]
    a = rng.standard_normal(A.shape).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal(W.shape).astype(ml_dtypes.bfloat16)
    got = np.full(C.shape, np.nan, np.float32)
    tc.build(s)(a, w, got)
    want = tc.evaluate(C, {A: a, W: w})
    w_kn = w if W.shape[-2] == K and W.shape[-1] == C.shape[-1] else np.swapaxes(w, -1, -2)
    scale = np.abs(a.astype(np.float64)) @ np.abs(w_kn.astype(np.float64))
    assert not np.isnan(got).any()
    assert np.all(np.abs(got - want) <= 2 * K * 2.0 ** -24 * scale)


def fp8_steps(got, want) -> np.ndarray:
    """How many float8_e4m3 values lie between ``got`` and ``want`` (0: equal)."""
    import ml_dtypes

    bits = [np.asarray(x, ml_dtypes.float8_e4m3fn).view(np.uint8).astype(int) for x in (got, want)]
    line = [np.where(b & 0x80, -(b & 0x7F), b & 0x7F) for b in bits]  # sign-magnitude to a monotonic line
    return np.abs(line[0] - line[1])


def run_drawn(check: Callable, examples: int, seed) -> None:
    """Run ``check(data)`` (a hypothesis ``st.data()`` draw) on ``examples`` draws, from
    ``seed`` where given (the fuzz tests' ``--fuzz-seed``), no example database."""
    import hypothesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              print_blob=True)
    @given(st.data())
    def prop(data):
        check(data)

    if seed is not None:
        prop = hypothesis.seed(seed)(prop)
    prop()
