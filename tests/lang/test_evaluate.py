"""tc.evaluate, the numpy reference of an algorithm, against independent numpy written
from the definitions (bit manipulation for bfloat16, an enumeration of float8_e4m3, float64
math for the functions); then the built kernels against tc.evaluate on the same edge
values."""

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from workloads import run

F32 = np.float32


def _unary(fn, x: np.ndarray, name="O"):
    """O[i] = fn(X[i]) over a 1-D input; returns (X, O)."""
    dtype = {np.dtype(np.float32): "float32", np.dtype(ml_dtypes.bfloat16): "bfloat16",
             np.dtype(np.int8): "int8", np.dtype(np.int32): "int32",
             np.dtype(np.float16): "float16"}[x.dtype]
    X = tc.placeholder(x.shape, dtype, name="X")
    O = tc.compute(x.shape, lambda i: fn(X[i]), name=name)
    return X, O


def _eval(fn, x):
    X, O = _unary(fn, x)
    return tc.evaluate(O, {X: x})


# ---------------------------------------------------------------------------- independent references


def bf16_round_bits(x32: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (as float32), round to nearest even, on the bit pattern."""
    x32 = np.asarray(x32, dtype=np.float32)
    bits = x32.view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x32), np.float32(np.nan), rounded)


def _e4m3_values() -> tuple[np.ndarray, np.ndarray]:
    """Every non-negative finite float8_e4m3fn value (float64) with its code, by formula."""
    vals, codes = [], []
    for e in range(16):
        for m in range(8):
            if e == 15 and m == 7:
                continue  # NaN
            v = (m / 8) * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
            vals.append(v)
            codes.append(e * 8 + m)
    return np.array(vals), np.array(codes)


def e4m3_round(x: np.ndarray) -> np.ndarray:
    """Saturate to +-448, then round to the nearest e4m3 value, ties to the even code."""
    vals, codes = _e4m3_values()
    out = []
    for v in np.asarray(x, dtype=np.float64).ravel():
        a = min(abs(v), 448.0)
        d = np.abs(vals - a)
        best = np.flatnonzero(d == d.min())
        pick = best[0] if len(best) == 1 else next(b for b in best if codes[b] % 2 == 0)
        out.append(np.copysign(vals[pick], v))
    return np.array(out).reshape(np.shape(x))


def silu64(x):
    x = np.asarray(x, dtype=np.float64)
    return x / (1.0 + np.exp(-x))


# ---------------------------------------------------------------------------- casts


def test_bf16_reference_rounding_is_right():
    """The bit-manipulation reference itself, on hand-made ties."""
    one = np.float32(1.0).view(np.uint32)
    tie_down = np.array([one + 0x8000], np.uint32).view(np.float32)  # 1 + 2^-8: tie, 1.0 is even
    tie_up = np.array([one + 0x18000], np.uint32).view(np.float32)  # tie, odd below: round up
    above = np.array([one + 0x8001], np.uint32).view(np.float32)
    assert bf16_round_bits(tie_down)[0] == 1.0
    assert bf16_round_bits(tie_up)[0].view(np.uint32) == one + 0x20000
    assert bf16_round_bits(above)[0].view(np.uint32) == one + 0x10000


def test_cast_to_bfloat16_rounds_to_nearest_even(rng):
    x = rng.standard_normal(4096).astype(F32) * F32(100)
    # exact ties (low 16 bits 0x8000) with even and odd upper halves, and near-ties
    bits = rng.integers(0, 2**31, 256, dtype=np.uint32) & np.uint32(0x7FFF0000)
    ties = np.concatenate([bits | 0x8000, bits | 0x7FFF, bits | 0x8001]).view(np.float32)
    ties = ties[np.isfinite(ties)]
    x = np.concatenate([x, ties, -ties, np.array([0.0, -0.0, 3.0e38, -3.0e38, 1e-40], F32)])
    got = _eval(lambda v: tc.cast(v, "bfloat16"), x)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(F32), bf16_round_bits(x))


def test_cast_bfloat16_to_float32_is_exact(rng):
    x = rng.standard_normal(256).astype(ml_dtypes.bfloat16)
    got = _eval(lambda v: tc.cast(v, "float32"), x)
    bits = x.view(np.uint16).astype(np.uint32) << 16
    np.testing.assert_array_equal(got, bits.view(np.float32))


def test_cast_to_float16_rounds_to_nearest_even():
    x = np.array([2049.0, 2051.0, 2050.0, 1.0 + 2**-11, 1.0 + 3 * 2**-11, 65504.0, 65519.0, 1e-8], F32)
    got = _eval(lambda v: tc.cast(v, "float16"), x)
    np.testing.assert_array_equal(got.astype(np.float64),
                                  [2048.0, 2052.0, 2050.0, 1.0, 1.0 + 2**-9, 65504.0, 65504.0, 0.0])


def test_cast_float_to_int8_truncates_and_saturates():
    x = np.array([0.9, -0.9, 1.5, -1.5, 126.99, 127.0, 127.5, 300.0, -128.0, -128.9, -1e9, np.nan], F32)
    got = _eval(lambda v: tc.cast(v, "int8"), x)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [0, 0, 1, -1, 126, 127, 127, 127, -128, -128, -128, 0])


def test_cast_float_to_int32_truncates_and_saturates():
    x = np.array([2.7, -2.7, 3e9, -3e9, np.inf, -np.inf, np.nan], F32)
    got = _eval(lambda v: tc.cast(v, "int32"), x)
    np.testing.assert_array_equal(got, [2, -2, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 0])


def test_cast_int_to_float():
    x = np.array([-128, -1, 0, 1, 127], np.int8)
    got = _eval(lambda v: tc.cast(v, "float32") * 0.5, x)
    np.testing.assert_array_equal(got, x.astype(np.float64) * 0.5)


def test_cast_to_float8_e4m3_rounds_and_saturates_at_448(rng):
    specials = np.array([448.0, 449.0, 463.9, 464.0, 500.0, 1e6, -1e6, -449.0,
                         1.0625, 1.1875, 0.0, -0.0, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10], F32)
    x = np.concatenate([rng.standard_normal(512).astype(F32) * F32(50), specials])
    got = _eval(lambda v: tc.cast(v, "float8_e4m3"), x)
    assert got.dtype == ml_dtypes.float8_e4m3fn
    want = e4m3_round(x)
    np.testing.assert_array_equal(got.astype(np.float64), want)
    assert np.abs(got.astype(np.float64)).max() == 448.0


# ---------------------------------------------------------------------------- quantize


def test_quantize_int8_ties_go_to_even_and_saturate():
    x = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 0.49999997, 126.5, 127.49, 127.5, 128.0,
                  1000.0, -127.5, -128.49, -128.5, -129.0, -1000.0], F32)
    got = _eval(lambda v: tc.quantize(v, 1.0, "int8"), x)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [0, 2, 2, 4, 0, -2, -2, 0, 126, 127, 127, 127,
                                        127, -128, -128, -128, -128, -128])


def test_quantize_int8_with_a_scale(rng):
    """x / scale in float32, then half to even: compare with float64 where no tie is near."""
    x = rng.standard_normal(2048).astype(F32) * F32(4)
    scale = 0.05
    got = _eval(lambda v: tc.quantize(v, scale, "int8"), x)
    q32 = x / F32(scale)
    want = np.clip(np.rint(q32.astype(np.float64)), -128, 127)
    np.testing.assert_array_equal(got, want)
    # exact halves of the scale: 0.5 * scale etc. (scale a power of two keeps them exact)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -2.5], F32) * F32(0.25)
    got = _eval(lambda v: tc.quantize(v, 0.25, "int8"), halves)
    np.testing.assert_array_equal(got, [0, 2, 2, 0, -2])


def test_quantize_int8_with_a_per_row_scale(rng):
    """Q[i, j] = quantize(X[i, j], R[i] / 127.0): every row's max maps to +-127 exactly."""
    M, N = 6, 33
    X = tc.placeholder((M, N), "float32", name="X")
    k = tc.reduce_axis(N, "k")
    R = tc.compute((M,), lambda i: tc.max(tc.abs(X[i, k]), axis=k), name="R")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(X[i, j], R[i] / 127.0, "int8"), name="Q")
    x = rng.standard_normal((M, N)).astype(F32)
    got = tc.evaluate(Q, {X: x})
    r = np.abs(x).max(axis=1)
    np.testing.assert_array_equal(tc.evaluate(R, {X: x}), r)
    scale = (r / F32(127.0)).astype(F32)
    want = np.clip(np.rint((x / scale[:, None]).astype(np.float64)), -128, 127)
    np.testing.assert_array_equal(got, want)
    assert (np.abs(got).max(axis=1) == 127).all()


def test_quantize_fp8_saturates_at_448(rng):
    x = np.concatenate([rng.standard_normal(256).astype(F32) * F32(100),
                        np.array([224.0, 230.0, 1e4, -1e4, 0.0], F32)])
    got = _eval(lambda v: tc.quantize(v, 0.5, "float8_e4m3"), x)
    assert got.dtype == ml_dtypes.float8_e4m3fn
    want = e4m3_round(np.clip((x / F32(0.5)).astype(np.float64), -448, 448))
    np.testing.assert_array_equal(got.astype(np.float64), want)
    assert got.astype(np.float64)[-3] == 448.0 and got.astype(np.float64)[-2] == -448.0


def test_quantize_rejects_other_dtypes():
    X = tc.placeholder((4,), "float32", name="X")
    with pytest.raises(tc.LanguageError):
        tc.quantize(X[0], 1.0, "int32")


# ---------------------------------------------------------------------------- functions


def test_silu_matches_float64(rng):
    x = np.concatenate([rng.standard_normal(2048).astype(F32) * F32(6),
                        np.array([0.0, -0.0, 1e-30, -80.0, -100.0, 80.0, 100.0, 88.0, -88.0], F32)])
    got = _eval(tc.silu, x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, silu64(x), rtol=2e-6, atol=1e-37)


def test_silu_of_bfloat16_is_rounded_once(rng):
    x = (rng.standard_normal(512) * 4).astype(ml_dtypes.bfloat16)
    got = _eval(tc.silu, x)
    assert got.dtype == ml_dtypes.bfloat16
    x32 = x.astype(F32)
    silu32 = x32 / (F32(1) + np.exp(-x32))
    np.testing.assert_array_equal(got.astype(F32), bf16_round_bits(silu32))


def test_sigmoid_and_exp_match_float64(rng):
    x = rng.standard_normal(1024).astype(F32) * F32(8)
    np.testing.assert_allclose(_eval(tc.sigmoid, x), 1 / (1 + np.exp(-x.astype(np.float64))), rtol=2e-6)
    np.testing.assert_allclose(_eval(tc.exp, x), np.exp(x.astype(np.float64)), rtol=2e-6)


def test_round_is_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999998, 2.5000002, 1e8 + 0.0], F32)
    np.testing.assert_array_equal(_eval(tc.round, x), [0.0, 2.0, 2.0, -0.0, -2.0, 2.0, 3.0, 1e8])


def test_abs_clamp_maximum_minimum(rng):
    x = rng.standard_normal(256).astype(F32) * F32(3)
    np.testing.assert_array_equal(_eval(tc.abs, x), np.abs(x))
    np.testing.assert_array_equal(_eval(lambda v: tc.clamp(v, -1.0, 2.0), x), np.clip(x, -1, 2))
    np.testing.assert_array_equal(_eval(lambda v: tc.maximum(v, 0.5), x), np.maximum(x, F32(0.5)))
    np.testing.assert_array_equal(_eval(lambda v: tc.minimum(v, 0.5), x), np.minimum(x, F32(0.5)))


def test_integer_division_gives_float32():
    x = np.array([1, 7, -7, 100], np.int32)
    got = _eval(lambda v: v / 4, x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x / np.float32(4))


# ---------------------------------------------------------------------------- reductions


def test_sum_max_min_reductions(rng):
    x = rng.standard_normal((5, 37)).astype(F32) - F32(3)
    X = tc.placeholder((5, 37), "float32", name="X")
    k = tc.reduce_axis(37, "k")
    S = tc.compute((5,), lambda i: tc.sum(X[i, k] * X[i, k], axis=k), name="S")
    Mx = tc.compute((5,), lambda i: tc.max(X[i, k], axis=k), name="Mx")
    Mn = tc.compute((5,), lambda i: tc.min(X[i, k], axis=k), name="Mn")
    np.testing.assert_allclose(tc.evaluate(S, {X: x}), (x.astype(np.float64) ** 2).sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(tc.evaluate(Mx, {X: x}), x.max(axis=1))
    np.testing.assert_array_equal(tc.evaluate(Mn, {X: x}), x.min(axis=1))


def test_matmul_reduction_in_float32(rng):
    a = rng.standard_normal((7, 19)).astype(F32)
    b = rng.standard_normal((19, 5)).astype(F32)
    A = tc.placeholder((7, 19), "float32", name="A")
    B = tc.placeholder((19, 5), "float32", name="B")
    k = tc.reduce_axis(19, "k")
    C = tc.compute((7, 5), lambda i, j: tc.sum(A[i, k] * B[k, j], axis=k), name="C")
    got = tc.evaluate(C, {A: a, B: b})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_bfloat16_sum_rounds_after_every_step(rng):
    x = (rng.standard_normal((3, 64)) * 10).astype(ml_dtypes.bfloat16)
    X = tc.placeholder((3, 64), "bfloat16", name="X")
    k = tc.reduce_axis(64, "k")
    S = tc.compute((3,), lambda i: tc.sum(X[i, k], axis=k), name="S")
    got = tc.evaluate(S, {X: x})
    acc = np.zeros(3, F32)
    for n in range(64):
        acc = bf16_round_bits(acc + x[:, n].astype(F32))
    np.testing.assert_array_equal(got.astype(F32), acc)
    # and it is not the exactly rounded sum
    assert not np.array_equal(acc, bf16_round_bits(x.astype(np.float64).sum(axis=1).astype(F32)))


def test_int8_products_accumulated_in_int32(rng):
    a = rng.integers(-128, 128, (4, 50)).astype(np.int8)
    A = tc.placeholder((4, 50), "int8", name="A")
    k = tc.reduce_axis(50, "k")
    S = tc.compute((4,), lambda i: tc.sum(tc.cast(A[i, k], "int32") * tc.cast(A[i, k], "int32"), axis=k),
                   name="S")
    got = tc.evaluate(S, {A: a})
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, (a.astype(np.int64) ** 2).sum(axis=1))


# ---------------------------------------------------------------------------- evaluate's own errors


def test_evaluate_argument_errors():
    X = tc.placeholder((4,), "float32", name="X")
    O = tc.compute((4,), lambda i: X[i] + 1.0, name="O")
    with pytest.raises(tc.ArgumentError, match="X"):
        tc.evaluate(O, {})
    with pytest.raises(tc.ArgumentError, match="shape"):
        tc.evaluate(O, {X: np.zeros(5, F32)})
    with pytest.raises(tc.ArgumentError, match="dtype"):
        tc.evaluate(O, {X: np.zeros(4, np.float64)})


# ---------------------------------------------------------------------------- built kernels agree


def _built(fn, x: np.ndarray):
    """Build O[i] = fn(X[i]) with one thread per element; return (kernel output, evaluate)."""
    X, O = _unary(fn, x)
    s = tc.create_schedule(O)
    s[O].bind(s[O].axis[0], "threadIdx.x")
    want = tc.evaluate(O, {X: x})
    return run(s, [x], expected=want), want


_EDGES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 127.4, 127.5, 128.0, 1000.0, -128.4, -128.5, -129.0,
                   -1000.0, 0.49999997, 3.0, -3.0, 0.0], F32)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name, fn", [
    ("quantize_int8", lambda v: tc.quantize(v, 1.0, "int8")),
    ("quantize_int8_scaled", lambda v: tc.quantize(v, 0.25, "int8")),
    ("cast_int8", lambda v: tc.cast(v, "int8")),
    ("round", tc.round),
    ("quantize_fp8", lambda v: tc.quantize(v, 0.5, "float8_e4m3")),
    ("cast_fp8", lambda v: tc.cast(v, "float8_e4m3")),
    ("cast_bf16", lambda v: tc.cast(v * 1.001, "bfloat16")),
    ("cast_f16", lambda v: tc.cast(v * 100.0, "float16")),
    ("clamp", lambda v: tc.clamp(v, -1.0, 2.0)),
    ("abs", tc.abs),
])
def test_built_kernel_matches_evaluate_on_edge_values(name, fn):
    got, want = _built(fn, _EDGES)
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64))


@pytest.mark.parametrize("name, fn", [("silu", tc.silu), ("sigmoid", tc.sigmoid), ("exp", tc.exp)])
def test_built_functions_match_evaluate(rng, name, fn):
    x = np.concatenate([rng.standard_normal(40).astype(F32) * F32(5), np.array([-80.0, 80.0, 0.0], F32)])
    got, want = _built(fn, x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-38)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name, fn", [("silu", tc.silu), ("sigmoid", tc.sigmoid), ("exp", tc.exp)])
def test_built_functions_on_huge_arguments(name, fn):
    x = np.array([-1000.0, 1000.0, -100.0, 100.0], F32)
    got, want = _built(fn, x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-38)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_built_cast_to_int32_saturates():
    x = np.array([2.7, -2.7, 3e9, -3e9, np.inf, -np.inf, np.nan], F32)
    got, want = _built(lambda v: tc.cast(v, "int32"), x)
    np.testing.assert_array_equal(got, want)


def test_where_and_the_comparisons_match_numpy(rng):
    """tc.where(cond, a, b) with each comparison, numbers promoted to the expression's
    dtype, against numpy's where."""
    X = tc.placeholder((64,), "float32", name="X")
    x = rng.standard_normal(64).astype(np.float32)
    x[:4] = [0.0, 0.5, -0.5, 0.25]  # on the thresholds
    for op, numpy_op in (("<", np.less), ("<=", np.less_equal), (">", np.greater), (">=", np.greater_equal)):
        O = tc.compute((64,), lambda i: tc.where({"<": X[i] < 0.5, "<=": X[i] <= 0.5, ">": X[i] > 0.5,
                                                   ">=": X[i] >= 0.5}[op], X[i], -1.0), name="O")
        np.testing.assert_array_equal(tc.evaluate(O, {X: x}), np.where(numpy_op(x, 0.5), x, -1.0).astype(np.float32))
    # a number on the left is the reflected comparison
    O = tc.compute((64,), lambda i: tc.where(0.25 < X[i], 1.0, 0.0), name="O")
    np.testing.assert_array_equal(tc.evaluate(O, {X: x}), (x > 0.25).astype(np.float32))
