"""How deep a cp.async ring must be: the bf16 matrix product on wgmma (``wgmma_tiles``)
with every ring depth and chain-in-flight setting that fits shared memory, each beside
the cost model's prediction for it, in one run.

    python benchmarks/ring_depth.py [--shape 4096,4096,4096] [--tiles 128x128,128x256,256x128]
                                    [--bk 64] [--stages 2,3,4,5,6] [--json OUT.json]
    python benchmarks/ring_depth.py --rerank benchmarks/results/ring_depth_4096.json   # no GPU

A ring of ``stages`` tiles keeps ``stages - 1 - in_flight`` k steps of copies ahead of
the step being multiplied (``in_flight`` chains of wgmma are left running at the end of a
step, the copies a slot further behind). This sweep is the data the model's pipeline
term is judged on: the measured time of each point, the predicted one and the Kendall tau
of the two (``--rerank`` recomputes the predictions of a saved sweep with the model as it
is now, and the tau, without a GPU). Every output is poisoned with NaN first and compared with a float64 product
(the bound of a float32 sum of K exact products, as ``benchmarks/gemm_bf16.py``).
cuBLAS bf16 is timed in the same run for the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import bf16_product_reference, time_cuda_batched  # noqa: E402  (benchmarks/timing.py)


def ring_points(tiles, bks, stage_counts, smem_limit):
    """(BM, BN, BK, stages, in_flight) of every point whose ring fits ``smem_limit`` bytes."""
    points = []
    for BM, BN in tiles:
        for BK in bks:
            ring_slot = (BM + BN) * BK * 2
            for stages in stage_counts:
                if stages * ring_slot > smem_limit:
                    continue
                for in_flight in (0, 1):
                    if in_flight <= stages - 2:
                        points.append((BM, BN, BK, stages, in_flight))
    return points


def _schedule(M, N, K, BM, BN, BK, stages, in_flight, rows_fastest):
    import gemm_bf16
    import tcomp as tc
    from tcomp.search.tiling import wgmma_tiles

    out = gemm_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "C", "A", "W", BM=BM, BN=BN, BK=BK, stages=stages, in_flight=in_flight,
                rows_fastest=rows_fastest)
    return s


def rerank(path: str) -> int:
    """The points of a saved sweep predicted again: recorded and current prediction against
    the measured time, and the Kendall tau of each."""
    import tcomp as tc
    from tcomp.search.search import kendall_tau

    with open(path) as f:
        saved = json.load(f)
    M, N, K = saved["shape"]
    rows = []
    for p in saved["points"]:
        s = _schedule(M, N, K, p["BM"], p["BN"], p["BK"], p["stages"], p["in_flight"], saved["rows_fastest"])
        now = tc.estimate(s, target="h200").predicted_seconds
        rows.append((p, now))
        print(f"{p['BM']:4d}x{p['BN']:<4d} BK {p['BK']:3d} stages {p['stages']} in flight {p['in_flight']}: "
              f"measured {p['measured'] * 1e3:7.3f} ms, recorded {p['predicted'] * 1e3:7.3f} ms, "
              f"now {now * 1e3:7.3f} ms", flush=True)
    before = kendall_tau([(p["predicted"], p["measured"]) for p, _ in rows])
    after = kendall_tau([(now, p["measured"]) for p, now in rows])
    print(f"{M}x{N}x{K}, {len(rows)} points; Kendall tau recorded {before:.3f}, now {after:.3f}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="4096,4096,4096", help="M,N,K")
    parser.add_argument("--tiles", default="128x128,128x256,256x128", help="block tiles BMxBN, comma-separated")
    parser.add_argument("--bk", default="64", help="k steps, comma-separated")
    parser.add_argument("--stages", default="2,3,4,5,6", help="ring depths, comma-separated")
    parser.add_argument("--rows-fastest", action="store_true", help="block rows on blockIdx.x")
    parser.add_argument("--calls", type=int, default=5, help="calls per timed event pair")
    parser.add_argument("--json", default=None, help="write the points, measured and predicted, here")
    parser.add_argument("--rerank", default=None, metavar="JSON",
                        help="predict the points of a saved sweep again (no GPU) and print both taus")
    args = parser.parse_args(argv)
    if args.rerank:
        return rerank(args.rerank)

    import torch

    import tcomp as tc
    from tcomp.target import H200
    from tcomp.search.search import kendall_tau

    M, N, K = (int(x) for x in args.shape.split(","))
    tiles = [tuple(int(v) for v in t.split("x")) for t in args.tiles.split(",")]
    points = ring_points(tiles, [int(b) for b in args.bk.split(",")], [int(v) for v in args.stages.split(",")],
                         H200.smem_per_block)
    a, w, want, scale, bound = bf16_product_reference(M, N, K)
    flops = 2.0 * M * N * K
    cublas = time_cuda_batched(lambda: torch.matmul(a, w), calls=args.calls)
    print(f"shape {M}x{N}x{K}: cuBLAS bf16 {cublas * 1e3:.3f} ms", flush=True)

    rows, wrong = [], 0
    for BM, BN, BK, stages, in_flight in points:
        s = _schedule(M, N, K, BM, BN, BK, stages, in_flight, args.rows_fastest)
        predicted = tc.estimate(s, target="h200").predicted_seconds
        mod = tc.build(s)
        c = torch.full((M, N), float("nan"), dtype=torch.float32, device="cuda")
        mod(a, w, c)
        torch.cuda.synchronize()
        bad = int(((c.double() - want).abs() > bound).sum().item()) + int(torch.isnan(c).sum().item())
        wrong += bad
        seconds = time_cuda_batched(lambda: mod(a, w, c), calls=args.calls)
        rows.append(dict(BM=BM, BN=BN, BK=BK, stages=stages, in_flight=in_flight, measured=seconds,
                         predicted=predicted, wrong=bad))
        print(f"{BM:4d}x{BN:<4d} BK {BK:3d} stages {stages} in flight {in_flight}: {seconds * 1e3:7.3f} ms "
              f"({flops / seconds / 1e12:6.1f} TFLOP/s, {cublas / seconds:5.3f}x cuBLAS), "
              f"predicted {predicted * 1e3:7.3f} ms, {bad} wrong", flush=True)
    if len(rows) > 1:
        tau = kendall_tau([(r["predicted"], r["measured"]) for r in rows])
        print(f"{len(rows)} points; Kendall tau of predicted against measured: {tau:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(shape=[M, N, K], cublas=cublas, rows_fastest=args.rows_fastest, points=rows), f, indent=1)
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
