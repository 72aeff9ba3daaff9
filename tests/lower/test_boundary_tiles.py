"""Boundary tiles: splits whose factor does not divide the extent.

Block-bound tiles of a kernel's root stage are shifted inwards (``lower/bounds.py``): the
last block starts at ``extent - factor`` and no load or store needs a guard. Serial loops
are partitioned where their guards stop holding (``lower/partition.py``): the first
iterations run without them. Both must compute exactly what the algorithm says; the
simulator runs every primitive that splits at shapes no factor divides.
"""

import numpy as np
import pytest

import tcomp as tc
from tcomp.ir.stmt import Store
from tcomp.ir.visitor import walk
from workloads import elementwise_chain, matmul, matmul_silu_quant, matmul_tol, rowmax_quant, run_and_compare


def _guarded_stores(s) -> int:
    return sum(isinstance(n, Store) and n.predicate is not None for k in tc.lower(s).kernels for n in walk(k.body))


def _blocktiled(w, out, BM=8, BN=8, BK=4, TM=2, TN=2, **kwargs):
    """The ladder's 2D blocktiling at small tiles (examples/sgemm_ladder.py)."""
    import sgemm_ladder as ladder

    s = w.schedule()
    CL = s.cache_write(out, "local")
    ladder.blocktile_2d(s, out, CL, "A", "W", BM, BN, BK, TM, TN, **kwargs)
    return s


@pytest.fixture(autouse=True)
def _examples_on_path():
    import os
    import sys

    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
    sys.path.insert(0, path)
    yield
    sys.path.remove(path)


def test_block_tiles_are_shifted_inwards_and_need_no_guard(rng):
    """19 x 13 outputs in 8 x 8 block tiles, k 10 in steps of 4: the last block row and
    column start at 11 and 5 (min(i_o * 8, 11)), so the block loops need no guard at all;
    only the k tail (10 = 2 * 4 + 2) is guarded, in the last k step alone."""
    w = matmul(19, 13, 10)
    s = _blocktiled(w, w.out)
    text = str(tc.lower(s))
    assert "min(i_o * 8, 11)" in text and "min(j_o * 8, 5)" in text
    assert "< 19" not in text and "< 13" not in text
    run_and_compare(s, w, rng, **matmul_tol(10))


def test_a_block_tile_over_a_reduction_into_global_memory_keeps_its_guards(rng):
    """The root stage accumulates into C in global memory: two blocks computing the same
    element would add twice, so the tile is not shifted and the tail stays guarded."""
    w = matmul(10, 6, 5)
    s = w.schedule()
    C = w.out
    i, j = s[C].axis
    io, ii = s[C].split(i, 4)
    s[C].bind(io, "blockIdx.x")
    s[C].bind(ii, "threadIdx.x")
    text = str(tc.lower(s))
    assert "min(" not in text and "< 10" in text
    run_and_compare(s, w, rng, **matmul_tol(5))


def test_a_global_intermediate_in_the_kernel_keeps_the_guards(rng):
    """An intermediate stored in global memory inside the kernel (set_scope("global")) is
    written and read by the blocks: shifting is not applied."""
    w = elementwise_chain(10, 3)
    s = w.schedule()
    O, B = w.out, w["B"]
    i, j = s[O].axis
    io, ii = s[O].split(i, 4)
    s[O].bind(io, "blockIdx.x")
    s[w["S"]].compute_inline()
    s[B].compute_at(s[O], io)
    s[B].set_scope("global")
    assert "min(" not in str(tc.lower(s))
    run_and_compare(s, w, rng)


def test_a_serial_tail_runs_guard_free_except_in_its_last_iteration(rng):
    """k = 10 in steps of 4: the first two steps carry no guard, the last is guarded."""
    w = matmul(3, 2, 10)
    s = w.schedule()
    C = w.out
    ko, ki = s[C].split(s[C].reduce_axis[0], 4)
    text = str(tc.lower(s))
    assert "for k_o in range(2):" in text
    assert text.count("< 10") == 1  # one guarded store, in the last step
    run_and_compare(s, w, rng, **matmul_tol(10))


SCHEDULES = {
    "split": lambda w, s: s[w.out].split(s[w.out].axis[1], 4),
    "tile": lambda w, s: s[w.out].tile(*s[w.out].axis, 4, 4),
    "split_then_fuse": lambda w, s: s[w.out].fuse(*s[w.out].split(s[w.out].axis[0], 3)),
    "bound_tile": lambda w, s: _bind_tile(s[w.out], 4, 4),
}


def _bind_tile(stage, fx, fy):
    io, jo, ii, ji = stage.tile(*stage.axis, fx, fy)
    stage.bind(io, "blockIdx.y")
    stage.bind(jo, "blockIdx.x")
    stage.bind(ii, "threadIdx.y")
    stage.bind(ji, "threadIdx.x")
    return io, jo, ii, ji


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_primitives_that_split_at_shapes_no_factor_divides(rng, name):
    w = elementwise_chain(7, 9)
    s = w.schedule()
    SCHEDULES[name](w, s)
    run_and_compare(s, w, rng)


@pytest.mark.parametrize("variant", ["plain", "vector", "double_buffer"])
def test_the_ladder_blocktiling_at_a_shape_no_tile_divides(rng, variant):
    """Shared tiles filled cooperatively (vectorized, double buffered), register tiles,
    unrolled loops, shifted block tiles and a partitioned k loop, all at once."""
    w = matmul(21, 19, 10)
    kwargs = {"plain": {}, "vector": {"transpose_a": True, "vector": 2},
              "double_buffer": {"transpose_a": True, "vector": 2, "double_buffer": True}}[variant]
    s = _blocktiled(w, w.out, BM=8, BN=8, BK=4, TM=2, TN=2, **kwargs)
    run_and_compare(s, w, rng, **matmul_tol(10))


def test_a_fused_epilogue_at_a_shape_no_tile_divides(rng):
    """matmul + SiLU + int8: the root stage Q is shifted, the matmul computed inside it."""
    w = matmul_silu_quant(11, 13, 6)
    s = w.schedule()
    Q, C = w.out, w["C"]
    s[w["Y"]].compute_inline()
    io, jo, ii, ji = _bind_tile(s[Q], 4, 4)
    s[C].compute_at(s[Q], ji)
    assert "min(" in str(tc.lower(s))
    run_and_compare(s, w, rng)


def test_reverse_compute_at_at_a_shape_no_tile_divides(rng):
    w = elementwise_chain(7, 9)
    s = w.schedule()
    B, O = w["B"], w.out
    s[w["S"]].compute_inline()
    io, jo, ii, ji = s[B].tile(*s[B].axis, 4, 4)
    s[B].bind(io, "blockIdx.y")
    s[B].bind(jo, "blockIdx.x")
    s[O].reverse_compute_at(s[B], jo)
    assert "min(i_o * 4, 3)" in str(tc.lower(s))  # O stores plainly: B's tiles shift
    run_and_compare(s, w, rng)


def test_a_row_reduction_with_a_tail_is_not_shifted_into_a_double_count(rng):
    """Row max then quantization, rows split by a factor that does not divide them: the
    row max is a reduction, so every element is still computed once."""
    w = rowmax_quant(7, 10)
    s = w.schedule()
    out = w.out
    io, ii = s[out].split(s[out].axis[0], 3)
    s[out].bind(io, "blockIdx.x")
    run_and_compare(s, w, rng)


def test_a_double_buffers_prefetch_keeps_its_guard_and_the_k_loop_its_body_once(rng):
    """K = 10 in steps of 4 with double buffering: the prefetch of the next tile from
    device memory into registers stays guarded inside the k loop instead of peeling the
    iteration where it stops holding, which would repeat the whole unrolled body (the
    warptiled rung at 1000^3 spilled from that); the multiply-adds stay guard-free."""
    w = matmul(21, 19, 10)
    s = _blocktiled(w, w.out, BM=8, BN=8, BK=4, TM=2, TN=2, transpose_a=True, vector=2, double_buffer=True)
    text = str(tc.lower(s))
    assert "for k_o in range(2):" in text  # both full steps in the loop: no peeled copy of the second
    k_loop = text[text.index("for k_o in range("):]
    assert "_next" in k_loop and "k_o * 4" in k_loop  # a guarded prefetch inside the loop
    run_and_compare(s, w, rng, **matmul_tol(10))
