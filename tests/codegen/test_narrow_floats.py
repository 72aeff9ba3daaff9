"""bfloat16, float16 and float8_e4m3 storage: loads, stores and rounding points in
generated kernels agree bit for bit with ``tc.evaluate`` (ml_dtypes). In CI this runs the
simulator's ml_dtypes helpers; with TCOMP_TEST_GPU=1 the same tests run the GPU's PTX
conversions (cvt.rn.bf16.f32, cvt.rn.satfinite.e4m3x2.f32, ...)."""

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.dtypes import host_dtype

#: float32 values that exercise rounding: ties to even in bf16 (1 + 2^-8, 1 + 3*2^-8),
#: fp8's largest finite value and beyond it (saturation), tiny and negative values
SPECIAL = np.array([0.0, -0.0, 1.0, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -1.0 - 2.0 ** -8, 448.0, 464.0,
                    500.0, -1000.0, 1e-6, -3.1415926, 65504.0, 1e30, 2.0 ** -10, 0.1], dtype=np.float32)


def _roundtrip(dtype, n):
    """O[i] = float32(cast(cast(X[i], dtype) stored as dtype, float32)): store, load, round."""
    X = tc.placeholder((n,), "float32", name="X")
    N = tc.compute((n,), lambda i: tc.cast(X[i], dtype), name="N")  # stored in dtype
    O = tc.compute((n,), lambda i: tc.cast(N[i], "float32") * 1.0, name="O")
    R = tc.compute((n,), lambda i: tc.cast(tc.cast(X[i], dtype), "float32"), name="R")  # register rounding
    return X, N, O, R


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float8_e4m3"])
def test_store_load_and_register_rounding_match_evaluate(rng, dtype):
    n = 64
    X, N, O, R = _roundtrip(dtype, n)
    x = np.concatenate([SPECIAL, rng.standard_normal(n - len(SPECIAL)).astype(np.float32) * 30])
    if dtype == "float16":
        x = np.where(np.abs(x) > 65504, 7.0, x).astype(np.float32)  # beyond float16's range is inf
    for out in (O, R):
        s = tc.create_schedule(out)
        io, ii = s[out].split(s[out].axis[0], 16)
        s[out].bind(io, "blockIdx.x")
        s[out].bind(ii, "threadIdx.x")
        got = np.full(n, np.nan, np.float32)
        tc.build(s)(x, got)
        want = tc.evaluate(out, {X: x})
        np.testing.assert_array_equal(got, want)
    # evaluate itself against ml_dtypes: saturate fp8, round to nearest even
    clipped = np.clip(x, -448, 448) if dtype == "float8_e4m3" else x
    np.testing.assert_array_equal(want, clipped.astype(host_dtype(dtype)).astype(np.float32))


def test_bfloat16_ffn_example_matches_evaluate(rng):
    from tcomp.workload import load_workload

    from pathlib import Path

    module = load_workload(str(Path(__file__).resolve().parents[2] / "examples" / "ffn_bf16.py")).module
    Q = module.algorithm(M=32, N=32, K=24)
    s = tc.create_schedule(Q)
    module.schedule(s, Q)
    A, W = sorted(s.placeholders, key=lambda t: t.op.order)
    a = rng.standard_normal((32, 24)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((24, 32)).astype(ml_dtypes.bfloat16)
    got = np.full((32, 32), -77, np.int8)
    tc.build(s)(a, w, got)
    want = tc.evaluate(Q, {A: a, W: w})
    # float32 accumulation order differs from evaluate's; a bf16 rounding may flip at a tie
    assert np.abs(got.astype(int) - want).max() <= 1
    assert np.count_nonzero(got != want) <= 2


def test_gpu_source_uses_the_ptx_conversions():
    from tcomp.codegen import program_source

    X, N, O, R = _roundtrip("bfloat16", 8)
    s = tc.create_schedule(O)
    s[O].bind(s[O].axis[0], "threadIdx.x")
    program = tc.lower(s)
    gpu, sim = program_source(program, simulator=False), program_source(program, simulator=True)
    assert "store_bfloat16 as _store_bfloat16" in gpu and "sim_store_bfloat16" not in gpu
    assert "sim_store_bfloat16 as _store_bfloat16" in sim


def test_the_int8_rounding_trick_equals_rint_clamp_convert():
    """The GPU's _round_clamp_int8 (codegen/cuda_source.py) modelled in numpy float32:
    x + 1.5 * 2^23, clamped, less the bits of 1.5 * 2^23, equals int8(clip(rint(x))) for
    ties, both signs, values near and far past the clamp, and infinities."""
    rng = np.random.default_rng(7)
    halves = np.arange(-300, 300, dtype=np.float32) / np.float32(2)
    spread = (rng.standard_normal(200_000) * 100).astype(np.float32)
    near = np.nextafter(halves, np.float32(np.inf)), np.nextafter(halves, np.float32(-np.inf))
    big = np.array([2.0**22 - 0.5, 2.0**22 + 1, -(2.0**22) - 3, 5e6, -5e6, 2e7, -2e7, 3e38, -3e38, np.inf, -np.inf,
                    -0.0, 0.0], dtype=np.float32)
    x = np.concatenate([halves, spread, *near, big])
    magic = np.float32(12582912.0)
    for lo, hi in ((-128.0, 127.0), (-127.0, 127.0), (0.0, 100.0)):
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.minimum(np.maximum(x + magic, np.float32(lo) + magic), np.float32(hi) + magic)
        got = (r.view(np.int32) - np.int32(0x4B400000)).astype(np.int8)
        want = np.clip(np.rint(x), lo, hi).astype(np.int8)
        np.testing.assert_array_equal(got, want)
