"""Where a short k loop's time goes: the bf16 product on wgmma (examples/gemm_bf16.py's
schedule) at M x N x K for several K, with a float32 output (the example) and with the
sum rounded to a bf16 output (what cuBLAS writes), against cuBLAS bf16 in one run. Each
row gives the batched time of calls (``ms``), of CUDA graph replays (``graph ms``, what the
fit and the ratio use) and the host's time to issue one call.

    python benchmarks/short_k.py [--shape 4096,4096] [--ks 256,512,1024,2048,4096]

Every block of the schedule computes one output tile, and each SM runs one block at a
time, so a call takes ``waves * (steps * c + o)``: ``steps`` k steps of ``c`` each and a
fixed cost ``o`` a tile (filling the ring, draining the last chain, writing the tile).
``(no C)`` rows time the float32 kernel with its stores of C never taken (guarded by a test
that the data never passes): what remains of the fixed cost without the tile's writes. The
least-squares fit of ``c`` and ``o`` over the K's is printed for each output type: if
``o`` is many k steps, short products need the tile's fixed costs hidden (another block's
loop, or a persistent block's next tile), not faster k steps. Outputs are poisoned with
NaN and checked against a float64 product of the same inputs.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import bf16_product_reference, time_cuda_batched  # noqa: E402  (benchmarks/timing.py)


def bf16_output(M: int, N: int, K: int):
    """The example's product, its float32 sum rounded to a bf16 output ``D``."""
    import tcomp as tc

    import gemm_bf16

    C = gemm_bf16.algorithm(M, N, K)
    return tc.compute((M, N), lambda i, j: tc.cast(C[i, j], "bfloat16"), name="D")


def host_time(call, calls: int = 50) -> float:
    """Seconds of host time per call, issued back to back without waiting for the GPU."""
    import time

    import torch

    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    seconds = (time.perf_counter() - start) / calls
    torch.cuda.synchronize()
    return seconds


def without_stores(mod, output: str):
    """``mod`` recompiled with its stores to ``output`` never taken (each guarded by a test
    that random data never passes): the kernel without the writing of its tile."""
    import re

    from tcomp.codegen.runtime import Module

    lines = []
    for line in mod.source.splitlines():
        scalar = re.match(rf"^(\s*){output}\[.*\] = (.*)$", line)
        vector = re.match(rf"^(\s*)_store\d+\({output}, .*, \(([^,]*),.*\)\)$", line)
        store = scalar or vector
        if store:
            indent, value = store.group(1), store.group(2)
            lines += [f"{indent}if {value} == float32(1.5e38):", f"{indent}    {line.strip()}"]
        else:
            lines.append(line)
    return Module(mod.program, "\n".join(lines) + "\n", False)


def fit(points):
    """Least-squares ``c``, ``o`` of ``t / waves = steps * c + o`` over (steps, waves, t)."""
    xs = [steps for steps, _, _ in points]
    ys = [t / waves for _, waves, t in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    c = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sum((x - mean_x) ** 2 for x in xs)
    return c, mean_y - c * mean_x


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="4096,4096", help="M,N")
    parser.add_argument("--ks", default="256,512,1024,2048,4096", help="the K's, comma-separated")
    parser.add_argument("--calls", type=int, default=5, help="calls per timed event pair")
    args = parser.parse_args(argv)

    import torch

    import gemm_bf16
    import tcomp as tc
    from gemm_bf16 import wgmma_tiles_for

    M, N = (int(x) for x in args.shape.split(","))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    fits = {"float32": [], "bfloat16": [], "float32, stores never taken": []}
    wrong = 0
    print(f"{'K':>6s} {'out':>9s} {'tile':>9s} {'steps':>5s} {'waves':>5s} {'ms':>8s} {'graph ms':>8s} "
          f"{'host ms':>8s} {'cuBLAS ms':>9s} {'vs cuBLAS':>9s}")
    for K in (int(x) for x in args.ks.split(",")):
        a, w, want, scale, bound = bf16_product_reference(M, N, K)
        cublas = time_cuda_batched(lambda: torch.matmul(a, w), calls=args.calls)
        tiles = wgmma_tiles_for(M, N, K)
        steps = math.ceil(K / tiles["BK"])
        waves = math.ceil(math.ceil(M / tiles["BM"]) * math.ceil(N / tiles["BN"]) / sms)
        for dtype, algorithm, torch_dtype in (("float32", gemm_bf16.algorithm, torch.float32),
                                              ("bfloat16", bf16_output, torch.bfloat16)):
            out = algorithm(M, N, K)
            s = tc.create_schedule(out)
            gemm_bf16.tensor_core_tiles(s, out, "C", "A", "W", gemm_bf16.required_mma_tiles(M, N, K), {})
            mod = tc.build(s)
            c = torch.full((M, N), float("nan"), dtype=torch_dtype, device="cuda")
            mod(a, w, c)
            torch.cuda.synchronize()
            # a bf16 output is within half an ulp of bf16 (2^-9) of the float32 sum's bound
            slack = bound + (want.abs() * 2.0 ** -8 if dtype == "bfloat16" else 0)
            wrong += int(((c.double() - want).abs() > slack).sum().item()) + int(torch.isnan(c).sum().item())
            t = time_cuda_batched(lambda: mod(a, w, c), calls=args.calls)
            t_graph = time_cuda_batched(mod.graph(a, w, c).replay, calls=args.calls)
            host = host_time(lambda: mod(a, w, c))
            fits[dtype].append((steps, waves, t_graph))
            print(f"{K:6d} {dtype:>9s} {tiles['BM']}x{tiles['BN']:<5d} {steps:5d} {waves:5d} {t * 1e3:8.3f} "
                  f"{t_graph * 1e3:8.3f} {host * 1e3:8.3f} {cublas * 1e3:9.3f} {cublas / t_graph:8.3f}x", flush=True)
            if dtype == "float32":
                silent = without_stores(mod, "C")
                t_silent = time_cuda_batched(silent.graph(a, w, c).replay, calls=args.calls)
                fits["float32, stores never taken"].append((steps, waves, t_silent))
                print(f"{K:6d} {'(no C)':>9s} {'':9s} {steps:5d} {waves:5d} {'':8s} {t_silent * 1e3:8.3f}", flush=True)
    for dtype, points in fits.items():
        if len(points) >= 2:
            c, o = fit(points)
            print(f"{dtype} output: a k step {c * 1e6:.2f} us, a tile's fixed cost {o * 1e6:.2f} us "
                  f"({o / c:.1f} k steps)")
    print(f"{wrong} outputs outside the bound")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
