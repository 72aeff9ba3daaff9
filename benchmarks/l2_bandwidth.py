"""How fast the H200's L2 serves data that fits it, against device memory, in one run.

1. A device-to-device copy (``torch`` ``y.copy_(x)``) of buffers from 4 MiB (both buffers
   well inside the L2) to 1 GiB (far past it), each copied back to back many times and
   timed with CUDA events; bytes counted as read + written. Small copies are bound by
   their launches.
2. Repeated reads in one launch (a Numba kernel): every thread sums its coalesced share of
   one buffer ``--passes`` times over, so that a buffer that fits the L2 is read from it
   again and again with no launch in between; bytes counted as read.

    python benchmarks/l2_bandwidth.py [--sizes-mib 4,8,16,24,512,1024] [--calls 200] [--passes 64]

The cost model's L2 term (``tcomp/cost/model.py``) credits the L2 with re-reads of shared
tiles; a model of how long a pipeline's copies take to land needs the rate at which the
L2 delivers them, which this measures.
"""

from __future__ import annotations

import argparse


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes-mib", default="4,8,16,24,512,1024", help="buffer sizes, MiB, comma-separated")
    parser.add_argument("--calls", type=int, default=200, help="copies timed back to back per size")
    parser.add_argument("--repeat", type=int, default=5, help="timed batches per size (the median is kept)")
    parser.add_argument("--passes", type=int, default=64, help="reads of the buffer in one launch (part 2)")
    args = parser.parse_args(argv)

    import statistics

    import torch

    if not torch.cuda.is_available():
        raise SystemExit("l2_bandwidth.py needs a CUDA GPU (torch sees none)")
    print(f"{torch.cuda.get_device_name()}: L2 {torch.cuda.get_device_properties(0).L2_cache_size / 2**20:.0f} MiB")
    print(f"{'size MiB':>9} {'us a copy':>10} {'TB/s (read + write)':>20}")
    for mib in (int(s) for s in args.sizes_mib.split(",")):
        n = mib * 2**20 // 4
        x = torch.randn(n, device="cuda")
        y = torch.empty_like(x)
        for _ in range(10):
            y.copy_(x)
        times = []
        for _ in range(args.repeat):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.calls):
                y.copy_(x)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3 / args.calls)
        t = statistics.median(times)
        assert torch.equal(x, y)
        print(f"{mib:9d} {t * 1e6:10.2f} {2 * mib * 2**20 / t / 1e12:20.2f}", flush=True)
    _repeated_reads([int(s) for s in args.sizes_mib.split(",")], args.passes, args.repeat)
    return 0


def _repeated_reads(sizes_mib: list, passes: int, repeat: int) -> None:
    import statistics

    import numpy as np
    import torch
    from numba import cuda, float32

    @cuda.jit
    def read_again(x, passes, out):
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        acc = float32(0.0)
        for _ in range(passes):
            for i in range(start, x.shape[0], stride):
                acc += x[i]
        out[start] = acc

    blocks, threads = 132 * 8, 256
    out = cuda.device_array(blocks * threads, dtype=np.float32)
    print(f"\n{'size MiB':>9} {'passes':>7} {'us':>10} {'TB/s read':>10}")
    for mib in sizes_mib:
        data = torch.rand(mib * 2**20 // 4, device="cuda")
        x = cuda.as_cuda_array(data)
        n = passes if mib <= 64 else 2
        read_again[blocks, threads](x, 1, out)
        times = []
        for _ in range(repeat):
            start, stop = cuda.event(), cuda.event()
            start.record()
            read_again[blocks, threads](x, n, out)
            stop.record()
            stop.synchronize()
            times.append(cuda.event_elapsed_time(start, stop) / 1e3)
        t = statistics.median(times)
        assert np.isfinite(out.copy_to_host()).all()
        print(f"{mib:9d} {n:7d} {t * 1e6:10.1f} {n * mib * 2**20 / t / 1e12:10.2f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
