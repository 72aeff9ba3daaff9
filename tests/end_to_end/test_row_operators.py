"""examples/softmax.py and examples/layernorm.py (issue 32): a row operator with two
statistics, the second depending on the first, in one kernel (``rows_in_blocks``).
Simulator against float64, ``tc.check``, and the kernels assembled for the H200."""

import shutil
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from workloads import json_from_a_process_without_the_simulator, run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import layernorm  # noqa: E402
import softmax  # noqa: E402


def _one_kernel(example, M, N, threads):
    out = example.algorithm(M, N)
    s = tc.create_schedule(out)
    example.schedule(s, out, threads=threads)
    assert len(tc.lower(s).kernels) == 1
    assert tc.check(s).legal
    return s, out


@pytest.mark.parametrize("M, N", [(3, 512), (2, 640)])
def test_softmax_in_one_kernel_matches_float64(M, N, rng):
    s, Y = _one_kernel(softmax, M, N, threads=32)
    (X,) = tc.inputs(Y)
    x = (rng.standard_normal((M, N)) * 4.0).astype(np.float32)
    got = run(s, [x])
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got, tc.evaluate(Y, {X: x}), rtol=1e-6, atol=1e-8)


def test_layernorm_in_one_kernel_matches_float64(rng):
    """Rows with a mean far from 0 (the variance around the mean, not E[x^2] - E[x]^2);
    the bf16 output within one bf16 rounding of float64's, and equal to tc.evaluate."""
    s, Y = _one_kernel(layernorm, 3, 512, threads=32)
    X, gamma, beta = tc.inputs(Y)
    x = (rng.standard_normal((3, 512)) * 3.0 + 20.0).astype(ml_dtypes.bfloat16)
    g = rng.uniform(0.5, 1.5, 512).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal(512).astype(ml_dtypes.bfloat16)
    got = run(s, [x, g, b]).astype(np.float64)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    want = (x64 - mean) / np.sqrt(var + layernorm.EPS) * g.astype(np.float64) + b.astype(np.float64)
    assert np.all(np.abs(got - want) <= 2.0 ** -8 * np.abs(want) + 1e-3)
    np.testing.assert_array_equal(got, tc.evaluate(Y, {X: x, gamma: g, beta: b}).astype(np.float64))


def test_the_sum_of_exponentials_waits_for_the_whole_max():
    """Placing the sum's slices inside the max's reduction loop reads a partial max:
    refused, naming the stages."""
    Y = softmax.algorithm(2, 64)
    s = tc.create_schedule(Y)
    s["E"].compute_inline()
    s["S"].reverse_compute_at(s["Mx"], s["Mx"].reduce_axis[0])
    with pytest.raises(tc.IllegalScheduleError, match="S reads Mx before Mx has finished computing it"):
        tc.check(s)


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "examples")
import layernorm, softmax, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
out = {}
for example in (softmax, layernorm):
    Y = example.algorithm()
    s = tc.create_schedule(Y)
    example.schedule(s, Y)
    (r,) = ptx_report(lower(s))
    out[example.__name__] = dict(spills=r.spill_stores + r.spill_loads, registers=r.registers)
print(json.dumps(out))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_kernels_assemble_without_spills():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    assert all(r["spills"] == 0 and r["registers"] <= 64 for r in report.values()), report
