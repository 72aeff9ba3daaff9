"""Activations that the scalar functions of issue 32 make writable: GELU in its tanh and
erf forms, a leaky ReLU through ``tc.where``; generated code (in the simulator) against
float64, ``tc.check`` on a tiled schedule, and the kernels assembled for the H200."""

import math
import shutil

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from workloads import check_float, json_from_a_process_without_the_simulator, run

N = 96


def _gelu_tanh(X):
    return tc.compute((N,), lambda i: 0.5 * X[i] * (1.0 + tc.tanh(0.7978845608028654 *
                                                                  (X[i] + 0.044715 * X[i] ** 3))), name="G")


def _gelu_erf(X):
    return tc.compute((N,), lambda i: 0.5 * X[i] * (1.0 + tc.erf(X[i] * 0.7071067811865476)), name="G")


def _leaky(X):
    return tc.compute((N,), lambda i: tc.where(X[i] > 0.0, X[i], 0.01 * X[i]), name="L")


def _threads(s, out):
    blocks, threads = s[out].split(out.op.axis[0], 32)
    s[out].bind(blocks, "blockIdx.x")
    s[out].bind(threads, "threadIdx.x")
    return s


@pytest.mark.parametrize("gelu, float64", [
    (_gelu_tanh, lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    (_gelu_erf, lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
])
def test_gelu_matches_float64(gelu, float64, rng):
    X = tc.placeholder((N,), "float32", name="X")
    G = gelu(X)
    x = rng.uniform(-5.0, 5.0, N).astype(np.float32)
    s = _threads(tc.create_schedule(G), G)
    assert tc.check(s).legal
    want = float64(x.astype(np.float64))
    check_float(tc.evaluate(G, {X: x}), want, rtol=1e-5, atol=1e-6)
    check_float(run(s, [x]), want, rtol=1e-5, atol=1e-6)


def test_a_leaky_relu_in_bf16_matches_evaluate_exactly(rng):
    """bf16 in and out: the select keeps one of the two bf16 values, each rounded where the
    algorithm says (0.01 * x is a bf16 product), so the device and tc.evaluate agree
    bit for bit."""
    X = tc.placeholder((N,), "bfloat16", name="X")
    L = _leaky(X)
    x = rng.standard_normal(N).astype(ml_dtypes.bfloat16)
    x[:2] = [0.0, -0.0]
    s = _threads(tc.create_schedule(L), L)
    want = tc.evaluate(L, {X: x})
    got = run(s, [x])
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    assert np.all(want.astype(np.float32)[x.astype(np.float32) > 0] == x.astype(np.float32)[x.astype(np.float32) > 0])


_ASSEMBLE = """
import json, sys
sys.path[:0] = ["tests", "tests/end_to_end"]
import tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
from test_activations import _gelu_erf, _gelu_tanh, _leaky, _threads
out = {}
for make in (_gelu_tanh, _gelu_erf, _leaky):
    X = tc.placeholder((96,), "float32", name="X")
    O = make(X)
    (r,) = ptx_report(lower(_threads(tc.create_schedule(O), O)))
    out[make.__name__] = dict(spills=r.spill_stores + r.spill_loads, selects=r.ptx.count("selp.f32"))
print(json.dumps(out))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_activations_assemble_and_the_select_has_no_branch():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    assert all(r["spills"] == 0 for r in report.values())
    assert report["_leaky"]["selects"] >= 1


def test_a_bf16_literal_is_the_bf16_value_on_the_device(rng):
    """0.01 * X with X in bf16: the literal is bf16(0.01) = 0.010009765625 in the language;
    the generated code used float32(0.01), one bf16 ulp off in about one output in eight."""
    X = tc.placeholder((N,), "bfloat16", name="X")
    O = tc.compute((N,), lambda i: 0.01 * X[i], name="O")
    x = rng.standard_normal(N).astype(ml_dtypes.bfloat16)
    got = run(tc.create_schedule(O), [x])
    np.testing.assert_array_equal(got.astype(np.float32), tc.evaluate(O, {X: x}).astype(np.float32))


@pytest.mark.parametrize("activation", [
    lambda c: 0.5 * c * (1.0 + tc.erf(c * 0.7071067811865476)),
    lambda c: tc.where(c > 0.0, c, 0.01 * c),
    lambda c: c * tc.rsqrt(c * c + 1.0),
])
def test_an_activation_of_a_partial_sum_is_refused(activation):
    """tc.check holds the new functions and tc.where to the rule every function obeys: a
    consumer placed inside the reduction's k loop reads a partial sum."""
    A = tc.placeholder((8, 8), "float32", name="A")
    W = tc.placeholder((8, 8), "float32", name="W")
    k = tc.reduce_axis(8, name="k")
    C = tc.compute((8, 8), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    Y = tc.compute((8, 8), lambda i, j: activation(C[i, j]), name="Y")
    s = tc.create_schedule(Y)
    s[Y].reverse_compute_at(s[C], s[C].reduce_axis[0])
    with pytest.raises(tc.IllegalScheduleError, match=r"reverse_compute_at\(s\['C'\], k\).* is illegal: Y reads C "
                                                      r"before C has finished computing it"):
        tc.check(s)


def test_a_causal_mask_compares_the_axes(rng):
    """tc.where on a comparison of the compute's own axes (an attention mask): the device
    keeps X on and below the diagonal and the fill above it."""
    X = tc.placeholder((6, 6), "float32", name="X")
    O = tc.compute((6, 6), lambda i, j: tc.where(j <= i, X[i, j], -1e30), name="O")
    x = rng.standard_normal((6, 6)).astype(np.float32)
    want = np.where(np.tril(np.ones((6, 6), bool)), x, np.float32(-1e30))
    np.testing.assert_array_equal(tc.evaluate(O, {X: x}), want)
    np.testing.assert_array_equal(run(tc.create_schedule(O), [x]), want)
