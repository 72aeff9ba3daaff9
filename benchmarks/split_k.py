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
    from matmul_points import measure_points  # benchmarks/matmul_points.py

    M, N, K = (int(v) for v in args.shape.split(","))
    points = [(rule, {**params, "split_k": parts}) for rule, params in TILINGS for parts in SLICES
              if not args.only or args.only in f"{rule} {' '.join(f'{k}={v}' for k, v in params.items())}"]
    measure_points(M, N, K, points)
    return 0


if __name__ == "__main__":
    sys.exit(main())
