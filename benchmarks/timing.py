"""Timing helper shared by the GPU benchmarks."""

from __future__ import annotations

import statistics


def time_cuda(fn, repeat: int, warmup: int = 3) -> float:
    """Median seconds of ``fn`` over ``repeat`` runs, each timed with CUDA events."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times)
