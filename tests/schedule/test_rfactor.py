"""s.rfactor (split-K): the partial results and their combination compute the algorithm's
reduction in another order, which tc.check reports; bad calls say why."""

import numpy as np
import pytest

import tcomp as tc
from workloads import check_float


def _matmul(M=8, N=16, K=32, combiner="sum"):
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, "k")
    reduce = {"sum": tc.sum, "max": tc.max}[combiner]
    C = tc.compute((M, N), lambda i, j: reduce(A[i, k] * W[k, j], axis=k), name="C")
    return A, W, C


def _run(s, A, W, C, rng):
    a = rng.standard_normal(A.shape).astype(np.float32)
    w = rng.standard_normal(W.shape).astype(np.float32)
    c = np.full(C.shape, np.nan, np.float32)
    tc.build(s)(a, w, c)
    return c, tc.evaluate(C, {A: a, W: w})


def test_split_k_over_blocks_matches_the_reference_and_is_reported(rng):
    A, W, C = _matmul()
    s = tc.create_schedule(C)
    CR = s.rfactor(C, 4)
    assert CR.shape == (4, 8, 16) and s[C].reduce_axis[0].extent == 4
    part, i, j = s[CR].axis
    s[CR].bind(part, "blockIdx.z")
    s[CR].bind(i, "threadIdx.y")
    s[CR].bind(j, "threadIdx.x")
    ci, cj = s[C].axis
    s[C].bind(ci, "blockIdx.x")
    s[C].bind(cj, "threadIdx.x")
    report = tc.check(s)
    assert report.legal
    (r,) = report.reassociations
    assert r.stage == "C" and not r.exact and "4 partial results (C_rf)" in str(r)
    got, want = _run(s, A, W, C, rng)
    check_float(got, want, rtol=1e-5, atol=1e-5)
    assert len(tc.lower(s).kernels) == 2  # the slices, then their sum


def test_max_is_split_exactly():
    A, W, C = _matmul(combiner="max")
    s = tc.create_schedule(C)
    s.rfactor(C, 2)
    (r,) = tc.check(s).reassociations
    assert r.exact and "the result is the same" in str(r)
    rng = np.random.default_rng(1)
    got, want = _run(s, A, W, C, rng)
    np.testing.assert_array_equal(got, want)


def test_the_trace_replays_an_rfactor():
    from tcomp.schedule.schedule import replay

    A, W, C = _matmul()
    s = tc.create_schedule(C)
    CR = s.rfactor(C, 8)
    s[CR].bind(s[CR].axis[0], "blockIdx.z")
    again = replay(s.trace_source(with_sites=False), C)
    assert str(tc.lower(again)) == str(tc.lower(s))


@pytest.mark.parametrize("call, needle", [
    (lambda s, C: s.rfactor(C, 33), r"an int from 2 to the extent 32 of k, got 33"),
    (lambda s, C: s.rfactor(C, 1), r"an int from 2 to the extent 32 of k, got 1"),
    (lambda s, C: (s[C].split(s[C].axis[0], 2), s.rfactor(C, 4)), r"must come before the other primitives"),
])
def test_bad_rfactor_calls_say_why(call, needle):
    A, W, C = _matmul()
    s = tc.create_schedule(C)
    with pytest.raises(tc.ScheduleError, match=needle):
        call(s, C)


@pytest.mark.parametrize("combiner, interleaved", [("sum", False), ("sum", True), ("max", False), ("max", True)])
def test_parts_that_do_not_divide_the_extent_pad_with_the_identity(rng, combiner, interleaved):
    """5 slices of k = 32 (7 terms each, the last 4 past the end): the terms past the end
    are the reduction's identity and read the last element instead of past it, so the
    result is the algorithm's and tc.check finds no read out of bounds."""
    A, W, C = _matmul(combiner=combiner)
    s = tc.create_schedule(C)
    CR = s.rfactor(C, 5, interleaved=interleaved)
    assert CR.shape == (5, 8, 16) and s[CR].reduce_axis[0].extent == 7
    s[CR].bind(s[CR].axis[0], "blockIdx.z")
    report = tc.check(s)
    assert report.legal and "5 partial results" in str(report)
    text = str(tc.lower(s))
    assert "min(" in text and ("-inf" if combiner == "max" else "0.0") in text
    got, want = _run(s, A, W, C, rng)
    if combiner == "max":
        np.testing.assert_array_equal(got, want)
    else:
        check_float(got, want, rtol=1e-5, atol=1e-5)


def test_rfactor_needs_a_reduction():
    X = tc.placeholder((4, 4), "float32", name="X")
    Y = tc.compute((4, 4), lambda i, j: X[i, j] * 2.0, name="Y")
    s = tc.create_schedule(Y)
    with pytest.raises(tc.ScheduleError, match="Y has no reduction axis"):
        s.rfactor(Y, 2)


def test_a_row_max_across_the_threads_of_a_block(rng):
    """Interleaved slices on the threads of one block per row, the partial maxima in
    shared memory, one thread combining them after a barrier."""
    Z = tc.placeholder((4, 64), "float32", name="Z")
    j = tc.reduce_axis(64, "j")
    R = tc.compute((4,), lambda i: tc.max(tc.abs(Z[i, j]), axis=j), name="R")
    s = tc.create_schedule(R)
    RR = s.rfactor(R, 16, interleaved=True)
    (row,) = s[R].axis
    s[R].bind(row, "blockIdx.x")
    s[RR].set_scope("shared")
    s[RR].compute_at(s[R], row)
    s[RR].bind(s[RR].axis[0], "threadIdx.x")
    text = str(tc.lower(s))
    assert "syncthreads()" in text and "j * 16 + p]" in text  # thread p reads p, p + 16, ...
    z = rng.standard_normal((4, 64)).astype(np.float32)
    got = np.full(4, np.nan, np.float32)
    tc.build(s)(z, got)
    np.testing.assert_array_equal(got, np.abs(z).max(axis=1))


def test_rfactor_splits_one_reduction_axis_only():
    X = tc.placeholder((4, 6, 8), "float32", name="X")
    a, b = tc.reduce_axis(6, "a"), tc.reduce_axis(8, "b")
    S = tc.compute((4,), lambda i: tc.sum(X[i, a, b], axis=[a, b]), name="S")
    s = tc.create_schedule(S)
    with pytest.raises(tc.ScheduleError, match="rfactor splits one reduction axis; S reduces over a, b"):
        s.rfactor(S, 2)
