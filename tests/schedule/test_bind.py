"""bind(axis, tag): a loop becomes the block or thread index; the launch is sized from
the bound extents and surplus threads are guarded."""

import numpy as np
import pytest

import tcomp as tc
from workloads import assert_ir, matmul, matmul_tol, rowmax_quant, run, run_and_compare, vector_op


def test_bind_golden_with_tail():
    X, O = vector_op(10)
    s = tc.create_schedule(O)
    io, ii = s[O].split(s[O].axis[0], 4)
    s[O].bind(io, "blockIdx.x")
    s[O].bind(ii, "threadIdx.x")
    assert_ir(s, """
        kernel k_O(X, O)  # grid=(3, 1, 1) block=(4, 1, 1)
          for i_o in range(3):  # blockIdx.x
            for i_i in range(4):  # threadIdx.x
              O[min(i_o * 4, 6) + i_i] = X[min(i_o * 4, 6) + i_i] * 2.0 + 1.0
    """)


def test_bind_records_the_tag():
    X, O = vector_op(10)
    s = tc.create_schedule(O)
    (i,) = s[O].axis
    s[O].bind(i, "threadIdx.x")
    assert s[O].bindings == {i: "threadIdx.x"}


def test_bind_all_six_indices_3d(rng):
    X = tc.placeholder((2, 3, 10), "float32", name="X")
    O = tc.compute((2, 3, 10), lambda a, b, c: X[a, b, c] * X[a, b, c] - 1.0, name="O")
    s = tc.create_schedule(O)
    a, b, c = s[O].axis
    co, ci = s[O].split(c, 4)
    ao, ai = s[O].split(a, 1)
    bo, bi = s[O].split(b, 3)
    s[O].bind(ao, "blockIdx.z")
    s[O].bind(bo, "blockIdx.y")
    s[O].bind(co, "blockIdx.x")
    s[O].bind(ai, "threadIdx.z")
    s[O].bind(bi, "threadIdx.y")
    s[O].bind(ci, "threadIdx.x")
    k = tc.lower(s).kernels[0]
    assert k.grid == (3, 1, 2) and k.block == (4, 3, 1)
    x = rng.standard_normal((2, 3, 10)).astype(np.float32)
    got = run(s, [x])
    np.testing.assert_array_equal(got, x * x - np.float32(1.0))


def test_bind_block_index_only(rng):
    w = matmul(3, 4, 5)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    s[C].bind(i, "blockIdx.x")
    assert tc.lower(s).kernels[0].block == (1, 1, 1)
    run_and_compare(s, w, rng, **matmul_tol(5))


def test_bind_smaller_thread_loop_in_a_larger_block_is_guarded(rng):
    """The shared row max is filled by 5 threads of a 16-thread block."""
    w = rowmax_quant(3, 29)
    R, Q = w["R"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    jo, ji = s[Q].split(j, 16)
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(ji, "threadIdx.x")
    s[R].compute_at(s[Q], i)
    s[R].set_scope("shared")
    run_and_compare(s, w, rng, max_off=0)


def test_bind_block_index_inside_another_kernel_is_an_error():
    w = rowmax_quant(3, 29)
    R, Q = w["R"], w["Q"]
    s = w.schedule()
    s[R].compute_at(s[Q], s[Q].axis[0])
    s[R].bind(s[R].axis[0], "blockIdx.x")
    with pytest.raises(tc.ScheduleError) as info:
        tc.lower(s)
    assert "blockIdx.x" in str(info.value) and "R" in str(info.value)


def test_bind_more_than_1024_threads_is_refused_by_build():
    w = matmul(64, 32, 2)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    s[C].bind(i, "threadIdx.y")
    s[C].bind(j, "threadIdx.x")
    with pytest.raises(tc.ScheduleError, match="2048 threads"):
        tc.build(s)


def test_bind_reduction_loop_to_threads_is_rejected():
    w = matmul(3, 3, 19)
    C = w["C"]
    s = w.schedule()
    (k,) = s[C].reduce_axis
    s[C].reorder(k, *s[C].axis)
    with pytest.raises(tc.ScheduleError):
        s[C].bind(k, "threadIdx.x")
        tc.check(s)
        tc.build(s)
