"""examples/gelu_chain.py (issue 32): a bf16 chain with a bias broadcast down the rows,
in one kernel with 16-byte vectors for every operand. Simulator against float64 with the
algorithm's rounding points, and ``tc.evaluate`` bit for bit."""

import sys
from pathlib import Path

import ml_dtypes
import numpy as np

import tcomp as tc
from tcomp.codegen import program_source
from workloads import run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import gelu_chain  # noqa: E402


def _bf16(a):
    return a.astype(ml_dtypes.bfloat16).astype(np.float64)


def test_one_kernel_matches_float64_and_reads_the_bias_in_16_byte_vectors(rng):
    M, N = 4, 256
    Y = gelu_chain.algorithm(M, N)
    s = tc.create_schedule(Y)
    gelu_chain.schedule(s, Y, threads=32)
    assert len(tc.lower(s).kernels) == 1
    assert "_load8(B," in program_source(tc.lower(s), simulator=False)
    x = (rng.standard_normal((M, N)) * 2.0).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal(N).astype(ml_dtypes.bfloat16)
    r = rng.standard_normal((M, N)).astype(ml_dtypes.bfloat16)
    got = run(s, [x, b, r]).astype(np.float64)
    h = _bf16(x.astype(np.float64) + b.astype(np.float64))
    g = _bf16(0.5 * h * (1.0 + np.tanh(gelu_chain.SQRT_2_OVER_PI * (h + 0.044715 * h ** 3))))
    want = g + r.astype(np.float64)
    # one bf16 rounding of Y, and one of G (float32 GELU against float64 at a midpoint)
    assert np.all(np.abs(got - want) <= 2.0 ** -8 * (np.abs(want) + np.abs(g)) + 1e-6)
    np.testing.assert_array_equal(got, tc.evaluate(Y, dict(zip(tc.inputs(Y), [x, b, r]))).astype(np.float64))
