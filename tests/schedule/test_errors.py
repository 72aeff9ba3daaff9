"""One test per ScheduleError a primitive raises: each message names the call as the
user wrote it (``s['Q'].split(``) and the user's file and line, and says what is wrong.

Every call under test sits on the same line as its ``_raises`` so that the expected
line number is the caller's.
"""

import inspect
import os

import pytest

import tcomp as tc
from workloads import matmul_silu_quant

HERE = os.path.basename(__file__)


def _raises(call_text: str, fn, *needles: str, error=tc.ScheduleError) -> str:
    """``fn()`` raises ``error``; its message holds ``call_text``, this file's name with the
    caller's line, and every needle. Returns the message."""
    line = inspect.currentframe().f_back.f_lineno
    with pytest.raises(error) as info:
        fn()
    msg = str(info.value)
    assert isinstance(info.value, tc.TcompError)
    assert call_text in msg, msg
    assert f"{HERE}:{line}" in msg, f"expected {HERE}:{line} in: {msg}"
    for needle in needles:
        assert needle in msg, f"expected {needle!r} in: {msg}"
    return msg


@pytest.fixture
def w():
    return matmul_silu_quant(13, 17, 19)


@pytest.fixture
def s(w):
    return w.schedule()


# ---------------------------------------------------------------------------- loop handles


def test_split_axis_of_another_stage(w, s):
    ci, cj = s[w["C"]].axis
    _raises("s['Q'].split(i, 4)", lambda: s[w["Q"]].split(ci, 4), "loop of stage C", "not of Q")


def test_split_stale_axis(w, s):
    i, j = s[w["Q"]].axis
    s[w["Q"]].split(i, 4)
    _raises("s['Q'].split(i, 2)", lambda: s[w["Q"]].split(i, 2), "already split", "i_o, i_i, j")


def test_split_not_a_handle(w, s):
    _raises("s['Q'].split('i', 2)", lambda: s[w["Q"]].split("i", 2), "loop handle of stage Q")


@pytest.mark.parametrize("factor", [0, -3, 2.0, True])
def test_split_factor_not_positive_int(w, s, factor):
    i, j = s[w["Q"]].axis
    _raises(f"s['Q'].split(i, {factor!r})", lambda: s[w["Q"]].split(i, factor), "positive int")


def test_split_factor_given_by_keyword(w, s):
    i, j = s[w["Q"]].axis
    _raises("s['Q'].split(i, factor=0)", lambda: s[w["Q"]].split(i, factor=0), "positive int")


def test_tile_factor_zero(w, s):
    i, j = s[w["Q"]].axis
    _raises("s['Q'].tile(i, j, 8, 0)", lambda: s[w["Q"]].tile(i, j, 8, 0), "positive int")


def test_tile_same_loop_twice(w, s):
    i, j = s[w["Q"]].axis
    _raises("s['Q'].tile(i, i, 2, 2)", lambda: s[w["Q"]].tile(i, i, 2, 2), "two different loops")


def test_reorder_repeated_loop(w, s):
    i, j = s[w["Q"]].axis
    _raises("s['Q'].reorder(i, j, i)", lambda: s[w["Q"]].reorder(i, j, i), "more than once")


def test_reorder_loop_of_another_stage(w, s):
    ci, cj = s[w["C"]].axis
    i, j = s[w["Q"]].axis
    _raises("s['Q'].reorder(j, i)", lambda: s[w["Q"]].reorder(j, ci), "loop of stage C")


def test_fuse_non_adjacent(w, s):
    i, j = s[w["Q"]].axis
    io, ii = s[w["Q"]].split(i, 4)
    _raises("s['Q'].fuse(i_o, j)", lambda: s[w["Q"]].fuse(io, j), "adjacent", "i_o, i_i, j")


def test_fuse_inner_outer_swapped(w, s):
    i, j = s[w["Q"]].axis
    _raises("s['Q'].fuse(j, i)", lambda: s[w["Q"]].fuse(j, i), "adjacent", "directly outside")


def test_fuse_spatial_with_reduction(w, s):
    ci, cj = s[w["C"]].axis
    (k,) = s[w["C"]].reduce_axis
    _raises("s['C'].fuse(j, k)", lambda: s[w["C"]].fuse(cj, k), "reduction")


# ---------------------------------------------------------------------------- bind, unroll


def test_bind_one_axis_twice(w, s):
    i, j = s[w["Q"]].axis
    s[w["Q"]].bind(i, "blockIdx.x")
    _raises("s['Q'].bind(i, 'blockIdx.y')", lambda: s[w["Q"]].bind(i, "blockIdx.y"), "already bound",
            "blockIdx.x")


def test_bind_a_tag_twice(w, s):
    i, j = s[w["Q"]].axis
    s[w["Q"]].bind(i, "threadIdx.x")
    _raises("s['Q'].bind(j, 'threadIdx.x')", lambda: s[w["Q"]].bind(j, "threadIdx.x"), "threadIdx.x",
            "already bound to loop i")


def test_bind_unknown_tag(w, s):
    i, j = s[w["Q"]].axis
    _raises("s['Q'].bind(i, 'warpIdx.x')", lambda: s[w["Q"]].bind(i, "warpIdx.x"), "unknown thread tag",
            "threadIdx.x")


def test_bind_axis_of_another_stage(w, s):
    ci, cj = s[w["C"]].axis
    _raises("s['Q'].bind(i, 'threadIdx.x')", lambda: s[w["Q"]].bind(ci, "threadIdx.x"), "loop of stage C")


def test_unroll_a_bound_loop(w, s):
    i, j = s[w["Q"]].axis
    s[w["Q"]].bind(j, "threadIdx.x")
    _raises("s['Q'].unroll(j)", lambda: s[w["Q"]].unroll(j), "bound to threadIdx.x")


def test_bind_an_unrolled_loop(w, s):
    i, j = s[w["Q"]].axis
    s[w["Q"]].vectorize(j)
    _raises("s['Q'].bind(j, 'threadIdx.x')", lambda: s[w["Q"]].bind(j, "threadIdx.x"), "vectorize")


# ---------------------------------------------------------------------------- placement


def test_compute_at_axis_not_a_loop_of_that_consumer(w, s):
    ci, cj = s[w["C"]].axis
    _raises("s['C'].compute_at(s['Q'], i)", lambda: s[w["C"]].compute_at(s[w["Q"]], ci),
            "loop of stage C", "not of Q")


def test_compute_at_stale_axis_of_the_consumer(w, s):
    i, j = s[w["Q"]].axis
    s[w["Q"]].split(j, 4)
    _raises("s['C'].compute_at(s['Q'], j)", lambda: s[w["C"]].compute_at(s[w["Q"]], j), "already split")


def test_compute_at_own_loop(w, s):
    ci, cj = s[w["C"]].axis
    _raises("s['C'].compute_at(s['C'], i)", lambda: s[w["C"]].compute_at(s[w["C"]], ci), "its own loops")


def test_compute_at_of_the_output(w, s):
    ci, cj = s[w["C"]].axis
    _raises("s['Q'].compute_at(s['C'], i)", lambda: s[w["Q"]].compute_at(s[w["C"]], ci), "output")


def test_reverse_compute_at_own_loop(w, s):
    i, j = s[w["Q"]].axis
    _raises("s['Q'].reverse_compute_at(s['Q'], j)", lambda: s[w["Q"]].reverse_compute_at(s[w["Q"]], j),
            "its own loops")


def test_reverse_compute_at_axis_not_a_loop_of_the_producer(w, s):
    i, j = s[w["Q"]].axis
    _raises("s['Q'].reverse_compute_at(s['C'], j)", lambda: s[w["Q"]].reverse_compute_at(s[w["C"]], j),
            "loop of stage Q", "not of C")


def test_compute_inline_a_reduction(w, s):
    _raises("s['C'].compute_inline()", lambda: s[w["C"]].compute_inline(), "reduction", "compute_at")


def test_compute_inline_the_output(w, s):
    _raises("s['Q'].compute_inline()", lambda: s[w["Q"]].compute_inline(), "output")


# ---------------------------------------------------------------------------- stages and scopes


def test_stage_of_a_placeholder(w, s):
    A = w["A"]
    _raises("s[A]", lambda: s[A], "input placeholder")


def test_stage_of_a_placeholder_by_name(w, s):
    _raises("s['W']", lambda: s["W"], "input placeholder")


def test_stage_of_an_unknown_name(w, s):
    _raises("s['Nope']", lambda: s["Nope"], "no stage named", "C, Y, Q")


def test_set_scope_unknown(w, s):
    _raises("s['C'].set_scope('texture')", lambda: s[w["C"]].set_scope("texture"), "unknown storage scope",
            "shared")


def test_cache_read_unknown_scope(w, s):
    _raises("s.cache_read(A, 'global', [s['C']])", lambda: s.cache_read(w["A"], "global", [s[w["C"]]]),
            "'shared' or 'local'")


def test_cache_read_reader_that_does_not_read(w, s):
    _raises("s.cache_read(A, 'shared', [s['Q']])", lambda: s.cache_read(w["A"], "shared", [s[w["Q"]]]),
            "Q does not read A")


def test_cache_read_no_readers(w, s):
    _raises("s.cache_read(A, 'shared', [])", lambda: s.cache_read(w["A"], "shared", []), "non-empty")


def test_cache_write_unknown_scope(w, s):
    _raises("s.cache_write(C, 'register')", lambda: s.cache_write(w["C"], "register"), "'local'")


@pytest.mark.parametrize("first", ["split", "bind", "compute_at", "reorder"])
def test_cache_write_after_other_primitives(w, s, first):
    C, Q = w["C"], w["Q"]
    i, j = s[C].axis
    if first == "split":
        s[C].split(i, 4)
    elif first == "bind":
        s[C].bind(i, "threadIdx.x")
    elif first == "compute_at":
        s[C].compute_at(s[Q], s[Q].axis[0])
    else:
        s[C].reorder(j, i)
    _raises("s.cache_write(C, 'local')", lambda: s.cache_write(C, "local"), "must come before",
            "stage C")


def test_cache_write_of_a_placeholder(w, s):
    _raises("s.cache_write(A, 'local')", lambda: s.cache_write(w["A"], "local"), "input placeholder")


def test_create_schedule_of_a_placeholder(w):
    with pytest.raises(tc.ScheduleError, match="compute tensors"):
        tc.create_schedule(w["A"])


def test_errors_are_tcomp_errors():
    assert issubclass(tc.ScheduleError, tc.TcompError)
    assert issubclass(tc.IllegalScheduleError, tc.ScheduleError)
    assert not issubclass(tc.InternalError, tc.TcompError)
