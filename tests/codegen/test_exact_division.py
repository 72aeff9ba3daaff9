"""Correctly rounded division by a constant (tcomp/codegen/exact_division.py): the check
that decides whether a constant's reciprocal may replace ``div.rn.f32``, and the code the
int8 quantization gets from it."""

import numpy as np
import pytest

import tcomp as tc
from tcomp.codegen.exact_division import correction_is_exact, divide, is_correctly_rounded


def _significands():
    return (np.arange(2**23, dtype=np.int64) | 0x3F800000).astype(np.int32).view(np.float32)


@pytest.mark.parametrize("c", [0.05, 0.1, 3.0, 1 / 448, 0.007])
def test_the_corrected_quotient_is_correctly_rounded_over_every_significand(c):
    assert correction_is_exact(c)


def test_the_check_tells_a_plain_multiplication_by_the_reciprocal_apart():
    x = _significands()
    naive = x * (np.float32(1) / np.float32(0.05))
    right = is_correctly_rounded(x, 0.05, naive)
    assert 0.5 < right.mean() < 0.99  # about 15% of the quotients are an ulp off
    assert is_correctly_rounded(x, 0.05, divide(x, 0.05)).all()
    assert is_correctly_rounded(x, 0.05, x / np.float32(0.05)).all()  # numpy's IEEE division


def test_the_emulated_sequence_matches_ieee_division_across_magnitudes():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(100_000) * np.exp2(rng.integers(-60, 60, 100_000))).astype(np.float32)
    for c in (0.05, 3.0, 0.3):
        np.testing.assert_array_equal(divide(x, c), x / np.float32(c))


def test_the_decision_is_kept_on_disk_for_other_processes(tmp_path, monkeypatch):
    """The search's forked screening processes each used to decide it again (1.3 s a
    point): the first decision is written to the cache directory, and read back."""
    monkeypatch.setenv("TCOMP_CACHE_DIR", str(tmp_path))
    decide = correction_is_exact.__wrapped__  # past this process's lru_cache
    assert decide(0.3) is True
    (kept,) = (tmp_path / "kernels").glob("division-correction-v1-*")
    assert kept.name.endswith(f"{int(np.float32(0.3).view(np.uint32)):08x}") and kept.read_text() == "exact"
    kept.write_text("inexact")  # what another process decided is believed ...
    assert decide(0.3) is False
    kept.write_text("garbage")  # ... but a damaged answer is decided again
    assert decide(0.3) is True and kept.read_text() == "exact"


def test_constants_the_correction_cannot_serve_are_refused():
    for c in (0.0, float("inf"), float("nan"), 1e-35, 1e35):
        assert not correction_is_exact(c)


def test_int8_quantization_by_a_constant_uses_the_corrected_quotient():
    X = tc.placeholder((4, 32), "float32", name="X")
    Q = tc.compute((4, 32), lambda i, j: tc.quantize(X[i, j], 0.05, "int8"), name="Q")
    s = tc.create_schedule(Q)
    i, j = s[Q].axis
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(j, "threadIdx.x")
    mod = tc.build(s)
    assert "_divide_round_clamp_int8(X[" in mod.source and "/ float32(0.05)" not in mod.source
    x = (np.random.default_rng(0).standard_normal((4, 32)) * 4).astype(np.float32)
    x[0, :4] = np.array([0.025, -0.075, 6.35, -6.45], np.float32)  # ties of x / 0.05, and near the clamp
    out = np.full((4, 32), -77, np.int8)
    mod(x, out)
    np.testing.assert_array_equal(out, tc.evaluate(Q, {X: x}))


def test_a_bfloat16_dividend_needs_only_the_reciprocal_for_some_constants():
    from tcomp.codegen.exact_division import narrow_values, reciprocal_is_exact_on

    x = narrow_values("bfloat16")
    assert x.size == 2**16 and np.isnan(x).sum() > 0
    assert reciprocal_is_exact_on(0.05, "bfloat16") and reciprocal_is_exact_on(0.1, "bfloat16")
    # a reciprocal that is not a short number: x * r and x / c differ for some bfloat16 x
    assert not reciprocal_is_exact_on(3.0, "bfloat16") and not reciprocal_is_exact_on(0.3, "bfloat16")
    with np.errstate(all="ignore"):
        assert (x / np.float32(3.0) != x * (np.float32(1) / np.float32(3.0)))[np.isfinite(x)].any()
    assert reciprocal_is_exact_on(0.5, "float8_e4m3") and reciprocal_is_exact_on(0.25, "float16")
    assert not reciprocal_is_exact_on(0.0, "bfloat16") and not reciprocal_is_exact_on(0.05, "float32")


def _quantized_bfloat16(scale):
    X = tc.placeholder((4, 32), "bfloat16", name="X")
    G = tc.placeholder((4, 32), "bfloat16", name="G")
    Z = tc.compute((4, 32), lambda i, j: X[i, j] * G[i, j], name="Z")
    Q = tc.compute((4, 32), lambda i, j: tc.quantize(Z[i, j], scale, "int8"), name="Q")
    s = tc.create_schedule(Q)
    s[Z].compute_inline()
    i, j = s[Q].axis
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(j, "threadIdx.x")
    return s, X, G, Q


@pytest.mark.parametrize("scale, code", [(0.05, " * float32(20.0))"), (3.0, "_divide_round_clamp_int8(")])
def test_quantizing_a_bfloat16_value_multiplies_where_that_is_exact(rng, scale, code):
    import ml_dtypes

    s, X, G, Q = _quantized_bfloat16(scale)
    mod = tc.build(s)
    assert code in mod.source
    x = (rng.standard_normal((4, 32)) * 3).astype(ml_dtypes.bfloat16)
    g = (rng.standard_normal((4, 32)) * 3).astype(ml_dtypes.bfloat16)
    x[0, :4] = np.array([0.125, -0.375, 6.375, 1e30], np.float32)  # 20x = 2.5, -7.5: ties; the clamp
    g[0, :4] = 1.0
    out = np.full((4, 32), -77, np.int8)
    mod(x, g, out)
    np.testing.assert_array_equal(out, tc.evaluate(Q, {X: x, G: g}))
