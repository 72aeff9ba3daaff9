"""Bugs the schedule fuzzer (tests/fuzz, tcomp/testing/fuzz.py) found, each kept as its
minimal schedule. A fixed bug is a plain test; an open one is ``xfail(strict=True)``
and is listed in ``tcomp.testing.fuzz.KNOWN_ISSUES`` so that the fuzzer counts it apart
instead of failing: when the fix lands, delete both the mark and the entry.

Each test runs the fuzzer's own judgement (``evaluate_schedule`` with ``known=False``):
a legal schedule must compute ``tc.evaluate``'s result; an illegal one must compute
something else when built with ``check=False``.
"""

import os

import numpy as np
import pytest

pytest.importorskip("hypothesis")

import tcomp as tc  # noqa: E402
from tcomp.testing.fuzz import WORKLOADS, FuzzFailure, evaluate_schedule  # noqa: E402

# NOTE: casting NaN (the fuzzer's poison for memory nobody wrote) to int8 warns in the
# simulator's numpy.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def _outcome(wl, schedule):
    s = tc.create_schedule(wl.out)
    schedule(s)
    return evaluate_schedule(wl, s, seed=0, known=False)


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
    assert "_load4(C," in kernel  # the lanes come from one vector load of the registers
    stores = [line.strip() for line in kernel.splitlines() if line.strip().startswith("Cb[")]
    assert len(stores) == 4 and all("= _store_bfloat16(" in line for line in stores), stores


# ---------------------------------------------------------------------- open: checker false positives


@pytest.mark.xfail(strict=True, raises=FuzzFailure,
                   reason="checker (tcomp/poly) false positive: reports a data race between threads in a "
                          "kernel whose block has one thread (O's thread loop has extent 1 at S.i); the "
                          "schedule computes the algorithm")
def test_no_thread_race_in_a_block_of_one_thread():
    wl = WORKLOADS["elementwise_chain"](M=4, N=4)

    def schedule(s):
        s["O"].bind(s["O"].axis[0], "threadIdx.x")
        s["O"].reverse_compute_at(s["S"], s["S"].axis[0])

    s = tc.create_schedule(wl.out)
    schedule(s)
    assert tc.lower(s).kernels[-1].block == (1, 1, 1)
    assert str(_outcome(wl, schedule)) == "legal"


@pytest.mark.xfail(strict=True, raises=FuzzFailure,
                   reason="checker (tcomp/poly) false positive: reports a data race between blocks in a "
                          "kernel of one block (a reduction loop of extent 1 bound to blockIdx.x)")
def test_no_block_race_in_a_grid_of_one_block():
    wl = WORKLOADS["matmul"](M=4, N=4, K=4)

    def schedule(s):
        ko, ki = s["C"].split(s["C"].reduce_axis[0], 4)
        s["C"].bind(ko, "blockIdx.x")

    s = tc.create_schedule(wl.out)
    schedule(s)
    assert tc.lower(s).kernels[0].grid == (1, 1, 1)
    assert str(_outcome(wl, schedule)) == "legal"


@pytest.mark.xfail(strict=True, raises=FuzzFailure,
                   reason="checker (tcomp/poly) reports a race on S although every thread writes the same "
                          "S values itself (redundant identical writes, each read by the thread that wrote "
                          "it, after its own write); lowering generates exactly this on purpose "
                          "(guard_bound_loops); the result is right on every run")
def test_no_race_on_identical_redundant_writes():
    wl = WORKLOADS["elementwise_chain"](M=4, N=4)

    def schedule(s):
        s["O"].bind(s["O"].axis[1], "threadIdx.x")
        s["O"].reverse_compute_at(s["S"], s["S"].axis[0])

    assert str(_outcome(wl, schedule)) == "legal"


@pytest.mark.xfail(strict=True, raises=FuzzFailure,
                   reason="checker (tcomp/poly) reports a race between blocks on S although every block "
                          "computes the same S rows (a global S computed at O's serial loop i_o, outside "
                          "the loop bound to blockIdx.x) before reading them; the result is right on "
                          "every run, with the blocks isolated too")
def test_no_block_race_on_identical_redundant_writes():
    wl = WORKLOADS["elementwise_chain"](M=4, N=4)

    def schedule(s):
        s["S"].set_scope("global")
        io, ii = s["O"].split(s["O"].axis[0], 2)
        s["O"].bind(ii, "blockIdx.x")
        s["S"].compute_at(s["O"], io)

    assert str(_outcome(wl, schedule)) == "legal"


@pytest.mark.xfail(strict=True, raises=FuzzFailure,
                   reason="checker (tcomp/poly) false positive: C's reduction over k=0..3 split by 3 "
                          "(a guarded tail) and reordered (k_i outside k_o) runs its updates in the order "
                          "k=0, 3, 1, 2; the checker then says Y reads C before its last update (k=3), "
                          "though every update is done before Y reads; only a reassociation, which it "
                          "should report instead (it does when nothing reads C, or when the split divides K)")
@pytest.mark.parametrize("placement", ["root", "compute_at"])
def test_a_reassociated_reduction_may_be_read(placement):
    wl = WORKLOADS["matmul_silu_quant"](M=4, N=4, K=4)

    def schedule(s):
        if placement == "compute_at":
            s["C"].compute_at(s["Y"], s["Y"].axis[0])
        ko, ki = s["C"].split(s["C"].reduce_axis[0], 3)
        s["C"].reorder(ki, ko)

    assert str(_outcome(wl, schedule)) == "legal: reassociates"


def test_a_reassociated_reduction_with_a_dividing_split_may_be_read():
    """The same reorder with a split that divides K: the last update executed is k=3."""
    wl = WORKLOADS["matmul_silu_quant"](M=4, N=4, K=4)

    def schedule(s):
        ko, ki = s["C"].split(s["C"].reduce_axis[0], 2)
        s["C"].reorder(ki, ko)

    assert str(_outcome(wl, schedule)) == "legal: reassociates"


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
    with pytest.raises(tc.IllegalScheduleError, match="race"):
        tc.check(s)
    mod = tc.build(s, check=False)
    arrays = wl.make_inputs(np.random.default_rng(0))
    want = tc.evaluate(wl.out, wl.feeds(arrays))
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
    with pytest.raises(tc.IllegalScheduleError, match="race"):
        tc.check(s)
    mod = tc.build(s, check=False)
    arrays = wl.make_inputs(np.random.default_rng(0))
    want = tc.evaluate(wl.out, wl.feeds(arrays))
    for seed in range(3):
        with simulator_chaos(seed=seed, isolate_threads=True):
            assert not np.allclose(run_module(mod, wl, arrays, want), want, rtol=1e-3, atol=1e-3)
    assert evaluate_schedule(wl, s, known=False).category == "illegal"


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"),
                    reason="instruments Numba's CUDA simulator")
@pytest.mark.parametrize("isolate", [False, True])
def test_instrumented_simulator_keeps_shared_allocations_apart(isolate):
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
    with simulator_chaos(seed=1, isolate_blocks=isolate, isolate_threads=isolate):
        got = run_module(mod, wl, arrays, want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
