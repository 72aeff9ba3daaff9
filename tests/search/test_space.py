"""The search space (tcomp/search/space.py, tiling/): the partitions of a chain, the
hand ladder's best rungs as points of the space, sampling and mutation that stay inside
it, and a rule registered from outside joining it."""

import random
import sys
from pathlib import Path

import numpy as np
import pytest

import tcomp as tc
from tcomp.search.stages import matrix_product_operands
from tcomp.search.space import Point, Rule, Space, register_rule
from tcomp.search.tiling import unregister_rule
from tcomp.target import get_target

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import ffn_bf16  # noqa: E402
import matmul_silu_quant  # noqa: E402
import sgemm_ladder  # noqa: E402


def _params(**p):
    return tuple(sorted(p.items()))


BLOCK_2D = dict(BM=128, BN=128, BK=8, TM=8, TN=8, transpose_a=False, vector=1, double_buffer=False, pipeline=0, k_unroll=1,
                fragment_k=1, split_k=1)
LADDER_POINTS = {
    "blocktile_2d": ("block_tiling", BLOCK_2D),
    "vectorized": ("block_tiling", {**BLOCK_2D, "transpose_a": True, "vector": 4}),
    "double_buffered": ("block_tiling", {**BLOCK_2D, "transpose_a": True, "vector": 4, "double_buffer": True}),
    "vectorized_bk16": ("block_tiling", {**BLOCK_2D, "BK": 16, "transpose_a": True, "vector": 4}),
    "warptiled": ("warp_tiling", dict(BM=128, BN=128, BK=16, WM=64, WN=64, WNITER=4, TM=8, TN=4, k_unroll=4,
                                      double_buffer=True, pipeline=0, split_k=1)),
}


@pytest.mark.parametrize("rung", sorted(LADDER_POINTS))
def test_the_ladders_best_rungs_are_points_of_the_space(rung):
    out = sgemm_ladder.algorithm(512, 512, 512)
    space = Space(out)
    rule, params = LADDER_POINTS[rung]
    point = Point((), (("C", rule, _params(**params)),))
    assert space.contains(point)
    hand = tc.create_schedule(out)
    sgemm_ladder.SCHEDULES[rung](hand, out)
    assert str(tc.lower(space.schedule(point))) == str(tc.lower(hand))


def test_the_fused_examples_hand_schedule_is_a_point_of_the_space():
    out = matmul_silu_quant.algorithm(256, 256, 256)
    space = Space(out)
    params = {**BLOCK_2D, "transpose_a": True, "vector": 4, "double_buffer": True}
    point = Point((("C", "fused"), ("Y", "inline")), (("Q", "block_tiling", _params(**params)),))
    assert space.contains(point)
    hand = tc.create_schedule(out)
    matmul_silu_quant.schedule(hand, out)
    assert str(tc.lower(space.schedule(point))) == str(tc.lower(hand))


def test_a_chain_of_three_operators_has_four_partitions():
    space = Space(matmul_silu_quant.algorithm(64, 64, 64))
    assert space.options == {"C": ("fused", "root"), "Y": ("inline", "root")}
    got = {frozenset(frozenset(g) for g in p) for p in space.partitions()}
    want = {frozenset(frozenset(g) for g in p) for p in
            ([{"C", "Y", "Q"}], [{"C", "Y"}, {"Q"}], [{"C"}, {"Y", "Q"}], [{"C"}, {"Y"}, {"Q"}])}
    assert got == want


def test_a_chain_of_four_operators_has_eight_partitions():
    space = Space(ffn_bf16.algorithm(64, 64, 64))
    assert len(space.partitions()) == 8


def test_a_reduction_is_never_inlined_and_a_shared_stage_stays_at_root():
    A = tc.placeholder((8, 8), "float32", name="A")
    Y = tc.compute((8, 8), lambda i, j: tc.silu(A[i, j]), name="Y")
    Z = tc.compute((8, 8), lambda i, j: Y[i, j] + 1.0, name="Z")
    P = tc.compute((8, 8), lambda i, j: Z[i, j] * Y[j, i], name="P")
    space = Space(P)
    assert space.options == {"Y": ("root",), "Z": ("inline", "root")}
    out = matmul_silu_quant.algorithm(64, 64, 64)
    assert "inline" not in Space(out).options["C"]


def test_matrix_products_are_recognised_through_casts():
    out = ffn_bf16.algorithm(64, 64, 64)
    s = tc.create_schedule(out)
    assert matrix_product_operands(s["C"].op) == ("A", "W")
    assert matrix_product_operands(s["Q"].op) is None


def test_samples_and_mutations_stay_in_the_space_and_follow_the_seed():
    space = Space(matmul_silu_quant.algorithm(256, 256, 256))

    def walk(seed):
        rng = random.Random(seed)
        points = [space.sample(rng) for _ in range(20)]
        points += [space.mutate(p, rng) for p in points]
        return [p for p in points if p is not None]

    points = walk(3)
    assert len(points) > 25 and all(space.contains(p) for p in points)
    assert walk(3) == points and walk(4) != points
    assert len({p.fusion for p in points}) > 1


def test_a_registered_rule_joins_the_space():
    class OneThreadPerRow(Rule):
        name = "one_thread_per_row_test"

        def applies(self, group, space):
            return not group.fused and not space.stages[group.anchor].reduction

        def choices(self, group, space):
            return {"threads": [32]}

        def apply(self, s, group, p):
            i, j = s[group.anchor].axis
            bo, t = s[group.anchor].split(i, p["threads"])
            s[group.anchor].bind(bo, "blockIdx.x")
            s[group.anchor].bind(t, "threadIdx.x")

    rule = register_rule(OneThreadPerRow())
    try:
        A = tc.placeholder((64, 8), "float32", name="A")
        Y = tc.compute((64, 8), lambda i, j: tc.silu(A[i, j]), name="Y")
        space = Space(Y)
        assert rule in space.rules_for(space.groups(())[0])
        point = Point((), (("Y", rule.name, (("threads", 32),)),))
        assert space.contains(point)
        tc.check(space.schedule(point))
        with pytest.raises(ValueError, match="registered already"):
            register_rule(OneThreadPerRow())
    finally:
        unregister_rule(rule)


def test_a_space_that_no_rule_can_tile_says_so():
    space = Space(matmul_silu_quant.algorithm(32, 32, 32), rules=[])
    with pytest.raises(tc.TcompError, match="the search space of C, Y, Q is empty.*rules: none"):
        space.sample(random.Random(0))


def test_a_matrix_product_keeps_its_tiling_when_its_fusion_changes():
    """with_fusion: C fused into Q keeps the tile sizes it had as its own kernel (the
    partitions compared at equal tiles), and back; the elementwise kernel is drawn."""
    space = Space(matmul_silu_quant.algorithm(256, 256, 256))
    rule, params = LADDER_POINTS["warptiled"]
    rng = random.Random(0)
    alone = Point((("C", "root"), ("Y", "inline")), (("C", rule, _params(**params)),
                                                     ("Q", "flat_tiling", _params(threads=128, vector=4))))
    assert space.contains(alone)
    fused = space.with_fusion(alone, (("C", "fused"), ("Y", "inline")), rng)
    assert fused.tilings == (("Q", rule, _params(**params)),) and space.contains(fused)
    back = space.with_fusion(fused, alone.fusion, rng)
    assert dict((a, (r, p)) for a, r, p in back.tilings)["C"] == (rule, _params(**params))
    assert space.contains(back)
    assert space.with_fusion(alone, (("C", "inline"), ("Y", "inline")), rng) is None  # not offered


def _decode_matmul(M, N, K):
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, "k")
    return tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")


def test_split_k_joins_the_space_where_the_output_cannot_fill_the_gpu():
    small = Space(_decode_matmul(16, 64, 256))
    group = small.groups(small.tileable_fusions()[0])[0]
    assert "split_k" in [r.name for r in small.rules_for(group)]
    big = Space(_decode_matmul(512, 512, 512))
    group = big.groups(big.tileable_fusions()[0])[0]
    assert "split_k" not in [r.name for r in big.rules_for(group)]


def test_a_split_k_point_is_legal_reports_its_reassociation_and_matches(rng):
    from workloads import check_float

    out = _decode_matmul(16, 64, 128)
    space = Space(out)
    draw = random.Random(2)
    point = next(p for p in (space.sample(draw) for _ in range(200))
                 if p is not None and p.tilings[0][1] == "split_k")
    assert space.contains(point)
    s = space.schedule(point)
    report = tc.check(s)
    assert report.legal and [r.stage for r in report.reassociations] == ["C"]
    a = rng.standard_normal((16, 128)).astype("float32")
    w = rng.standard_normal((128, 64)).astype("float32")
    got = np.full((16, 64), np.nan, "float32")
    tc.build(s)(a, w, got)
    check_float(got, a.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


def test_a_row_reduction_gets_a_block_per_row_and_matches(rng):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_candidates import _matmul_row_scaled_quant

    out = _matmul_row_scaled_quant(16, 64, 16)
    space = Space(out)
    draw = random.Random(0)
    point = next(p for p in (space.sample(draw) for _ in range(200))
                 if p is not None and any(rule == "row_reduction" for _, rule, _ in p.tilings))
    s = space.schedule(point)
    report = tc.check(s)
    assert report.legal and any(r.stage == "R" and r.exact for r in report.reassociations)
    A, W = s.placeholders
    a = rng.standard_normal((16, 16)).astype("float32")
    w = rng.standard_normal((16, 64)).astype("float32")
    got = np.full((16, 64), -77, np.int8)
    tc.build(s)(a, w, got)
    want = tc.evaluate(out, {A: a, W: w})
    assert np.abs(got.astype(int) - want).max() <= 1 and np.count_nonzero(got != want) <= 2


def _quantized_operand_matmul(M=32, K=64, N=32):
    """The quantized matmul of tests/cost/chapter.py (example_5_8) in small: A quantized to fp8 with its row's max, then
    multiplied by an fp8 W."""
    A = tc.placeholder((M, K), "float16", name="A")
    W = tc.placeholder((K, N), "float8_e4m3", name="W")
    r = tc.reduce_axis(K, name="r")
    R = tc.compute((M,), lambda i: tc.max(tc.abs(A[i, r]), axis=r), name="R")
    Aq = tc.compute((M, K), lambda i, k: tc.quantize(A[i, k], R[i] / 448.0, "float8_e4m3"), name="Aq")
    k = tc.reduce_axis(K, name="k")
    return tc.compute((M, N), lambda i, j: tc.sum(tc.cast(Aq[i, k], "float32") * tc.cast(W[k, j], "float32"),
                                                 axis=k), name="C")


def test_an_elementwise_operand_of_a_product_can_be_computed_in_its_tile_fill(rng):
    import ml_dtypes

    out = _quantized_operand_matmul()
    space = Space(out)
    assert space.options["Aq"] == ("staged", "root")
    assert {frozenset({"Aq", "C"}), frozenset({"R"})} in [set(p) for p in space.partitions()]
    draw = random.Random(0)
    point = next(p for p in (space.sample(draw) for _ in range(200))
                 if p is not None and dict(p.fusion)["Aq"] == "staged")
    s = space.schedule(point)
    assert tc.check(s).legal and [k.name for k in tc.lower(s).kernels][-1].startswith("k_C")
    assert "k_Aq" not in [k.name for k in tc.lower(s).kernels]  # quantized where the A tile is filled
    A, W = s.placeholders
    a = rng.standard_normal((32, 64)).astype(np.float16)
    w = rng.standard_normal((64, 32)).astype(ml_dtypes.float8_e4m3fn)
    got = np.full((32, 32), np.nan, np.float32)
    tc.build(s)(a, w, got)
    want = tc.evaluate(out, {A: a, W: w})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("rule, params", [
    ("warp_tiling", dict(BK=8, BM=64, BN=64, TM=4, TN=4, WM=32, WN=32, WNITER=1, k_unroll=2,
                         double_buffer=False, pipeline=3, split_k=2)),
    ("block_tiling", dict(BK=8, BM=32, BN=32, TM=4, TN=4, k_unroll=1, transpose_a=False, vector=4,
                          double_buffer=False, pipeline=0, fragment_k=4, split_k=4)),
])
def test_a_tiling_split_over_k_is_legal_reports_its_reassociation_and_matches(rule, params, rng):
    """The tiling rules' ``split_k``: the k axis in slices on blockIdx.z, each slice with
    a k tail (a slice of 36 / 2 or 40 / 4 is not a multiple of BK = 8), then added."""
    from workloads import check_float

    M, N, K = (64, 64, 36) if rule == "warp_tiling" else (40, 36, 40)
    out = _decode_matmul(M, N, K)
    space = Space(out)
    (fusion,) = space.tileable_fusions()
    (group,) = space.groups(fusion)
    point = Point(fusion, ((group.anchor, rule, _params(**params)),))
    assert space.contains(point)
    s = space.schedule(point)
    assert f"s.rfactor('C', {params['split_k']})" in s.trace_source(with_sites=False)
    report = tc.check(s)
    assert report.legal and [r.stage for r in report.reassociations] == ["C"]
    a = rng.standard_normal((M, K)).astype("float32")
    w = rng.standard_normal((K, N)).astype("float32")
    got = np.full((M, N), np.nan, "float32")
    tc.build(s)(a, w, got)
    check_float(got, a.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


def test_split_k_is_offered_only_where_the_output_tiles_leave_sms_idle():
    big = Space(_decode_matmul(2048, 4096, 256))
    group = big.groups(big.tileable_fusions()[0])[0]
    rule = next(r for r in big.rules_for(group) if r.name == "warp_tiling")
    p = dict(BK=8, BM=128, BN=128, TM=4, TN=4, WM=32, WN=64, WNITER=2, k_unroll=2, double_buffer=False,
             pipeline=3)
    assert rule.valid(group, big, {**p, "split_k": 1})
    assert not rule.valid(group, big, {**p, "split_k": 2})  # 512 tiles: more than two blocks per SM
    small = Space(_decode_matmul(1000, 1000, 1000))
    group = small.groups(small.tileable_fusions()[0])[0]
    assert rule.valid(group, small, {**p, "split_k": 2}) and rule.valid(group, small, {**p, "split_k": 4})
    assert not rule.valid(group, small, {**p, "BM": 64, "split_k": 8})  # not a choice, and 128 x 8 blocks


def test_the_tensor_core_rule_joins_the_space_of_16_bit_products_only():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import gemm_bf16

    for out, offered in ((gemm_bf16.algorithm(128, 128, 64), True), (ffn_bf16.algorithm(128, 128, 64), True),
                         (sgemm_ladder.algorithm(128, 128, 64), False)):
        space = Space(out)
        groups = [g for f in space.tileable_fusions() for g in space.groups(f) if g.reductions]
        assert any(("mma_tiling" in [r.name for r in space.rules_for(g)]) for g in groups) == offered


def test_a_tensor_core_point_is_legal_and_matches(rng):
    """The search's mma_tiling at 64 x 64 x 64: four warps of 32 x 32, 3-stage rings, the
    blocks launched column by column."""
    import ml_dtypes

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import gemm_bf16

    out = gemm_bf16.algorithm(64, 64, 64)
    space = Space(out)
    (fusion,) = space.tileable_fusions()
    (group,) = space.groups(fusion)
    point = Point(fusion, ((group.anchor, "mma_tiling", _params(BM=64, BN=64, BK=32, WM=32, WN=32, stages=3,
                                                                      rows_fastest=True)),))
    assert space.contains(point)
    s = space.schedule(point)
    assert "tensorize(" in s.trace_source(with_sites=False)
    report = tc.check(s)
    assert report.legal and [r.stage for r in report.reassociations] == ["C_local"]
    a = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
    got = np.full((64, 64), np.nan, "float32")
    tc.build(s)(a, w, got)
    want = a.astype(np.float64) @ w.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(w).astype(np.float64)
    assert np.all(np.abs(got - want) <= 2 * 64 * 2.0 ** -24 * scale)


def test_a_warpgroup_point_is_legal_matches_and_is_written_as_plain_primitives(rng):
    """The search's wgmma_tiling at 64 x 64 x 192: one warpgroup of wgmma.m64n64k16,
    3-stage rings in the 128-byte swizzle, one chain left running per k step."""
    import ml_dtypes

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import gemm_bf16

    out = gemm_bf16.algorithm(64, 64, 192)
    space = Space(out)
    (fusion,) = space.tileable_fusions()
    (group,) = space.groups(fusion)
    assert "wgmma_tiling" in [r.name for r in space.rules_for(group)]
    point = Point(fusion, ((group.anchor, "wgmma_tiling", _params(BM=64, BN=64, BK=64, stages=3,
                                                                        rows_fastest=False)),))
    assert space.contains(point)
    s = space.schedule(point)
    source = s.trace_source(with_sites=False)
    assert "storage_swizzle()" in source and "'wgmma_m64n64k16'" in source and "reader_lag=1" in source
    report = tc.check(s)
    assert report.legal and [r.stage for r in report.reassociations] == ["C_local"]
    a = rng.standard_normal((64, 192)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((192, 64)).astype(ml_dtypes.bfloat16)
    got = np.full((64, 64), np.nan, "float32")
    tc.build(s)(a, w, got)
    want = a.astype(np.float64) @ w.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(w).astype(np.float64)
    assert np.all(np.abs(got - want) <= 2 * 192 * 2.0 ** -24 * scale)


def test_spaces_of_one_algorithm_share_the_enumerated_parameters():
    """Enumerating a rule's choices takes about a second; a second Space of the same
    algorithm (another search in the same process) reuses the list, another shape does not."""
    first, again, other = (Space(matmul_silu_quant.algorithm(*shape)) for shape in ((32, 32, 32), (32, 32, 32),
                                                                                 (64, 32, 32)))
    groups = first.groups(first.tileable_fusions()[0])
    rule = first.rules_for(groups[0])[0]
    assert again.valid_params(rule, groups[0]) is first.valid_params(rule, groups[0])
    assert other.valid_params(rule, groups[0]) is not first.valid_params(rule, groups[0])


def test_the_wgmma_rule_offers_persistent_blocks_only_past_one_wave_with_a_producer():
    """``persistent`` (the target's SMs) is offered for a warp-specialized ring whose tiles
    are more than one wave (4096 rows: 512 blocks of 128 x 256), and lowers to one block
    an SM; not without a producer warpgroup, nor for 1024 rows (128 blocks, one wave)."""
    import gemm_bf16

    def point(M, **p):
        space = Space(gemm_bf16.algorithm(M, 4096, 4096))
        (fusion,) = space.tileable_fusions()
        (group,) = space.groups(fusion)
        tiles = dict(BM=128, BN=256, BK=64, stages=4, split_k=1, copy="tma", rows_fastest=True, grouped=True)
        return space, Point(fusion, ((group.anchor, "wgmma_tiling", _params(**{**tiles, **p})),))

    sms = get_target().sms
    space, wide = point(4096, specialized=True, persistent=sms)
    assert space.contains(wide)
    assert tc.lower(space.schedule(wide)).kernels[0].grid == (sms, 1, 1)
    for M, p in ((4096, dict(specialized=False, persistent=sms)), (1024, dict(specialized=True, persistent=sms))):
        space, refused = point(M, **p)
        assert not space.contains(refused), (M, p)


def test_the_wgmma_rule_offers_groups_of_block_rows_only_for_a_tall_column():
    """``grouped`` launches a column first in groups of ``row_group`` block rows: offered
    with ``rows_fastest`` where the column has more than 24 blocks (4096 rows of 128, in
    groups of 16: 16 block columns x 16 rows on blockIdx.x, 2 groups on blockIdx.y), not
    for blocks along a row nor for 1024 rows (8 block rows, one column whole)."""
    import gemm_bf16

    def point(M, **p):
        space = Space(gemm_bf16.algorithm(M, 4096, 4096))
        (fusion,) = space.tileable_fusions()
        (group,) = space.groups(fusion)
        tiles = dict(BM=128, BN=256, BK=64, stages=4, split_k=1, copy="cp.async", specialized=False)
        return space, Point(fusion, ((group.anchor, "wgmma_tiling", _params(**tiles, **p)),))

    space, tall = point(4096, rows_fastest=True, grouped=True)
    assert space.contains(tall)
    assert tc.lower(space.schedule(tall)).kernels[0].grid == (256, 2, 1)
    for M, order in ((4096, dict(rows_fastest=False, grouped=True)), (1024, dict(rows_fastest=True, grouped=True))):
        space, short = point(M, **order)
        assert not space.contains(short), (M, order)


def test_the_wgmma_rule_seeds_the_wide_tiling_where_it_fills_the_sms():
    """The search measures the example's wide tiling first (128 x 256, 4 stages, a column
    first in groups, TMA from a producer warpgroup, then cp.async) where its blocks give
    nine SMs in ten one each (4096 x 4096: 512 blocks); not at 1024 x 1024 (32 blocks)."""
    import gemm_bf16_rounded

    space = Space(gemm_bf16_rounded.algorithm(4096, 4096, 4096))
    seeds = space.seed_points()
    assert [dict(params)["copy"] for _, rule, params in (p.tilings[0] for p in seeds)] == ["tma", "cp.async"]
    for point in seeds:
        ((_, rule, params),) = point.tilings
        assert rule == "wgmma_tiling" and space.contains(point)
        assert {k: dict(params)[k] for k in ("BM", "BN", "stages", "grouped", "rows_fastest")} == \
            dict(BM=128, BN=256, stages=4, grouped=True, rows_fastest=True)
    assert Space(gemm_bf16_rounded.algorithm(1024, 1024, 1024)).seed_points() == []


def test_the_wgmma_rule_counts_a_batchs_blocks_for_its_seed():
    """Eight products of 1024^3 make 256 blocks of 128 x 256 (32 each): the wide tiling is
    seeded (TMA from a producer warpgroup, then cp.async), where one product alone (32
    blocks) is not."""
    import batched_gemm_bf16_rounded

    space = Space(batched_gemm_bf16_rounded.algorithm(8, 1024, 1024, 1024))
    seeds = space.seed_points()
    assert seeds and all(space.contains(p) for p in seeds)
    params = [dict(p.tilings[0][2]) for p in seeds]
    assert [(p["BM"], p["BN"], p["stages"], p["copy"]) for p in params] == [(128, 256, 4, "tma"), (128, 256, 4, "cp.async")]
    assert Space(batched_gemm_bf16_rounded.algorithm(1, 1024, 1024, 1024)).seed_points() == []
