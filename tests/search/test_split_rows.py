"""Rows split over blocks (issue 32, the chapter's Figure 5-11): a row operator of fewer
rows than SMs, each statistic reduced in segments of the row on blocks of their own and
the segments merged in a fixed order (``rows_over_blocks``, the ``split_rows`` rule)."""

import random
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.search.space import Space
from tcomp.search.tiling import ROW_KERNEL, SPLIT_ROWS, rows_over_blocks
from workloads import run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import layernorm  # noqa: E402
import rmsnorm  # noqa: E402
import softmax  # noqa: E402


def _softmax64(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("N, segments, threads", [(512, 4, 32), (131, 3, 8), (97, 5, 16)])
def test_a_split_softmax_matches_float64(rng, N, segments, threads):
    """The max in segments, merged by a kernel of its own; the sum of the exponentials in
    segments, merged by each block of the output. Rows of a prime length have padded
    segments and slices (the terms past the row's end are the identity)."""
    Y = softmax.algorithm(2, N)
    s = tc.create_schedule(Y)
    rows_over_blocks(s, Y, ["Mx", "S"], inline=("E",), segments=segments, threads=threads, vector=1)
    program = tc.lower(s)
    assert [k.name for k in program.kernels] == ["k_Mx_rf", "k_Mx", "k_S_rf", "k_Y"]
    assert program.kernels[0].grid[0] == 2 * segments  # a block per (row, segment)
    report = tc.check(s)
    assert report.legal
    assert f"{segments} partial results (S_rf)" in str(report)
    x = (rng.standard_normal((2, N)) * 4.0).astype(np.float32)
    np.testing.assert_allclose(run(s, [x]), _softmax64(x), rtol=1e-5, atol=1e-7)


def test_a_split_rmsnorm_is_two_kernels_and_matches_tc_evaluate(rng):
    """One statistic: its segments on blocks, then the output's blocks each merge them
    (the same order in every block, so every block sees the same sum)."""
    Y = rmsnorm.algorithm(1, 512)
    s = tc.create_schedule(Y)
    rows_over_blocks(s, Y, ["SS"], segments=8, threads=32, vector=8)
    assert [k.name for k in tc.lower(s).kernels] == ["k_SS_rf", "k_Y"]
    assert tc.check(s).legal
    x = (rng.standard_normal((1, 512)) * 3.0).astype(ml_dtypes.bfloat16)
    gamma = rng.uniform(0.5, 1.5, 512).astype(ml_dtypes.bfloat16)
    want = tc.evaluate(Y, dict(zip(tc.inputs(Y), [x, gamma])))
    got = run(s, [x, gamma])
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=8e-3, atol=1e-6)


def test_a_split_layernorm_matches_tc_evaluate(rng):
    Y = layernorm.algorithm(2, 384)
    s = tc.create_schedule(Y)
    rows_over_blocks(s, Y, ["Sx", "Sd"], inline=("D",), segments=6, threads=32, vector=4)
    assert tc.check(s).legal
    x = (rng.standard_normal((2, 384)) * 3.0 + 5.0).astype(ml_dtypes.bfloat16)
    gamma, beta = (rng.uniform(0.5, 1.5, 384).astype(ml_dtypes.bfloat16) for _ in range(2))
    want = tc.evaluate(Y, dict(zip(tc.inputs(Y), [x, gamma, beta])))
    got = run(s, [x, gamma, beta])
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=8e-3, atol=1e-2)


def test_bad_segments_are_refused_by_name():
    Y = softmax.algorithm(2, 64)
    s = tc.create_schedule(Y)
    with pytest.raises(tc.TcompError, match="segments must be an integer from 2 to the row's length 64, got 1"):
        rows_over_blocks(s, Y, ["Mx", "S"], inline=("E",), segments=1)


def test_the_rule_applies_to_fewer_rows_than_sms_only():
    few = Space(softmax.algorithm(4, 1024))
    many = Space(softmax.algorithm(256, 1024))
    for space, names in ((few, ["row_kernel", "split_rows"]), (many, ["row_kernel"])):
        (fusion,) = [f for f in space.tileable_fusions() if len(space.groups(f)) == 1]
        (group,) = space.groups(fusion)
        assert [r.name for r in space.rules_for(group)] == names


def test_the_model_ranks_a_split_first_for_one_long_row():
    """One row of a vocabulary (151,936 logits, Qwen3's, 128 x 1187): a block alone
    would read 594 KB through one SM; split, every SM takes a segment. The model's best
    split point is predicted faster than its best one-block point."""
    Y = softmax.algorithm(1, 151936)
    space = Space(Y, rules=[ROW_KERNEL, SPLIT_ROWS])
    (fusion,) = [f for f in space.tileable_fusions() if len(space.groups(f)) == 1]
    (group,) = space.groups(fusion)
    from tcomp.cost.model import estimate

    draws = random.Random(0)
    best = {}
    for _ in range(24):
        point = space.sample(draws, fusion)
        ((_, rule, _),) = point.tilings
        predicted = estimate(space.schedule(point), "h200").predicted_seconds
        best[rule] = min(best.get(rule, predicted), predicted)
    assert set(best) == {"row_kernel", "split_rows"}
    assert best["split_rows"] < best["row_kernel"]
