"""reverse_compute_at(producer, axis): a consumer computed inside a producer's loop, on
the part the producer has just completed (epilogue fusion)."""

import numpy as np
import pytest

import tcomp as tc
from workloads import (assert_ir, check_float, elementwise_chain, matmul_silu_quant, run,
                       run_and_compare)


def test_reverse_compute_at_golden():
    w = elementwise_chain(5, 6)
    B, S, O = w["B"], w["S"], w["O"]
    s = w.schedule()
    i, j = s[B].axis
    io, jo, ii, ji = s[B].tile(i, j, 4, 4)
    s[S].compute_inline()
    s[O].reverse_compute_at(s[B], jo)
    assert_ir(s, """
        B = alloc global float32[5x6]
        kernel k_B(X, Z, O, B)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i_o in range(1):
            for j_o in range(1):
              for i_i in range(4):
                for j_i in range(4):
                  B[i_o * 24 + i_i * 6 + j_o * 4 + j_i] = X[i_o * 24 + i_i * 6 + j_o * 4 + j_i] * 2.0 + Z[i_o * 24 + i_i * 6 + j_o * 4 + j_i]
              for i in range(4):
                for j in range(4):
                  O[i_o * 24 + i * 6 + j_o * 4 + j] = silu(B[i_o * 24 + i * 6 + j_o * 4 + j]) * 0.5 - Z[i_o * 24 + i * 6 + j_o * 4 + j]
            for i_i in range(4):
              for j_i in range(4):
                if j_i + 4 < 6:
                  B[i_o * 24 + i_i * 6 + j_i + 4] = X[i_o * 24 + i_i * 6 + j_i + 4] * 2.0 + Z[i_o * 24 + i_i * 6 + j_i + 4]
            for i in range(4):
              for j in range(4):
                if j + 4 < 6:
                  O[i_o * 24 + i * 6 + j + 4] = silu(B[i_o * 24 + i * 6 + j + 4]) * 0.5 - Z[i_o * 24 + i * 6 + j + 4]
          for j_o in range(1):
            for i_i in range(4):
              for j_i in range(4):
                if i_i + 4 < 5:
                  B[i_i * 6 + j_o * 4 + j_i + 24] = X[i_i * 6 + j_o * 4 + j_i + 24] * 2.0 + Z[i_i * 6 + j_o * 4 + j_i + 24]
            for i in range(4):
              for j in range(4):
                if i + 4 < 5:
                  O[i * 6 + j_o * 4 + j + 24] = silu(B[i * 6 + j_o * 4 + j + 24]) * 0.5 - Z[i * 6 + j_o * 4 + j + 24]
          for i_i in range(4):
            for j_i in range(4):
              if i_i + 4 < 5 and j_i + 4 < 6:
                B[i_i * 6 + j_i + 28] = X[i_i * 6 + j_i + 28] * 2.0 + Z[i_i * 6 + j_i + 28]
          for i in range(4):
            for j in range(4):
              if i + 4 < 5 and j + 4 < 6:
                O[i * 6 + j + 28] = silu(B[i * 6 + j + 28]) * 0.5 - Z[i * 6 + j + 28]
    """)


def test_reverse_compute_at_one_kernel():
    w = elementwise_chain(5, 6)
    B, S, O = w["B"], w["S"], w["O"]
    s = w.schedule()
    s[S].compute_inline()
    s[O].reverse_compute_at(s[B], s[B].axis[0])
    assert [k.name for k in tc.lower(s).kernels] == ["k_B"]
    assert s[O].attach.kind == "reverse_at" and s[O].attach.stage is s[B]


def test_reverse_compute_at_epilogue_of_a_tiled_matmul(rng):
    """Q = quantize(silu(C)) fused behind each 8 x 8 tile of C, on 13 x 17 (tails)."""
    w = matmul_silu_quant(13, 17, 19)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 8)
    s[Y].compute_inline()
    s[Q].reverse_compute_at(s[C], jo)
    s[C].bind(io, "blockIdx.y")
    s[C].bind(jo, "blockIdx.x")
    s[C].bind(ji, "threadIdx.x")
    qi, qj = s[Q].axis
    s[Q].bind(qj, "threadIdx.x")
    assert [k.name for k in tc.lower(s).kernels] == ["k_C"]
    run_and_compare(s, w, rng)


def test_reverse_compute_at_innermost_loop(rng):
    """The epilogue at the producer's innermost loop: one element right after it is made."""
    w = elementwise_chain(13, 11)
    B, S, O = w["B"], w["S"], w["O"]
    s = w.schedule()
    i, j = s[B].axis
    jo, ji = s[B].split(j, 4)
    s[B].bind(ji, "threadIdx.x")
    s[S].reverse_compute_at(s[B], ji)
    s[O].reverse_compute_at(s[S], s[S].axis[1])
    run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)


def test_reverse_compute_at_after_a_reduction(rng):
    """The epilogue placed at a spatial loop outside the reduction reads final sums only."""
    w = matmul_silu_quant(6, 10, 23)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    ko, ki = s[C].split(k, 8)
    s[Y].compute_inline()
    s[Q].reverse_compute_at(s[C], i)
    s[C].bind(j, "threadIdx.x")
    run_and_compare(s, w, rng)


def test_reverse_compute_at_of_a_stage_that_does_not_read_the_producer():
    w = elementwise_chain(5, 6)
    B, S, O = w["B"], w["S"], w["O"]
    s = w.schedule()
    s[O].reverse_compute_at(s[B], s[B].axis[0])  # O reads S and Z, not B
    with pytest.raises(tc.ScheduleError) as info:
        tc.lower(s)
    assert "does not read B" in str(info.value) and "O" in str(info.value)


def test_reverse_compute_at_transposed_read(rng):
    """T[i, j] = P[j, i] behind row i of P: the region of T is column i, which reads only
    the row of P just completed."""
    X = tc.placeholder((4, 5), "float32", name="X")
    P = tc.compute((4, 5), lambda i, j: X[i, j] + 1.0, name="P")
    T = tc.compute((5, 4), lambda i, j: P[j, i] * 2.0, name="T")
    s = tc.create_schedule(T)
    s[T].reverse_compute_at(s[P], s[P].axis[0])
    x = rng.standard_normal((4, 5)).astype(np.float32)
    got = run(s, [x])
    np.testing.assert_array_equal(got, ((x + np.float32(1)) * np.float32(2)).T)


@pytest.mark.parametrize("body", ["symmetric", "shifted"])
def test_reverse_compute_at_needs_a_one_to_one_access(body):
    """A consumer that reads more of the producer than the part just completed cannot
    be placed behind it."""
    X = tc.placeholder((4, 4), "float32", name="X")
    P = tc.compute((4, 4), lambda i, j: X[i, j] + 1.0, name="P")
    if body == "symmetric":
        T = tc.compute((4, 4), lambda i, j: P[i, j] + P[j, i], name="T")
    else:
        T = tc.compute((3, 4), lambda i, j: P[i + 1, j] - P[i, j], name="T")
    s = tc.create_schedule(T)
    s[T].reverse_compute_at(s[P], s[P].axis[0])
    with pytest.raises(tc.TcompError) as info:
        tc.lower(s)
    assert "T" in str(info.value) and "P" in str(info.value)


def test_reverse_compute_at_two_epilogues_same_loop(rng):
    """Both consumers of B placed behind it at the same loop."""
    X = tc.placeholder((5, 7), "float32", name="X")
    B = tc.compute((5, 7), lambda i, j: X[i, j] * 2.0, name="B")
    E1 = tc.compute((5, 7), lambda i, j: B[i, j] + 1.0, name="E1")
    E2 = tc.compute((5, 7), lambda i, j: E1[i, j] * B[i, j], name="E2")
    s = tc.create_schedule(E2)
    i, j = s[B].axis
    s[E1].reverse_compute_at(s[B], i)
    s[E2].reverse_compute_at(s[B], i)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    got = run(s, [x])
    x64 = x.astype(np.float64)
    check_float(got, (2 * x64 + 1) * 2 * x64, rtol=1e-6, atol=1e-6)
