"""Out-of-bounds accesses are refused by tc.check (and so by tc.build), naming the
compute's line, the tensor, the dimension, the index range against the extent and one
instance; an access that only a guarded-off instance would make is no violation."""

import inspect
import os

import numpy as np
import pytest

import tcomp as tc

HERE = os.path.basename(__file__)


def _refused(s, line, *needles):
    with pytest.raises(tc.IllegalScheduleError) as info:
        tc.check(s)
    msg = str(info.value)
    assert f"{HERE}:{line}" in msg, msg
    for needle in needles:
        assert needle in msg, msg
    with pytest.raises(tc.IllegalScheduleError):  # tc.build checks first
        tc.build(s)
    return msg


def test_a_read_one_past_the_edge():
    A = tc.placeholder((8, 8), "float32", name="A")
    line = inspect.currentframe().f_lineno + 1
    B = tc.compute((8, 8), lambda i, j: A[i, j + 1], name="B")
    _refused(tc.create_schedule(B), line, "compute 'B'", "B accesses A outside its shape",
             "B reads A out of bounds in dimension 1: index range [1, 8] for extent 8",
             "counterexample: B[0, 7] reads A[0, 8]")


def test_a_read_before_the_start():
    A = tc.placeholder((8,), "float32", name="A")
    line = inspect.currentframe().f_lineno + 1
    D = tc.compute((8,), lambda i: A[i] - A[i - 1], name="D")
    _refused(tc.create_schedule(D), line, "compute 'D'",
             "D reads A out of bounds in dimension 0: index range [-1, 6] for extent 8",
             "counterexample: D[0] reads A[-1]")


def test_a_reduction_axis_longer_than_the_tensor():
    A = tc.placeholder((8, 8), "float32", name="A")
    k = tc.reduce_axis(9, name="k")
    line = inspect.currentframe().f_lineno + 1
    C = tc.compute((8,), lambda i: tc.sum(A[i, k], axis=k), name="C")
    _refused(tc.create_schedule(C), line, "compute 'C'",
             "C reads A out of bounds in dimension 1: index range [0, 8] for extent 8",
             "counterexample: C_update[0, 8] reads A[0, 8]")


def test_an_out_of_bounds_read_of_an_inlined_stage_blames_its_reader():
    A = tc.placeholder((8,), "float32", name="A")
    S = tc.compute((8,), lambda i: A[i] * 2.0, name="S")
    line = inspect.currentframe().f_lineno + 1
    T = tc.compute((8,), lambda i: S[i + 2], name="T")
    s = tc.create_schedule(T)
    s[S].compute_inline()
    _refused(s, line, "compute 'T'", "T reads A out of bounds in dimension 0: index range [2, 9] for extent 8")


def test_the_guarded_tail_of_a_split_reads_nothing_out_of_bounds(rng):
    """10 elements split by 4: the last tile's instances 10 and 11 would read A[10], A[11],
    but lowering's guard removes them; tc.check passes and the kernel is right."""
    A = tc.placeholder((10,), "float32", name="A")
    B = tc.compute((10,), lambda i: A[i] * 2.0, name="B")
    s = tc.create_schedule(B)
    s[B].split(s[B].axis[0], 4)
    assert tc.check(s).legal
    a = rng.standard_normal(10).astype(np.float32)
    b = np.full(10, np.nan, np.float32)
    tc.build(s)(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_a_stencil_that_stays_inside_is_legal():
    A = tc.placeholder((9,), "float32", name="A")
    D = tc.compute((8,), lambda i: A[i] + A[i + 1], name="D")
    assert tc.check(tc.create_schedule(D)).legal
