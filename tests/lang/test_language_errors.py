"""Algorithms that are wrong as written fail when they are written, with a
``tc.LanguageError`` naming the compute: the function's number of axes against the
shape, and the reductions' ``axis=``."""

import pytest

import tcomp as tc


@pytest.fixture
def A():
    return tc.placeholder((8, 8), "float32", name="A")


def _refused(fn, *needles):
    with pytest.raises(tc.LanguageError) as info:
        fn()
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_a_function_with_too_few_axes(A):
    _refused(lambda: tc.compute((8, 8), lambda i: A[i, i], name="B"),
             "compute 'B'", "takes 1 axis argument(s) (i)", "shape (8, 8) has 2 dimension(s)", "lambda i, j:")


def test_a_function_with_too_many_axes(A):
    _refused(lambda: tc.compute((8,), lambda i, j: A[i, j], name="R"),
             "compute 'R'", "takes 2 axis argument(s) (i, j)", "shape (8,) has 1 dimension(s)", "lambda i:")


def test_defaults_and_star_args_are_accepted(A):
    B = tc.compute((8, 8), lambda i, j, scale=2.0: A[i, j] * scale, name="B")
    C = tc.compute((8, 8), lambda *ij: A[ij[0], ij[1]], name="C")
    assert [ax.name for ax in B.op.axis] == ["i", "j"] and len(C.op.axis) == 2


def test_a_sum_over_a_spatial_axis_names_the_compute(A):
    _refused(lambda: tc.compute((8, 8), lambda i, j: tc.sum(A[i, j], axis=j), name="S"),
             "compute 'S'", "tc.sum", "axis= must be one or more tc.reduce_axis")


def test_a_max_without_a_reduce_axis_names_the_compute(A):
    _refused(lambda: tc.compute((8,), lambda i: tc.max(A[i, 0], axis=[]), name="M"),
             "compute 'M'", "tc.max", "axis=")


def test_a_read_with_the_wrong_number_of_indices_names_the_compute(A):
    _refused(lambda: tc.compute((8, 8), lambda i, j: A[i], name="B"),
             "compute 'B'", "A has 2 dimensions but is indexed with 1")
