"""The bf16 matrix product on the tensor cores (examples/gemm_bf16.py: ``tensorize`` onto
wgmma.m64nNk16 or mma.sync.m16n8k16, float32 accumulators and output) against cuBLAS bf16 and
torch.compile, in one run.

    python benchmarks/gemm_bf16.py [--shape 4096,4096,4096] [--calls 5] [--rounded]

Besides the example's own schedules (wgmma, and ``mma_sync``) it measures a few variants
of their tilings: ``gemm_bf16.mma_warp_tiles`` (block and warp tiles, k step, cp.async
rings, the rows of the shared tiles padded for ldmatrix or not; ``--only mma``) and
``gemm_bf16.wgmma_tiles`` (blocks, rings, chains left in flight, the 128-byte swizzle or
8 x 8 blocks; ``--only wgmma``).

cuBLAS (``torch.matmul`` of bf16 tensors) writes a bf16 C and tcomp a float32 one: 2 bytes
more per output element for tcomp. ``--rounded`` measures ``examples/gemm_bf16_rounded.py``
instead, the same product rounded to a bf16 C: as many bytes as cuBLAS writes. tcomp's
output is poisoned with NaN first and compared with a float64 product of the same bf16
inputs, within the bound of a float32 sum of K exact products, ``2 K 2^-24 sum_k |a_ik
w_kj|`` (plus half a bf16 step of the product, ``2^-8 |c|``, with ``--rounded``). Timing:
batched CUDA events (``timing.time_cuda_batched``).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import bf16_product_reference, time_cuda_batched  # noqa: E402  (benchmarks/timing.py)

#: (label, mma_warp_tiles keywords): variants of the example's tiling
VARIANTS = [
    ("128x128 blocks, 64x64 warps, BK 32, 3 stages, unpadded", dict(BM=128, BN=128, BK=32, WM=64, WN=64, stages=3,
                                                                    pad=0)),
    ("128x128 blocks, 64x32 warps, BK 32, 3 stages", dict(BM=128, BN=128, BK=32, WM=64, WN=32, stages=3)),
    ("128x128 blocks, 64x64 warps, BK 64, 3 stages", dict(BM=128, BN=128, BK=64, WM=64, WN=64, stages=3)),
    ("128x128 blocks, 64x64 warps, BK 32, 4 stages", dict(BM=128, BN=128, BK=32, WM=64, WN=64, stages=4)),
    ("128x256 blocks, 64x64 warps, BK 32, 3 stages", dict(BM=128, BN=256, BK=32, WM=64, WN=64, stages=3)),
    ("256x128 blocks, 64x64 warps, BK 32, 3 stages", dict(BM=256, BN=128, BK=32, WM=64, WN=64, stages=3)),
    ("128x256 blocks, 64x64 warps, BK 64, 3 stages", dict(BM=128, BN=256, BK=64, WM=64, WN=64, stages=3)),
    ("64x64 blocks, 32x32 warps, BK 32, 3 stages", dict(BM=64, BN=64, BK=32, WM=32, WN=32, stages=3)),
    ("128x128 blocks, 64x64 warps, BK 64, 4 stages", dict(BM=128, BN=128, BK=64, WM=64, WN=64, stages=4)),
    ("128x128 blocks, 64x64 warps, BK 32, 4 stages, rows fastest", dict(BM=128, BN=128, BK=32, WM=64, WN=64,
                                                                        stages=4, rows_fastest=True)),
]

#: (label, wgmma_tiles keywords): the product on Hopper's warpgroup instructions
WGMMA_VARIANTS = [
    ("wgmma 128x128, BK 64, 4 stages, 1 chain in flight", dict(BM=128, BN=128, BK=64, stages=4)),
    ("wgmma 128x128, BK 64, 4 stages, no chain in flight", dict(BM=128, BN=128, BK=64, stages=4, in_flight=0)),
    ("wgmma 128x128, BK 64, 4 stages, 8x8 blocks (no swizzle)", dict(BM=128, BN=128, BK=64, stages=4, swizzle=False)),
    ("wgmma 128x128, BK 64, 3 stages", dict(BM=128, BN=128, BK=64, stages=3)),
    ("wgmma 128x256, BK 64, 3 stages", dict(BM=128, BN=256, BK=64, stages=3)),
    ("wgmma 128x256, BK 64, 4 stages", dict(BM=128, BN=256, BK=64, stages=4)),
    ("wgmma 128x256, BK 64, 4 stages, TMA copies", dict(BM=128, BN=256, BK=64, stages=4, copy="tma")),
    ("wgmma 128x128, BK 64, 4 stages, TMA copies", dict(BM=128, BN=128, BK=64, stages=4, copy="tma")),
    ("wgmma 128x256, BK 64, 4 stages, TMA, a producer warpgroup", dict(BM=128, BN=256, BK=64, stages=4, copy="tma",
                                                                       specialized=True)),
    ("wgmma 128x128, BK 64, 4 stages, TMA, a producer warpgroup", dict(BM=128, BN=128, BK=64, stages=4, copy="tma",
                                                                       specialized=True)),
    ("wgmma 128x256, BK 64, 4 stages, rows fastest", dict(BM=128, BN=256, BK=64, stages=4, rows_fastest=True)),
    ("wgmma 128x256, BK 64, 4 stages, TMA, a producer warpgroup, rows fastest",
     dict(BM=128, BN=256, BK=64, stages=4, copy="tma", specialized=True, rows_fastest=True)),
    ("wgmma 128x256, BK 64, 4 stages, TMA, a producer warpgroup, no chain in flight",
     dict(BM=128, BN=256, BK=64, stages=4, copy="tma", specialized=True, in_flight=0)),
    ("wgmma 128x256, BK 64, 4 stages, groups of 8 block rows", dict(BM=128, BN=256, BK=64, stages=4, group_rows=8)),
    ("wgmma 128x256, BK 64, 4 stages, groups of 16 block rows", dict(BM=128, BN=256, BK=64, stages=4, group_rows=16)),
    ("wgmma 128x256, BK 64, 4 stages, TMA, a producer warpgroup, groups of 16 block rows",
     dict(BM=128, BN=256, BK=64, stages=4, copy="tma", specialized=True, group_rows=16)),
    ("wgmma 128x256, BK 64, 4 stages, groups of 16 block rows, persistent (132 blocks)",
     dict(BM=128, BN=256, BK=64, stages=4, group_rows=16, persistent=132)),
    ("wgmma 128x256, BK 64, 4 stages, TMA, a producer warpgroup, groups of 16 block rows, persistent (132 blocks)",
     dict(BM=128, BN=256, BK=64, stages=4, copy="tma", specialized=True, group_rows=16, persistent=132)),
    ("wgmma 256x128, BK 64, 3 stages", dict(BM=256, BN=128, BK=64, stages=3)),
    ("wgmma 64x128, BK 64, 3 stages (3 blocks an SM)", dict(BM=64, BN=128, BK=64, stages=3)),
    ("wgmma 64x256, BK 64, 3 stages", dict(BM=64, BN=256, BK=64, stages=3)),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="4096,4096,4096", help="M,N,K")
    parser.add_argument("--calls", type=int, default=5, help="calls per timed event pair")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--only", choices=("all", "mma", "wgmma"), default="all",
                        help="measure the mma.sync variants, the wgmma ones, or both (default)")
    parser.add_argument("--match", default="", help="only the variants whose label holds this text (or one of "
                                                    "several texts separated by |)")
    parser.add_argument("--rounded", action="store_true",
                        help="C rounded to bfloat16 (examples/gemm_bf16_rounded.py), as cuBLAS writes it")
    args = parser.parse_args(argv)

    import time

    import torch

    import gemm_bf16
    import gemm_bf16_rounded
    import tcomp as tc
    from tcomp.search.tiling import wgmma_tiles

    M, N, K = (int(x) for x in args.shape.split(","))
    a, w, want, scale, bound = bf16_product_reference(M, N, K)
    example, product, c_dtype = ((gemm_bf16_rounded, "P", torch.bfloat16) if args.rounded
                                 else (gemm_bf16, "C", torch.float32))
    if args.rounded:
        bound = bound + 2.0 ** -8 * want.abs()
    flops = 2.0 * M * N * K

    def tcomp_row(label, apply):
        out = example.algorithm(M, N, K)
        s = tc.create_schedule(out)
        apply(s, out)
        start = time.perf_counter()
        mod = tc.build(s)
        built = time.perf_counter() - start
        c = torch.full((M, N), float("nan"), dtype=c_dtype, device="cuda")
        mod(a, w, c)
        torch.cuda.synchronize()
        error = (c.double() - want).abs()
        wrong = int((error > bound).sum().item()) + int(torch.isnan(c).sum().item())
        worst = float((error / scale.clamp_min(1e-30)).max().item())
        seconds = time_cuda_batched(lambda: mod(a, w, c), calls=args.calls)
        return (f"tcomp {label}", seconds, f"build {built:.1f} s, {wrong} outside the bound, "
                                           f"largest error {worst:.1e} of sum |a w|"), wrong

    rows, wrong = [], 0
    candidates = [("example schedule (wgmma)", example.schedule), ("mma_sync schedule", example.mma_sync)]
    if args.only in ("all", "mma"):
        candidates += [(label, lambda s, out, kw=kw: gemm_bf16.mma_warp_tiles(s, out, product, "A", "W", **kw))
                       for label, kw in VARIANTS]
    if args.only in ("all", "wgmma"):
        candidates += [(label, lambda s, out, kw=kw: wgmma_tiles(s, out, product, "A", "W", **kw))
                       for label, kw in WGMMA_VARIANTS]
    for label, apply in candidates:
        if not any(text in label for text in args.match.split("|")):
            continue
        row, bad = tcomp_row(label, apply)
        rows.append(row)
        wrong += bad
        print(f"{row[0]:60s} {row[1] * 1e3:8.3f} ms  {row[2]}", flush=True)
    cublas = time_cuda_batched(lambda: torch.matmul(a, w), calls=args.calls)
    rows.append(("cuBLAS bf16 (torch.matmul, bf16 out)", cublas, ""))
    if not args.no_compile:
        compiled = torch.compile(lambda x, y: torch.matmul(x, y).float())
        compiled(a, w)
        rows.append(("torch.compile (matmul, float32 out)", time_cuda_batched(lambda: compiled(a, w), calls=args.calls),
                     ""))
    print(f"shape {M}x{N}x{K}, C in {'bfloat16' if args.rounded else 'float32'}; the bound: 2 K 2^-24 = {2 * K * 2.0 ** -24:.1e} of sum |a w|")
    for name, t, _ in rows:
        print(f"{name:60s} {t * 1e3:8.3f} ms {flops / t / 1e12:7.1f} TFLOP/s  {cublas / t:6.3f}x cuBLAS", flush=True)
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
