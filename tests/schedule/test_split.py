"""split(axis, factor): one loop becomes outer x inner, with a guard where the factor
does not divide the extent."""

import numpy as np
import pytest

import tcomp as tc
from workloads import (assert_ir, check_float, elementwise_chain, matmul, matmul_tol, run, run_and_compare,
                       vector_op)


def test_split_returns_outer_and_inner_handles():
    X, O = vector_op(10)
    s = tc.create_schedule(O)
    (i,) = s[O].axis
    io, ii = s[O].split(i, 4)
    assert (io.name, io.extent) == ("i_o", 3)
    assert (ii.name, ii.extent) == ("i_i", 4)
    assert s[O].leaf_vars == [io, ii]
    # the original handle is still the stage's axis; only its loops changed
    assert s[O].axis == (i,)


def test_split_golden_with_tail_guard():
    X, O = vector_op(10)
    s = tc.create_schedule(O)
    s[O].split(s[O].axis[0], 4)
    assert_ir(s, """
        kernel k_O(X, O)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i_o in range(2):
            for i_i in range(4):
              O[i_o * 4 + i_i] = X[i_o * 4 + i_i] * 2.0 + 1.0
          for i_i in range(4):
            if i_i + 8 < 10:
              O[i_i + 8] = X[i_i + 8] * 2.0 + 1.0
    """)


def test_split_golden_divisible_has_no_guard():
    X, O = vector_op(12)
    s = tc.create_schedule(O)
    s[O].split(s[O].axis[0], 4)
    assert_ir(s, """
        kernel k_O(X, O)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i_o in range(3):
            for i_i in range(4):
              O[i_o * 4 + i_i] = X[i_o * 4 + i_i] * 2.0 + 1.0
    """)


def test_split_of_a_reduction_golden():
    w = matmul(2, 3, 5)
    C = w["C"]
    s = w.schedule()
    s[C].split(s[C].reduce_axis[0], 2)
    assert_ir(s, """
        kernel k_C(A, W, C)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            for j in range(3):
              C[i * 3 + j] = 0.0
              for k_o in range(2):
                for k_i in range(2):
                  C[i * 3 + j] = C[i * 3 + j] + A[i * 5 + k_o * 2 + k_i] * W[k_o * 6 + k_i * 3 + j]
              for k_i in range(2):
                if k_i + 4 < 5:
                  C[i * 3 + j] = C[i * 3 + j] + A[i * 5 + k_i + 4] * W[k_i * 3 + j + 12]
    """)


@pytest.mark.parametrize("factor", [1, 3, 8, 29, 64])
def test_split_spatial_axis_numeric(rng, factor):
    """37 x 29 split by factors that divide (1, 29) and do not (3, 8), and one larger
    than the extent (64)."""
    w = elementwise_chain(37, 29)
    O = w["O"]
    s = w.schedule()
    i, j = s[O].axis
    jo, ji = s[O].split(j, factor)
    assert jo.extent == -(-29 // factor) and ji.extent == min(factor, 29)
    run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)


def test_split_reduction_axis_numeric(rng):
    w = matmul(7, 5, 19)
    C = w["C"]
    s = w.schedule()
    ko, ki = s[C].split(s[C].reduce_axis[0], 4)
    s[C].reorder(ko, s[C].axis[0], s[C].axis[1], ki)
    run_and_compare(s, w, rng, **matmul_tol(19))


def test_split_of_a_split_numeric(rng):
    """Nested splits of 29: by 8 (tail 5), then the inner 8 by 3 (tail 2)."""
    w = elementwise_chain(5, 29)
    O = w["O"]
    s = w.schedule()
    i, j = s[O].axis
    jo, ji = s[O].split(j, 8)
    jio, jii = s[O].split(ji, 3)
    assert (jio.extent, jii.extent) == (3, 3)
    got = run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)
    assert got.shape == (5, 29)


def test_split_outer_of_a_split_numeric(rng):
    w = elementwise_chain(37, 3)
    O = w["O"]
    s = w.schedule()
    i, j = s[O].axis
    io, ii = s[O].split(i, 8)
    ioo, ioi = s[O].split(io, 2)
    assert (ioo.extent, ioi.extent, ii.extent) == (3, 2, 8)
    run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)


def test_split_bound_to_blocks_and_threads_with_tail(rng):
    X, O = vector_op(37)
    s = tc.create_schedule(O)
    io, ii = s[O].split(s[O].axis[0], 16)
    s[O].bind(io, "blockIdx.x")
    s[O].bind(ii, "threadIdx.x")
    k = tc.lower(s).kernels[0]
    assert k.grid == (3, 1, 1) and k.block == (16, 1, 1)
    x = rng.standard_normal(37).astype(np.float32)
    got = run(s, [x])
    check_float(got, x.astype(np.float64) * 2 + 1, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got, tc.evaluate(O, {X: x}))


def test_split_both_axes_of_matmul_numeric(rng):
    w = matmul(37, 29, 11)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    io, ii = s[C].split(i, 8)
    jo, ji = s[C].split(j, 8)
    s[C].bind(ji, "threadIdx.x")
    s[C].bind(ii, "threadIdx.y")
    run_and_compare(s, w, rng, **matmul_tol(11))
