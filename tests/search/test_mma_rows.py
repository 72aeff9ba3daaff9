"""Sixteen decode rows on mma.sync with the weights' B fragments loaded straight from global
memory (``tcomp.search.tiling.mma_rows``): legal, one kernel, the weights read by vector
loads packed into registers (``RegisterPairLoad``) with no shared tile of them, matching
float64 in the simulator on poisoned outputs, the cost model counting the weights' bytes,
and compiling to 16-byte loads without spills."""

import random
import shutil
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.errors import ScheduleError
from tcomp.ir.stmt import Allocate, RegisterPairLoad
from tcomp.ir.visitor import walk
from tcomp.search.space import Space
from tcomp.search.tiling.mma_rows import mma_rows
from workloads import check_product, json_from_a_process_without_the_simulator, product_16_bit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import ffn_bf16  # noqa: E402


def _ffn(N: int, K: int, **sizes):
    out = ffn_bf16.algorithm(M=16, N=N, K=K)
    s = tc.create_schedule(out)
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    mma_rows(s, out, "C", "A", "W", **sizes)
    return s, out


def _pair_loads(program) -> list:
    return [n for k in program.kernels for n in walk(k.body) if isinstance(n, RegisterPairLoad)]


@pytest.mark.parametrize("sizes", [dict(tiles=8, slices=2, unroll=2), dict(tiles=4, slices=4, unroll=1)])
def test_the_ffn_projection_on_sixteen_rows_matches_float64(sizes, rng):
    """Bf16 rounding, SiLU and int8 after the warps' slices are added: one kernel, W only in
    vector loads into registers (no shared tile of it), Q within one int8 step of float64
    (a float32 sum in another order may flip a bf16 tie)."""
    s, out = _ffn(128, 256, **sizes)
    assert tc.check(s).legal
    program = tc.lower(s)
    assert len(program.kernels) == 1
    loads = _pair_loads(program)
    assert loads and {ld.src.name for ld in loads} == {"W"} and {ld.width for ld in loads} == {sizes["tiles"]}
    shared = {n.buffer.name for k in program.kernels for n in walk(k.body)
              if isinstance(n, Allocate) and n.buffer.scope == "shared"}
    assert shared and not any(name.startswith("W") for name in shared)  # the warps' slices only
    A, W = tc.inputs(out)
    a = rng.standard_normal((16, 256)).astype(ml_dtypes.bfloat16)
    w = (rng.standard_normal((256, 128)) / 8).astype(ml_dtypes.bfloat16)
    got = np.full((16, 128), -77, np.int8)
    tc.build(s)(a, w, got)
    want = tc.evaluate(out, {A: a, W: w})
    assert np.abs(got.astype(int) - want).max() <= 1 and np.count_nonzero(got != want) <= 2


def test_the_product_alone_matches_float64_on_a_poisoned_output(rng):
    """The product as the kernel's output (float32, NaN-poisoned): every element written,
    within the bound of a float32 sum of K exact products."""
    A, W, C = product_16_bit(16, 64, 512)
    s = tc.create_schedule(C)
    mma_rows(s, C, "C", "A", "W", tiles=8, slices=4, unroll=2)
    assert tc.check(s).legal
    check_product(s, A, W, C, rng)


def test_the_source_loads_w_in_16_byte_vectors():
    s, _ = _ffn(128, 256, tiles=8, slices=2, unroll=2)
    source = tc.build(s).source
    assert "_load8(W," in source
    assert "pairs(W[" in str(tc.lower(s))  # the printed IR shows the packed loads


def test_columns_that_do_not_step_by_one_a_tile_keep_element_loads(rng):
    """The ordinary layout (tile ``c`` of a warp holding columns ``8 c .. 8 c + 7``) steps by
    eight elements a tile: no vector of a lane's columns, so no RegisterPairLoad, and the
    product is still right."""
    A, W, C = product_16_bit(16, 32, 64)
    s = tc.create_schedule(C)
    acc = s.cache_write("C", "local")
    i, j = s[C].axis
    bi, bj, ii, jj = s[C].tile(i, j, 16, 32)
    tile, jj = s[C].split(jj, 8)
    row_half, group = s[C].split(ii, 8)
    t, col_half = s[C].split(jj, 2)
    s[C].reorder(bi, bj, group, t, tile, row_half, col_half)
    lane = s[C].fuse(group, t)
    s[C].bind(bj, "blockIdx.x")
    s[C].bind(lane, "threadIdx.x")
    for axis in (tile, row_half, col_half):
        s[C].unroll(axis)
    s[acc].compute_at(s[C], lane)
    (k,) = s[acc].reduce_axis
    ko, ki = s[acc].split(k, 16)
    ci, cj = s[acc].axis
    tile_i, reg_i = s[acc].split(ci, 2)
    tile_j, reg_j = s[acc].split(cj, 2)
    s[acc].reorder(ko, tile_i, tile_j, ki, reg_i, reg_j)
    for axis in (tile_i, tile_j, reg_i, reg_j):
        s[acc].unroll(axis)
    s[acc].tensorize(ki, "mma_m16n8k16")
    assert not _pair_loads(tc.lower(s))
    check_product(s, A, W, C, rng)


@pytest.mark.parametrize("M, N, K, sizes, words", [
    (8, 128, 256, {}, "16-row tile"),
    (16, 100, 256, {}, "whole blocks of 64 columns"),
    (16, 128, 200, {}, "whole slices of k"),
    (16, 128, 256, dict(tiles=3), "2, 4 or 8 elements"),
    (16, 128, 288, dict(slices=3), "power of two"),
])
def test_shapes_it_cannot_take_are_refused_with_the_reason(M, N, K, sizes, words):
    out = ffn_bf16.algorithm(M=M, N=N, K=K)
    s = tc.create_schedule(out)
    with pytest.raises(ScheduleError, match=words):
        mma_rows(s, out, "C", "A", "W", **sizes)


def test_the_cost_model_counts_the_weights_bytes():
    """The vector loads into registers are loads of W like any other: W's K x N x 2 bytes
    reach the estimate's traffic."""
    s, _ = _ffn(12288, 4096)
    estimate = tc.estimate(s)
    (kernel,) = estimate.kernels
    assert kernel.reads_by_tensor["W"] == pytest.approx(4096 * 12288 * 2, rel=0.01)


def _rules(out) -> set:
    space = Space(out, target="h200")
    return {rule.name for fusion in space.tileable_fusions() for group in space.groups(fusion)
            for rule in space.rules_for(group) if space.valid_params(rule, group)}


def test_the_search_offers_it_at_sixteen_rows_only():
    assert "mma_rows" in _rules(ffn_bf16.algorithm(M=16, N=12288, K=4096))
    assert "mma_rows" not in _rules(ffn_bf16.algorithm(M=15, N=12288, K=4096))
    assert "mma_rows" not in _rules(ffn_bf16.algorithm(M=32, N=12288, K=4096))


def test_a_point_of_the_rule_is_legal_and_one_kernel(rng):
    out = ffn_bf16.algorithm(M=16, N=128, K=512)
    space = Space(out, target="h200")
    draws = random.Random(0)
    point = next(p for p in iter(lambda: space.sample(draws), 0) if p is not None and "mma_rows" in p.describe())
    s = space.schedule(point)
    report = tc.check(s)
    assert report.legal and report.reassociations
    assert len(tc.lower(s).kernels) == len(point.tilings)
    assert _pair_loads(tc.lower(s))


_PTX = """
import json
import sys
sys.path.insert(0, "examples")
import tcomp as tc
import ffn_bf16
from tcomp.codegen.ptx import ptx_report
from tcomp.search.space import Space
from tcomp.search.tiling.mma_rows import mma_rows

out = ffn_bf16.algorithm(M=16, N=12288, K=4096)
s = tc.create_schedule(out)
s["Cb"].compute_inline()
s["Y"].compute_inline()
mma_rows(s, out, "C", "A", "W", tiles=8, slices=8, unroll=2)
(r,) = ptx_report(tc.lower(s))
print(json.dumps(dict(wide=r.ptx.count("ld.global.v4"), narrow=r.ptx.count("ld.global.u16"),
                      mma=r.ptx.count("mma.sync"), spills=r.spill_stores + r.spill_loads, registers=r.registers)))
"""


def test_the_weights_arrive_in_16_byte_loads_without_spills():
    if shutil.which("ptxas") is None:
        pytest.skip("needs CUDA's ptxas on the PATH")
    found = json_from_a_process_without_the_simulator(["-c", _PTX])
    # a loop iteration: two k steps of 16, each four 16-byte rows of W for eight n8 tiles
    assert found["wide"] == 8 and found["narrow"] == 0 and found["mma"] == 16, found
    assert found["spills"] == 0 and found["registers"] <= 128, found
