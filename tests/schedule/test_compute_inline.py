"""compute_inline(): a stage substituted into its readers; casts stay rounding points."""

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from workloads import assert_ir, check_float, elementwise_chain, run, run_and_compare


def _bf16_round(x32: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 -> float32, round to nearest even, by bit manipulation."""
    bits = x32.astype(np.float32).view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32)
    return rounded.view(np.float32)


def _cast_pipeline(shape=(2, 3)):
    X = tc.placeholder(shape, "float32", name="X")
    Cb = tc.compute(shape, lambda i, j: tc.cast(X[i, j] * 3.0, "bfloat16"), name="Cb")
    Y = tc.compute(shape, lambda i, j: tc.cast(Cb[i, j], "float32") + 1.0, name="Y")
    return X, Cb, Y


def test_inline_golden_keeps_the_cast():
    X, Cb, Y = _cast_pipeline()
    s = tc.create_schedule(Y)
    s[Cb].compute_inline()
    assert_ir(s, """
        kernel k_Y(X, Y)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            for j in range(3):
              Y[i * 3 + j] = float32(bfloat16(X[i * 3 + j] * 3.0)) + 1.0
    """)


def test_not_inlined_golden_two_kernels():
    X, Cb, Y = _cast_pipeline()
    s = tc.create_schedule(Y)
    assert_ir(s, """
        Cb = alloc global bfloat16[2x3]
        kernel k_Cb(X, Cb)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            for j in range(3):
              Cb[i * 3 + j] = bfloat16(X[i * 3 + j] * 3.0)
        kernel k_Y(Y, Cb)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            for j in range(3):
              Y[i * 3 + j] = float32(Cb[i * 3 + j]) + 1.0
    """)


@pytest.mark.parametrize("inline", [False, True])
def test_inlined_cast_rounds_exactly_like_the_algorithm(rng, inline):
    X, Cb, Y = _cast_pipeline((4, 16))
    s = tc.create_schedule(Y)
    if inline:
        s[Cb].compute_inline()
    s[Y].bind(s[Y].axis[1], "threadIdx.x")
    x = rng.standard_normal((4, 16)).astype(np.float32)
    got = run(s, [x])
    want = _bf16_round(x * np.float32(3.0)) + np.float32(1.0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, tc.evaluate(Y, {X: x}))
    # and the cast matters: without it most elements would differ
    assert np.count_nonzero(got != x * np.float32(3.0) + np.float32(1.0)) > 32


def test_inline_whole_chain_into_one_kernel(rng):
    w = elementwise_chain(37, 29)
    s = w.schedule()
    s[w["B"]].compute_inline()
    s[w["S"]].compute_inline()
    O = w["O"]
    i, j = s[O].axis
    io, jo, ii, ji = s[O].tile(i, j, 8, 8)
    s[O].bind(ii, "threadIdx.y")
    s[O].bind(ji, "threadIdx.x")
    p = tc.lower(s)
    assert [k.name for k in p.kernels] == ["k_O"] and p.intermediates == ()
    run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)


def test_inline_a_stage_read_twice(rng):
    """V = P * (P + 1) after inlining U = P + 1 and P itself: P's expression appears twice."""
    X = tc.placeholder((5, 7), "float32", name="X")
    P = tc.compute((5, 7), lambda i, j: X[i, j] * 2.0, name="P")
    U = tc.compute((5, 7), lambda i, j: P[i, j] + 1.0, name="U")
    V = tc.compute((5, 7), lambda i, j: P[i, j] * U[i, j], name="V")
    s = tc.create_schedule(V)
    s[P].compute_inline()
    s[U].compute_inline()
    assert_ir(s, """
        kernel k_V(X, V)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(5):
            for j in range(7):
              V[i * 7 + j] = X[i * 7 + j] * 2.0 * (X[i * 7 + j] * 2.0 + 1.0)
    """)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    got = run(s, [x])
    check_float(got, tc.evaluate(V, {X: x}), rtol=0, atol=0)


def test_inline_with_shifted_indices(rng):
    """An inlined stage read at shifted indices: its expression is re-indexed."""
    X = tc.placeholder((9,), "float32", name="X")
    P = tc.compute((9,), lambda i: X[i] * X[i], name="P")
    D = tc.compute((8,), lambda i: P[i + 1] - P[i], name="D")
    s = tc.create_schedule(D)
    s[P].compute_inline()
    s[D].bind(s[D].axis[0], "threadIdx.x")
    x = rng.standard_normal(9).astype(np.float32)
    got = run(s, [x])
    sq = x * x
    np.testing.assert_array_equal(got, sq[1:] - sq[:-1])


def test_inline_bf16_arithmetic_stays_bf16(rng):
    """A bf16 stage's arithmetic rounds after every operation, inlined or not."""
    X = tc.placeholder((16,), "bfloat16", name="X")
    P = tc.compute((16,), lambda i: X[i] * X[i] + X[i], name="P")  # bf16 * and + : two roundings
    O = tc.compute((16,), lambda i: tc.cast(P[i], "float32"), name="O")
    x = rng.standard_normal(16).astype(ml_dtypes.bfloat16)
    want = tc.evaluate(O, {X: x})
    x32 = x.astype(np.float32)
    independent = _bf16_round(_bf16_round(x32 * x32) + x32)
    np.testing.assert_array_equal(want, independent)
    for inline in (False, True):
        s = tc.create_schedule(O)
        if inline:
            s[P].compute_inline()
        s[O].bind(s[O].axis[0], "threadIdx.x")
        np.testing.assert_array_equal(run(s, [x]), want)
