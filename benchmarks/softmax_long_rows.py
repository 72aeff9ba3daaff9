"""Probe: where a float32 softmax over long rows (4096 x 32768, issue 32) loses its time,
with hand-written Numba kernels of the designs a schedule could take, beside tcomp's own
kernel (the example's schedule), torch.softmax, torch.compile and a device copy, in one run:

- ``staged, exp twice``: tcomp's design by hand. A block of 1024 threads per row, the row
  copied into shared memory (128 KB: one block an SM), its max, then its sum of
  exponentials, then the outputs, each exponential computed again for the output.
- ``staged, exp once``: the sum's pass writes each exponential back over the staged
  element (in place), the output pass divides it by the sum.
- ``registers``: every pass reads a thread's own elements in the same order, so the row
  needs no shared memory: each thread keeps its 32 elements in registers, takes their max
  as they arrive, and keeps their exponentials for the output (exp once).
- ``online, two reads``: no staging at all (many blocks an SM): a first pass over the row
  keeps each thread's running max and its sum of exponentials rescaled to it (the online
  softmax of the chapter's section 5.3.3), the block merges them, a second pass reads the
  row again (from the L2, mostly) and writes it.

Each output is poisoned first and compared with a float64 reference (1e-5 relative).

    python benchmarks/softmax_long_rows.py [--rows 4096] [--cols 32768] [--no-compile]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from numba import cuda, float32, uint32  # noqa: E402  (module globals: the simulator swaps ``cuda`` there)

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
#: the slots of a block reduction's shared scratch: a warp's each, or a thread's in the simulator
RED = 1024 if SIMULATOR else 32
if SIMULATOR:  # the simulator's plain-Python accesses
    from tcomp.codegen.vector_access import sim_load4 as load4, sim_store4 as store4  # noqa: E402
else:
    from tcomp.codegen.vector_access import load4, store4  # noqa: E402
from hand_launch import launcher  # noqa: E402
from timing import time_cuda_batched  # noqa: E402


def kernels(N: int):
    """The hand kernels for rows of ``N`` float32 (a multiple of 4 x 1024)."""
    T = 1024
    C = N // (4 * T)  # float4 chunks per thread
    V = 4 * C
    NEG = float32(-math.inf)
    # index arithmetic in uint32, as tcomp's kernels do (int64 costs the passes that are
    # compute-bound a measurable share)
    UN, UC, UV, U4, U4T = uint32(N), uint32(C), uint32(V), uint32(4), uint32(4 * T)

    if SIMULATOR:  # no shuffles there: every thread posts its value, and all add them in order
        @cuda.jit(device=True, inline="always")
        def block_max(x, red):
            red[cuda.threadIdx.x] = x
            cuda.syncthreads()
            r = red[0]
            for w in range(1, cuda.blockDim.x):
                r = max(r, red[w])
            return r

        @cuda.jit(device=True, inline="always")
        def block_sum(x, red):
            red[cuda.threadIdx.x] = x
            cuda.syncthreads()
            r = red[0]
            for w in range(1, cuda.blockDim.x):
                r += red[w]
            return r
    else:  # a warp's shuffles, then each warp's lane w reads warp w's result and shuffles again
        # (every thread ends with the total, in log steps: a thread adding the 32 warps' values
        # one after another is a 31-long chain of shared loads, twice a row)
        @cuda.jit(device=True, inline="always")
        def block_max(x, red):
            for o in (16, 8, 4, 2, 1):
                x = max(x, cuda.shfl_xor_sync(0xFFFFFFFF, x, o))
            lane = cuda.threadIdx.x % 32
            if lane == 0:
                red[cuda.threadIdx.x // 32] = x
            cuda.syncthreads()
            r = red[lane] if lane < cuda.blockDim.x // 32 else NEG
            for o in (16, 8, 4, 2, 1):
                r = max(r, cuda.shfl_xor_sync(0xFFFFFFFF, r, o))
            return r

        @cuda.jit(device=True, inline="always")
        def block_sum(x, red):
            for o in (16, 8, 4, 2, 1):
                x += cuda.shfl_xor_sync(0xFFFFFFFF, x, o)
            lane = cuda.threadIdx.x % 32
            if lane == 0:
                red[cuda.threadIdx.x // 32] = x
            cuda.syncthreads()
            r = red[lane] if lane < cuda.blockDim.x // 32 else float32(0.0)
            for o in (16, 8, 4, 2, 1):
                r += cuda.shfl_xor_sync(0xFFFFFFFF, r, o)
            return r

    @cuda.jit(device=True, inline="always")
    def load_to_registers(X, base, t, vals):
        """The thread's elements of the row into ``vals``, every load issued before any
        is used (a use between them would make each wait for the one before); their max."""
        for c in range(UC):
            vals[U4 * c], vals[U4 * c + uint32(1)], vals[U4 * c + uint32(2)], vals[U4 * c + uint32(3)] = \
                load4(X, base + c * U4T + U4 * t)
        m = NEG
        for q in range(UV):
            m = max(m, vals[q])
        return m

    @cuda.jit(device=True, inline="always")
    def load_row(X, base, t, row, vals):
        """:func:`load_to_registers`, then the elements stored to the shared ``row`` (each
        thread reads back only its own: no barrier needed); their max."""
        m = load_to_registers(X, base, t, vals)
        for c in range(UC):
            store4(row, c * U4T + U4 * t, (vals[U4 * c], vals[U4 * c + uint32(1)], vals[U4 * c + uint32(2)],
                                          vals[U4 * c + uint32(3)]))
        return m

    def staged(exp_once: bool):
        """The row staged in shared memory; with ``exp_once`` the sum's pass writes each
        exponential back over its element and the output pass divides it, else the output
        pass computes it again."""
        @cuda.jit
        def kernel(X, Y):
            row = cuda.shared.array(0, float32)
            vals = cuda.local.array(V, float32)
            red_m = cuda.shared.array(RED, float32)
            red_s = cuda.shared.array(RED, float32)
            base, t = uint32(cuda.blockIdx.x) * UN, uint32(cuda.threadIdx.x)
            m = load_row(X, base, t, row, vals)
            m = block_max(m, red_m)
            s = float32(0.0)
            for c in range(UC):
                v0, v1, v2, v3 = load4(row, c * U4T + U4 * t)
                e0, e1, e2, e3 = math.exp(v0 - m), math.exp(v1 - m), math.exp(v2 - m), math.exp(v3 - m)
                if exp_once:
                    store4(row, c * U4T + U4 * t, (e0, e1, e2, e3))
                s += e0 + e1 + e2 + e3
            s = block_sum(s, red_s)
            for c in range(UC):
                v0, v1, v2, v3 = load4(row, c * U4T + U4 * t)
                if not exp_once:
                    v0, v1, v2, v3 = math.exp(v0 - m), math.exp(v1 - m), math.exp(v2 - m), math.exp(v3 - m)
                store4(Y, base + c * U4T + U4 * t, (v0 / s, v1 / s, v2 / s, v3 / s))
        return kernel

    @cuda.jit
    def registers(X, Y):
        red_m = cuda.shared.array(RED, float32)
        red_s = cuda.shared.array(RED, float32)
        vals = cuda.local.array(V, float32)
        base, t = uint32(cuda.blockIdx.x) * UN, uint32(cuda.threadIdx.x)
        m = load_to_registers(X, base, t, vals)
        m = block_max(m, red_m)
        s = float32(0.0)
        for q in range(UV):
            e = math.exp(vals[q] - m)
            vals[q] = e
            s += e
        s = block_sum(s, red_s)
        for c in range(UC):
            store4(Y, base + c * U4T + U4 * t,
                   (vals[U4 * c] / s, vals[U4 * c + uint32(1)] / s, vals[U4 * c + uint32(2)] / s,
                    vals[U4 * c + uint32(3)] / s))

    def online(threads):
        steps = uint32(N // (8 * threads))  # two float4 loads a step
        step, half = uint32(8 * threads), uint32(4 * threads)

        @cuda.jit
        def kernel(X, Y):
            red_m = cuda.shared.array(RED, float32)
            red_s = cuda.shared.array(RED, float32)
            base, t = uint32(cuda.blockIdx.x) * UN, uint32(cuda.threadIdx.x)
            m = NEG
            s = float32(0.0)
            for c in range(steps):
                at = base + c * step + U4 * t
                a0, a1, a2, a3 = load4(X, at)
                b0, b1, b2, b3 = load4(X, at + half)
                mc = max(max(max(a0, a1), max(a2, a3)), max(max(b0, b1), max(b2, b3)))
                mn = max(m, mc)
                s = s * math.exp(m - mn) + (math.exp(a0 - mn) + math.exp(a1 - mn) + math.exp(a2 - mn)
                                            + math.exp(a3 - mn) + math.exp(b0 - mn) + math.exp(b1 - mn)
                                            + math.exp(b2 - mn) + math.exp(b3 - mn))
                m = mn
            row_max = block_max(m, red_m)
            total = block_sum(s * math.exp(m - row_max), red_s)
            for c in range(steps):
                at = base + c * step + U4 * t
                a0, a1, a2, a3 = load4(X, at)
                b0, b1, b2, b3 = load4(X, at + half)
                store4(Y, at, (math.exp(a0 - row_max) / total, math.exp(a1 - row_max) / total,
                               math.exp(a2 - row_max) / total, math.exp(a3 - row_max) / total))
                store4(Y, at + half, (math.exp(b0 - row_max) / total, math.exp(b1 - row_max) / total,
                                             math.exp(b2 - row_max) / total, math.exp(b3 - row_max) / total))
        return kernel

    return {
        "staged, exp twice (1024 threads)": (staged(False), T, 4 * N),
        "staged, exp once (1024 threads)": (staged(True), T, 4 * N),
        "registers (1024 threads)": (registers, T, 0),
        "online, two reads (256 threads)": (online(256), 256, 0),
        "online, two reads (512 threads)": (online(512), 512, 0),
        "online, two reads (1024 threads)": (online(1024), 1024, 0),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=32768)
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    args = parser.parse_args(argv)
    import torch

    import softmax as example
    import tcomp as tc

    M, N = args.rows, args.cols
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, N, device="cuda", generator=gen) * 4
    ref = torch.softmax(x.double(), dim=1)
    y = torch.empty_like(x)
    floor = time_cuda_batched(lambda: y.copy_(x))
    print(f"== softmax {M} x {N} fp32: copy floor {floor * 1e6:.1f} us", flush=True)
    print(f"{'kernel':40s} {'time':>9s} {'of copy':>8s} {'vs torch.softmax':>17s}  max rel err", flush=True)
    t_torch = time_cuda_batched(lambda: torch.softmax(x, dim=1))

    def report(label, fn):
        y.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        err = ((y.double() - ref).abs() / ref.abs().clamp_min(1e-30)).max().item()
        t = time_cuda_batched(fn)
        print(f"{label:40s} {t * 1e6:7.1f}us {floor / t:8.3f} {t_torch / t:16.2f}x  {err:.1e}", flush=True)

    report("torch.softmax", lambda: y.copy_(torch.softmax(x, dim=1)))
    print(f"{'torch.softmax (no copy)':40s} {t_torch * 1e6:7.1f}us {floor / t_torch:8.3f}", flush=True)
    if not args.no_compile:
        compiled = torch.compile(lambda a: torch.softmax(a, dim=1))
        compiled(x)
        t = time_cuda_batched(lambda: compiled(x))
        print(f"{'torch.compile (no copy)':40s} {t * 1e6:7.1f}us {floor / t:8.3f} {t_torch / t:16.2f}x", flush=True)
    out = example.algorithm(M=M, N=N)
    s = tc.create_schedule(out)
    example.schedule(s, out)
    mod = tc.build(s)
    report("tcomp, the example's schedule", lambda: mod(x, y))
    for label, (kernel, threads, shared) in kernels(N).items():
        report(label, launcher(kernel, (M,), (threads,), (x.view(-1), y.view(-1)), shared))
    return 0


if __name__ == "__main__":
    sys.exit(main())
