"""``s[T].tensorize(axis, "wgmma_m64n<N>k16")``: a warpgroup's loop nest as Hopper's
``wgmma.mma_async``, its operands in shared tiles stored in 8 x 8 blocks or in the
128-byte swizzle, fed by cp.async rings whose readers may run one k step late; run in the
simulator through the instruction's Python model, checked against float64, refused with a
reason where the nest is not the instruction, and assembled for sm_90a offline."""

import shutil
import sys
from itertools import product
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.target.wgmma_layout import a_address, accumulator_element, b_address
from tcomp.ir.expr import Var
from tcomp.ir.stmt import Buffer, ProxyFence, WarpgroupFence, WarpgroupMma, WarpgroupWait
from tcomp.ir.visitor import walk
from tcomp.lower.nest import blocked_index
from tcomp.lower.matrix_operands import index_function
from tcomp.lower.warpgroup import _operand_layout
from tcomp.search.tiling import wgmma_tiles
from workloads import check_16_bit_product, fp8_steps, int_sentinel, json_from_a_process_without_the_simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import ffn_bf16  # noqa: E402
import gemm_bf16  # noqa: E402
import gemm_bf16_rounded  # noqa: E402
import swiglu_fp8  # noqa: E402

BF16 = ml_dtypes.bfloat16


@pytest.mark.parametrize("width", [8, 64, 128, 256])
def test_the_accumulator_layout_gives_each_element_of_the_tile_to_one_register(width):
    places = [accumulator_element(t, i) for t in range(128) for i in range(width // 2)]
    assert sorted(places) == [(r, c) for r in range(64) for c in range(width)]


@pytest.mark.parametrize("swizzle", [False, True])
@pytest.mark.parametrize("role, shape, trans_b", [("a", (128, 64), False), ("b", (64, 128), True),
                                                  ("b", (64, 256), True), ("a", (64, 128), False)])
def test_the_stored_layout_is_the_one_the_descriptor_reads(role, shape, trans_b, swizzle):
    """Where lowering stores element (r, c) of a blocked or swizzled tile (``blocked_index``)
    is where one instruction's descriptor, started at the first element it reads and with
    the strides lowering gives it, finds it: A's 64 x 16 slices, B's 16 x N ones."""
    blocks = (8, 64) if swizzle else (8, 8)
    buffer = Buffer("T", "bfloat16", shape, "shared", blocks, swizzle)
    layout = _operand_layout(buffer, role, trans_b)
    assert not isinstance(layout, str)
    r, c = Var("r"), Var("c")
    stored = index_function(blocked_index((r, c), shape, blocks, swizzle, 8), [r, c])
    rows, cols = shape
    if role == "a":
        for r0, k0 in product(range(0, rows, 64), range(0, cols, 16)):
            start = 2 * stored(r0, k0)
            for i, k in product(range(64), range(16)):
                assert stored(r0 + i, k0 + k) == a_address(start, i, k, *layout) // 2, (r0 + i, k0 + k)
    else:
        for k0 in range(0, rows, 16):
            start = 2 * stored(k0, 0)
            for k, n in product(range(16), range(cols)):
                assert stored(k0 + k, n) == b_address(start, k, n, layout[0], layout[1], trans_b, layout[2]) // 2


def test_the_swizzle_is_a_permutation_that_spreads_rows_and_columns_over_the_banks():
    """In the 128-byte swizzle the eight 16-byte chunks of a row, and one chunk of each of
    eight rows, fall in eight different groups of four banks."""
    r, c = Var("r"), Var("c")
    stored = index_function(blocked_index((r, c), (64, 128), (8, 64), True, 8), [r, c])
    offsets = sorted(stored(i, j) for i in range(64) for j in range(128))
    assert offsets == list(range(64 * 128))
    bank_group = lambda i, j: (stored(i, j) * 2 // 16) % 8  # noqa: E731  (16-byte chunks, 128 bytes a bank row)
    for i in range(64):
        assert len({bank_group(i, 8 * chunk) for chunk in range(8)}) == 8
    for chunk in range(16):
        assert len({bank_group(i, 8 * chunk) for i in range(8)}) == 8


def _gemm(M, N, K, **tiles):
    out = gemm_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "C", "A", "W", **tiles)
    return out, s


def test_a_swizzled_pipelined_product_with_a_chain_in_flight_matches_float64(rng):
    """One warpgroup, 64 x 64 tiles, three k steps through a 3-stage ring whose copies
    stay a slot behind the chain left running."""
    M, N, K = 64, 64, 192
    _, s = _gemm(M, N, K, BM=64, BN=64, BK=64, stages=3, in_flight=1)
    kernel = tc.lower(s).kernels[0]
    waits = [n.pending for n in walk(kernel.body) if isinstance(n, WarpgroupWait)]
    assert waits == [1, 0]  # one chain left running each k step, all retired after the loop
    assert "128-byte swizzle" in str(kernel)
    check_16_bit_product(s, M, N, K, "bfloat16", rng)


def test_blocks_in_groups_of_block_rows_cover_the_output_once(rng):
    """``group_rows=2`` over 3 block rows: blockIdx.y picks a group of two block rows,
    blockIdx.x runs over its blocks column by column (2 columns x 2 rows); the second
    group's missing row stores nothing, and every output is written once."""
    M, N, K = 192, 128, 64
    _, s = _gemm(M, N, K, BM=64, BN=64, BK=64, stages=2, group_rows=2)
    assert tc.lower(s).kernels[0].grid == (4, 2, 1)
    check_16_bit_product(s, M, N, K, "bfloat16", rng)


def test_grouped_blocks_shift_the_last_block_row_inwards_and_cover_the_output_once(rng):
    """150 rows in 64-row blocks (3 block rows) in groups of two, C rounded to bf16: the
    last block row starts at row 86 (``min(row * 64, 86)``), as it does without groups,
    instead of guarding every copy of A by ``row < 150``; the second group's missing row
    still stores nothing, and every output is written once."""
    M, N, K = 150, 128, 64
    out = gemm_bf16_rounded.algorithm(M, N, K)
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "P", "A", "W", BM=64, BN=64, BK=64, stages=2, group_rows=2)
    source = tc.build(s).source
    assert "_u32_86)" in source and "< _u32_150" not in source
    check_16_bit_product(s, M, N, K, "bfloat16", rng, rounded=True)


def test_persistent_blocks_take_the_tiles_in_the_launch_order_and_cover_the_output_once(rng):
    """Three block rows in groups of two, two columns (six tiles, one group partly past
    the output) on four persistent blocks: blockIdx.x takes tiles b and b + 4 of the
    grouped order, the second round's tiles past the output store nothing, and every
    output is written once (a cp.async ring: its k loop starts again each round)."""
    M, N, K = 192, 128, 128
    _, s = _gemm(M, N, K, BM=64, BN=64, BK=64, stages=2, group_rows=2, persistent=4)
    assert tc.lower(s).kernels[0].grid == (4, 1, 1)
    check_16_bit_product(s, M, N, K, "bfloat16", rng)


def test_the_example_rounded_to_bf16_stages_its_tile_and_matches_float64(rng):
    """``examples/gemm_bf16_rounded.py`` (C = bf16(A @ W), as cuBLAS writes it): the
    example's tiling, the rounding in the epilogue, the bf16 tile staged in shared memory
    and stored 8 values (16 bytes) a thread."""
    M, N, K = 64, 128, 80
    out = gemm_bf16_rounded.algorithm(M, N, K)
    s = tc.create_schedule(out)
    gemm_bf16_rounded.schedule(s, out)
    assert any(isinstance(n, WarpgroupMma) for n in walk(tc.lower(s).kernels[0].body))
    source = tc.build(s).source
    assert "_store2(C_shared, " in source and "_store8(C, " in source
    check_16_bit_product(s, M, N, K, "bfloat16", rng, rounded=True)


def test_the_batched_example_rounded_to_bf16_stages_its_tile_in_the_rings_and_matches_float64(rng):
    """``examples/batched_gemm_bf16_rounded.py``: each block one product of the batch
    (``blockIdx.z``), its bf16 tile staged in the bytes of its rings (the loop the tile
    keeps over the batch axis runs once) and every product within a float32 sum's bound
    of float64, half a bf16 step more for the rounding."""
    import batched_gemm_bf16_rounded

    B, M, N, K = 2, 64, 128, 80
    out = batched_gemm_bf16_rounded.algorithm(B, M, N, K)
    s = tc.create_schedule(out)
    batched_gemm_bf16_rounded.schedule(s, out)
    (kernel,) = tc.lower(s).kernels
    assert kernel.grid[2] == B and [late.name for late, _ in kernel.shared_reuse] == ["C_shared"]
    a = rng.standard_normal((B, M, K)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((B, K, N)).astype(ml_dtypes.bfloat16)
    got = np.full((B, M, N), np.nan, ml_dtypes.bfloat16)
    tc.build(s)(a, w, got)
    got = got.astype(np.float64)
    want = a.astype(np.float64) @ w.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(w).astype(np.float64)
    assert not np.isnan(got).any()
    assert np.all(np.abs(got - want) <= 2 * K * 2.0 ** -24 * scale + 2.0 ** -8 * np.abs(want))


def test_a_product_in_8x8_blocks_without_a_ring_matches_float64(rng):
    M, N, K = 64, 128, 128
    _, s = _gemm(M, N, K, BM=64, BN=128, BK=64, stages=0, swizzle=False)
    kernel = tc.lower(s).kernels[0]
    mma = [n for n in walk(kernel.body) if isinstance(n, WarpgroupMma)]
    assert mma and mma[0].width == 128 and mma[0].modes == (0, 0) and mma[0].trans_b
    assert "in 8x8 blocks" in str(kernel)
    check_16_bit_product(s, M, N, K, "bfloat16", rng)


def test_lowering_orders_the_asynchronous_chain():
    """fence.proxy.async before every barrier; wgmma.fence before and a wait after each
    k step's chain of four instructions; tc.check names the reassociation."""
    out, s = _gemm(128, 128, 128, BM=128, BN=128, BK=64, stages=2, in_flight=0)
    body = tc.lower(s).kernels[0].body
    nodes = list(walk(body))
    barriers = sum(type(n).__name__ == "Barrier" for n in nodes)
    assert barriers and sum(isinstance(n, ProxyFence) for n in nodes) == barriers
    assert sum(isinstance(n, WarpgroupFence) for n in nodes) == 1
    assert [n.pending for n in nodes if isinstance(n, WarpgroupWait)] == [0]
    (mma,) = [n for n in nodes if isinstance(n, WarpgroupMma)]  # one per k16, in an unrolled loop of 4
    assert mma.modes == (1, 1) and mma.a_strides == (16, 1024) and mma.b_strides == (1024, 2048)
    report = tc.check(s)
    assert any("wgmma" in str(r) for r in report.reassociations)


def test_the_layers_match_their_references_on_the_warpgroup_instructions(rng):
    """The FFN projection (int8 after bf16 rounding and SiLU) and SwiGLU's stacked gate
    and up projections (fp8 by the row's max), computed with ``wgmma=1``."""
    M, N, K = 64, 64, 64
    out = ffn_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    ffn_bf16.schedule(s, out, wgmma=1)
    feeds = _feeds(out, rng)
    want = tc.evaluate(out, feeds)
    got = np.full((M, N), int_sentinel("int8", want), np.int8)
    tc.build(s)(*feeds.values(), got)
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() <= 0.01

    M, N, K = 64, 64, 64
    out = swiglu_fp8.algorithm(M, N, K)
    s = tc.create_schedule(out)
    swiglu_fp8.schedule(s, out, wgmma=1)
    assert any(isinstance(n, WarpgroupMma) for n in walk(tc.lower(s).kernels[0].body))
    feeds = _feeds(out, rng)
    got = np.full((M, N), np.nan, ml_dtypes.float8_e4m3fn)
    tc.build(s)(*feeds.values(), got)
    want = tc.evaluate(out, feeds)
    assert not np.isnan(got.astype(np.float32)).any()
    steps = fp8_steps(got, want)
    assert steps.max() <= 1 and (steps > 0).mean() <= 0.01


def _feeds(out, rng):
    from tcomp.lang.evaluate import placeholders_of

    return {p: (rng.standard_normal(p.shape) / (1.0 if p.name == "A" else np.sqrt(p.shape[-2]))).astype(BF16)
            for p in placeholders_of(out)}


def _warpgroup_schedule(intrinsic="wgmma_m64n64k16", swizzle=True, lanes=("warp", "row", "col")):
    """One warpgroup over a 64 x 64 tile, written out; ``lanes`` orders the thread's
    three parts (the instruction's layout needs warp, then row in 8, then column pair)."""
    out = gemm_bf16.algorithm(64, 64, 64)
    s = tc.create_schedule(out)
    acc = s.cache_write("C", "local")
    caches = [s.cache_read(name, "shared", [acc]) for name in ("A", "W")]
    i, j = s[out].axis
    warp, ii = s[out].split(i, 16)
    half, row = s[out].split(ii, 8)
    block, jj = s[out].split(j, 8)
    col, pair = s[out].split(jj, 2)
    parts = {"warp": warp, "row": row, "col": col}
    s[out].reorder(*(parts[p] for p in lanes), block, half, pair)
    thread = s[out].fuse(s[out].fuse(*(parts[p] for p in lanes[:2])), parts[lanes[2]])
    s[out].bind(thread, "threadIdx.x")
    s[acc].compute_at(s[out], thread)
    ko, ki = s[acc].split(s[acc].reduce_axis[0], 64)
    kt, ki = s[acc].split(ki, 16)
    ci, cj = s[acc].axis
    s[acc].reorder(ko, kt, ki, ci, cj)
    s[acc].unroll(kt)
    for cache in caches:
        s[cache].compute_at(s[acc], ko)
        if swizzle:
            s[cache].storage_swizzle()
        flat = s[cache].fuse(*s[cache].axis)
        _, th = s[cache].split(flat, 128)
        s[cache].bind(th, "threadIdx.x")
    s[acc].tensorize(ki, intrinsic)
    return s


def test_a_written_out_warpgroup_schedule_lowers_to_the_instruction():
    kernel = tc.lower(_warpgroup_schedule()).kernels[0]
    assert [n.width for n in walk(kernel.body) if isinstance(n, WarpgroupMma)] == [64]


@pytest.mark.parametrize("kwargs, message", [
    (dict(intrinsic="wgmma_m64n128k16"), r"loops over the thread's 64 accumulators \(N / 2\).*it is 2 x 16 loops"),
    (dict(swizzle=False), r"operand (A|W)_shared must be a shared buffer stored in 8 x 8 blocks"),
    (dict(lanes=("row", "warp", "col")), r"the threads do not hold the instruction's accumulator layout"),
])
def test_a_nest_that_is_not_the_instruction_is_refused_with_the_reason(kwargs, message):
    with pytest.raises(tc.ScheduleError, match=message):
        tc.lower(_warpgroup_schedule(**kwargs))


def test_bad_wgmma_requests_are_refused_where_they_are_made():
    out = gemm_bf16.algorithm(64, 64, 64)
    s = tc.create_schedule(out)
    with pytest.raises(tc.ScheduleError, match=r"unknown tensor intrinsic 'wgmma_m64n129k16'.*multiple of 8"):
        s["C"].tensorize(s["C"].reduce_axis[0], "wgmma_m64n129k16")
    tile = s.cache_read("A", "shared", ["C"])
    with pytest.raises(tc.ScheduleError, match=r"reader_lag must be an integer from 0 to stages - 2 = 1"):
        s[tile].pipeline(3, reader_lag=2)
    s = tc.create_schedule(out)
    with pytest.raises(tc.ScheduleError, match=r"BK and BN must be multiples of 64; they are 32 and 64"):
        wgmma_tiles(s, out, "C", "A", "W", BM=64, BN=64, BK=32)


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "examples")
import gemm_bf16, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
out = gemm_bf16.algorithm(4096, 4096, 4096)
s = tc.create_schedule(out)
gemm_bf16.wgmma_tiles(s, out, "C", "A", "W", BM=128, BN=128, BK=64, stages=4)
(r,) = ptx_report(lower(s))
print(json.dumps(dict(spills=r.spill_stores + r.spill_loads, registers=r.registers, serialized=r.wgmma_serialized,
                      mma=r.ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"),
                      proxy=r.ptx.count("fence.proxy.async.shared::cta"),
                      wait1=r.ptx.count("wgmma.wait_group.sync.aligned 1"))))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_warpgroup_kernel_assembles_for_sm90a_without_spills():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    assert report["spills"] == 0 and report["registers"] <= 168  # 64 accumulators a thread
    assert report["serialized"] == ""
    assert report["mma"] >= 1 and report["proxy"] >= 1 and report["wait1"] == 1


@pytest.mark.gpu
def test_the_warpgroup_product_matches_float64_on_the_gpu(rng):
    """The same schedules as the simulator tests, on the H200: the intrinsics' models and
    the instructions agree with float64 alike."""
    for tiles in (dict(BM=128, BN=128, BK=64, stages=4), dict(BM=128, BN=256, BK=64, stages=3),
                  dict(BM=64, BN=64, BK=64, stages=0, swizzle=False)):
        M, N, K = 256, 512, 384
        _, s = _gemm(M, N, K, **tiles)
        check_16_bit_product(s, M, N, K, "bfloat16", rng)

