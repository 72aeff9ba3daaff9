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


def test_a_whole_power_is_a_product(A, rng):
    """``x ** 3`` is ``x * x * x``: the same expression, the same values as written out."""
    import numpy as np

    cubed = tc.compute((8, 8), lambda i, j: A[i, j] ** 3, name="P")
    written = tc.compute((8, 8), lambda i, j: A[i, j] * A[i, j] * A[i, j], name="P")
    assert str(cubed.op.body) == str(written.op.body)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    np.testing.assert_array_equal(tc.evaluate(cubed, {A: a}), a * a * a)
    assert str(tc.compute((8, 8), lambda i, j: A[i, j] ** 1, name="P").op.body) == "A[i, j]"


@pytest.mark.parametrize("power", [0, 9, -1, 0.5, 2.0, True])
def test_other_powers_name_what_to_write(A, power):
    _refused(lambda: tc.compute((8, 8), lambda i, j: A[i, j] ** power, name="P"),
             "x ** n takes a whole n from 1 to 8", repr(power), "tc.sqrt")


def test_a_number_to_an_expression_power_names_exp(A):
    _refused(lambda: tc.compute((8, 8), lambda i, j: 2.0 ** A[i, j], name="P"), "tc.exp(x * math.log(2.0))")


@pytest.mark.parametrize("body", [
    lambda A, i, j: A[i, j] if A[i, j] > 0.0 else 0.0,
    lambda A, i, j: A[i, j] > 0.0 and A[i, j] < 1.0,
    lambda A, i, j: A[i, j] > 0.0 or A[i, j] < -1.0,
])
def test_a_python_truth_value_points_at_where(A, body):
    _refused(lambda: tc.compute((8, 8), lambda i, j: body(A, i, j), name="P"),
             "compute 'P'", "no truth value", "tc.where(cond, a, b)")


def test_where_takes_a_comparison(A):
    _refused(lambda: tc.where(A[0, 0], 1.0, 0.0), "tc.where takes a comparison")
