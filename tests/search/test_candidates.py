"""A sample of the search space's candidates of every example workload is legal (or
refused by a filter with a reason) and, built and run in the simulator, matches the
reference."""

import random
import sys
from pathlib import Path

import pytest

from tcomp.search.filters import Screener
from tcomp.search.measure import measure_batch, prepare_bench
from tcomp.search.space import Space

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import ffn_bf16  # noqa: E402
import matmul_silu_quant  # noqa: E402
import sgemm_ladder  # noqa: E402
import silu_mul_quant  # noqa: E402

def _matmul_row_scaled_quant(M=32, N=32, K=16):
    """C = A @ W, R = the max |C| of each row, Q = quantize(C, R / 127, int8)."""
    import tcomp as tc

    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    jr = tc.reduce_axis(N, name="jr")
    R = tc.compute((M,), lambda i: tc.max(tc.abs(C[i, jr]), axis=jr), name="R")
    return tc.compute((M, N), lambda i, j: tc.quantize(C[i, j], R[i] / 127.0, "int8"), name="Q")


EXAMPLES = {
    "matmul_row_scaled_quant": _matmul_row_scaled_quant,
    "sgemm_ladder": lambda: sgemm_ladder.algorithm(32, 32, 32),
    "matmul_silu_quant": lambda: matmul_silu_quant.algorithm(32, 32, 16),
    "ffn_bf16": lambda: ffn_bf16.algorithm(16, 32, 16),
    "silu_mul_quant": lambda: silu_mul_quant.algorithm(16, 32),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_sampled_candidates_are_legal_and_match_the_reference(name, tmp_path):
    out = EXAMPLES[name]()
    space = Space(out)
    rng = random.Random(11)
    fusions = space.tileable_fusions()
    points = [space.sample(rng, fusions[n % len(fusions)]) for n in range(6)]
    screened = Screener(space, workers=2).screen([p for p in points if p is not None])
    assert all(s.status in ("ok", "over capacity", "illegal", "timeout") for s in screened)
    assert all(s.error for s in screened if s.status != "ok")
    legal = [s for s in screened if s.status == "ok"]
    assert len(legal) >= 2, [s.error for s in screened]
    legal.sort(key=lambda s: s.predicted)
    bench = prepare_bench(out, tmp_path / "bench")
    for s, m in zip(legal[:2], measure_batch(bench, [s.source for s in legal[:2]])):
        assert m.status == "ok", f"{s.point.describe()}: {m.error}"


def test_a_kernel_reading_a_warp_tiled_producer_checks_within_the_limit():
    """The flow analysis of this pair took minutes inside one isl call; a reader in a later
    kernel than every write now needs only that the writes cover what it reads."""
    from tcomp.search.space import Point

    out = matmul_silu_quant.algorithm(256, 256, 256)
    space = Space(out)
    warps = dict(BK=8, BM=128, BN=128, TM=8, TN=4, WM=64, WN=64, WNITER=4, double_buffer=True, pipeline=0, k_unroll=4,
                 split_k=1)
    point = Point((("C", "fused"), ("Y", "root")),
                  (("Y", "warp_tiling", tuple(sorted(warps.items()))),
                   ("Q", "flat_tiling", (("threads", 256), ("vector", 1)))))
    assert space.contains(point)
    (screened,) = Screener(space, workers=1, seconds=10).screen([point])
    assert screened.status == "ok", screened.error


@pytest.mark.parametrize("overlap", [dict(double_buffer=False, pipeline=3), dict(double_buffer=True, pipeline=4),
                                     dict(double_buffer=True, pipeline=0)])
def test_pipelined_points_with_fragments_of_four_k_match_the_reference(overlap, tmp_path):
    """Block tilings whose tiles are cp.async rings (both, or B only) and whose register
    fragments hold four k at once (A read as vectors along k), at a shape no tile divides."""
    import tcomp as tc
    from tcomp.codegen import program_source
    from tcomp.search.space import Point

    params = dict(BK=16, BM=32, BN=32, TM=2, TN=4, transpose_a=False, vector=4, k_unroll=1, fragment_k=4, split_k=1,
                  **overlap)
    tiling = (("C", "block_tiling", tuple(sorted(params.items()))),)
    divisible = Space(sgemm_ladder.algorithm(64, 64, 48))
    source = program_source(tc.lower(divisible.schedule(Point((), tiling))), simulator=False)
    assert "_load4(A_shared, " in source and ("_cp_async16(B_shared, " in source) == bool(overlap["pipeline"])
    out = sgemm_ladder.algorithm(40, 36, 44)  # NOTE: the shifted tiles' rows: 4-byte copies
    space = Space(out)
    point = Point((), tiling)
    assert space.contains(point)
    (screened,) = Screener(space, workers=1).screen([point])
    assert screened.status == "ok", screened.error
    (m,) = measure_batch(prepare_bench(out, tmp_path / "bench"), [screened.source])
    assert m.status == "ok", m.error
