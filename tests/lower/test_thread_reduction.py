"""Reductions run by the block's threads together (``s[T].reduce_across_threads``,
``tcomp.lower.thread_reduction``): each thread adds its own terms, then the threads
combine their values in log steps through warp shuffles and the warps' totals."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tcomp as tc
from tcomp.ir.expr import WarpShuffle
from tcomp.ir.stmt import Barrier, For
from tcomp.ir.visitor import walk
from workloads import run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import rmsnorm  # noqa: E402
import softmax  # noqa: E402


def _row_sum(M, N, slices, threads, combiner="sum", scope="local", bind_outside=False):
    """``Y = X / S`` with ``S`` the row's sum (or max), ``slices`` interleaved slices a
    thread each in shared memory and the row's total by the threads together."""
    X = tc.placeholder((M, N), "float32", name="X")
    k = tc.reduce_axis(N, name="k")
    reduce = tc.sum if combiner == "sum" else tc.max
    S = tc.compute((M,), lambda i: reduce(X[i, k], axis=k), name="S")
    Y = tc.compute((M, N), lambda i, j: X[i, j] / S[i], name="Y")
    s = tc.create_schedule(Y)
    partial = s.rfactor("S", slices, interleaved=True)
    i, j = s[Y].axis
    s[Y].bind(i, "blockIdx.x")
    steps, lane = s[Y].split(j, threads)
    s[Y].bind(lane, "threadIdx.x")
    s[partial].set_scope("shared")
    s[partial].compute_at(s[Y], i)
    p, *_ = s[partial].axis
    outer, inner = s[partial].split(p, threads)
    s[partial].bind(inner, "threadIdx.x")
    s["S"].set_scope(scope)
    s["S"].compute_at(s[Y], lane if bind_outside else i)
    (r,) = s["S"].reduce_axis
    s["S"].reduce_across_threads(r)
    return s, Y


@pytest.mark.parametrize("slices,threads,combiner", [(64, 64, "sum"), (128, 64, "sum"), (96, 96, "max"),
                                                     (32, 32, "sum"), (24, 32, "max")])
def test_the_threads_total_matches_float64(slices, threads, combiner, rng):
    """Slices per thread 1 or 2, whole warps or not a power of two of them (96 threads:
    the lanes past the third warp hold the identity), fewer slices than threads (24 on
    32: the rest hold the identity), a sum and a max."""
    M, N = 2, 384
    s, Y = _row_sum(M, N, slices, threads, combiner)
    assert tc.check(s).legal
    x = rng.uniform(0.5, 2.0, (M, N)).astype(np.float32)
    total = x.astype(np.float64).sum(1, keepdims=True) if combiner == "sum" else x.max(1, keepdims=True)
    np.testing.assert_allclose(run(s, [x]), x / total, rtol=1e-6)


def test_a_row_of_1024_slices_takes_ten_shuffles_and_one_barrier_per_statistic():
    """The long-row softmax: 1024 threads, a slice each; each statistic's slices go in two
    butterflies of five shuffles and one barrier between them, with no thread adding a
    chain of them (no grouped stage)."""
    Y = softmax.algorithm(4, 32768)
    s = tc.create_schedule(Y)
    softmax.schedule(s, Y, threads=1024, combine="tree")
    (kernel,) = tc.lower(s).kernels
    assert kernel.block == (1024, 1, 1)
    shuffles = [n for n in walk(kernel) if isinstance(n, WarpShuffle)]
    assert len(shuffles) == 2 * 10
    assert not [st for st in s.stages if st.tensor.name.endswith("_rf3")]  # no groups
    assert not [n for n in walk(kernel) if isinstance(n, For) and n.kind == "across_threads"]


def test_rows_on_threadIdx_y_reduce_apart(rng):
    """Two rows a block, 16 threads a row: one warp holds both rows, and each row's
    butterfly stays within its 16 lanes."""
    x = (rng.standard_normal((4, 1000)) * 4.0).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    Y = softmax.algorithm(4, 1000)
    s = tc.create_schedule(Y)
    softmax.schedule(s, Y, threads=16, vector=4, combine="tree", rows=2)
    assert tc.check(s).legal
    np.testing.assert_allclose(run(s, [x]), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-8)


def test_rmsnorm_adds_its_slices_in_a_tree(rng):
    """The example's default schedule (a tree on 256 threads, 8 lanes a slice) at a row
    of 4096, against ``tc.evaluate``; the barrier between the warps' totals and their
    reads is there."""
    import ml_dtypes

    Y = rmsnorm.algorithm(2, 4096)
    s = tc.create_schedule(Y)
    rmsnorm.schedule(s, Y)
    (kernel,) = tc.lower(s).kernels
    assert kernel.block == (256, 1, 1)
    assert any(isinstance(n, WarpShuffle) for n in walk(kernel))
    assert any(isinstance(n, Barrier) for n in walk(kernel))
    x = rng.standard_normal((2, 4096)).astype(ml_dtypes.bfloat16)
    gamma = rng.uniform(0.5, 1.5, 4096).astype(ml_dtypes.bfloat16)
    X, G = tc.inputs(Y)
    want = tc.evaluate(Y, {X: x, G: gamma}).astype(np.float64)
    got = run(s, [x, gamma]).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=1e-3)


def test_check_reports_the_tree_as_a_reassociation():
    s, _ = _row_sum(2, 256, 64, 64)
    report = str(tc.check(s))
    assert "reduce_across_threads(p) combines the threads' terms in a tree" in report
    s, _ = _row_sum(2, 256, 64, 64, "max")
    assert "exact for max and min" in str(tc.check(s))


def test_a_spatial_loop_is_refused_by_name():
    X = tc.placeholder((4, 8), "float32", name="X")
    Y = tc.compute((4, 8), lambda i, j: X[i, j] * 2.0, name="Y")
    s = tc.create_schedule(Y)
    with pytest.raises(tc.TcompError, match="reduce_across_threads takes a reduction loop; i is a spatial loop"):
        s[Y].reduce_across_threads(s[Y].axis[0])


def test_a_total_in_shared_memory_is_refused_by_name():
    s, _ = _row_sum(2, 256, 64, 64, scope="shared")
    with pytest.raises(tc.TcompError, match="S is in shared memory; the threads' total goes to each thread's own "
                                            "copy, so it must be local"):
        tc.lower(s)


def test_a_reduction_inside_a_thread_loop_is_refused_by_name():
    """Placed inside the consumer's loop on threadIdx.x, each thread's copy of the
    surrounding code differs: the threads cannot share their terms."""
    s, _ = _row_sum(2, 256, 64, 64, bind_outside=True)
    with pytest.raises(tc.TcompError, match="is inside a loop bound to threadIdx.x"):
        tc.lower(s)


def test_a_block_that_is_not_whole_warps_is_refused_by_name():
    s, _ = _row_sum(2, 240, 48, 48)
    with pytest.raises(tc.TcompError, match="48 threads on threadIdx.x; a reduction across threads needs a power "
                                            "of two up to 32 or a multiple of 32"):
        tc.lower(s)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,threads", [(4, 32768, 1024), (64, 4096, 256), (64, 4096, 96)])
def test_softmax_trees_match_on_the_gpu(M, N, threads, rng):
    Y = softmax.algorithm(M, N)
    s = tc.create_schedule(Y)
    softmax.schedule(s, Y, threads=threads, combine="tree", vector_slices=N % (4 * threads) == 0)
    x = (rng.standard_normal((M, N)) * 4.0).astype(np.float32)
    np.testing.assert_allclose(run(s, [x]), tc.evaluate(Y, {tc.inputs(Y)[0]: x}), rtol=1e-5, atol=1e-9)


def _barriers_between_slices_and_tree(kernel) -> int:
    """Barriers of the kernel's top sequence that stand right before a tree (a statement
    holding warp shuffles) and right after a store to shared memory."""
    from tcomp.ir.stmt import Seq, Store

    count = 0
    for seq in (n for n in walk(kernel) if isinstance(n, Seq)):
        for before, barrier, after in zip(seq.stmts, seq.stmts[1:], seq.stmts[2:]):
            if isinstance(barrier, Barrier) and any(isinstance(n, WarpShuffle) for n in walk(after)) and any(
                    isinstance(n, Store) and n.buffer.scope == "shared" for n in walk(before)):
                count += 1
    return count


@pytest.mark.parametrize("slices,threads,dropped", [(64, 64, True), (128, 64, False)])
def test_a_tree_of_the_threads_own_slices_needs_no_barrier_before_it(slices, threads, dropped, rng):
    """A slice a thread: thread t stores slice t and the tree gives it term t, so no barrier
    stands between the slices' stores and the tree (tc.check, which sees every thread read
    every slice, still has it). Two slices a thread keep it. Both match float64."""
    M, N = 2, 384
    s, Y = _row_sum(M, N, slices, threads)
    assert tc.check(s).legal
    (kernel,) = tc.lower(s).kernels
    assert _barriers_between_slices_and_tree(kernel) == (0 if dropped else 1)
    x = rng.uniform(0.5, 2.0, (M, N)).astype(np.float32)
    np.testing.assert_allclose(run(s, [x]), x / x.astype(np.float64).sum(1, keepdims=True), rtol=1e-6)


def test_the_barrier_stays_where_a_thread_reads_another_threads_slice():
    """The slices' store at ``p + 1``: the tree's thread t reads slot t, which thread t - 1
    wrote, so the barrier stays."""
    from tcomp.ir.expr import IntImm, Load, Var, binary
    from tcomp.ir.stmt import Buffer, Seq, Store
    from tcomp.lower.thread_reduction import own_slices_need_no_barrier

    slices = Buffer("P", "float32", (65,), "shared")
    total = Buffer("T", "float32", (1,), "local")
    p, t = Var("p", "int32"), Var("t", "int32")
    term = Load(slices, t)
    tree = For(t, 64, "threadIdx.x", Store(total, IntImm(0), term))
    for offset, kept in ((1, True), (0, False)):
        fill = For(p, 64, "threadIdx.x", Store(slices, binary("+", p, IntImm(offset)), IntImm(1)))
        seq = Seq((Barrier(), fill, Barrier(), tree))
        out = own_slices_need_no_barrier(seq, {id(tree): (t, (term,))}, 64)
        assert sum(isinstance(st, Barrier) for st in out.stmts) == (2 if kept else 1)
