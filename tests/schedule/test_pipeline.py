"""pipeline(stages): a shared tile's fills become cp.async copies into a ring of
``stages`` tiles, issued ``stages - 1`` k steps ahead (tcomp/lower/pipeline.py). The loop
nest changes (a prologue of ``stages - 1`` commit groups; in the loop a wait, the
double buffer's two barriers, the guarded copy of a later tile, a commit; reads from
slot ``ko % stages``); what is computed does not. In the simulator the copies land only
at their wait (tcomp/codegen/warp_mma.py's models), so a missing wait shows as wrong
results."""

import re
import shutil

import numpy as np
import pytest

import tcomp as tc
from test_double_buffer import _refused_by_check_and_build
from workloads import json_from_a_process_without_the_simulator, matmul, matmul_tol, run, run_and_compare, tiled_matmul


def _pipelined(M, N, K, bk=4, threads=(4, 4), stages=3, piped=("A", "W"), vector=1, dtype="float32"):
    w, s, caches = tiled_matmul(M, N, K, bk, threads, vector, dtype)
    for name in piped:
        s[caches[name]].pipeline(stages)
    return w, s, caches


def test_loop_nest_has_a_prologue_a_wait_and_copies_ahead_into_a_ring():
    w, s, caches = _pipelined(8, 8, 16, stages=3)
    text = str(tc.lower(s))
    prologue = text[:text.index("for k_o in range(4):")]
    body = text[text.index("for k_o in range(4):"):]
    assert "A_shared = alloc shared float32[48]" in prologue  # 3 tiles of 4 x 4
    # the two tiles issued ahead: an unrolled loop, one commit group a tile
    assert "for k_o_ahead in range(2):  # unroll" in prologue
    assert prologue.count("cp.async.commit_group()") == 1 and prologue.count("cp.async A_shared[k_o_ahead * 16 + ") == 1
    lines = [line.strip() for line in body.splitlines()]
    assert lines[1:4] == ["syncthreads()", "cp.async.wait_group(1)", "syncthreads()"]
    assert "if k_o + 2 < 4" in body and "cp.async A_shared[(k_o + 2) % 3 * 16 + " in body
    assert body.count("cp.async.commit_group()") == 1 and body.count("syncthreads()") == 2
    assert re.search(r"\+ A_shared\[k_o % 3 \* 16 \+ ", body) and "W_shared[k_o % 3 * 16 + " in body
    assert tc.check(s).legal


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_pipelined_matmul_matches(rng, stages):
    w, s, _ = _pipelined(8, 8, 24, stages=stages)
    run_and_compare(s, w, rng, **matmul_tol(24))


def test_pipelined_with_tails_everywhere(rng):
    """M, N, K that no tile divides; fewer k steps (3) than the ring holds tiles (4)."""
    w, s, _ = _pipelined(7, 9, 11, stages=4)
    run_and_compare(s, w, rng, **matmul_tol(11))


def test_only_one_tile_pipelined(rng):
    w, s, _ = _pipelined(8, 8, 12, piped=("W",))
    text = str(tc.lower(s))
    assert "cp.async W_shared[" in text and "cp.async A_shared[" not in text
    run_and_compare(s, w, rng, **matmul_tol(12))


@pytest.mark.parametrize("M, vector, copy", [(8, 2, "_cp_async8(A_shared, "), (16, 4, "_cp_async16(A_shared, ")])
def test_vector_fills_copy_8_or_16_bytes_at_once(rng, M, vector, copy):
    """A's lanes are consecutive on both sides; W's are not (``lane_form`` does not see
    through the tile's ``% 4``), so its lanes are copied one by one."""
    w, s, _ = _pipelined(M, M, 32, bk=8, vector=vector)
    mod = tc.build(s)
    assert copy in mod.source and "_cp_async4(W_shared, " in mod.source
    run_and_compare(s, w, rng, **matmul_tol(32))


def test_a_boundary_tile_shifted_inwards_still_copies_16_bytes_at_once(rng):
    """At a shape no tile divides, the last block's tile starts at ``min(i_o * 4, 18 - 4)``
    (shifted inwards): every lane of a row shares that start, so the fill stays a 16-byte
    cp.async (it was one 4-byte copy per element, and twice the registers, at 1000^3)."""
    w, s, _ = _pipelined(18, 16, 32, bk=8, vector=4)
    mod = tc.build(s)
    assert "min(" in mod.source and "_cp_async16(A_shared, " in mod.source
    assert "_cp_async4(A_shared, " not in mod.source
    run_and_compare(s, w, rng, **matmul_tol(32))


def test_one_tile_double_buffered_and_the_other_pipelined(rng):
    """The search's mixed overlap: A through registers (where a fill may transpose), W by
    cp.async; they share the loop's two barriers."""
    w, s, caches = _pipelined(7, 9, 21, piped=("W",), stages=3)
    s[caches["A"]].double_buffer()
    text = str(tc.lower(s))
    start = text.index("for k_o in range(")
    body = text[start:text.index("for k_o in range(", start + 1)]  # the loop's first part (the K tail is peeled)
    assert "A_shared_next" in text and "cp.async W_shared[" in body and body.count("syncthreads()") == 2
    assert tc.check(s).legal
    run_and_compare(s, w, rng, **matmul_tol(21))


def test_the_trace_replays_pipeline():
    w, s, _ = _pipelined(8, 8, 12, stages=4)
    assert "s['A_shared'].pipeline(4)" in s.trace_source()


def test_stages_must_be_a_small_integer():
    w, s, caches = _pipelined(8, 8, 12, piped=())
    for bad in (1, 9, 2.5, True):
        with pytest.raises(tc.ScheduleError, match=r"stages must be an integer from 2 to 8"):
            s[caches["A"]].pipeline(bad)


def test_pipeline_and_double_buffer_exclude_each_other():
    w, s, caches = _pipelined(8, 8, 12, piped=("A",))
    with pytest.raises(tc.ScheduleError, match="A_shared is pipelined already; double_buffer and pipeline"):
        s[caches["A"]].double_buffer()
    s[caches["W"]].double_buffer()
    with pytest.raises(tc.ScheduleError, match="W_shared is double buffered already"):
        s[caches["W"]].pipeline(3)


def test_a_two_byte_fill_must_be_vectorized():
    """bfloat16 tiles hold their bits, so a fill copies them; but cp.async moves at least 4 bytes."""
    w, s, _ = _pipelined(8, 8, 12, dtype="bfloat16")
    _refused_by_check_and_build(s, r"pipeline of A_shared: cp.async copies 4, 8 or 16 bytes; its fill copies 2 "
                                   r"bytes at once \(1 bfloat16 lane\): vectorize the fill's innermost split")


def test_two_byte_lanes_that_cannot_move_together_are_refused_by_the_code_generator():
    """W's tile rows are 4 wide and its lanes 2: each pair stays in a row of the tile, but
    lane_form cannot see that through the tile's % 4 (see above), so W's 2-byte lanes would
    go one by one, which cp.async cannot copy."""
    w, s, _ = _pipelined(16, 16, 32, bk=8, vector=2, dtype="bfloat16")
    with pytest.raises(tc.CodegenError, match=r"cp.async into W_shared would copy 2 bytes; it copies 4, 8 or 16"):
        tc.build(s)


@pytest.mark.parametrize("vector, copy", [(2, "_cp_async4(A_shared, "), (8, "_cp_async16(A_shared, ")])
def test_a_vectorized_bfloat16_fill_is_copied_as_bits(rng, vector, copy):
    """A's tile (4 rows of 8 k) copied 2 or 8 bfloat16 (4 or 16 bytes) at a time. W's lanes
    cross its 4-wide rows at 8 lanes, so W is not pipelined here."""
    w, s, _ = _pipelined(16, 16, 32, bk=8, vector=vector, dtype="bfloat16", piped=("A",))
    mod = tc.build(s)
    assert copy in mod.source and "cuda.shared.array(96, uint16" in mod.source  # 3 tiles of 4 x 8, as bits
    _, plain, _ = _pipelined(16, 16, 32, bk=8, vector=vector, dtype="bfloat16", piped=())
    xs = w.make_inputs(rng)
    # the same sums in the same order (a bfloat16 C rounds at every step): the same bits
    got, want = run(s, xs), run(plain, xs)
    assert np.isfinite(np.asarray(got, dtype=np.float64)).all()
    np.testing.assert_array_equal(got, want)


def test_a_fill_that_computes_cannot_be_copied():
    """A tile of Y = 2 A with Y inlined into the tile's fill: the fill multiplies."""
    A = tc.placeholder((8, 8), "float32", name="A")
    W = tc.placeholder((8, 8), "float32", name="W")
    Y = tc.compute((8, 8), lambda i, k: A[i, k] * 2.0, name="Y")
    k = tc.reduce_axis(8, name="k")
    C = tc.compute((8, 8), lambda i, j: tc.sum(Y[i, k] * W[k, j], axis=k), name="C")
    s = tc.create_schedule(C)
    CL = s.cache_write(C, "local")
    YS = s.cache_read(Y, "shared", [CL])
    s[Y].compute_inline()
    i, j = s[C].axis
    s[C].bind(i, "threadIdx.y")
    s[C].bind(j, "threadIdx.x")
    s[CL].compute_at(s[C], j)
    ko, ki = s[CL].split(s[CL].reduce_axis[0], 4)
    s[YS].compute_at(s[CL], ko)
    s[YS].pipeline(2)
    _refused_by_check_and_build(s, r"pipeline of Y_shared: its fill computes .* instead of copying an element of "
                                   r"a tensor in device memory; cp.async only copies")


def test_tiles_of_one_loop_keep_as_many_tiles_in_flight():
    w, s, caches = _pipelined(8, 8, 12, piped=("A",), stages=3)
    s[caches["W"]].pipeline(4)
    _refused_by_check_and_build(s, r"different stage counts \(A_shared: 3, W_shared: 4\)")


def test_only_shared_tiles_can_be_pipelined():
    w = matmul(4, 4, 8)
    C = w["C"]
    s = w.schedule()
    AL = s.cache_read("A", "local", [C])
    ko, ki = s[C].split(s[C].reduce_axis[0], 4)
    s[AL].compute_at(s[C], ko)
    s[AL].pipeline(2)
    _refused_by_check_and_build(s, "only a shared-memory tile can be pipelined, and A_local is local")


_ASSEMBLE = """
import json, sys
sys.path[:0] = ["tests", "tests/schedule"]
import tcomp as tc
from tcomp.codegen.ptx import ptx_report
from test_pipeline import _pipelined
w, s, _ = _pipelined(64, 64, 60, bk=8, threads=(8, 8), vector=4)
(r,) = ptx_report(tc.lower(s))
print(json.dumps(dict(spills=r.spills, registers=r.registers, cg="cp.async.cg.shared.global" in r.ptx,
                      wait="cp.async.wait_group 1;" in r.ptx)))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_pipelined_kernels_assemble_for_sm90a():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    assert report == dict(spills=False, registers=report["registers"], cg=True, wait=True)


@pytest.mark.gpu
def test_pipelined_matmul_on_the_gpu(rng):
    w, s, _ = _pipelined(100, 100, 100, bk=8, threads=(8, 8), vector=4, stages=4)
    run_and_compare(s, w, rng, **matmul_tol(100))
