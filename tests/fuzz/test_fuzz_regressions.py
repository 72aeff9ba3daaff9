"""Bugs the schedule fuzzer (tests/fuzz, tcomp/testing/fuzz.py) found, each kept as its
minimal schedule. A fixed bug is a plain test; an open one would be
``xfail(strict=True)`` and listed in ``tcomp.testing.fuzz.KNOWN_ISSUES`` so that the
fuzzer counts it apart instead of failing (one is open now: a barrier that orders a
race the checker reports): when the fix lands, delete both the mark and the entry.

Each test runs the fuzzer's own judgement (``evaluate_schedule`` with ``known=False``):
a legal schedule must compute ``tc.evaluate``'s result; an illegal one must compute
something else when built with ``check=False``.
"""

import os

import numpy as np
import pytest

pytest.importorskip("hypothesis")

import tcomp as tc  # noqa: E402
from tcomp.testing.fuzz import WORKLOADS, evaluate_schedule  # noqa: E402

# NOTE: casting NaN (the fuzzer's poison for memory nobody wrote) to int8 warns in the
# simulator's numpy.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def _outcome(wl, schedule):
    s = tc.create_schedule(wl.out)
    schedule(s)
    return evaluate_schedule(wl, s, seed=0, known=False)


def _built_unchecked(wl, s, match):
    """Assert that tc.check refuses ``s`` with a message matching ``match``, and build it
    anyway: (module, inputs, the reference result)."""
    with pytest.raises(tc.IllegalScheduleError, match=match):
        tc.check(s)
    arrays = wl.make_inputs(np.random.default_rng(0))
    return tc.build(s, check=False), arrays, tc.evaluate(wl.out, wl.feeds(arrays))


# ---------------------------------------------------------------------- fixed


def test_vectorized_bfloat16_store_converts_to_storage_bits():
    """A vectorize loop whose loads become vector loads but whose bfloat16 store stays
    scalar stored the float32 value into the uint16 storage without ``_store_bfloat16``
    (codegen/cuda_source.py ``vector_loop``): every Cb element was truncated to an
    integer. Found by the fuzzer as a legal schedule with 15 of 16 outputs wrong."""
    wl = WORKLOADS["ffn_bf16"](M=4, N=4, K=4)

    def schedule(s):
        cb_i, cb_j = s["Cb"].axis
        s["C"].compute_at(s["Cb"], cb_i)
        s["Cb"].vectorize(cb_j)

    assert str(_outcome(wl, schedule)) == "legal"


def test_vectorized_bfloat16_store_source_uses_the_storage_conversion():
    wl = WORKLOADS["ffn_bf16"](M=4, N=4, K=4)
    s = tc.create_schedule(wl.out)
    cb_i, cb_j = s["Cb"].axis
    s["C"].compute_at(s["Cb"], cb_i)
    s["Cb"].vectorize(cb_j)
    source = tc.build(s).source
    kernel = source[source.index("def k_Cb"):source.index("def k_Y")]
    assert "_load4(C," not in kernel  # registers are read one by one (a vector read could move them to memory)
    # the four lanes now leave in one 8-byte vector store, each lane converted to its bits
    stores = [line.strip() for line in kernel.splitlines() if line.strip().startswith("_store4(Cb,")]
    assert len(stores) == 1 and stores[0].count("_store_bfloat16(") == 4, stores


# ---------------------------------------------------------------------- fixed: checker false positives


def test_no_thread_race_in_a_block_of_one_thread():
    """O's thread loop has extent 1 at S.i: a block of one thread. S, which no loop
    bound to threads encloses (coordinate -1, every thread), and O on thread 0 are the
    same thread; the checker used to call them two."""
    wl = WORKLOADS["elementwise_chain"](M=4, N=4)

    def schedule(s):
        s["O"].bind(s["O"].axis[0], "threadIdx.x")
        s["O"].reverse_compute_at(s["S"], s["S"].axis[0])

    s = tc.create_schedule(wl.out)
    schedule(s)
    assert tc.lower(s).kernels[-1].block == (1, 1, 1)
    assert str(_outcome(wl, schedule)) == "legal"


def test_no_block_race_in_a_grid_of_one_block():
    """A reduction loop of extent 1 bound to blockIdx.x: a grid of one block."""
    wl = WORKLOADS["matmul"](M=4, N=4, K=4)

    def schedule(s):
        ko, ki = s["C"].split(s["C"].reduce_axis[0], 4)
        s["C"].bind(ko, "blockIdx.x")

    s = tc.create_schedule(wl.out)
    schedule(s)
    assert tc.lower(s).kernels[0].grid == (1, 1, 1)
    assert str(_outcome(wl, schedule)) == "legal"


def test_no_race_on_identical_redundant_writes():
    """Every thread computes S's row (no loop around S is bound to threads) and reads
    back its own element: the other threads' writes store the same value. Lowering
    generates this on purpose (``guard_bound_loops``)."""
    wl = WORKLOADS["elementwise_chain"](M=4, N=4)

    def schedule(s):
        s["O"].bind(s["O"].axis[1], "threadIdx.x")
        s["O"].reverse_compute_at(s["S"], s["S"].axis[0])

    assert str(_outcome(wl, schedule)) == "legal"


def test_no_block_race_on_identical_redundant_writes():
    """A global S computed at O's serial loop i_o, outside the loop bound to blockIdx.x:
    every block computes the same S rows before reading them."""
    wl = WORKLOADS["elementwise_chain"](M=4, N=4)

    def schedule(s):
        s["S"].set_scope("global")
        io, ii = s["O"].split(s["O"].axis[0], 2)
        s["O"].bind(ii, "blockIdx.x")
        s["S"].compute_at(s["O"], io)

    assert str(_outcome(wl, schedule)) == "legal"


def test_a_reduction_read_by_other_threads_still_races():
    """The exemption for identical writes is for elementwise stores only. C's reduction,
    which no loop bound to threads encloses, runs in thread 0 alone (a single writer);
    its epilogue, placed in C's row loop on threads, reads it from the other threads
    with no barrier in between: a race, and the result differs."""
    wl = WORKLOADS["matmul_silu_quant"](M=4, N=4, K=4)

    def schedule(s):
        s["Y"].compute_inline()
        s["Q"].bind(s["Q"].axis[1], "threadIdx.x")
        s["Q"].reverse_compute_at(s["C"], s["C"].axis[0])

    s = tc.create_schedule(wl.out)
    schedule(s)
    with pytest.raises(tc.IllegalScheduleError, match="a data race on C"):
        tc.check(s)
    assert _outcome(wl, schedule).category == "illegal"


def test_a_global_reduction_no_thread_loop_encloses_has_one_writer():
    """A block of 2 threads (A's shared tile is filled by both) in which C's reduction,
    bound to no thread, accumulates straight into global C. Every thread ran the same
    read-modify-write of C, and the fuzzer's preempted threads lost updates (a legal
    schedule with a wrong result); lowering now gives such stores a single writer, as it
    did for shared accumulators only."""
    wl = WORKLOADS["matmul"](M=4, N=4, K=4)

    def schedule(s):
        s.cache_read("A", "shared", [s["C"]])
        s.cache_read("W", "local", [s["C"]])
        a_i, a_j = s["A_shared"].axis
        a_io, a_ii = s["A_shared"].split(a_i, 2)
        c_i, c_j = s["C"].axis
        c_io, c_ii = s["C"].split(c_i, 2)
        s["W_local"].compute_at(s["C"], c_io)
        s["A_shared"].compute_at(s["C"], c_io)
        s["A_shared"].bind(a_ii, "threadIdx.x")

    s = tc.create_schedule(wl.out)
    schedule(s)
    source = tc.build(s).source
    stores = [n for n, line in enumerate(source.splitlines()) if line.strip().startswith("C[")]
    assert len(stores) == 2 and all("== _u32_0" in source.splitlines()[n - 1] for n in stores), source
    assert str(_outcome(wl, schedule)) == "legal"


def test_a_single_writer_reduction_read_by_every_thread_is_a_race():
    """C accumulates in global memory with no thread loop around it, so lowering leaves
    it to thread 0 (the test above); Y, which every thread runs, reads all of C's row
    with no barrier in between. The model gave C coordinate -1 ("every thread"), the
    same as Y's, and found no conflict; it now gives it thread 0, as lowering does."""
    wl = WORKLOADS["ffn_bf16"](M=4, N=4, K=4)

    def schedule(s):
        s["Q"].reverse_compute_at(s["Y"], s["Y"].axis[0])
        s["Cb"].compute_inline()
        q_i, q_j = s["Q"].axis
        s["Q"].bind(q_i, "threadIdx.x")
        s["Q"].bind(q_j, "threadIdx.y")
        s["Y"].reverse_compute_at(s["C"], s["C"].axis[0])

    s = tc.create_schedule(wl.out)
    schedule(s)
    with pytest.raises(tc.IllegalScheduleError, match=r"(?s)a data race on C.*in threadIdx.y=0 updates"):
        tc.check(s)
    assert str(_outcome(wl, schedule)) == "illegal: race; computes something else"


def test_a_global_reduction_repeated_by_every_block_is_a_race():
    """A global C computed at Cb's row loop, outside Q's loop bound to blocks, and read
    only by stages that every block runs alike: no pair of accesses names two blocks
    (all carry coordinate -1), and the checker called it legal. Every block runs the same
    read-modify-writes of C at once; the fuzzer's preempted blocks lost updates."""
    wl = WORKLOADS["ffn_bf16"](M=4, N=4, K=4)

    def schedule(s):
        s["Y"].compute_inline()
        s["C"].set_scope("global")
        q_i, q_j = s["Q"].axis
        s["Q"].bind(q_j, "blockIdx.x")
        s["Cb"].compute_at(s["Q"], q_i)
        s["C"].compute_at(s["Cb"], s["Cb"].axis[0])

    s = tc.create_schedule(wl.out)
    schedule(s)
    with pytest.raises(tc.IllegalScheduleError, match=r"(?s)a data race on C.*C\[0, 0\] \(update k=0\).* updates "
                                                      r"global C\[0, 0\] in every block: no loop bound to "
                                                      r"blockIdx.x encloses it, so all 4 blocks run"):
        tc.check(s)
    assert str(_outcome(wl, schedule)) == "illegal: race; computes something else"


@pytest.mark.parametrize("placement", ["root", "compute_at"])
def test_a_reassociated_reduction_may_be_read(placement):
    """C's reduction over k=0..3 split by 3 (a guarded tail) and reordered runs its
    updates in the order k=0, 3, 1, 2: the last one is not k=3, but every update is
    done before Y reads C. The checker used to refuse the read; it is a reassociation."""
    wl = WORKLOADS["matmul_silu_quant"](M=4, N=4, K=4)

    def schedule(s):
        if placement == "compute_at":
            s["C"].compute_at(s["Y"], s["Y"].axis[0])
        ko, ki = s["C"].split(s["C"].reduce_axis[0], 3)
        s["C"].reorder(ki, ko)

    assert str(_outcome(wl, schedule)) == "legal: reassociates"


def test_a_reduction_split_over_thread_copies_is_not_a_reassociation():
    """G in registers, its reduction loop bound to threads: every thread adds one term
    into its own copy, and Q, which every thread runs, reads its own partial copy. The
    first version of the reassociation rule pooled the updates of all copies (Q's read
    of "every copy" saw each of them) and called the read complete; each copy must be."""
    wl = WORKLOADS["swiglu_quant"](M=4, N=4, K=4)

    def schedule(s):
        s["H"].compute_inline()
        q_i, q_j = s["Q"].axis
        s["U"].compute_at(s["Q"], q_i)
        s["G"].compute_at(s["Q"], q_i)
        s["G"].bind(s["G"].reduce_axis[0], "threadIdx.x")

    s = tc.create_schedule(wl.out)
    schedule(s)
    with pytest.raises(tc.IllegalScheduleError, match="Q reads G before G has finished computing it"):
        tc.check(s)
    assert str(_outcome(wl, schedule)) == "illegal: flow; computes something else"


def test_a_reassociated_reduction_with_a_dividing_split_may_be_read():
    """The same reorder with a split that divides K: the last update executed is k=3."""
    wl = WORKLOADS["matmul_silu_quant"](M=4, N=4, K=4)

    def schedule(s):
        ko, ki = s["C"].split(s["C"].reduce_axis[0], 2)
        s["C"].reorder(ki, ko)

    assert str(_outcome(wl, schedule)) == "legal: reassociates"


def _cb_computed_by_every_thread(s, q_threads: bool):
    """C (local, its outputs spread over threadIdx.y) computed at Cb, which no loop bound
    to threads encloses: every thread computes all of Cb, from its own copy of C, of which
    it wrote one element. Q on threadIdx.y reads, in each thread, only that element."""
    s["Y"].compute_inline()
    qi, qj = s["Q"].axis
    s["Q"].bind(qi, "blockIdx.x")
    if q_threads:
        s["Q"].bind(qj, "threadIdx.y")
    s["Cb"].compute_at(s["Q"], qi)
    s["C"].compute_at(s["Cb"], s["Cb"].axis[0])
    s["C"].bind(s["C"].fuse(*s["C"].axis), "threadIdx.y")


def test_garbage_that_no_thread_reads_is_harmless():
    """Thread t's Cb[j] for j != t comes from an element of its local C that it never
    wrote, but thread t's Q reads only Cb[t]: the 3,000-schedule fuzz run found the
    checker rejecting this (it required every element that every thread computes to be
    right). A wrong read now counts only in the thread copies whose result some stage
    reads."""
    wl = WORKLOADS["ffn_bf16"](M=4, N=4, K=4)
    assert str(_outcome(wl, lambda s: _cb_computed_by_every_thread(s, q_threads=True))) == "legal"


def test_garbage_that_every_thread_reads_is_still_wrong():
    """The same, with Q not bound to threads: every thread writes every Q from its own Cb,
    most of it garbage. The counterexample names the copy that nothing wrote."""
    wl = WORKLOADS["ffn_bf16"](M=4, N=4, K=4)
    s = tc.create_schedule(wl.out)
    _cb_computed_by_every_thread(s, q_threads=False)
    with pytest.raises(tc.IllegalScheduleError, match=(
            r"counterexample: Cb\[0, 0\] reads C\[0, 0\], but no instance of C writes that value where Cb "
            r"reads it \(local memory, the copy of blockIdx.x=0, threadIdx.y=1\)")):
        tc.check(s)
    # built unchecked, with unwritten local memory poisoned, it computes something else
    assert str(_outcome(wl, lambda s: _cb_computed_by_every_thread(s, q_threads=False))).startswith("illegal")


# ---------------------------------------------------------------------- fixed: a thread index bound twice


def test_output_rebinding_an_enclosing_thread_index_is_refused():
    """O placed at S.i, a loop bound to threadIdx.x, binding its own loop to threadIdx.x
    again: only thread 0 would write most of O. Refused before lowering."""
    wl = WORKLOADS["elementwise_chain"](M=4, N=4)

    def schedule(s):
        s["S"].bind(s["S"].axis[0], "threadIdx.x")
        s["O"].bind(s["O"].axis[0], "threadIdx.x")
        s["O"].reverse_compute_at(s["S"], s["S"].axis[0])

    outcome = _outcome(wl, schedule)
    assert outcome.category in ("illegal", "rejected"), outcome
    s = tc.create_schedule(wl.out)
    schedule(s)
    with pytest.raises(tc.ScheduleError, match=r"O.i is bound to threadIdx.x, but O is computed inside S.i, "
                                               r"which is already bound to threadIdx.x"):
        tc.check(s)


def test_rebinding_an_enclosing_thread_index_is_caught_when_the_stage_is_read():
    """The same rebinding for a stage that something reads."""
    wl = WORKLOADS["matmul_silu_quant"](M=4, N=4, K=4)
    s = tc.create_schedule(wl.out)
    q, c = s["Q"], s["C"]
    s["Y"].compute_inline()
    q.bind(q.axis[1], "threadIdx.x")
    c.compute_at(q, q.axis[1])
    c.bind(c.axis[1], "threadIdx.x")
    with pytest.raises(tc.ScheduleError, match="already bound to threadIdx.x"):
        tc.check(s)
    assert evaluate_schedule(wl, s, known=False).category == "rejected"


# ---------------------------------------------------------------------- the fuzzer's instruments


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"),
                    reason="instruments Numba's CUDA simulator")
def test_isolated_blocks_expose_a_race_between_blocks_that_sequential_blocks_hide():
    """H is computed by the blocks of j, each block also computes every Q of the row from
    all of H's row: run one block after the other (the simulator's order) the last block
    sees every H; run as if at once, no block does."""
    from tcomp.testing.fuzz import run_module, simulator_chaos

    wl = WORKLOADS["swiglu_quant"](M=4, N=4, K=4)
    s = tc.create_schedule(wl.out)
    h_i, h_j = s["H"].axis
    s["H"].bind(h_j, "blockIdx.x")
    s["Q"].reverse_compute_at(s["H"], h_i)
    mod, arrays, want = _built_unchecked(wl, s, "race")
    with simulator_chaos(seed=0):
        assert (run_module(mod, wl, arrays, want) == want).all()
    with simulator_chaos(seed=0, isolate_blocks=True):
        assert not (run_module(mod, wl, arrays, want) == want).all()


def test_block_binding_of_an_inlined_stage_is_a_schedule_error():
    """check_bindings looked up the kernel of an inlined stage that binds a loop to a block
    index, and raised a KeyError (not a tc.TcompError) from tc.check and tc.build."""
    wl = WORKLOADS["ffn_bf16"](M=4, N=4, K=4)
    s = tc.create_schedule(wl.out)
    s["Y"].compute_inline()
    y_i, y_j = s["Y"].axis
    s["Y"].bind(y_i, "blockIdx.x")
    for call in (tc.check, tc.build, tc.lower):
        with pytest.raises(tc.ScheduleError, match="Y is inlined"):
            call(s)
    assert evaluate_schedule(wl, s, known=False).category == "rejected"


# ---------------------------------------------------------------------- fixed: a binding dropped silently


@pytest.mark.parametrize("split", ["split", "fuse"])
def test_splitting_a_bound_loop_does_not_drop_the_binding_silently(split):
    from tcomp.ir.stmt import THREAD_TAGS, For
    from tcomp.ir.visitor import walk

    X = tc.placeholder((8, 4), "float32", name="X")
    O = tc.compute((8, 4), lambda i, j: X[i, j] * 2.0, name="O")
    s = tc.create_schedule(O)
    i, j = s[O].axis
    s[O].bind(i, "threadIdx.x")
    with pytest.raises(tc.ScheduleError, match=r"loop i is already bound to threadIdx.x; (split|fuse) it before"):
        if split == "split":
            s[O].split(i, 4)
        else:
            s[O].fuse(i, j)
    # the schedule is unchanged: i is still a loop, bound to threadIdx.x
    bound = [n for n in walk(tc.lower(s).kernels[0].body) if isinstance(n, For) and n.kind in THREAD_TAGS]
    assert bound


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"),
                    reason="instruments Numba's CUDA simulator")
def test_isolated_threads_expose_a_lost_update_deterministically():
    """The reduction loop bound to threads: every thread adds into the same C[i, j]. With
    the threads isolated between barriers, the updates of all threads but one are lost on
    every run, whatever the order. (The fuzzer once reported such a race as a checker
    false positive, flakily: interleaving the simulator's threads shows a lost update
    only by chance.)"""
    from tcomp.testing.fuzz import run_module, simulator_chaos

    wl = WORKLOADS["matmul"](M=2, N=2, K=8)
    s = tc.create_schedule(wl.out)
    s["C"].bind(s["C"].reduce_axis[0], "threadIdx.x")
    mod, arrays, want = _built_unchecked(wl, s, "race")
    for seed in range(3):
        with simulator_chaos(seed=seed, isolate_threads=True):
            assert not np.allclose(run_module(mod, wl, arrays, want), want, rtol=1e-3, atol=1e-3)
    assert evaluate_schedule(wl, s, known=False).category == "illegal"


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"),
                    reason="instruments Numba's CUDA simulator")
@pytest.mark.parametrize("chaos", [{}, {"isolate_blocks": True, "isolate_threads": True}, {"preempt": True}],
                         ids=["shuffled", "isolated", "preempted"])
def test_instrumented_simulator_keeps_shared_allocations_apart(chaos):
    """Two shared tiles (A and W of a matmul) filled by the whole block. An earlier
    version of the fuzzer's instruments wrapped the simulator's shared-array allocation,
    which tells allocations apart by the line of its caller: every tile became the same
    array, and legal kernels crashed or computed garbage."""
    from tcomp.testing.fuzz import run_module, simulator_chaos

    wl = WORKLOADS["matmul"](M=6, N=7, K=8)
    s = tc.create_schedule(wl.out)
    AS = s.cache_read(wl.inputs[0], "shared", [s["C"]])
    WS = s.cache_read(wl.inputs[1], "shared", [s["C"]])
    i, j = s["C"].axis
    s["C"].bind(i, "blockIdx.x")
    s["C"].bind(j, "threadIdx.x")
    ko, ki = s["C"].split(s["C"].reduce_axis[0], 4)
    for cache in (AS, WS):
        s[cache].compute_at(s["C"], ko)
        s[cache].bind(s[cache].axis[1], "threadIdx.x")
    tc.check(s)
    mod = tc.build(s)
    arrays = wl.make_inputs(np.random.default_rng(0))
    want = tc.evaluate(wl.out, wl.feeds(arrays))
    with simulator_chaos(seed=1, **chaos):
        got = run_module(mod, wl, arrays, want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"),
                    reason="instruments Numba's CUDA simulator")
def test_preempted_blocks_expose_a_repeated_read_modify_write():
    """Every block runs C's whole reduction (a global C computed at Q's serial loop i_o,
    outside the loop bound to blocks) into the same C[i, j], then quantizes its own row.
    Run one after the other, or isolated, the blocks compute the same sums and agree;
    taking turns at random memory accesses, one re-initializes or adds while another
    accumulates, and updates are lost. The interleaving is the seed's: the same seed
    gives the same bits."""
    from tcomp.testing.fuzz import run_module, simulator_chaos

    wl = WORKLOADS["matmul_silu_quant"](M=4, N=4, K=4)
    s = tc.create_schedule(wl.out)
    s["Y"].compute_inline()
    io, ii = s["Q"].split(s["Q"].axis[0], 2)
    s["Q"].bind(ii, "blockIdx.x")
    s["C"].set_scope("global")
    s["C"].compute_at(s["Q"], io)
    mod, arrays, want = _built_unchecked(wl, s, "a data race on C")
    for chaos in ({}, {"isolate_blocks": True, "isolate_threads": True}):
        with simulator_chaos(seed=0, **chaos):
            assert (run_module(mod, wl, arrays, want) == want).all()
    runs = []
    for _ in range(2):
        with simulator_chaos(seed=0, preempt=True):
            runs.append(run_module(mod, wl, arrays, want))
    assert not (runs[0] == want).all()
    assert (runs[0] == runs[1]).all()
    assert evaluate_schedule(wl, s, known=False).category == "illegal"


def test_preemption_needs_a_seed_and_no_isolation():
    from tcomp.testing.simulator_chaos import simulator_chaos

    for kwargs in ({"preempt": True}, {"seed": 0, "preempt": True, "isolate_threads": True}):
        with pytest.raises(ValueError, match="preempt needs a seed"):
            with simulator_chaos(**kwargs):
                pass


# ---------------------------------------------------------------------- open: checker false positives


@pytest.mark.xfail(strict=True, reason="open: the race check does not count a barrier placed for another "
                                       "buffer (KNOWN_ISSUES: race check blind to another buffer's barrier)")
def test_a_barrier_of_a_shared_fill_orders_a_global_intermediate():
    """U is accumulated by thread 0 in its k loop (ku_o); Q, placed inside that loop, reads
    U from both threads at each step. The syncthreads of the A_shared fill inside Q comes
    between thread 0's update of one step and the reads, and between the reads and the
    next step's update, so the accesses are ordered; tc.check reports a race on U. Found
    by a 3,000-schedule fuzzer run (swiglu_quant, 2026-12-01)."""
    wl = WORKLOADS["swiglu_quant"](M=4, N=4, K=4)

    def schedule(s):
        s.cache_read("A", "shared", [s["G"]])
        s["H"].compute_inline()
        a_i, _ = s["A_shared"].axis
        s["A_shared"].split(a_i, 2)
        q_i, q_j = s["Q"].axis
        q_f = s["Q"].fuse(q_i, q_j)
        _, u_j = s["U"].axis
        (u_k,) = s["U"].reduce_axis
        _, u_ko, _, _ = s["U"].tile(u_j, u_k, 2, 2)
        s["Q"].bind(q_f, "threadIdx.x")
        s["Q"].reverse_compute_at(s["U"], u_ko)
        s["G"].compute_at(s["Q"], q_f)
        g_i, _ = s["G"].axis
        s["A_shared"].compute_at(s["G"], g_i)

    assert str(_outcome(wl, schedule)) == "legal"
