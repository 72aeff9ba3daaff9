"""Zero padding (``tcomp.lower.padding``): tensor-core products at shapes no instruction tile
divides. K tails (the last k step padded with zeros), rows of odd length (filled element by
element, not by cp.async), M and N tails (blocks shifted inwards), W stored as [N, K] and a
batch axis, on mma.sync and on wgmma; run in the simulator through the instructions' Python
models against float64 on NaN-poisoned outputs, and assembled for sm_90a offline."""

import shutil
import sys
from pathlib import Path

import pytest

import tcomp as tc
from tcomp.ir.stmt import For, Store, WarpMma
from tcomp.ir.visitor import walk
from tcomp.search.tiling import mma_warp_tiles, wgmma_tiles
from workloads import check_product, json_from_a_process_without_the_simulator, product_16_bit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import gemm_bf16  # noqa: E402

MMA = dict(BM=32, BN=32, BK=32, WM=16, WN=16)
WGMMA = dict(BM=64, BN=64, BK=64)


@pytest.mark.parametrize("kind, M, N, K, stages", [
    ("mma", 32, 32, 40, 3),     # K tail: the second k step holds 8 of 32
    ("mma", 32, 32, 8, 3),      # K under one instruction's k step: padded to 16
    ("wgmma", 64, 64, 40, 3),   # K under one k step of 64 in the 128-byte swizzle
    ("mma", 40, 48, 83, 0),     # K odd: A filled element by element; M, N tails shifted inwards
    ("mma", 32, 32, 42, 3),     # K even, not a multiple of 8: 4-byte copies of A
    ("wgmma", 64, 64, 72, 3),   # K tail on the 128-byte swizzle
    ("wgmma", 72, 80, 75, 3),   # all three ragged; A's rows of odd length beside W's ring
])
def test_a_product_at_a_shape_no_tile_divides_matches_float64(kind, M, N, K, stages, rng):
    A, W, C = product_16_bit(M, N, K)
    s = tc.create_schedule(C)
    if kind == "mma":
        mma_warp_tiles(s, C, "C", "A", "W", **MMA, stages=stages)
    else:
        wgmma_tiles(s, C, "C", "A", "W", **WGMMA, stages=stages)
    assert tc.check(s).legal
    check_product(s, A, W, C, rng)


@pytest.mark.parametrize("kind", ["mma", "wgmma"])
def test_w_stored_as_n_by_k_matches_float64(kind, rng):
    M, N, K = (32, 32, 48) if kind == "mma" else (64, 64, 80)
    A, W, C = product_16_bit(M, N, K, b_layout="nk")
    s = tc.create_schedule(C)
    if kind == "mma":
        mma_warp_tiles(s, C, "C", "A", "W", **MMA, stages=3)
    else:
        wgmma_tiles(s, C, "C", "A", "W", **WGMMA, stages=3)
    check_product(s, A, W, C, rng)


def test_a_batched_product_matches_float64(rng):
    A, W, C = product_16_bit(32, 32, 48, batch=2)
    s = tc.create_schedule(C)
    mma_warp_tiles(s, C, "C", "A", "W", **MMA, stages=3)
    check_product(s, A, W, C, rng)


def test_the_tail_is_zero_filled_and_the_product_unguarded():
    """The fills of the tiles store zeros past K (``in_bounds``), the multiply-adds carry no
    guard, and the k loop is not split at the tail (every k step issues the same chain)."""
    A, W, C = product_16_bit(32, 32, 40)
    s = tc.create_schedule(C)
    mma_warp_tiles(s, C, "C", "A", "W", **MMA, stages=3)
    (kernel,) = tc.lower(s).kernels
    fills = [n for n in walk(kernel) if isinstance(n, Store) and n.buffer.scope == "shared"]
    assert fills and all(st.in_bounds is not None and st.asynchronous for st in fills)
    loops = [n for n in walk(kernel) if isinstance(n, For) and n.var.name == "k_o"]
    assert len(loops) == 1 and loops[0].extent == 2  # one loop of both k steps, not split at the tail
    assert sum(isinstance(n, WarpMma) for n in walk(kernel)) == 1  # one instruction, no peeled copy of it


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "examples")
import gemm_bf16, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
out = gemm_bf16.algorithm(4000, 4000, 1000)
s = tc.create_schedule(out)
gemm_bf16.wgmma_tiles(s, out, "C", "A", "W", BM=128, BN=256, BK=64, stages=4)
(r,) = ptx_report(lower(s))
print(json.dumps(dict(spills=r.spill_stores + r.spill_loads, registers=r.registers,
                      zero_fill=r.ptx.count(", 16, %r"))))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_padded_warpgroup_kernel_assembles_without_spills():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    assert report["spills"] == 0 and report["registers"] <= 168
    assert report["zero_fill"] > 0  # cp.async with a src-size operand


@pytest.mark.gpu
def test_padded_products_match_float64_on_the_gpu(rng):
    """The example's schedules (wgmma, mma.sync) at shapes no tile divides, on the H200."""
    for M, N, K in ((4000, 1000, 1000), (1000, 520, 1001), (333, 4096, 1000)):
        for overrides in ({}, {"wgmma": 0}):
            out = gemm_bf16.algorithm(M, N, K)
            s = tc.create_schedule(out)
            gemm_bf16.schedule(s, out, **overrides)
            A, W = tc.inputs(out)
            check_product(s, A, W, out, rng)


def test_the_tilings_name_the_shapes_they_need():
    """Blocks larger than the output are refused where they are asked for, naming the shape
    (a K of any length is not: it is padded)."""
    A, W, C = product_16_bit(16, 64, 1000)
    with pytest.raises(tc.ScheduleError, match=r"the mma tiles need M >= BM = 32 \(or 9 to 15 rows and BM = 16: the "
                                               r"rows past M zero-filled\), N >= BN = 32 .* the shape is "
                                               r"16 x 64 x 1000"):
        mma_warp_tiles(tc.create_schedule(C), C, "C", "A", "W", **MMA)
    with pytest.raises(tc.ScheduleError, match=r"the wgmma tiles need .* M >= BM, N >= BN .* BM = 64, BN = 64, "
                                               r"BK = 64 and the shape is 16 x 64 x 1000"):
        wgmma_tiles(tc.create_schedule(C), C, "C", "A", "W", **WGMMA)
    out = gemm_bf16.algorithm(M=32, N=256, K=1000)
    with pytest.raises(tc.ScheduleError, match=r"the wgmma schedule needs M and N of at least 64; the product is "
                                               r"32 x 256 x 1000"):
        gemm_bf16.schedule(tc.create_schedule(out), out, wgmma=1)
