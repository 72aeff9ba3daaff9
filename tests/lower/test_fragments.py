"""The operands of tensorized products load by ldmatrix (``tcomp.lower.fragments``): one
``ldmatrix.x4`` per A fragment and one ``.x2.trans`` per B fragment (``.x4.trans`` for two
neighbouring ones), each loaded once for all the 16 x 8 tiles of a warp tile that use it; a transposed tile of A loads with
``.trans``; operands that ldmatrix cannot read keep their element loads. Run in the
simulator through ldmatrix's model and checked against float64."""

import sys
from pathlib import Path

import pytest

import tcomp as tc
from tcomp.cost.analysis import analyze_kernel
from tcomp.ir.stmt import For, FragmentLoad, WarpMma
from test_tensorize import _one_warp
from workloads import check_16_bit_product

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import gemm_bf16  # noqa: E402


def _nodes_with_loops(stmt, kind, loops=()):
    """(node, enclosing For loops) for every node of type ``kind`` under ``stmt``."""
    if isinstance(stmt, kind):
        yield stmt, loops
    for child in getattr(stmt, "stmts", ()) or ([stmt.body] if hasattr(stmt, "body") else []):
        yield from _nodes_with_loops(child, kind, loops + ((stmt,) if isinstance(stmt, For) else ()))


def _example(M, N, K, **tiles):
    out = gemm_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    if tiles:
        gemm_bf16.mma_warp_tiles(s, out, "C", "A", "W", **tiles)
    else:
        gemm_bf16.schedule(s, out, wgmma=0)  # the mma.sync tiling this file tests
    return s


def _per_k_step(loops) -> int:
    """Executions per k step of 16: the unrolled loops inside the k-step loop of 16."""
    n = 1
    for f in loops:
        if f.kind == "unroll":
            n *= f.extent
    return n


def test_a_warp_tile_loads_each_fragment_once():
    """128 x 128 blocks of 64 x 64 warp tiles, k steps of 32: per k step of 16 a warp
    does 4 x 8 mma.sync, 4 ldmatrix.x4 of A (one per row of tiles) and 4 ldmatrix.x4.trans
    of B (one per two columns), where it read 32 fragments of each element by element."""
    (kernel,) = tc.lower(_example(128, 128, 64)).kernels
    loads = list(_nodes_with_loops(kernel.body, FragmentLoad))
    shapes = sorted((f.src.name, f.count, f.trans, _per_k_step(loops)) for f, loops in loads)
    # k steps of 32 hold two of 16: each count doubles
    assert shapes == [("A_shared", 4, False, 2 * 4), ("W_shared", 4, True, 2 * 4)]
    ((mma, loops),) = _nodes_with_loops(kernel.body, WarpMma)
    assert _per_k_step(loops) == 2 * 32
    assert len(mma.a_registers) == 4 and len(mma.b_registers) == 2


def test_the_lowered_kernel_shows_the_fragments():
    text = str(tc.lower(_example(128, 128, 64)))
    assert "= ldmatrix.x4(A_shared[" in text and "= ldmatrix.x4.trans(W_shared[" in text
    # a ring of 4 tiles of 128 rows of 32 + 8 (padded by 16 bytes); B's rows 128 + 8
    assert "A_shared = alloc shared bfloat16[20480]" in text and "W_shared = alloc shared bfloat16[17408]" in text
    assert "a=(A_shared_frag[0], A_shared_frag[1], A_shared_frag[2], A_shared_frag[3])" in text


def test_the_examples_tiles_match_float64_with_and_without_padding(rng):
    s = _example(64, 64, 64, BM=64, BN=64, BK=32, WM=32, WN=32, stages=3, pad=8)
    check_16_bit_product(s, 64, 64, 64, "bfloat16", rng)
    s = _example(32, 32, 64, BM=32, BN=32, BK=32, WM=32, WN=32, stages=3, pad=0)  # NOTE: one warp: faster
    check_16_bit_product(s, 32, 32, 64, "bfloat16", rng)


def test_rows_fastest_launches_a_column_of_blocks_together(rng):
    """``rows_fastest``: blockIdx.x runs over the block rows (the blocks that share a
    column of W are neighbours in launch order); the result is the same."""
    tiles = dict(BM=32, BN=32, BK=16, WM=32, WN=32, stages=3)
    grids = {fastest: tc.lower(_example(64, 128, 32, **tiles, rows_fastest=fastest)).kernels[0].grid
             for fastest in (False, True)}
    assert grids == {False: (4, 2, 1), True: (2, 4, 1)}
    check_16_bit_product(_example(64, 64, 32, **tiles, rows_fastest=True), 64, 64, 32, "bfloat16", rng)


def test_bf16_tiles_count_two_bytes_of_shared_memory():
    """A ring of 3 bf16 tiles of 128 x (64 + 8) and 64 x (256 + 8) is 156,672 bytes, which
    fits (the check once counted 4 bytes an element and refused it); 5 stages do not."""
    from tcomp.target import check_resources

    tiles = dict(BM=128, BN=256, BK=64, WM=64, WN=64)
    check_resources(tc.lower(_example(128, 256, 64, **tiles, stages=3)))
    with pytest.raises(tc.CapacityError, match=r"needs 261120 bytes of shared memory per block"):
        check_resources(tc.lower(_example(128, 256, 320, **tiles, stages=5)))


def test_a_transposed_tile_of_a_loads_with_trans(rng):
    s = _one_warp(32, 16, 48, a_tile="columns")
    (kernel,) = tc.lower(s).kernels
    by_source = {f.src.name: f for f, _ in _nodes_with_loops(kernel.body, FragmentLoad)}
    assert by_source["A_shared"].count == 4 and by_source["A_shared"].trans
    check_16_bit_product(s, 32, 16, 48, "bfloat16", rng)


def test_an_operand_in_device_memory_keeps_its_element_loads(rng):
    s = _one_warp(32, 16, 48, a_tile="global")
    (kernel,) = tc.lower(s).kernels
    ((mma, _),) = _nodes_with_loops(kernel.body, WarpMma)
    assert mma.a_registers == () and len(mma.b_registers) == 2
    assert [f.src.name for f, _ in _nodes_with_loops(kernel.body, FragmentLoad)] == ["W_shared"]
    check_16_bit_product(s, 32, 16, 48, "bfloat16", rng)


def test_the_cost_model_sees_the_padding_remove_bank_conflicts():
    """Unpadded, A's 64-byte rows put four of each ldmatrix phase's eight rows on the same
    banks and B's 256-byte rows all eight; padded by 16 bytes, none share."""
    def wavefronts(pad):
        s = _example(256, 256, 256, BM=128, BN=128, BK=32, WM=64, WN=64, stages=3, pad=pad)
        return analyze_kernel(tc.lower(s).kernels[0]).l1_wavefronts

    assert wavefronts(0) > 1.5 * wavefronts(8)


def test_the_cost_model_counts_cp_async_stores_a_128_byte_phase_at_a_time(monkeypatch):
    """A 16-byte cp.async store is served 8 lanes (128 bytes) at a time. Into A's padded
    rows (64 + 16 bytes) the 8 lanes of a phase write two rows, which share banks 0-3:
    2 wavefronts a phase, 8 a warp, 128 per 128 x 32 tile. W's rows of 256 + 16 bytes give
    each phase 128 contiguous bytes: 1 wavefront, 64 per 32 x 128 tile. (Counted over
    the whole warp per 32-bit part, as plain shared accesses are, A's were 256.)"""
    import tcomp.cost.analysis as analysis

    counted = {}
    access = analysis._KernelWalk._access

    def counting(walk, buf, index, loops, warps, is_store, share=1.0, cp_async=False):
        before = walk.wavefronts
        access(walk, buf, index, loops, warps, is_store, share, cp_async)
        if is_store and buf.scope == "shared":
            counted[buf.name] = counted.get(buf.name, 0) + walk.wavefronts - before

    monkeypatch.setattr(analysis._KernelWalk, "_access", counting)
    s = _example(128, 128, 64, BM=128, BN=128, BK=32, WM=64, WN=64, stages=3)
    analyze_kernel(tc.lower(s).kernels[0])
    tiles = 64 // 32
    assert counted == {"A_shared": 128 * tiles, "W_shared": 64 * tiles}


@pytest.mark.gpu
def test_the_example_with_ldmatrix_matches_float64_on_the_gpu(rng):
    s = _example(256, 384, 128)
    check_16_bit_product(s, 256, 384, 128, "bfloat16", rng)
