"""Decode rows (M = 1 .. 16) of a linear layer whose weight is stored [N, K], as
``torch.nn.Linear`` keeps it (examples/linear_bf16.py: Y = A @ W.T, bf16 operands, float32
out), whose time is streaming W once: tcomp's weight-rows schedule
(``tcomp.search.tiling.weight_rows.stream_weight_rows``: a warp on each output column's row
of W in 16-byte loads, the threads' sums added in a tree of shuffles) in a few sizes, and
the rule's seed; from 9 rows (where ``weight_rows`` stops) mma.sync in 16-row blocks
(``tcomp.search.tiling.mma_sync.decode_tiles``, the rows past M zero-filled under 16);
against cuBLAS (``torch.nn.functional.linear``, float32 out as the example writes) and a
device copy of W, in one run.

    python benchmarks/linear_rows.py [--cases 1x4096x12288,1x12288x4096,4x4096x12288,12x12288x4096,16x12288x4096]

Each row gives the time per call measured two ways: batched CUDA events around 20 calls
(the kernels' time) and a CUDA graph of one call replayed (tcomp ``mod.graph``; torch's
calls captured in one graph). "of copy" is the floor of W's
bytes at the device-copy bandwidth (half the time of ``W.clone()``, which reads and writes
them) over the time. Outputs are poisoned with NaN, then compared with the float64
reference.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import (bf16_operands, build_scheduled, time_cuda_batched,  # noqa: E402  (benchmarks/timing.py)
                    time_cuda_replayed)

#: (threads, columns, unroll) of stream_weight_rows measured for every case
VARIANTS = [(32, 4, 4), (32, 4, 2), (32, 4, 8), (32, 8, 4), (32, 2, 4), (32, 1, 4), (64, 2, 4), (64, 4, 2),
            (128, 1, 4), (128, 2, 2), (256, 1, 2)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="1x4096x12288,1x12288x4096,4x4096x12288,12x12288x4096,16x12288x4096",
                        help="MxNxK of each case, comma-separated")
    args = parser.parse_args(argv)

    import torch

    import linear_bf16
    from tcomp.search.tiling import mma_warp_tiles, stream_weight_rows
    from tcomp.search.tiling.mma_sync import decode_tiles

    worst = 0.0
    for case in args.cases.split(","):
        M, N, K = (int(x) for x in case.split("x"))
        a, w = bf16_operands(M, K, (N, K))
        want = a.double() @ w.double().T
        scale = want.abs().max().item()
        floor = time_cuda_batched(lambda: w.clone()) / 2
        print(f"== {M} x {N} x {K}: W {K * N * 2 / 1e6:.1f} MB, its copy floor {floor * 1e6:.1f} us "
              f"({K * N * 2 / floor / 1e12:.2f} TB/s)", flush=True)
        rows = []
        tiles = decode_tiles(M, N, K, torch.cuda.get_device_properties(0).multi_processor_count)
        schedules = [(f"weight_rows threads={threads} columns={columns} unroll={loads}",
                      lambda s, out, sizes=dict(threads=threads, columns=columns, unroll=loads):
                      stream_weight_rows(s, out, "Y", "A", "W", **sizes))
                     for threads, columns, loads in VARIANTS]
        if tiles is not None:
            schedules.append(("mma.sync decode tiles " + " ".join(f"{k}={v}" for k, v in tiles.items()),
                              lambda s, out: mma_warp_tiles(s, out, "Y", "A", "W", **tiles)))
        for label, apply in schedules:
            mod = build_scheduled(label, linear_bf16.algorithm(M=M, N=N, K=K), apply)
            if mod is None:
                continue
            y = torch.full((M, N), float("nan"), dtype=torch.float32, device="cuda")
            mod(a, w, y)
            torch.cuda.synchronize()
            error = ((y.double() - want).abs().max() / scale).item()
            worst = max(worst, error)
            rows.append((f"tcomp {label}", time_cuda_batched(lambda: mod(a, w, y)),
                         time_cuda_batched(mod.graph(a, w, y).replay), error))

        def cublas():
            return torch.nn.functional.linear(a, w).float()

        error = ((cublas().double() - want).abs().max() / scale).item()
        rows.append(("cuBLAS linear (torch), float32 out", time_cuda_batched(cublas), time_cuda_replayed(cublas),
                     error))
        t_cublas = rows[-1][1]
        print(f"{'schedule':52s} {'batched':>9s} {'of copy':>8s} {'graph':>9s} {'vs cuBLAS':>9s}  max rel err")
        for label, t, t_graph, error in rows:
            print(f"{label:52s} {t * 1e6:7.1f}us {floor / t:8.2f} {t_graph * 1e6:7.1f}us {t_cublas / t:8.2f}x  "
                  f"{error:.1e}", flush=True)
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
