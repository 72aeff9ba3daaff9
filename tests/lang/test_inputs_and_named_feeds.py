"""A workload's inputs, publicly (``tc.inputs(out)``: its placeholders in the order the
built module takes them), and ``tc.evaluate`` fed by placeholder name as well as by
placeholder (issue 30, item 7). A name that is not an input, an input left out, a feed
given twice: a ``tc.ArgumentError`` that names the problem and the inputs expected."""

import numpy as np
import pytest

import tcomp as tc

F32 = np.float32


def _difference():
    """C = B - A, with B read first: the traversal meets B before A."""
    A = tc.placeholder((4,), "float32", name="A")
    B = tc.placeholder((4,), "float32", name="B")
    C = tc.compute((4,), lambda i: B[i] - A[i], name="C")
    return A, B, C


def test_inputs_are_the_placeholders_in_the_modules_argument_order():
    A, B, C = _difference()
    assert tc.inputs(C) == [A, B]
    program = tc.lower(tc.create_schedule(C))
    assert [t.name for t in tc.inputs(C)] == [b.name for b in program.inputs]


def test_inputs_of_several_outputs_and_of_a_chain():
    A, B, C = _difference()
    D = tc.compute((4,), lambda i: C[i] * 2.0, name="D")
    E = tc.compute((4,), lambda i: A[i] + 1.0, name="E")
    assert tc.inputs(D) == [A, B]
    assert tc.inputs([E, D]) == [A, B]
    assert tc.inputs(E) == [A]


def test_inputs_of_something_else_is_an_argument_error():
    with pytest.raises(tc.ArgumentError, match="tc.inputs expects a tensor"):
        tc.inputs("C")


def test_evaluate_takes_feeds_by_name():
    A, B, C = _difference()
    a, b = np.arange(4, dtype=F32), np.full(4, 10, F32)
    np.testing.assert_array_equal(tc.evaluate(C, {"A": a, "B": b}), b - a)
    np.testing.assert_array_equal(tc.evaluate(C, {A: a, "B": b}), b - a)  # mixed


def test_evaluate_with_the_inputs_in_order():
    A, B, C = _difference()
    arrays = [np.arange(4, dtype=F32), np.ones(4, F32)]
    np.testing.assert_array_equal(tc.evaluate(C, dict(zip(tc.inputs(C), arrays))), arrays[1] - arrays[0])


def test_an_unknown_name_says_which_inputs_there_are():
    A, B, C = _difference()
    with pytest.raises(tc.ArgumentError) as err:
        tc.evaluate(C, {"A": np.zeros(4, F32), "b": np.zeros(4, F32)})
    message = str(err.value)
    assert "'b' is not an input of C" in message
    assert "A (4,) float32, B (4,) float32" in message


def test_a_computed_tensor_is_not_an_input():
    A, B, C = _difference()
    D = tc.compute((4,), lambda i: C[i] * 2.0, name="D")
    with pytest.raises(tc.ArgumentError, match="'C' is a computed tensor of D, not an input"):
        tc.evaluate(D, {"A": np.zeros(4, F32), "B": np.zeros(4, F32), "C": np.zeros(4, F32)})


def test_a_missing_input_names_every_input_expected():
    A, B, C = _difference()
    with pytest.raises(tc.ArgumentError) as err:
        tc.evaluate(C, {"A": np.zeros(4, F32)})
    message = str(err.value)
    assert "no value for input B" in message and "A (4,) float32, B (4,) float32" in message
    assert "tc.inputs(C)" in message


def test_an_input_given_twice_is_an_error():
    A, B, C = _difference()
    with pytest.raises(tc.ArgumentError, match="A is given twice"):
        tc.evaluate(C, {A: np.zeros(4, F32), "A": np.zeros(4, F32), "B": np.zeros(4, F32)})


def test_two_inputs_with_one_name_must_be_fed_by_placeholder():
    X1 = tc.placeholder((4,), "float32", name="X")
    X2 = tc.placeholder((4,), "float32", name="X")
    O = tc.compute((4,), lambda i: X1[i] - X2[i], name="O")
    with pytest.raises(tc.ArgumentError, match="2 inputs of O are named 'X'; key them by placeholder"):
        tc.evaluate(O, {"X": np.zeros(4, F32)})
    ones = np.ones(4, F32)
    np.testing.assert_array_equal(tc.evaluate(O, {X1: ones, X2: ones}), ones - ones)


def test_a_feed_key_of_another_kind_is_an_error():
    A, B, C = _difference()
    with pytest.raises(tc.ArgumentError, match="keys are placeholders or their names"):
        tc.evaluate(C, {0: np.zeros(4, F32)})
