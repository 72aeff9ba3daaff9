"""``s[S].pipeline(stages, copy="tma")``: rings whose slots the block's first thread fills
with TMA boxes that land in the 128-byte swizzle and complete on one mbarrier a slot;
lowered, run in the simulator through the instructions' Python models at shapes no tile
divides (the boxes' zero fill past the edges), refused with the reason where a tile is not
a box, and assembled for sm_90a offline."""

import shutil
import sys
from itertools import product
from pathlib import Path

import pytest

import tcomp as tc
from tcomp.ir.expr import Var
from tcomp.ir.stmt import AsyncCommit, AsyncWait, BarrierInit, BarrierWait, Buffer, BoxCopy, Store, TileCopy
from tcomp.ir.visitor import walk
from tcomp.lower.matrix_operands import index_function
from tcomp.lower.nest import blocked_index
from tcomp.lower.warpgroup import _operand_layout
from tcomp.search.tiling import wgmma_tiles
from tcomp.target.wgmma_layout import b_address
from workloads import check_16_bit_product, json_from_a_process_without_the_simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import gemm_bf16  # noqa: E402


def _gemm(M, N, K, **tiles):
    out = gemm_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "C", "A", "W", **{"copy": "tma", **tiles})
    return out, s


def test_the_rings_are_filled_by_boxes_that_complete_on_one_barrier_a_slot():
    """128 x 128 blocks in k steps of 64: A's tile is one 128 x 64 box, W's two 64 x 64
    boxes (one per 128-byte column); each ring's copy of a slot is one arrival that
    announces its tile's bytes, every thread waits on the slot's barrier, no cp.async."""
    _, s = _gemm(256, 256, 320, BM=128, BN=128, BK=64, stages=4)
    kernel = tc.lower(s).kernels[0]
    nodes = list(walk(kernel.body))
    (init,) = [n for n in nodes if isinstance(n, BarrierInit)]
    assert init.barriers.dtype == "uint64" and init.barriers.shape == (4,) and init.count == 2
    copies = [n for n in nodes if isinstance(n, TileCopy)]
    assert sorted(c.nbytes for c in copies) == [16384] * 4  # the prologue's and the loop's, A's and W's
    boxes = {(b.tensor_map.tensor.name, b.tensor_map.box_rows, b.tensor_map.box_cols)
             for c in copies for b in c.boxes}
    assert boxes == {("A", 128, 64), ("W", 64, 64)}
    assert {m.name for m in kernel.tensor_maps} == {"A_map", "W_map"}
    assert sum(isinstance(n, BarrierWait) for n in nodes) == 1
    assert not any(isinstance(n, (AsyncCommit, AsyncWait)) or (isinstance(n, Store) and n.asynchronous)
                   for n in nodes)
    text = str(kernel)
    assert "tma W_shared" in text and "in 64x64 blocks" in text and "mbarrier.wait" in text
    assert tc.check(s).legal


@pytest.mark.parametrize("shape", [(64, 128), (64, 256), (128, 64)])
def test_a_tile_of_whole_panels_is_where_the_b_descriptor_reads(shape):
    """A swizzled tile stored 128-byte column after column (``storage_swizzle(panels=True)``,
    how TMA boxes land) is where the descriptor lowering gives B (k rows, n contiguous)
    finds each element of every k step of 16."""
    rows, cols = shape
    blocks = (rows, 64)
    layout = _operand_layout(Buffer("T", "bfloat16", shape, "shared", blocks, True), "b", True)
    r, c = Var("r"), Var("c")
    stored = index_function(blocked_index((r, c), shape, blocks, True, 8), [r, c])
    assert sorted(stored(i, j) for i in range(rows) for j in range(cols)) == list(range(rows * cols))
    for k0 in range(0, rows, 16):
        start = 2 * stored(k0, 0)
        for k, n in product(range(16), range(cols)):
            assert stored(k0 + k, n) == b_address(start, k, n, layout[0], layout[1], True, layout[2]) // 2


@pytest.mark.parametrize("M, N, K, tiles", [
    (70, 128, 136, dict(BM=64, BN=128, BK=64, stages=3)),  # M and K tails, two W boxes a slot
    (64, 64, 200, dict(BM=64, BN=64, BK=64, stages=2, in_flight=0)),  # 4 k steps, 2 slots: both phases twice
])
def test_a_tma_ring_matches_float64_in_the_simulator_where_no_tile_divides(M, N, K, tiles, rng):
    """The boxes past K and past M land as zeros; a NaN-poisoned C is checked against
    float64 within a float32 sum's bound."""
    _, s = _gemm(M, N, K, **tiles)
    assert any(isinstance(n, TileCopy) for n in walk(tc.lower(s).kernels[0].body))
    check_16_bit_product(s, M, N, K, "bfloat16", rng)


def test_tiles_that_are_not_boxes_are_refused_with_the_reason():
    # K = 1001: rows of 2002 bytes, no TMA pitch; wgmma_tiles falls back to cp.async by itself
    _, s = _gemm(128, 128, 1001, BM=128, BN=128, BK=64, stages=3)
    assert not any(isinstance(n, TileCopy) for n in walk(tc.lower(s).kernels[0].body))
    out, s = _gemm(128, 128, 1001, BM=128, BN=128, BK=64, stages=3, copy="cp.async")
    for cache in ("A_shared", "W_shared"):
        stage = next(st for st in s.stages if st.name == cache)
        stage.storage_swizzle(panels=True)
        stage.pipeline(3, reader_lag=1, copy="tma")
    with pytest.raises(tc.LoweringError, match="16 bytes apart"):
        tc.lower(s)
    # W's 64 x 128 tile in blocks of 8 rows: its two 128-byte columns are not contiguous
    out, s = _gemm(128, 128, 256, BM=128, BN=128, BK=64, stages=3, copy="cp.async")
    for cache in ("A_shared", "W_shared"):
        next(st for st in s.stages if st.name == cache).pipeline(3, reader_lag=1, copy="tma")
    with pytest.raises(tc.LoweringError, match=r"storage_swizzle\(panels=True\)"):
        tc.lower(s)
    # one ring by TMA, the other by cp.async: they share the loop's waits
    out, s = _gemm(128, 128, 256, BM=128, BN=128, BK=64, stages=3, copy="cp.async")
    a = next(st for st in s.stages if st.name == "A_shared")
    a.storage_swizzle(panels=True)
    a.pipeline(3, reader_lag=1, copy="tma")
    with pytest.raises(tc.LoweringError, match="different copies"):
        tc.lower(s)


def test_bad_copy_requests_are_refused_where_they_are_made():
    out, s = _gemm(128, 128, 128, BM=128, BN=128, BK=64, stages=3, copy="cp.async")
    stage = next(st for st in s.stages if st.name == "A_shared")
    with pytest.raises(tc.ScheduleError, match="copy must be one of 'cp.async', 'tma'"):
        stage.pipeline(3, copy="bulk")
    with pytest.raises(tc.ScheduleError, match="panels must be True or False"):
        stage.storage_swizzle(panels=64)


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "examples")
import gemm_bf16, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
out = gemm_bf16.algorithm(4096, 4096, 4096)
s = tc.create_schedule(out)
gemm_bf16.wgmma_tiles(s, out, "C", "A", "W", BM=128, BN=256, BK=64, stages=4, copy="tma")
(r,) = ptx_report(lower(s))
print(json.dumps(dict(spills=r.spill_stores + r.spill_loads, registers=r.registers,
                      tma=r.ptx.count("cp.async.bulk.tensor.2d"), waits=r.ptx.count("mbarrier.try_wait.parity"),
                      cp_async=r.ptx.count("cp.async.cg"))))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_tma_kernel_assembles_for_sm90a_without_spills():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    assert report["spills"] == 0 and report["registers"] <= 168
    assert report["tma"] >= 5 and report["waits"] >= 1 and report["cp_async"] == 0  # one A box and four W boxes


@pytest.mark.gpu
def test_tma_rings_match_float64_on_the_gpu(rng):
    """The simulator's shapes and the example's wide blocks on the GPU: the maps made from
    the arguments' pointers, the boxes' zero fill, the barriers' phases."""
    for M, N, K, tiles in ((70, 128, 136, dict(BM=64, BN=128, BK=64, stages=3)),
                           (333, 512, 1000, dict(BM=128, BN=256, BK=64, stages=4)),
                           (256, 512, 384, dict(BM=128, BN=128, BK=64, stages=4))):
        _, s = _gemm(M, N, K, **tiles)
        check_16_bit_product(s, M, N, K, "bfloat16", rng)
