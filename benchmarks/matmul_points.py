"""Shared by the benchmarks that measure chosen points of the fp32 matmul's tiling space
(``split_k.py``, ``boundary_fills.py``): each point built from its rule and parameters,
measured by the search's runner (output compared with the reference, then timed), beside
cuBLAS fp32 and Triton fp32 (ieee, best of four) in the same run, with the cost model's
prediction printed beside each."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.append(HERE)


def measure_points(M: int, N: int, K: int, points) -> None:
    """Measure ``points``, ``(rule name, parameters)`` pairs, at M x N x K and print them;
    a point that is not in the space at this shape is named and left out."""
    import sgemm_ladder
    import tcomp as tc
    from autoschedule import _baselines  # benchmarks/autoschedule.py
    from tcomp.search.measure import measure_batch, prepare_bench
    from tcomp.search.space import Point, Space

    out = sgemm_ladder.algorithm(M=M, N=N, K=K)
    space = Space(out)
    (fusion,) = space.tileable_fusions()
    (group,) = space.groups(fusion)
    rules = {rule.name: rule for rule in space.rules_for(group)}
    labels, sources, predicted = [], [], []
    for rule, p in points:
        described = f"{rule} {' '.join(f'{k}={v}' for k, v in p.items())}"
        if not rules[rule].valid(group, space, p):
            print(f"not in the space at this shape: {described}")
            continue
        schedule = space.schedule(Point(fusion, ((group.anchor, rule, tuple(sorted(p.items()))),)))
        labels.append(described)
        sources.append(schedule.trace_source(with_sites=False))
        predicted.append(tc.estimate(schedule).predicted_seconds)
    with tempfile.TemporaryDirectory() as folder:
        bench = prepare_bench(out, folder)
        results = measure_batch(bench, sources, repeats=10)
        baselines = _baselines("sgemm", bench, os.path.join(bench, "reference0.npy"))
    flops = 2 * M * N * K
    for label, t in baselines.items():
        print(f"{label:40s} {t * 1e6:8.1f} us {flops / t / 1e12:6.2f} TFLOP/s")
    print("measured us predicted  point")
    for label, m, guess in zip(labels, results, predicted):
        shown = f"{m.measured * 1e6:11.1f}" if m.status == "ok" else f"{m.status}: {m.error[:200]}"
        print(f"{shown} {guess * 1e6:9.1f}  {label}")
