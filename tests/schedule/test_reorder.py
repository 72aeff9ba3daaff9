"""reorder(*axes): the listed loops take the listed order, in the positions they hold."""

import pytest

from workloads import assert_ir, elementwise_chain, matmul, matmul_tol, run_and_compare


def test_reorder_permutes_only_the_listed_positions():
    w = matmul(4, 6, 8)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    s[C].reorder(k, i)  # positions of i and k: 0 and 2
    assert s[C].leaf_vars == [k, j, i]


def test_reorder_accepts_a_list():
    w = matmul(4, 6, 8)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    s[C].reorder([j, i])
    assert s[C].leaf_vars == [j, i, k]


def test_reorder_golden_transposed_traversal():
    w = elementwise_chain(2, 3)
    s = w.schedule()
    O = w["O"]
    s[w["B"]].compute_inline()
    s[w["S"]].compute_inline()
    i, j = s[O].axis
    s[O].reorder(j, i)
    assert_ir(s, """
        kernel k_O(X, Z, O)  # grid=(1, 1, 1) block=(1, 1, 1)
          for j in range(3):
            for i in range(2):
              O[i * 3 + j] = silu(X[i * 3 + j] * 2.0 + Z[i * 3 + j]) * 0.5 - Z[i * 3 + j]
    """)


def test_reorder_reduction_outermost_golden():
    """The initialization of every element comes before the reduction loop."""
    w = matmul(2, 2, 3)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    s[C].reorder(k, i, j)
    assert_ir(s, """
        kernel k_C(A, W, C)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            for j in range(2):
              C[i * 2 + j] = 0.0
          for k in range(3):
            for i in range(2):
              for j in range(2):
                C[i * 2 + j] = C[i * 2 + j] + A[i * 3 + k] * W[k * 2 + j]
    """)


@pytest.mark.parametrize("order", ["kij", "ikj", "jik", "jki"])
def test_reorder_matmul_loop_orders(rng, order):
    w = matmul(5, 7, 9)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    loops = {"i": i, "j": j, "k": k}
    s[C].reorder(*(loops[c] for c in order))
    assert [v.name for v in s[C].leaf_vars] == list(order)
    run_and_compare(s, w, rng, **matmul_tol(9))


def test_reorder_after_split_tail_loops(rng):
    """Split both loops (tails on both) and interleave them by hand: j_o, i_o, i_i, j_i."""
    w = matmul(37, 29, 3)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    io, ii = s[C].split(i, 8)
    jo, ji = s[C].split(j, 8)
    s[C].reorder(jo, io, ii, ji)
    assert s[C].leaf_vars[:4] == [jo, io, ii, ji]
    s[C].bind(ji, "threadIdx.x")
    run_and_compare(s, w, rng, **matmul_tol(3))


def test_reorder_split_reduction_between_spatial_loops(rng):
    w = matmul(6, 29, 19)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    ko, ki = s[C].split(k, 4)
    jo, ji = s[C].split(j, 8)
    s[C].reorder(i, ko, jo, ki, ji)
    s[C].bind(ji, "threadIdx.x")
    run_and_compare(s, w, rng, **matmul_tol(19))
