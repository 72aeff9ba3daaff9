"""unroll(axis) and vectorize(axis): annotations that change how a loop is emitted,
never what it computes."""

import numpy as np
import pytest

import tcomp as tc
from workloads import (assert_ir, check_float, elementwise_chain, matmul, matmul_tol, run, run_and_compare,
                       vector_op)


def test_unroll_vectorize_golden():
    w = matmul(2, 3, 5)
    C = w["C"]
    s = w.schedule()
    ko, ki = s[C].split(s[C].reduce_axis[0], 2)
    s[C].unroll(ki)
    s[C].vectorize(s[C].axis[1])
    assert s[C].annotations == {ki: "unroll", s[C].axis[1]: "vectorize"}
    assert_ir(s, """
        kernel k_C(A, W, C)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            for j in range(3):  # vectorize
              C[i * 3 + j] = 0.0
              for k_o in range(2):
                for k_i in range(2):  # unroll
                  C[i * 3 + j] = C[i * 3 + j] + A[i * 5 + k_o * 2 + k_i] * W[k_o * 6 + k_i * 3 + j]
              for k_i in range(2):  # unroll
                if k_i + 4 < 5:
                  C[i * 3 + j] = C[i * 3 + j] + A[i * 5 + k_i + 4] * W[k_i * 3 + j + 12]
    """)


def test_unrolled_loop_is_flagged_for_nvvm_in_the_source():
    """An unrolled loop stays a loop of constant trip count in the source, flagged in
    UNROLL_LOOPS (one flag per ``for`` statement in source order) for NVVM to unroll;
    tests/codegen/test_nvvm_unroll.py checks that the PTX has no loop left."""
    w = matmul(2, 3, 6)
    C = w["C"]
    s = w.schedule()
    ko, ki = s[C].split(s[C].reduce_axis[0], 2)
    s[C].unroll(ki)
    mod = tc.build(s)
    assert "for k_o in range(_u32_3):" in mod.source and "for k_i in range(_u32_2):" in mod.source
    # loops i, j, k_o, k_i in source order: only k_i is unrolled
    assert mod._module.UNROLL_LOOPS == {"k_C": (False, False, False, True)}


def test_an_unrolled_loop_of_one_iteration_is_its_body(rng):
    """k split by its whole extent: the unrolled outer loop has one iteration and becomes
    its body with k_o = 0 (a loop left for NVVM kept its variable in the addresses past
    loop-invariant code motion, and took registers); a serial loop of one iteration stays."""
    w = matmul(2, 3, 4)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    io, ii = s[C].split(i, 2)
    ko, ki = s[C].split(s[C].reduce_axis[0], 4)
    s[C].unroll(ko)
    assert_ir(s, """
        kernel k_C(A, W, C)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i_o in range(1):
            for i_i in range(2):
              for j in range(3):
                C[i_o * 6 + i_i * 3 + j] = 0.0
                for k_i in range(4):
                  C[i_o * 6 + i_i * 3 + j] = C[i_o * 6 + i_i * 3 + j] + A[i_o * 8 + i_i * 4 + k_i] * W[k_i * 3 + j]
    """)
    run_and_compare(s, w, rng)


@pytest.mark.parametrize("kind", ["unroll", "vectorize"])
def test_annotated_inner_loops_with_tails(rng, kind):
    """Reduction split by 4 (19: tail 3) and columns split by 4 (7: tail 3), inner loops
    annotated."""
    w = matmul(5, 7, 19)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    jo, ji = s[C].split(j, 4)
    ko, ki = s[C].split(s[C].reduce_axis[0], 4)
    s[C].reorder(i, jo, ko, ki, ji)
    getattr(s[C], kind)(ki)
    getattr(s[C], kind)(ji)
    s[C].bind(i, "threadIdx.x")
    run_and_compare(s, w, rng, **matmul_tol(19))


def test_unroll_a_loop_with_a_stage_attached_inside(rng):
    """Unrolling a loop that has a producer computed at it copies the producer too."""
    w = elementwise_chain(4, 8)
    B, S, O = w["B"], w["S"], w["O"]
    s = w.schedule()
    i, j = s[O].axis
    jo, ji = s[O].split(j, 4)
    s[O].unroll(jo)
    s[S].compute_at(s[O], jo)
    s[B].compute_at(s[S], s[S].axis[1])
    s[O].bind(i, "threadIdx.x")
    run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)


def test_vectorize_elementwise_tail(rng):
    X, O = vector_op(13)
    s = tc.create_schedule(O)
    io, ii = s[O].split(s[O].axis[0], 4)
    s[O].vectorize(ii)
    s[O].bind(io, "threadIdx.x")
    x = rng.standard_normal(13).astype(np.float32)
    got = run(s, [x])
    check_float(got, x.astype(np.float64) * 2 + 1, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got, tc.evaluate(O, {X: x}))


def test_unroll_whole_small_reduction_and_rows(rng):
    w = matmul(3, 5, 4)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    s[C].unroll(i)
    s[C].unroll(s[C].reduce_axis[0])
    s[C].bind(j, "threadIdx.x")
    run_and_compare(s, w, rng, **matmul_tol(4))
