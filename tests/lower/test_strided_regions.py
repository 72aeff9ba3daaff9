"""Bound inference for strided regions: a thread whose outputs lie in sub-tiles at a
stride (warptiling) gets registers for exactly those outputs, not for the whole span
between them."""

import sys
from pathlib import Path

import numpy as np

import tcomp as tc
from tcomp.ir.expr import IntImm, Var, binary
from tcomp.ir.simplify import simplify
from tcomp.lower.intervals import Interval, StridedInterval, strided_interval
from workloads import check_float

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import sgemm_ladder as ladder  # noqa: E402

w, r, t = Var("w"), Var("r"), Var("t")
RANGING = {w: Interval(IntImm(0), 4), r: Interval(IntImm(0), 4), t: Interval(t, 1)}


def test_sub_tiles_at_a_stride_make_a_compact_region():
    region = strided_interval(binary("+", binary("+", binary("*", w, 16), binary("*", t, 4)), r), RANGING)
    assert isinstance(region, StridedInterval)
    assert region.extent == 16 and region.pieces == ((16, 4), (1, 4))
    assert str(region.min) == "t * 4"
    offsets = [simplify(region.expand(IntImm(c))).value for c in range(16)]
    assert offsets == [16 * a + b for a in range(4) for b in range(4)]
    assert [simplify(region.compress(IntImm(x))).value for x in offsets] == list(range(16))


def test_dense_or_colliding_accesses_are_not_strided():
    assert strided_interval(binary("+", binary("*", w, 4), r), RANGING) is None  # dense: [0, 16)
    assert strided_interval(binary("+", binary("*", w, 2), r), RANGING) is None  # overlapping
    assert strided_interval(binary("-", binary("*", w, 16), r), RANGING) is None  # negative coefficient


def _warptiled(M, N, K):
    C = ladder.algorithm(M, N, K)
    s = tc.create_schedule(C)
    ladder.schedule_warptiled(s, C, BM=64, BN=64, BK=8, WM=32, WN=32, WNITER=2, TM=4, TN=4)
    return C, s


def _allocations(s):
    from tcomp.ir.stmt import Allocate
    from tcomp.ir.visitor import walk

    return {n.buffer.name: n.buffer.shape for k in tc.lower(s).kernels for n in walk(k.body)
            if isinstance(n, Allocate)}


def test_warptile_registers_hold_only_the_threads_outputs():
    # each thread: 4 rows x (2 sub-tiles of 4 columns, 16 apart)
    C, s = _warptiled(64, 64, 16)
    shapes = _allocations(s)
    assert shapes["C_local"] == (4, 8)
    assert shapes["B_shared_local"] == (1, 8)
    assert shapes["A_shared_local"] == (4, 1)


def test_warptiled_matmul_matches_with_tails(rng):
    M, N, K = 50, 70, 12
    C, s = _warptiled(M, N, K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    out = np.full((M, N), np.nan, np.float32)
    tc.build(s)(a, b, out)
    check_float(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)
