"""A sweep of the auto-scheduler's matmul tilings at one shape, every point measured
(not searched): how fast the space's best point is, and how the cost model ranks them,
beside cuBLAS fp32 and Triton fp32 (ieee, best of four configurations) in the same run.

    python benchmarks/tile_sweep.py --shape 1000,1000,1000 [--limit 64] [--seed 0]

Points are drawn (seeded) from the valid ones of ``block_tiling`` and ``warp_tiling``
with double buffering or a cp.async pipeline and block tiles of at most 128 x 128 that fit an SM, built in a
process pool and measured by the search's own runner (every output compared with the
reference, then timed as the search times them; ``tc.check`` is skipped: they are points
of the space, which the search checks). Prints every point sorted by time and the Kendall tau of the
model's predictions over them.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.append(HERE)


def sweep_points(space, limit: int, seed: int) -> list:
    """Up to ``limit`` valid points of the matmul's tiling rules, drawn with ``seed``."""
    from tcomp.search.space import Point

    (fusion,) = space.tileable_fusions()
    (group,) = space.groups(fusion)
    points = []
    for rule in space.rules_for(group):
        if rule.name not in ("block_tiling", "warp_tiling"):
            continue
        choices = rule.choices(group, space)
        names = list(choices)
        for combo in itertools.product(*(choices[n] for n in names)):
            p = dict(zip(names, combo))
            if (not (p.get("double_buffer") or p.get("pipeline")) or p["BM"] > 128 or p["BN"] > 128
                    or not rule.valid(group, space, p)):
                continue
            points.append(Point(fusion, ((group.anchor, rule.name, tuple(sorted(p.items()))),)))
    random.Random(seed).shuffle(points)
    return points[:limit]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="1000,1000,1000", help="M,N,K")
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    import sgemm_ladder
    from tcomp.cost import estimate
    from tcomp.search.measure import measure_batch, prebuild, prepare_bench
    from tcomp.search.space import Space
    from tcomp.search.search import kendall_tau
    from autoschedule import _baselines  # benchmarks/autoschedule.py

    M, N, K = (int(v) for v in args.shape.split(","))
    out = sgemm_ladder.algorithm(M=M, N=N, K=K)
    space = Space(out)
    points, predicted = [], []
    for p in sweep_points(space, 4 * args.limit, args.seed):
        est = estimate(space.schedule(p))
        if all(k.fits for k in est.kernels) and len(points) < args.limit:
            points.append(p)
            predicted.append(est.predicted_seconds)
    sources = [space.schedule(p).trace_source(with_sites=False) for p in points]
    print(f"{len(points)} points at {M}x{N}x{K}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        bench = prepare_bench(out, folder)
        t0 = time.perf_counter()
        with ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("spawn")) as pool:
            errors = list(pool.map(prebuild, [bench] * len(sources), sources, [True] * len(sources)))
        print(f"built in {time.perf_counter() - t0:.0f} s; {sum(bool(e) for e in errors)} failed", flush=True)
        results = measure_batch(bench, sources, repeats=10, checked=True)
        baselines = _baselines("sgemm", bench, os.path.join(bench, "reference0.npy"))
    rows = sorted(((m.measured, pred, p.describe(), m.status) for p, pred, m in zip(points, predicted, results)),
                  key=lambda r: (r[0] is None, r[0] or 0))
    flops = 2 * M * N * K
    for label, t in baselines.items():
        print(f"{label:40s} {t * 1e6:8.1f} us {flops / t / 1e12:6.2f} TFLOP/s")
    print(f"{'measured us':>11s} {'predicted':>9s}  point")
    for measured, pred, text, status in rows:
        shown = f"{measured * 1e6:11.1f}" if measured else f"{status:>11s}"
        print(f"{shown} {pred * 1e6:9.1f}  {text}")
    ok = [(pred, m.measured) for pred, m in zip(predicted, results) if m.status == "ok"]
    print(f"kendall tau over {len(ok)}: {kendall_tau(ok):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
