"""Block tilings with four-k fragments and cp.async rings at a shape no tile divides
(1000^3) and at one every tile divides (1024^3), with a few split-K and warp tilings,
measured in one run beside cuBLAS fp32 and Triton fp32 (ieee, best of four).

    python benchmarks/boundary_fills.py [--shape 1000,1000,1000]

The experiment behind the fix of ``tcomp.ir.lanes.lane_form`` (a shifted boundary tile's
``min(...)`` start is the same for every vector lane): before it, these tilings' fills at
1000^3 went one element at a time. Every point's output is compared with the reference
before it is timed (the search's runner); the cost model's prediction is printed beside.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.append(HERE)

FRAGMENTS = dict(BK=32, BM=64, BN=64, TM=8, TN=4, k_unroll=1, transpose_a=False, vector=4, double_buffer=False,
                 pipeline=3, fragment_k=4, split_k=1)
POINTS = [  # (rule, parameters)
    *(("block_tiling", {**FRAGMENTS, "k_unroll": unroll, "pipeline": stages})
      for unroll in (1, 2, 4) for stages in (3, 4)),
    ("block_tiling", {**FRAGMENTS, "BK": 16, "k_unroll": 4}),
    ("block_tiling", {**FRAGMENTS, "BK": 16, "k_unroll": 2, "TM": 4, "TN": 4}),
    ("block_tiling", {**FRAGMENTS, "BM": 128, "k_unroll": 2}),
    ("block_tiling", {**FRAGMENTS, "BN": 128, "k_unroll": 2}),
    ("block_tiling", {**FRAGMENTS, "BM": 128, "k_unroll": 2, "split_k": 2}),
    ("warp_tiling", dict(BK=8, BM=128, BN=128, TM=4, TN=4, WM=32, WN=128, WNITER=4, k_unroll=8,
                         double_buffer=True, pipeline=0, split_k=4)),
    ("warp_tiling", dict(BK=16, BM=128, BN=128, TM=4, TN=4, WM=32, WN=128, WNITER=4, k_unroll=8,
                         double_buffer=False, pipeline=3, split_k=4)),
    ("warp_tiling", dict(BK=16, BM=64, BN=128, TM=8, TN=4, WM=64, WN=32, WNITER=2, k_unroll=4,
                         double_buffer=False, pipeline=3, split_k=1)),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="1000,1000,1000", help="M,N,K")
    args = parser.parse_args(argv)
    from matmul_points import measure_points  # benchmarks/matmul_points.py

    M, N, K = (int(v) for v in args.shape.split(","))
    measure_points(M, N, K, POINTS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
