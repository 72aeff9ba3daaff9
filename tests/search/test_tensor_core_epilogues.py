"""How the tensor-core tilings write their outputs (issue 31): a thread's two columns of a
fragment in one store, and an output narrower than 4 bytes (bf16, int8) staged in a
padded shared tile that the block copies out in 16-byte stores. A 128 x 256 tile's
fixed cost went from 17.2 to 7.2 us on the H100 with the paired stores
(``benchmarks/short_k.py``); these tests hold the structure and the values."""

import shutil
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.ir.stmt import Allocate, Store
from tcomp.ir.visitor import walk
from tcomp.search.tiling import mma_warp_tiles, wgmma_tiles
from tcomp.search.tiling.wgmma import OUTPUT_ROW_PAD, output_staged, shared_bytes
from workloads import check_product, json_from_a_process_without_the_simulator, product_16_bit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import ffn_bf16  # noqa: E402
import gemm_bf16  # noqa: E402


def _rounded_to_bf16(M: int, N: int, K: int):
    """``(A, W, D)``: D = bf16(A @ W), the float32 sum rounded to a bfloat16 output."""
    A, W, C = product_16_bit(M, N, K)
    return A, W, tc.compute((M, N), lambda i, j: tc.cast(C[i, j], "bfloat16"), name="D")


def _ffn_on_wgmma(M: int, N: int, K: int, **tiles):
    Q = ffn_bf16.algorithm(M, N, K)
    s = tc.create_schedule(Q)
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    wgmma_tiles(s, Q, "C", "A", "W", **tiles)
    return s, Q


def _run_against_evaluate(s, out, rng, poison) -> tuple:
    """Build ``s``, run it on fresh inputs into an output filled with ``poison`` and return
    (got, want) with ``tc.evaluate``'s float64 reference."""
    A, W = tc.inputs(out)
    a = rng.standard_normal(A.shape).astype(ml_dtypes.bfloat16)
    w = (rng.standard_normal(W.shape) / A.shape[-1] ** 0.5).astype(ml_dtypes.bfloat16)
    got = np.full(out.shape, poison, dtype=tc.evaluate(out, {A: a, W: w}).dtype)
    tc.build(s)(a, w, got)
    return got, tc.evaluate(out, {A: a, W: w})


def _global_stores(s, name: str) -> list:
    (kernel,) = tc.lower(s).kernels
    return [n for n in walk(kernel) if isinstance(n, Store) and n.buffer.name == name]


def test_a_thread_writes_its_two_columns_in_one_store():
    """The fragments of wgmma and of mma.sync leave each thread two adjacent columns of a
    row: the store of a float32 output is one 8-byte access, a whole 32-byte sector per
    quad of threads."""
    for tiling, sizes in ((wgmma_tiles, dict(BM=64, BN=64, BK=64, stages=3)),
                          (mma_warp_tiles, dict(BM=32, BN=32, BK=32, WM=16, WN=16, stages=3))):
        A, W, C = product_16_bit(64, 64, 64)
        s = tc.create_schedule(C)
        tiling(s, C, "C", "A", "W", **sizes)
        source = tc.build(s).source
        assert "_store2(C, " in source, tiling.__name__


def test_an_odd_row_length_keeps_single_stores_and_the_values(rng):
    """N = 65: a pair of columns is not 8-byte aligned, so the stores stay single (the
    vector needs the alignment), and the product still matches float64."""
    A, W, C = product_16_bit(64, 65, 40)
    s = tc.create_schedule(C)
    wgmma_tiles(s, C, "C", "A", "W", BM=64, BN=64, BK=64, stages=3)
    assert "_store2(C, " not in tc.build(s).source
    check_product(s, A, W, C, rng)


@pytest.mark.parametrize("M, N, K", [(64, 64, 64), (70, 80, 40)])
def test_an_int8_epilogue_is_staged_in_shared_memory(M, N, K, rng):
    """The FFN's int8 output: the epilogue writes a shared tile whose rows are padded by 16
    bytes, the block copies it out in 16-byte stores (N = 64) or element by element where
    the rows are not 16-byte aligned (N = 80 is, 70 rows shift the last block), and every
    value matches the float64 reference exactly (the quantized values are integers)."""
    s, Q = _ffn_on_wgmma(M, N, K, BM=64, BN=64, BK=64, stages=3)
    (kernel,) = tc.lower(s).kernels
    (tile,) = [n.buffer for n in walk(kernel) if isinstance(n, Allocate) and n.buffer.name == "Q_shared"]
    assert tile.scope == "shared" and tile.shape == (64, 64 + OUTPUT_ROW_PAD)
    assert "_store16(Q, " in tc.build(s).source
    got, want = _run_against_evaluate(s, Q, rng, poison=-99)
    np.testing.assert_array_equal(got, want)


def test_a_bf16_output_is_staged_and_rounded_once(rng):
    """D = bf16(A @ W) at a shape no block divides: staged (8 bf16 a store), and each value
    is the float32 sum rounded once to bf16: within one bf16 step of float64's."""
    A, W, D = _rounded_to_bf16(70, 72, 40)
    s = tc.create_schedule(D)
    wgmma_tiles(s, D, "C", "A", "W", BM=64, BN=64, BK=64, stages=3)
    assert "_store8(D, " in tc.build(s).source
    got, want = _run_against_evaluate(s, D, rng, poison=np.nan)
    got, want = got.astype(np.float64), want.astype(np.float64)
    assert not np.isnan(got).any()
    assert np.all(np.abs(got - want) <= 2.0 ** -7 * np.abs(want) + 1e-6)


def test_staging_is_the_default_only_where_it_helps_and_fits():
    """Staged: an output under 4 bytes after the product, its padded tile in the bytes of
    the rings, which the k loop is done with (192 x 192 blocks in 4-stage rings too, which
    cannot hold the tile beside the rings). Not staged: the product's own float32 output
    (its pairs fill sectors)."""
    s, Q = _ffn_on_wgmma(128, 256, 64, BM=128, BN=256, BK=64, stages=4)
    assert output_staged(Q, "C", 128, 256, 64, 4)
    rings = (192 + 192) * 64 * 2 * 4
    assert shared_bytes(192, 192, 64, 4, 1) == rings + 1024 <= 232448 < rings + 192 * 208 + 1024
    assert output_staged(Q, "C", 192, 192, 64, 4)
    assert output_staged(Q, "C", 192, 192, 64, 3)
    A, W, C = product_16_bit(128, 256, 64)
    assert not output_staged(C, "C", 128, 256, 64, 4)


def test_staging_can_be_turned_off():
    s, Q = _ffn_on_wgmma(64, 64, 64, BM=64, BN=64, BK=64, stages=3, stage_output=False)
    assert not any(n.buffer.name == "Q_shared" for n in walk(tc.lower(s).kernels[0]) if isinstance(n, Allocate))
    assert _global_stores(s, "Q")


def test_the_wide_blocks_give_way_to_192_where_they_need_fewer_waves():
    """333 rows of the FFN: 128 x 256 blocks are 144 (two waves of 132 SMs), 192 x 192
    blocks 128 (one). At 1024 and 7239 rows and 4096^2 the 128 x 256 blocks leave an SM
    less work, and stay; at 2048^2 their 128 blocks keep 128 of 132 SMs busy (the search's
    winner on the H100), at 1024^2 their 32 would not."""
    assert gemm_bf16.wgmma_tiles_for(333, 12288, 4096)["BM"] == 192
    for M, N in ((1024, 12288), (7239, 12288), (4096, 4096), (2048, 2048)):
        tiles = gemm_bf16.wgmma_tiles_for(M, N, 4096)
        assert (tiles["BM"], tiles["BN"]) == (128, 256), (M, N)
    assert gemm_bf16.wgmma_tiles_for(1024, 1024, 1024)["BN"] == 128  # 32 wide blocks: too few


def test_a_tall_column_of_blocks_is_launched_in_groups_of_block_rows():
    """A column of more than 24 blocks goes in groups of the divisor of its rows nearest 16
    (57 rows of 128 at 7239: groups of 19), or of 16 where none divides; a shorter column
    whole; blocks along a row take no groups."""
    assert [gemm_bf16.row_group(rows) for rows in (8, 24, 32, 57, 64, 29)] == [0, 0, 16, 19, 16, 16]
    assert gemm_bf16.wgmma_tiles_for(7239, 12288, 4096)["group_rows"] == 19
    assert gemm_bf16.wgmma_tiles_for(4096, 4096, 4096)["group_rows"] == 16
    assert "group_rows" not in gemm_bf16.wgmma_tiles_for(1024, 12288, 4096)
    assert "group_rows" not in gemm_bf16.wgmma_tiles_for(7239, 4096, 12288)  # along a row


def test_the_decode_rows_take_the_sizes_measured_fastest():
    """One row: one kernel where 64-column blocks would cover the SMs (12288): 128 columns
    of 16 x 64 threads and eight loads each, or 64 columns and two loads where K takes no
    slices of eight loads (4352); else 256 columns a block and k over 16 blocks as well
    (4096); 2 to 8 rows: one kernel, four loads in flight; 9 to 15: two kernels."""
    assert ffn_bf16.stream_sizes(1, 12288, 4096) == dict(parts=64, threads_x=16, unroll=8, block_parts=1,
                                                         one_kernel=True)
    assert ffn_bf16.stream_sizes(1, 12288, 4352) == dict(parts=64, threads_x=8, unroll=2, block_parts=1,
                                                         one_kernel=True)
    assert ffn_bf16.stream_sizes(1, 4096, 12288) == dict(parts=8, threads_x=32, unroll=8, block_parts=16,
                                                         one_kernel=True)
    assert ffn_bf16.stream_sizes(4, 12288, 4096) == dict(parts=64, threads_x=4, unroll=4, block_parts=1,
                                                         one_kernel=True)
    assert ffn_bf16.stream_sizes(12, 12288, 4096)["one_kernel"] is False


def test_the_search_seeds_the_decode_rows_with_those_sizes():
    """The ``skinny_product`` rule's seed is the example's sizes (1024 threads for 64 slices
    at 12288 columns, 256 for 8 slices and k over 16 blocks at 4096), on the one-kernel
    fusion, and a point of the space; from 9 rows none of its own, but mma.sync's decode
    tiles (a 16-row block, its rows past M zero-filled)."""
    from tcomp.search.space import Space

    for (M, N, K), threads, parts in (((1, 12288, 4096), 1024, 64), ((1, 4096, 12288), 256, 8),
                                      ((4, 12288, 4096), 256, 64)):
        space = Space(ffn_bf16.algorithm(M, N, K))
        (seed,) = space.seed_points()
        assert space.contains(seed)
        ((_, rule, params),) = seed.tilings
        assert rule == "skinny_product"
        sizes = ffn_bf16.stream_sizes(M, N, K)
        assert dict(params) == dict(parts=parts, threads=threads, unroll=sizes["unroll"], one_kernel=True,
                                    block_parts=sizes["block_parts"])
    seeds = Space(ffn_bf16.algorithm(12, 12288, 4096)).seed_points()
    assert [rule for seed in seeds for _, rule, _ in seed.tilings] == ["mma_tiling"]


def test_a_decode_steps_blocks_take_the_width_that_fills_the_waves_best():
    """96-wide blocks where they make one wave (12288 columns: 128 blocks on 132 SMs; 64-wide
    would make 1.45 waves), 64-wide where those do (8192: 128 blocks), none where neither
    width makes 0.85 of a wave (4096: 43 or 64 blocks), and k steps no longer than K."""
    from tcomp.search.tiling.mma_sync import decode_tiles

    assert decode_tiles(16, 12288, 4096, 132) == dict(BM=16, BN=96, BK=128, WM=16, WN=16, stages=4)
    assert decode_tiles(16, 8192, 4096, 132)["BN"] == 64
    assert decode_tiles(16, 28672, 4096, 132)["BN"] == 64  # 448 blocks fill 3.4 waves; 96-wide 2.3
    assert decode_tiles(16, 4096, 12288, 132) is None
    assert decode_tiles(8, 12288, 4096, 132) is None and decode_tiles(32, 12288, 4096, 132) is None
    assert decode_tiles(16, 12288, 100, 132)["BK"] == 64 and decode_tiles(16, 12288, 40, 132)["BK"] == 32
    assert decode_tiles(16, 12288, 8, 132)["BK"] == 16


def test_sixteen_decode_rows_are_seeded_in_narrow_blocks_with_k_whole():
    """From 16 rows the mma_tiling rule seeds the example's decode tiling (16-row blocks of
    16 x 16 warp tiles, k whole) where those blocks make at least 0.85 of a wave; not
    where they leave SMs idle (1024 columns: 16 blocks, which split k instead)."""
    from tcomp.search.space import Space

    space = Space(ffn_bf16.algorithm(16, 12288, 4096))
    (seed,) = space.seed_points()
    assert space.contains(seed)
    ((_, rule, params),) = seed.tilings
    assert rule == "mma_tiling"
    wanted = gemm_bf16.mma_tiles_for(16, 12288, 4096)
    assert {k: dict(params)[k] for k in wanted} == wanted and dict(params)["split_k"] == 1
    assert Space(ffn_bf16.algorithm(16, 1024, 4096)).seed_points() == []


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "examples")
import ffn_bf16, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
reports = {}
for M in (1024, 333):
    out = ffn_bf16.algorithm(M, 12288, 4096)
    s = tc.create_schedule(out)
    ffn_bf16.schedule(s, out)
    (r,) = ptx_report(lower(s))
    reports[M] = dict(spills=r.spill_stores + r.spill_loads, registers=r.registers, serialized=r.wgmma_serialized,
                      wide_stores=r.ptx.count("st.global.v4.u32"))
print(json.dumps(reports))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_ffn_kernels_assemble_without_spills():
    """The example's FFN kernels: 1024 rows (128 x 256 blocks) and 333 rows (192 x 192
    blocks in 4-stage rings, the tile in the rings' bytes), each with its int8 tile
    staged and written in 16-byte stores."""
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    for M in ("1024", "333"):
        assert report[M]["spills"] == 0 and report[M]["registers"] <= 168, report
        assert report[M]["serialized"] == "", report
        assert report[M]["wide_stores"] > 0


def test_a_staged_tile_takes_the_bytes_of_the_rings_after_the_k_loop(rng):
    """The 192 x 192 int8 tile of the FFN in 4-stage rings: lowering lets it reuse the
    rings' bytes (``Kernel.shared_reuse``), with a cp.async wait and a barrier between the
    k loop's last wgmma wait and the epilogue's first store; the block then needs the
    rings' bytes only, and the simulator (one byte array, each buffer a view) still
    computes tc.evaluate's int8 values."""
    from tcomp.ir.stmt import AsyncWait, Barrier, Seq, WarpgroupWait
    from tcomp.target.storage import kernel_shared_bytes

    s, Q = _ffn_on_wgmma(192, 192, 128, BM=192, BN=192, BK=64, stages=4)
    (kernel,) = tc.lower(s).kernels
    ((late, dead),) = kernel.shared_reuse
    assert late.name == "Q_shared" and {b.name for b in dead} == {"A_shared", "W_shared"}
    assert kernel_shared_bytes(kernel) == (192 + 192) * 64 * 2 * 4 + 1024
    seqs = [n for n in walk(kernel) if isinstance(n, Seq)
            and any(isinstance(a, AsyncWait) and a.pending == 0 and isinstance(b, Barrier)
                    for a, b in zip(n.stmts, n.stmts[1:]))]
    assert len(seqs) == 1
    waits = [n for n in walk(seqs[0]) if isinstance(n, WarpgroupWait) and n.pending == 0]
    assert waits  # the last wgmma chain is retired before the barrier
    got, want = _run_against_evaluate(s, Q, rng, poison=-99)
    np.testing.assert_array_equal(got, want)
