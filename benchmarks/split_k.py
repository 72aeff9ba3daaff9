"""Split-K for a matmul whose output tiles cannot fill the H200's 132 SMs (1000^3 at
64 x 128 or 128 x 128 tiles: 128 or 64 tiles), measured in one run beside cuBLAS fp32 and
Triton fp32 (ieee, best of four).

    python benchmarks/split_k.py [--shape 1000,1000,1000] [--only TEXT]

Each tiling of the search's space is measured whole (``split_k=1``) and with its k axis
in 2 and 4 slices (``s.rfactor``, the slices on ``blockIdx.z``, partial sums in device
memory, then one kernel adding them). Every variant's output is compared with the
reference before it is timed (the search's runner).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.append(HERE)

TILINGS = [  # (rule, parameters without split_k)
    ("block_tiling", dict(BK=32, BM=64, BN=64, TM=8, TN=4, k_unroll=1, transpose_a=False, vector=4,
                          double_buffer=False, pipeline=3, fragment_k=4)),
    ("block_tiling", dict(BK=32, BM=64, BN=64, TM=8, TN=4, k_unroll=1, transpose_a=False, vector=4,
                          double_buffer=False, pipeline=4, fragment_k=4)),
    ("block_tiling", dict(BK=16, BM=64, BN=64, TM=4, TN=4, k_unroll=1, transpose_a=False, vector=4,
                          double_buffer=False, pipeline=3, fragment_k=4)),
    ("warp_tiling", dict(BK=16, BM=128, BN=128, TM=4, TN=4, WM=32, WN=128, WNITER=4, k_unroll=8,
                         double_buffer=False, pipeline=3)),
    ("warp_tiling", dict(BK=16, BM=128, BN=128, TM=4, TN=4, WM=32, WN=64, WNITER=2, k_unroll=4,
                         double_buffer=False, pipeline=4)),
    ("warp_tiling", dict(BK=8, BM=128, BN=128, TM=4, TN=4, WM=32, WN=128, WNITER=4, k_unroll=8,
                         double_buffer=True, pipeline=0)),
    ("warp_tiling", dict(BK=8, BM=64, BN=128, TM=8, TN=4, WM=32, WN=128, WNITER=4, k_unroll=8,
                         double_buffer=True, pipeline=0)),
    ("warp_tiling", dict(BK=16, BM=64, BN=128, TM=8, TN=4, WM=64, WN=32, WNITER=2, k_unroll=4,
                         double_buffer=False, pipeline=3)),
    ("block_tiling", dict(BK=32, BM=64, BN=128, TM=8, TN=4, k_unroll=1, transpose_a=False, vector=4,
                          double_buffer=False, pipeline=3, fragment_k=4)),
    ("block_tiling", dict(BK=16, BM=128, BN=128, TM=8, TN=8, k_unroll=2, transpose_a=True, vector=4,
                          double_buffer=True, pipeline=0, fragment_k=1)),
]
SLICES = (1, 2, 4)  # the rules' split_k choices


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="1000,1000,1000", help="M,N,K")
    parser.add_argument("--only", default=None, help="tilings whose description contains this text")
    args = parser.parse_args(argv)
    import sgemm_ladder
    import tcomp as tc
    from autoschedule import _baselines  # benchmarks/autoschedule.py
    from tcomp.search.measure import measure_batch, prepare_bench
    from tcomp.search.space import Point, Space

    M, N, K = (int(v) for v in args.shape.split(","))
    out = sgemm_ladder.algorithm(M=M, N=N, K=K)
    space = Space(out)
    (fusion,) = space.tileable_fusions()
    (group,) = space.groups(fusion)
    rules = {rule.name: rule for rule in space.rules_for(group)}
    labels, sources, predicted = [], [], []
    for rule, params in TILINGS:
        described = f"{rule} {' '.join(f'{k}={v}' for k, v in params.items())}"
        if args.only and args.only not in described:
            continue
        for parts in SLICES:
            p = {**params, "split_k": parts}
            if not rules[rule].valid(group, space, p):
                print(f"not in the space: {described} split_k={parts}")
                continue
            point = Point(fusion, ((group.anchor, rule, tuple(sorted(p.items()))),))
            labels.append(f"{described} split_k={parts}")
            schedule = space.schedule(point)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
