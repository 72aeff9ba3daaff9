"""Probe: decode rows on mma.sync with W's tiles loaded straight into registers.

    python benchmarks/direct_mma_probe.py [--cases 16x12288x4096,4x12288x4096,1x4096x12288]
                                          [--variants 8:16:1:1,...] [--simulate]

The mma.sync decode kernels of ``examples/ffn_bf16.py`` stage W through shared memory
(cp.async rings, ldmatrix, a barrier per k step). At 16 rows or fewer every element of W
is used by one warp only, so the staging buys nothing: this probe loads W's B fragments
from global memory with 16-byte loads and feeds them to ``mma.m16n8k16`` directly.

How a warp's registers line up with 16-byte loads of W stored [K, N] (N contiguous):

- **columns**: the warp holds ``T`` n8 tiles; lane group ``g = lane // 4`` (the B
  fragment's column) of tile ``c`` computes column ``8 g + c`` of the warp's ``8 T``
  columns, so a lane's columns of one k row are ``T`` contiguous elements (one load);
- **k**: both operands see k permuted inside each 32-element chunk, lane ``t = lane % 4``
  taking physical k ``8 t .. 8 t + 7`` for the two k16 steps' registers, so that A's
  fragments are two 16-byte loads a chunk and W's rows are whole loads. A sum does not
  depend on the order of its terms (up to float32 rounding inside the instruction).

A block of ``S`` warps shares ``8 T`` columns, each warp summing a slice of k; the slices
are added in a fixed order through shared memory. With ``P > 1`` k is cut over ``P``
blocks as well, whose sums are added with atomics (a probe: not the same bits every run).

Variants are ``T:S:P:U`` (tiles a warp, warps a block, blocks a column strip, 32-element
chunks a loop iteration). Each is timed with batched CUDA events against a device copy of
W and cuBLAS's matmul alone, outputs poisoned and compared with float64.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

cuda = float32 = uint32 = None  # numba's, set by make_kernel (after the simulator's switch)

DEFAULT_VARIANTS = ["8:8:1:1", "8:16:1:1", "4:8:1:1", "4:16:1:1", "8:4:2:1", "8:8:2:1", "8:4:4:1", "4:8:2:1",
                    "4:4:4:1", "8:2:8:1", "8:8:1:2"]


def make_kernel(T: int, S: int, P: int, U: int, simulate: bool = False):
    """The kernel for ``T`` tiles a warp, ``S`` warps a block, ``P`` blocks a strip, ``U``
    chunks an iteration: ``kernel[(N // (8 T), P), 32 S](X32, W32, C, M, N, K)`` (X and W
    as flat uint32 words)."""
    global cuda, float32, uint32
    if simulate:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import numba
    from numba import cuda as numba_cuda

    # NOTE: module globals, as the simulator swaps a kernel's globals; numba's types are
    # callable as casts in the simulator too
    cuda, float32, uint32 = numba_cuda, numba.float32, numba.uint32
    from tcomp.codegen import vector_access as va
    from tcomp.codegen import warp_mma as wm

    mma = wm.sim_mma_m16n8k16_bf16 if simulate else wm.mma_m16n8k16_bf16
    words = T // 2  # uint32 words of a lane's T columns in one k row
    load_w = {2: (va.sim_load2 if simulate else va.load2),
              4: (va.sim_load4 if simulate else va.load4)}[words]
    load_x = va.sim_load4 if simulate else va.load4
    cols = 8 * T
    n_acc = 4 * T  # NOTE: shapes of local and shared arrays must be constants, not expressions
    red_shape = (S, n_acc, 32)

    @cuda.jit(cache=False)
    def kernel(X32, W32, C, M, N, K):
        lane = cuda.threadIdx.x % 32
        warp = cuda.threadIdx.x // 32
        g = lane // 4
        t = lane % 4
        strip = cuda.blockIdx.x
        part = cuda.blockIdx.y
        half_n = N // 2
        acc = cuda.local.array(n_acc, float32)
        for i in range(4 * T):
            acc[i] = float32(0.0)
        slice_k = K // (P * S)
        k0 = (part * S + warp) * slice_k
        col_word = (strip * cols + g * T) // 2
        half_k = K // 2
        for chunk in range(k0, k0 + slice_k, 32 * U):
            for u in range(U):
                kc = chunk + 32 * u
                # A: rows g and g + 8, physical k 8t .. 8t+7 (zero beyond M)
                if g < M:
                    x0 = load_x(X32, g * half_k + (kc + 8 * t) // 2)
                else:
                    x0 = (uint32(0), uint32(0), uint32(0), uint32(0))
                if g + 8 < M:
                    x1 = load_x(X32, (g + 8) * half_k + (kc + 8 * t) // 2)
                else:
                    x1 = (uint32(0), uint32(0), uint32(0), uint32(0))
                rows = cuda.local.array((8, 4), uint32)
                for r in range(8):
                    w = load_w(W32, (kc + 8 * t + r) * half_n + col_word)
                    for j in range(words):
                        rows[r, j] = w[j]
                for step in range(2):
                    for c in range(T):
                        j = c // 2
                        if c % 2 == 0:
                            b0 = (rows[4 * step, j] & uint32(0xFFFF)) | (rows[4 * step + 1, j] << uint32(16))
                            b1 = (rows[4 * step + 2, j] & uint32(0xFFFF)) | (rows[4 * step + 3, j] << uint32(16))
                        else:
                            b0 = (rows[4 * step, j] >> uint32(16)) | (rows[4 * step + 1, j] & uint32(0xFFFF0000))
                            b1 = (rows[4 * step + 2, j] >> uint32(16)) | (rows[4 * step + 3, j] & uint32(0xFFFF0000))
                        d = mma(x0[2 * step], x1[2 * step], x0[2 * step + 1], x1[2 * step + 1], b0, b1,
                                acc[4 * c], acc[4 * c + 1], acc[4 * c + 2], acc[4 * c + 3])
                        acc[4 * c] = d[0]
                        acc[4 * c + 1] = d[1]
                        acc[4 * c + 2] = d[2]
                        acc[4 * c + 3] = d[3]
        # the warps' slices added in a fixed order through shared memory
        red = cuda.shared.array(red_shape, float32)
        for i in range(4 * T):
            red[warp, i, lane] = acc[i]
        cuda.syncthreads()
        for o in range(cuda.threadIdx.x, 4 * T * 32, 32 * S):
            i = o // 32
            ln = o % 32
            total = float32(0.0)
            for w in range(S):
                total += red[w, i, ln]
            c = i // 4
            r = i % 4
            row = ln // 4 + 8 * (r // 2)
            col = strip * cols + (2 * (ln % 4) + r % 2) * T + c
            if row < M:
                if P == 1:
                    C[row, col] = total
                else:
                    cuda.atomic.add(C, (row, col), total)

    return kernel


def parse_variant(text: str) -> tuple:
    T, S, P, U = (int(v) for v in text.split(":"))
    return T, S, P, U


def check_variant(M: int, N: int, K: int, T: int, S: int, P: int, U: int) -> str:
    """Why the variant cannot run this shape ("" when it can)."""
    if N % (8 * T):
        return f"N = {N} is not a multiple of {8 * T} columns"
    if K % (P * S * 32 * U):
        return f"K = {K} is not a multiple of {P * S * 32 * U}"
    if T not in (4, 8):
        return "T is 4 or 8 (a lane loads 8 or 16 bytes of a row of W)"
    if M > 16:
        return "more than 16 rows"
    return ""


def reference(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    return X.astype(np.float64) @ W.astype(np.float64)


def simulate(variant: str, M: int = 3, N: int = 64, K: int = 256) -> float:
    """Run one variant in the simulator; the largest error against float64."""
    import ml_dtypes

    T, S, P, U = parse_variant(variant)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    W = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    C = np.zeros((M, N), np.float32) if P > 1 else np.full((M, N), np.nan, np.float32)
    kernel = make_kernel(T, S, P, U, simulate=True)
    kernel[(N // (8 * T), P), 32 * S](X.view(np.uint16).view(np.uint32).ravel(),
                                      W.view(np.uint16).view(np.uint32).ravel(), C, M, N, K)
    return float(np.max(np.abs(C - reference(X, W))))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="16x12288x4096,4x12288x4096,1x12288x4096,1x4096x12288")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help="T:S:P:U, comma-separated")
    parser.add_argument("--simulate", action="store_true", help="check each variant in the simulator at a tiny shape")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if args.simulate:
        for v in variants:
            err = simulate(v, N=8 * parse_variant(v)[0] * 2, K=32 * math.prod(parse_variant(v)[1:]) * 2)
            print(f"{v:12s} max |error| {err:.2e}", flush=True)
        return 0

    import torch
    from timing import time_cuda_batched

    for case in args.cases.split(","):
        M, N, K = (int(v) for v in case.split("x"))
        X = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        W = (torch.randn(K, N, device="cuda") / 64).to(torch.bfloat16)
        ref = X.double() @ W.double()
        t_copy = time_cuda_batched(lambda: W.clone(), calls=20)
        floor = t_copy / 2
        t_cublas = time_cuda_batched(lambda: X @ W, calls=20)
        print(f"== {M} x {N} x {K}: copy floor {floor * 1e6:.1f} us; cuBLAS matmul alone {t_cublas * 1e6:.1f} us "
              f"({floor / t_cublas:.2f} of copy)", flush=True)
        X32 = X.view(torch.int16).view(torch.int32).reshape(-1)
        W32 = W.view(torch.int16).view(torch.int32).reshape(-1)
        from numba import cuda as ncuda
        for v in variants:
            T, S, P, U = parse_variant(v)
            why = check_variant(M, N, K, T, S, P, U)
            if why:
                print(f"{v:12s} skipped: {why}", flush=True)
                continue
            kernel = make_kernel(T, S, P, U)
            C = torch.full((M, N), float("nan"), device="cuda")
            grid = (N // (8 * T), P)
            x, w = ncuda.as_cuda_array(X32), ncuda.as_cuda_array(W32)

            def launch():
                if P > 1:
                    C.zero_()
                kernel[grid, 32 * S](x, w, ncuda.as_cuda_array(C), M, N, K)

            launch()
            torch.cuda.synchronize()
            err = (C.double() - ref).abs().max().item()
            scale = ref.abs().max().item()
            t = time_cuda_batched(launch, calls=20)
            print(f"{v:12s} {t * 1e6:7.1f} us  {floor / t:5.2f} of copy  {t_cublas / t:5.2f}x cuBLAS  "
                  f"rel err {err / scale:.1e}" + ("  (+ a zeroing memset)" if P > 1 else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
