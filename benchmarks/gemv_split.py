"""Probe: one decode row times a bf16 weight matrix stored ``[K, N]`` (the FFN's down
projection, 1 x 4096 x 12288: issue 31's row at 0.78 of W's copy floor on an H100), with
hand-written Numba kernels of a split over blocks as well as warps, to learn how close
to the floor such a kernel comes before building it into tcomp:

- ``split, two kernels``: a block of 8 warps takes 256 columns (a warp reads 512
  contiguous bytes of a row of W, 16 bytes a thread) and a slice of k over ``blockIdx.y``,
  each warp an eighth of that slice; the warps' sums are added through shared memory, the
  block writes its slice's partial row, and a second kernel adds the slices in order;
- ``split, last block adds``: the same in one kernel: each block counts itself done on an
  atomic counter per column group, and the last one to arrive adds the slices in order
  (same bits every run) and resets the counter;
- ``split, first kernel alone``: the partial rows only, the floor of the two above.

Each output is poisoned first and compared with float64 (1e-3 relative to the largest).

    python benchmarks/gemv_split.py [--n 4096] [--k 12288]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))

from numba import cuda, float32, int32, uint32  # noqa: E402
from numba.cuda import libdevice  # noqa: E402

from hand_launch import launcher  # noqa: E402
from timing import time_cuda_batched  # noqa: E402

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
if SIMULATOR:
    from tcomp.codegen.vector_access import sim_load8 as load8  # noqa: E402
else:
    from tcomp.codegen.vector_access import load8  # noqa: E402

WARPS = 8
COLUMNS = 256  # a block's columns: a warp's 32 threads x 8 bf16
RED_SIZE = WARPS * COLUMNS  # the warps' sums, in shared memory


def kernels(N: int, K: int, slices: int, unroll: int = 4):
    """(partial, add, last_block_adds) for ``slices`` slices of k."""
    rows_per_warp = K // (slices * WARPS)
    assert rows_per_warp * slices * WARPS == K and rows_per_warp % unroll == 0
    UN, UR, UU, S = uint32(N), uint32(rows_per_warp), uint32(unroll), uint32(slices)
    steps = uint32(rows_per_warp // unroll)

    if SIMULATOR:
        def bf16(bits):
            import numpy as np

            return np.array([int(bits) << 16], dtype=np.int64).astype(np.uint32).view(np.float32)[0]
    else:
        @cuda.jit(device=True, inline="always")
        def bf16(bits):
            return libdevice.int_as_float(int32(bits) << 16)

    @cuda.jit(device=True, inline="always")
    def block_partial(x, W, red):
        """This block's slice summed over its warps into ``red`` (COLUMNS values)."""
        t = uint32(cuda.threadIdx.x)
        warp, lane = t // uint32(32), t % uint32(32)
        col = uint32(cuda.blockIdx.x) * uint32(COLUMNS) + lane * uint32(8)
        k0 = (uint32(cuda.blockIdx.y) * uint32(WARPS) + warp) * UR
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = float32(0.0)
        for step in range(steps):
            for u in range(UU):
                k = k0 + step * UU + u
                w0, w1, w2, w3, w4, w5, w6, w7 = load8(W, k * UN + col)
                xv = x[k]
                a0 += xv * bf16(w0)
                a1 += xv * bf16(w1)
                a2 += xv * bf16(w2)
                a3 += xv * bf16(w3)
                a4 += xv * bf16(w4)
                a5 += xv * bf16(w5)
                a6 += xv * bf16(w6)
                a7 += xv * bf16(w7)
        base = warp * uint32(COLUMNS) + lane * uint32(8)
        red[base], red[base + 1], red[base + 2], red[base + 3] = a0, a1, a2, a3
        red[base + 4], red[base + 5], red[base + 6], red[base + 7] = a4, a5, a6, a7
        cuda.syncthreads()
        if t < uint32(COLUMNS):
            total = red[t]
            for w in range(1, WARPS):
                total += red[uint32(w) * uint32(COLUMNS) + t]
            return total
        return float32(0.0)

    @cuda.jit
    def partial(x, W, P):
        red = cuda.shared.array(RED_SIZE, float32)
        total = block_partial(x, W, red)
        t = uint32(cuda.threadIdx.x)
        if t < uint32(COLUMNS):
            P[uint32(cuda.blockIdx.y) * UN + uint32(cuda.blockIdx.x) * uint32(COLUMNS) + t] = total

    @cuda.jit
    def add(P, Y):
        n = uint32(cuda.blockIdx.x) * uint32(cuda.blockDim.x) + uint32(cuda.threadIdx.x)
        total = P[n]
        for s in range(1, slices):
            total += P[uint32(s) * UN + n]
        Y[n] = total

    @cuda.jit
    def last_block_adds(x, W, P, Y, counters):
        red = cuda.shared.array(RED_SIZE, float32)
        ticket = cuda.shared.array(1, int32)
        total = block_partial(x, W, red)
        t = uint32(cuda.threadIdx.x)
        group = uint32(cuda.blockIdx.x)
        n = group * uint32(COLUMNS) + t
        if t < uint32(COLUMNS):
            P[uint32(cuda.blockIdx.y) * UN + n] = total
        cuda.threadfence()
        cuda.syncthreads()
        if t == 0:
            ticket[0] = cuda.atomic.add(counters, group, 1)
        cuda.syncthreads()
        if ticket[0] == int32(S - 1):
            cuda.threadfence()
            if t < uint32(COLUMNS):
                acc = P[n]
                for s in range(1, slices):
                    acc += P[uint32(s) * UN + n]
                Y[n] = acc
            if t == 0:
                counters[group] = 0

    return partial, add, last_block_adds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=12288)
    parser.add_argument("--slices", default="8,16,24,32,48")
    parser.add_argument("--unroll", default="4,8", help="loads of W in flight a thread")
    args = parser.parse_args(argv)
    import torch

    N, K = args.n, args.k
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, K, device="cuda", generator=gen).to(torch.bfloat16)
    w = torch.randn(K, N, device="cuda", generator=gen).to(torch.bfloat16)
    ref = (x.double() @ w.double()).view(-1)
    scale = ref.abs().max().item()
    flat = torch.empty(K * N, dtype=torch.bfloat16, device="cuda")
    floor = time_cuda_batched(lambda: flat.copy_(w.view(-1))) / 2  # a copy reads W and writes as much again
    t_cublas = time_cuda_batched(lambda: x @ w)
    print(f"== 1 x {N} x {K} bf16: W {K * N * 2 / 1e6:.1f} MB, its copy floor {floor * 1e6:.1f} us; "
          f"cuBLAS x @ W {t_cublas * 1e6:.1f} us ({floor / t_cublas:.2f} of floor)", flush=True)
    xf, wa = x.float().view(-1), w.view(-1).view(torch.int16)
    y = torch.empty(N, device="cuda")
    for slices, unroll in [(s, u) for s in map(int, args.slices.split(",")) for u in map(int, args.unroll.split(","))]:
        try:
            partial, add, last = kernels(N, K, slices, unroll)
        except AssertionError:
            print(f"slices={slices} unroll={unroll}: does not divide k", flush=True)
            continue
        p = torch.empty(slices * N, device="cuda")
        counters = torch.zeros(N // COLUMNS, dtype=torch.int32, device="cuda")
        grid = (N // COLUMNS, slices)
        first = launcher(partial, grid, (WARPS * 32,), (xf, wa, p))
        second = launcher(add, (N // 256,), (256,), (p, y))
        runs = {
            "split, two kernels": lambda: (first(), second()),
            "split, last block adds": launcher(last, grid, (WARPS * 32,), (xf, wa, p, y, counters)),
            "split, first kernel alone": first,
        }
        for label, fn in runs.items():
            y.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            err = ((y.double() - ref).abs().max() / scale).item() if "alone" not in label else float("nan")
            t = time_cuda_batched(fn)
            print(f"slices={slices:3d} unroll={unroll} blocks={grid[0] * grid[1]:4d} {label:28s} {t * 1e6:7.1f} us "
                  f"{floor / t:5.2f} of floor  {t_cublas / t:5.2f}x cuBLAS  err {err:.1e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
