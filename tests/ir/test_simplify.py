"""Index simplification with the ranges of the loop variables (``tcomp.ir.simplify``):
the rewritten expression takes the same value as the original at every point of the
ranges, and fused-then-split indices lose the divisions the ranges decide."""

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st

import tcomp as tc
from tcomp.ir.expr import Binary, IntImm, Var
from tcomp.ir.simplify import simplify, value_range
from tcomp.lower.passes import KERNEL_PASSES

VARS = [Var("a"), Var("b"), Var("c")]


def evaluate(e, env):
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env[e]
    a, b = evaluate(e.a, env), evaluate(e.b, env)
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "//": lambda: a // b,
            "%": lambda: a % b, "min": lambda: min(a, b), "max": lambda: max(a, b)}[e.op]()


def expressions():
    leaves = st.one_of(st.sampled_from(VARS), st.integers(0, 40).map(IntImm))

    def extend(inner):
        divisors = st.sampled_from([1, 2, 3, 4, 8, 16, 32]).map(IntImm)
        return st.one_of(
            st.tuples(st.sampled_from(["+", "*", "min", "max"]), inner, inner).map(lambda t: Binary(*t)),
            st.tuples(inner, st.sampled_from([1, 2, 4, 8, 64]).map(IntImm)).map(lambda t: Binary("*", *t)),
            st.tuples(st.sampled_from(["//", "%"]), inner, divisors).map(lambda t: Binary(*t)))

    return st.recursive(leaves, extend, max_leaves=8)


@settings(max_examples=600, deadline=None)
@given(expressions(), st.lists(st.integers(1, 9), min_size=3, max_size=3))
# a partitioned loop's tail: the constant stays inside a division the ranges do not decide
@example(Binary("//", Binary("+", VARS[0], IntImm(14)), IntImm(5)), [7, 1, 1])
@example(Binary("%", Binary("+", VARS[0], IntImm(14)), IntImm(5)), [7, 1, 1])
@example(Binary("%", Binary("+", Binary("*", VARS[0], IntImm(8)), Binary("+", VARS[1], IntImm(3))), IntImm(32)),
         [9, 4, 1])
def test_a_simplified_index_takes_the_same_values(e, extents):
    ranges = {v: (0, n - 1) for v, n in zip(VARS, extents)}
    simplified = simplify(e, ranges)
    for point in itertools.product(*(range(n) for n in extents)):
        env = dict(zip(VARS, point))
        assert evaluate(simplified, env) == evaluate(e, env), (e, simplified, env)
    r = value_range(e, ranges)
    if r is not None:
        values = [evaluate(e, dict(zip(VARS, p))) for p in itertools.product(*(range(n) for n in extents))]
        assert r[0] <= min(values) and max(values) <= r[1]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.integers(0, 64), min_size=3, max_size=3), st.integers(0, 100), st.sampled_from(["//", "%"]),
       st.integers(1, 64), st.lists(st.integers(1, 9), min_size=3, max_size=3))
def test_a_division_of_an_affine_index_takes_the_same_values(coefficients, constant, op, d, extents):
    """The shape every split and fuse produces: ``(c0 a + c1 b + c2 c + k) // d`` and ``% d``."""
    e = IntImm(constant)
    for v, c in zip(VARS, coefficients):
        e = Binary("+", e, Binary("*", v, IntImm(c)))
    e = Binary(op, e, IntImm(d))
    ranges = {v: (0, n - 1) for v, n in zip(VARS, extents)}
    simplified = simplify(e, ranges)
    for point in itertools.product(*(range(n) for n in extents)):
        env = dict(zip(VARS, point))
        assert evaluate(simplified, env) == evaluate(e, env), (e, simplified, env)


def test_fused_then_split_loops_lose_their_divisions():
    i, r, t, lane = Var("i"), Var("r"), Var("t"), Var("lane")
    fused = Binary("+", Binary("*", i, IntImm(2)), r)
    ranges = {i: (0, 3), r: (0, 1), t: (0, 31), lane: (0, 7)}
    assert str(simplify(Binary("//", fused, IntImm(2)), ranges)) == "i"
    assert str(simplify(Binary("%", fused, IntImm(2)), ranges)) == "r"
    # a thread's 8-lane vector in rows of 32: the lane stays out of the division
    offset = Binary("+", Binary("*", t, IntImm(8)), lane)
    assert str(simplify(Binary("//", offset, IntImm(32)), ranges)) == "t // 4"
    assert str(simplify(Binary("%", offset, IntImm(32)), ranges)) == "lane + t % 4 * 8"
    # without ranges nothing is assumed
    assert str(simplify(Binary("//", fused, IntImm(2)))) == "(i * 2 + r) // 2"


def test_the_last_pass_simplifies_in_loop_ranges():
    """A 2 x 2 tile of a fused loop: the lowered store's index has no division left."""
    A = tc.placeholder((8, 8), "float32", name="A")
    B = tc.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="B")
    s = tc.create_schedule(B)
    i, j = s[B].axis
    f = s[B].fuse(i, j)
    fo, fi = s[B].split(f, 16)
    s[B].bind(fo, "blockIdx.x")
    s[B].bind(fi, "threadIdx.x")
    assert KERNEL_PASSES[-1][0] == "simplify_in_loop_ranges"
    text = str(tc.lower(s))
    assert "//" not in text and "%" not in text, text
