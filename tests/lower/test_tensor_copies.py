"""``s[S].pipeline(stages, copy="tma")``: rings whose slots the block's first thread fills
with TMA boxes that land in the 128-byte swizzle and complete on one mbarrier a slot, and
(``specialized=True``) rings that a producer warpgroup of its own fills while the consumer
warpgroups release the slots on mbarriers; lowered, run in the simulator through the
instructions' Python models at shapes no tile divides (the boxes' zero fill past the
edges), refused with the reason where a tile is not a box, and assembled for sm_90a
offline."""

import re
import shutil
import sys
from itertools import product
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.ir.expr import Var
from tcomp.ir.stmt import (AsyncCommit, AsyncWait, Barrier, BarrierArrive, BarrierInit, BarrierWait, Buffer, For,
                           Seq, Specialized, Store, TileCopy, WarpgroupMma)
from tcomp.ir.visitor import free_vars, walk
from tcomp.lower.matrix_operands import index_function
from tcomp.lower.nest import blocked_index
from tcomp.lower.warpgroup import _operand_layout
from tcomp.search.tiling import wgmma_tiles
from tcomp.target.wgmma_layout import b_address
from workloads import check_16_bit_product, fp8_steps, int_sentinel, json_from_a_process_without_the_simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import ffn_bf16  # noqa: E402
import gemm_bf16  # noqa: E402
import swiglu_fp8  # noqa: E402


BF16 = ml_dtypes.bfloat16


def _gemm(M, N, K, **tiles):
    out = gemm_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "C", "A", "W", **{"copy": "tma", **tiles})
    return out, s


def test_the_rings_are_filled_by_boxes_that_complete_on_one_barrier_a_slot():
    """128 x 128 blocks in k steps of 64: A's tile is one 128 x 64 box, W's two 64 x 64
    boxes (one per 128-byte column); both rings' tiles of a slot are one copy, one arrival
    that announces all their bytes, every thread waits on the slot's barrier, no cp.async."""
    _, s = _gemm(256, 256, 320, BM=128, BN=128, BK=64, stages=4)
    kernel = tc.lower(s).kernels[0]
    nodes = list(walk(kernel.body))
    (init,) = [n for n in nodes if isinstance(n, BarrierInit)]
    assert init.barriers.dtype == "uint64" and init.barriers.shape == (4,) and init.count == 1
    copies = [n for n in nodes if isinstance(n, TileCopy)]
    assert [c.nbytes for c in copies] == [32768] * 2  # the prologue's and the loop's, A's and W's tiles each
    assert [len(c.boxes) for c in copies] == [3, 3]
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


def test_a_specialized_ring_has_a_producer_warpgroup_and_no_block_barrier_in_its_loop():
    """The block gets a third warpgroup; the barriers are readied before the roles part;
    the producer's first thread runs the blocks' loops and its own loop over the tiles,
    which waits for each slot's release; the consumers' loop releases a slot a warp at a
    time and waits for its tile, with no block barrier."""
    _, s = _gemm(256, 256, 640, BM=128, BN=128, BK=64, stages=4, specialized=True)
    kernel = tc.lower(s).kernels[0]
    assert kernel.block == (128, 3, 1)
    inits = [n for n in walk(kernel.body) if isinstance(n, BarrierInit)]
    assert [(i.barriers.name, i.count) for i in inits] == [("k_o_landed", 1), ("k_o_released", 8)]
    (roles,) = [n for n in walk(kernel.body) if isinstance(n, Specialized)]
    assert roles.consumer_warpgroups == 2
    producer = list(walk(roles.producer))
    assert sum(isinstance(n, TileCopy) for n in producer) == 1
    assert [n.barriers.name for n in producer if isinstance(n, BarrierWait)] == ["k_o_released"]
    consumers = list(walk(roles.consumers))
    assert not any(isinstance(n, (TileCopy, BarrierInit)) for n in consumers)
    assert sum(isinstance(n, BarrierArrive) for n in consumers) == 1
    assert not any(isinstance(n, Barrier) for n in consumers)  # the C tile is stored from registers
    assert "the producer warpgroup" in str(kernel)
    assert tc.check(s).legal


@pytest.mark.parametrize("M, N, K, tiles", [
    (70, 64, 328, dict(BM=64, BN=64, BK=64, stages=3)),  # 6 k steps through 3 slots, one chain left running
    (64, 64, 264, dict(BM=64, BN=64, BK=64, stages=2)),  # 5 k steps through 2 slots, every release waited for
])
def test_a_specialized_ring_matches_float64_in_the_simulator(M, N, K, tiles, rng):
    _, s = _gemm(M, N, K, specialized=True, **tiles)
    assert any(isinstance(n, Specialized) for n in walk(tc.lower(s).kernels[0].body))
    check_16_bit_product(s, M, N, K, "bfloat16", rng)


def test_a_persistent_blocks_specialized_ring_goes_on_from_one_tile_to_the_next(rng, monkeypatch):
    """Six 64 x 64 tiles on four persistent blocks (two rounds, the second with two tiles
    past the output), two k steps each through two slots: the ring's barriers count the
    tiles of every round (the waits' parities and the slots follow the rounds' loop as
    well as the k loop), the rounds' loop is not peeled (one copy of the ring), the product
    matches float64 in the simulator, and a ring that counts one round's tiles only is
    found broken. Without a producer warpgroup a TMA ring there is refused."""
    from tcomp.lower import nest
    from tcomp.lower.ring_protocol import ring_protocol_problems

    M, N, K = 192, 128, 128
    _, s = _gemm(M, N, K, BM=64, BN=64, BK=64, stages=2, specialized=True, persistent=4)
    kernel = tc.lower(s).kernels[0]
    assert kernel.grid == (4, 1, 1)
    assert sum(isinstance(n, TileCopy) for n in walk(kernel.body)) == 1
    assert sum(isinstance(n, BarrierInit) for n in walk(kernel.body)) == 2
    rounds = next(n.var for n in walk(kernel.body) if isinstance(n, For) and n.kind == "serial" and n.extent == 2
                  and any(isinstance(m, TileCopy) for m in walk(n.body)))
    waits = [n for n in walk(kernel.body) if isinstance(n, BarrierWait)]
    assert waits and all(rounds in free_vars(n.parity) for n in waits)
    assert ring_protocol_problems(kernel) == [] and tc.check(s).legal
    check_16_bit_product(s, M, N, K, "bfloat16", rng)

    monkeypatch.setattr(nest, "ring_start", lambda *args: 0)
    problems = ring_protocol_problems(tc.lower(s).kernels[0])
    assert any("tile 2 of A_shared is copied into slot 0 (iteration 2) before any reader has read tile 0" in p
               for p in problems), problems
    monkeypatch.undo()

    _, s = _gemm(M, N, K, BM=64, BN=64, BK=64, stages=2, persistent=4)
    with pytest.raises(tc.LoweringError, match="a serial loop around runs again.*producer warpgroup"):
        tc.lower(s)
    with pytest.raises(tc.ScheduleError, match="persistent=7: a persistent launch takes from 1 block to one a tile"):
        _gemm(M, N, K, BM=64, BN=64, BK=64, stages=2, specialized=True, persistent=7)


@pytest.mark.parametrize("persistent", [0, 1])
def test_the_ffn_epilogue_of_a_specialized_ring_meets_at_the_consumers_barrier(persistent, rng):
    """The FFN projection's output tile, staged in the rings' bytes for 16-byte stores:
    the consumers' block barriers become named barriers of their 128 threads, which the
    producer warpgroup never joins; int8 within one step of tc.evaluate. On one persistent
    block (two tiles) the staged tile has bytes of its own: the producer fills the rings
    with the next tile's k steps while the consumers stage this one's outputs."""
    M, N, K = 70, 128, 200
    out = ffn_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    ffn_bf16.schedule(s, out, copy="tma", specialized=True, **({"persistent": 1} if persistent else {}))
    kernel = tc.lower(s).kernels[0]
    assert bool(kernel.shared_reuse) != bool(persistent)
    (roles,) = [n for n in walk(kernel.body) if isinstance(n, Specialized)]
    named = [n.threads for n in walk(roles.consumers) if isinstance(n, Barrier)]
    assert named and set(named) == {128 * roles.consumer_warpgroups}
    feeds = {p: (rng.standard_normal(p.shape) / (1.0 if p.name == "A" else np.sqrt(K))).astype(BF16)
             for p in _placeholders(out)}  # A and W, both bfloat16
    want = tc.evaluate(out, feeds)
    got = np.full((M, N), int_sentinel("int8", want), np.int8)
    tc.build(s)(*feeds.values(), got)
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() <= 0.01


def _placeholders(out):
    from tcomp.lang.evaluate import placeholders_of

    return placeholders_of(out)


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


@pytest.mark.parametrize("specialized", [False, True])
def test_a_batched_product_copies_boxes_of_3d_tensors(specialized, rng):
    """A product with a batch axis reads 3-D tensors: each box is a range of rows by a
    range of columns at the block's batch index (``tma_load_3d``); M and K tails land as
    zeros of that index, not as the next batch's rows. A NaN-poisoned C against float64."""
    from workloads import product_16_bit

    B, M, N, K = 2, 70, 64, 200
    A, W, C = product_16_bit(M, N, K, batch=B)
    s = tc.create_schedule(C)
    wgmma_tiles(s, C, "C", "A", "W", BM=64, BN=64, BK=64, stages=3, copy="tma", specialized=specialized)
    kernel = tc.lower(s).kernels[0]
    boxes = [b for n in walk(kernel.body) if isinstance(n, TileCopy) for b in n.boxes]
    assert boxes and all(len(b.coords) == 3 for b in boxes)
    a = rng.standard_normal(A.shape).astype(BF16)
    w = rng.standard_normal(W.shape).astype(BF16)
    got = np.full(C.shape, np.nan, np.float32)
    tc.build(s)(a, w, got)
    want = np.einsum("bik,bkj->bij", a.astype(np.float64), w.astype(np.float64))
    scale = np.einsum("bik,bkj->bij", np.abs(a).astype(np.float64), np.abs(w).astype(np.float64))
    assert not np.isnan(got).any()
    assert (np.abs(got - want) <= 2 * K * 2.0 ** -24 * scale + 1e-30).all()


def test_swiglus_stacked_weights_are_copied_one_box_per_projection(rng):
    """SwiGLU's W holds the gate and up weights as W[0] and W[1]: its tile is two boxes per
    128-byte column, one at each projection's index, and both projections are one wgmma
    of 2 x 64 columns; K = 200 leaves a last k step whose boxes end in zeros (not in the
    up weights' first rows). fp8 within one step of tc.evaluate."""
    M, N, K = 70, 64, 200
    out = swiglu_fp8.algorithm(M, N, K)
    s = tc.create_schedule(out)
    swiglu_fp8.schedule(s, out, BM=64, BN=64, stages=3, copy="tma", specialized=True)
    kernel = tc.lower(s).kernels[0]
    w_boxes = [b for n in walk(kernel.body) if isinstance(n, TileCopy) for b in n.boxes
               if b.tensor_map.tensor.name == "W"]
    assert len(w_boxes) == 2 and {str(b.coords[2]) for b in w_boxes} == {"0", "1"}
    # the two projections' columns follow each other in W's tile: one instruction as wide
    # as both (tcomp.lower.warpgroup.widen_stacked_mma), reading A once
    assert {n.width for n in walk(kernel.body) if isinstance(n, WarpgroupMma)} == {128}
    feeds = {p: (rng.standard_normal(p.shape) / (1.0 if p.name == "A" else np.sqrt(K))).astype(BF16)
             for p in _placeholders(out)}
    want = tc.evaluate(out, feeds)
    got = np.full((M, N), np.nan, ml_dtypes.float8_e4m3fn)
    tc.build(s)(*feeds.values(), got)
    assert not np.isnan(got.astype(np.float32)).any()
    steps = fp8_steps(got, want)
    assert steps.max() <= 1 and (steps > 0).mean() <= 0.01


def test_stacked_instructions_widen_only_where_the_columns_follow_each_other():
    """At the example's shape both projections are one m64n256k16 per k step of 16 where
    W's tile is stored panel after panel (TMA); in blocks of 8 rows (the cp.async ring's
    default), one projection's panels are 1 KB apart and the next projection's 16 KB
    away, so each stays an instruction of its own."""
    def widths(**tiles):
        out = swiglu_fp8.algorithm(1024, 12288, 4096)
        s = tc.create_schedule(out)
        swiglu_fp8.schedule(s, out, **tiles)
        return sorted(n.width for n in walk(tc.lower(s).kernels[0].body) if isinstance(n, WarpgroupMma))

    assert widths() == [256]  # in the unrolled loop over the k steps of 16
    assert widths(copy="cp.async", specialized=False) == [128]  # in a loop over the two projections


def test_a_transposed_tile_is_refused_for_tma():
    """A tile stored in another order than its tensor's (``storage_order``) is no box."""
    _, s = _gemm(128, 128, 256, BM=128, BN=128, BK=64, stages=3)
    w = next(st for st in s.stages if st.name == "W_shared")
    w.storage_order(*reversed(w.root_axes))
    with pytest.raises(tc.LoweringError, match="the tile stores its axes in another .storage_order."):
        tc.lower(s)


def test_a_specialized_ring_needs_blocks_of_warpgroups():
    """The producer is one more warpgroup on threadIdx.y: a kernel whose blocks are not
    warpgroups of 128 threads on threadIdx.x is refused, naming its blocks."""
    from dataclasses import replace

    from tcomp.lower import lower
    from tcomp.lower.passes import KERNEL_PASSES
    from tcomp.lower.warp_roles import split_warp_roles

    _, s = _gemm(256, 256, 640, BM=128, BN=128, BK=64, stages=4, specialized=True)
    before = tuple(p for p in KERNEL_PASSES if p[0] != "split_warp_roles")
    kernel = lower(s, passes=before).kernels[0]
    with pytest.raises(tc.LoweringError, match=r"needs blocks of warpgroups.*blocks of \(64, 4, 1\)"):
        split_warp_roles(replace(kernel, block=(64, 4, 1)))


def test_bad_copy_requests_are_refused_where_they_are_made():
    out, s = _gemm(128, 128, 128, BM=128, BN=128, BK=64, stages=3, copy="cp.async")
    stage = next(st for st in s.stages if st.name == "A_shared")
    with pytest.raises(tc.ScheduleError, match="copy must be one of 'cp.async', 'tma'"):
        stage.pipeline(3, copy="bulk")
    with pytest.raises(tc.ScheduleError, match="panels must be True or False"):
        stage.storage_swizzle(panels=64)
    with pytest.raises(tc.ScheduleError, match="True only with copy=\"tma\""):
        stage.pipeline(3, specialized=True)


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "examples")
import gemm_bf16, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
out = gemm_bf16.algorithm(4096, 4096, 4096)
s = tc.create_schedule(out)
report = {}
for specialized in (False, True):
    s = tc.create_schedule(out)
    gemm_bf16.wgmma_tiles(s, out, "C", "A", "W", BM=128, BN=256, BK=64, stages=4, copy="tma",
                          specialized=specialized)
    (r,) = ptx_report(lower(s))
    report[str(specialized)] = dict(spills=r.spill_stores + r.spill_loads, registers=r.registers,
                                    serialized=r.wgmma_serialized,
                                    tma=r.ptx.count("cp.async.bulk.tensor.2d"),
                                    waits=r.ptx.count("mbarrier.try_wait.parity"),
                                    arrivals=r.ptx.count("mbarrier.arrive.shared"),
                                    cp_async=r.ptx.count("cp.async.cg"))
print(json.dumps(report))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_tma_kernels_assemble_for_sm90a_without_spills():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    for kind, stats in report.items():
        assert stats["spills"] == 0 and stats["registers"] <= 168, kind  # 384 threads of one block: 170 at most
        assert stats["serialized"] == "", kind  # ptxas keeps the wgmma chains asynchronous
        assert stats["tma"] >= 5 and stats["waits"] >= 1 and stats["cp_async"] == 0, kind  # one A box, four W boxes
    assert report["True"]["arrivals"] >= 1 and report["True"]["waits"] >= 2  # the releases, and their waits


@pytest.mark.gpu
def test_tma_rings_match_float64_on_the_gpu(rng):
    """The simulator's shapes and the example's wide blocks on the GPU: the maps made from
    the arguments' pointers, the boxes' zero fill, the barriers' phases (on 5 persistent
    blocks: 12 tiles in 3 rounds, the last with 2 past the output)."""
    for M, N, K, tiles in ((70, 128, 136, dict(BM=64, BN=128, BK=64, stages=3)),
                           (333, 512, 1000, dict(BM=128, BN=256, BK=64, stages=4)),
                           (256, 512, 384, dict(BM=128, BN=128, BK=64, stages=4)),
                           (333, 512, 1000, dict(BM=128, BN=256, BK=64, stages=4, specialized=True)),
                           (70, 64, 328, dict(BM=64, BN=64, BK=64, stages=3, specialized=True)),
                           (333, 1024, 1000, dict(BM=128, BN=256, BK=64, stages=4, specialized=True, persistent=5))):
        _, s = _gemm(M, N, K, **tiles)
        check_16_bit_product(s, M, N, K, "bfloat16", rng)


@pytest.mark.gpu
def test_a_tma_modules_first_call_may_be_inside_a_graph_capture(rng):
    """Tensors the module has not seen yet, first used inside a capture (how the search
    measures): their maps are made with the capture relaxed for the allocations, written
    on the capture's stream, and the replay computes the product."""
    import torch

    M, N, K = 256, 256, 320
    _, s = _gemm(M, N, K, BM=128, BN=128, BK=64, stages=4, specialized=True)
    mod = tc.build(s)
    gen = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
    w = torch.randn(K, N, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.full((M, N), float("nan"), device="cuda")
    graph = mod.graph(a, w, c)
    c.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    want = a.double() @ w.double()
    bound = 2 * K * 2.0 ** -24 * (a.double().abs() @ w.double().abs())
    assert bool(((c.double() - want).abs() <= bound).all())


def _broken(kernel, fn):
    """``kernel`` with ``fn`` rewriting its statements (``tcomp.ir.visitor.rewrite``)."""
    from dataclasses import replace

    from tcomp.ir.visitor import rewrite

    return replace(kernel, body=rewrite(kernel.body, fn))


def test_a_broken_ring_protocol_is_found_and_tc_check_refuses_it(monkeypatch):
    """The model of the slots (``tcomp.lower.ring_protocol``) passes the lowered rings and
    finds each protocol broken on purpose: a release one iteration early, a producer that
    waits for the wrong phase, no release at all, a wait for the wrong phase of a landed
    barrier, copies issued a slot too far ahead; ``tc.check`` refuses a schedule whose
    lowering breaks it."""
    from dataclasses import replace

    from tcomp.ir.expr import binary
    from tcomp.lower import nest
    from tcomp.lower.ring_protocol import ring_protocol_problems

    _, s = _gemm(256, 256, 640, BM=128, BN=128, BK=64, stages=4, specialized=True)
    specialized = tc.lower(s).kernels[0]
    _, s = _gemm(256, 256, 640, BM=128, BN=128, BK=64, stages=4)
    plain = tc.lower(s).kernels[0]
    assert ring_protocol_problems(specialized) == [] and ring_protocol_problems(plain) == []

    def early(n):  # release the slot read one iteration before: its chain is still running
        if isinstance(n, BarrierArrive):
            return replace(n, slot=binary("%", binary("+", n.slot, 1), 4))
        return None

    def flipped(n):
        if isinstance(n, BarrierWait):
            return replace(n, parity=binary("%", binary("+", n.parity, 1), 2))
        return None

    def no_release(n):
        return Seq(()) if isinstance(n, BarrierArrive) else None

    def too_far(n):  # the loop's copies one slot further ahead
        if isinstance(n, TileCopy) and n.predicate is not None:
            return replace(n, slot=binary("%", binary("+", n.slot, 1), 4))
        return None

    for kernel, fn, message in ((specialized, early, "iteration 2 releases slot 1 of A_shared while a wgmma chain reading it"),
                                (specialized, flipped, "iteration 0 reads slot 0 of A_shared, which holds nothing"),
                                (specialized, no_release, "iteration 4: the wait on k_o_landed.0. .* never returns"),
                                (plain, flipped, "iteration 0: the wait on k_o_landed.0. .* never returns"),
                                (plain, too_far, "copied into slot 0 .iteration 1. while a wgmma chain that reads "
                                                 "tile 0")):
        problems = ring_protocol_problems(_broken(kernel, fn))
        assert problems and any(re.search(message, p) for p in problems), (fn.__name__, problems)

    release = nest._release
    _, s = _gemm(256, 256, 640, BM=128, BN=128, BK=64, stages=4, specialized=True)

    def releases_the_running_slot(rings, loop, released):
        arrive = release(rings, loop, released)
        return replace(arrive, slot=binary("%", binary("+", arrive.slot, 1), 4))

    monkeypatch.setattr(nest, "_release", releases_the_running_slot)
    with pytest.raises(tc.IllegalScheduleError, match="protocol of a TMA ring is broken"):
        tc.check(s)


@pytest.mark.gpu
def test_an_intermediates_tensor_map_outlives_later_allocations():
    """The Qwen3 block with its down projection's ring filled by TMA from Z, a buffer of the
    module's own: the map of Z is made once, at build. Its device memory once had no owner
    after the build, so the allocations that followed (another module's buffers, here
    arrays filled with ones) overwrote it, and the block computed garbage or faulted."""
    import gc

    import torch
    from numba import cuda

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "examples"))
    sys.path.append(str(root / "benchmarks"))  # NOTE: after examples/, whose names some benchmarks share
    import qwen3_ffn
    import qwen3_request

    M, H, F = 256, 64, 128
    out = qwen3_ffn.algorithm(M, H, F)
    s = tc.create_schedule(out)
    qwen3_ffn.schedule(s, out, down=dict(copy="tma", specialized=1))
    mod = tc.build(s)
    gc.collect()
    cuda.current_context().deallocations.clear()
    junk = [cuda.to_device(np.full(16, np.iinfo(np.uint64).max, np.uint64)) for _ in range(4096)]
    gen = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(M, H, device="cuda", generator=gen).to(torch.bfloat16)
    gamma = (1 + 0.1 * torch.randn(H, device="cuda", generator=gen)).to(torch.bfloat16)
    w = (torch.randn(2, H, F, device="cuda", generator=gen) / H ** 0.5).to(torch.bfloat16)
    w_down = (torch.randn(F, H, device="cuda", generator=gen) / F ** 0.5).to(torch.bfloat16)
    y = torch.full((M, H), float("nan"), device="cuda", dtype=torch.bfloat16)
    mod(x, gamma, w, w_down, y)
    torch.cuda.synchronize()
    want = qwen3_request.reference_block(x, gamma, w, w_down)
    assert len(junk) == 4096
    assert (y.double() - want).abs().max().item() <= 2.0 ** -6 * want.abs().max().item()
