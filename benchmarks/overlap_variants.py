"""Double buffering against cp.async pipelines for the operand tiles of one matmul tiling,
measured in one run beside cuBLAS fp32 and Triton fp32 (ieee, best of four).

    python benchmarks/overlap_variants.py [--shape 1000,1000,1000]

For a few tilings of the space (``warp_tiling`` and ``block_tiling`` points, all with
the overlap switched off), each variant adds one way of overlapping the tiles' loads with
the computation: both double buffered (through registers); both pipelined with 3 or 4
tiles (cp.async; a transposed A tile is copied 4 bytes at a time, since cp.async cannot
transpose); A double buffered and B pipelined. The last tilings keep A untransposed and
read their register fragments four k at a time (``fragment_k=4``), so that A's tile is
copied 16 bytes at a time and still read as vectors. Every variant's output is compared with
the reference before it is timed (the search's runner).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.append(HERE)

TILINGS = [  # (rule, parameters with the overlap off)
    ("warp_tiling", dict(BK=32, BM=64, BN=128, TM=4, TN=4, WM=64, WN=32, WNITER=1, k_unroll=8)),
    ("warp_tiling", dict(BK=16, BM=64, BN=128, TM=4, TN=4, WM=32, WN=64, WNITER=2, k_unroll=2)),
    ("block_tiling", dict(BK=8, BM=32, BN=64, TM=4, TN=4, k_unroll=4, transpose_a=False, vector=2)),
    ("block_tiling", dict(BK=16, BM=64, BN=64, TM=4, TN=4, k_unroll=4, transpose_a=False, vector=4)),
    # fragments of four k (A read as 16-byte vectors along k from an untransposed tile)
    ("block_tiling", dict(BK=16, BM=64, BN=64, TM=4, TN=4, k_unroll=1, transpose_a=False, vector=4, fragment_k=4)),
    ("block_tiling", dict(BK=32, BM=64, BN=64, TM=8, TN=4, k_unroll=1, transpose_a=False, vector=4, fragment_k=4)),
    ("block_tiling", dict(BK=16, BM=128, BN=64, TM=8, TN=4, k_unroll=1, transpose_a=False, vector=4, fragment_k=4)),
]
VARIANTS = {  # name -> lines added to the schedule
    "double buffer both": ["s['A_shared'].double_buffer()", "s['B_shared'].double_buffer()"],
    "pipeline both, 3": ["s['A_shared'].pipeline(3)", "s['B_shared'].pipeline(3)"],
    "pipeline both, 4": ["s['A_shared'].pipeline(4)", "s['B_shared'].pipeline(4)"],
    "A double buffer, B pipeline 3": ["s['A_shared'].double_buffer()", "s['B_shared'].pipeline(3)"],
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="1000,1000,1000", help="M,N,K")
    parser.add_argument("--only", default=None, help="tilings whose description contains this text")
    args = parser.parse_args(argv)
    import sgemm_ladder
    from autoschedule import _baselines  # benchmarks/autoschedule.py
    from tcomp.search.measure import measure_batch, prepare_bench
    from tcomp.search.space import Point, Space

    M, N, K = (int(v) for v in args.shape.split(","))
    out = sgemm_ladder.algorithm(M=M, N=N, K=K)
    space = Space(out)
    (fusion,) = space.tileable_fusions()
    (group,) = space.groups(fusion)
    labels, sources = [], []
    for rule, params in TILINGS:
        if args.only and args.only not in f"{rule} {params}":
            continue
        p = {**params, "double_buffer": False, "pipeline": 0}
        point = Point(fusion, ((group.anchor, rule, tuple(sorted(p.items()))),))
        base = space.schedule(point).trace_source(with_sites=False).rstrip("\n")
        for name, lines in VARIANTS.items():
            labels.append(f"{rule} {' '.join(f'{k}={v}' for k, v in params.items())}: {name}")
            sources.append(base + "\n" + "".join(f"    {line}\n" for line in lines))
    with tempfile.TemporaryDirectory() as folder:
        bench = prepare_bench(out, folder)
        results = measure_batch(bench, sources, repeats=10)
        baselines = _baselines("sgemm", bench, os.path.join(bench, "reference0.npy"))
    flops = 2 * M * N * K
    for label, t in baselines.items():
        print(f"{label:40s} {t * 1e6:8.1f} us {flops / t / 1e12:6.2f} TFLOP/s")
    for label, m in zip(labels, results):
        shown = f"{m.measured * 1e6:8.1f} us" if m.status == "ok" else f"{m.status}: {m.error[:200]}"
        print(f"{shown}  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
