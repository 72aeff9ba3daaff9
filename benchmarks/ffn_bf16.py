"""The bf16 FFN projection on the GPU: tcomp's fused kernels
(examples/ffn_bf16.py: bf16 A @ W accumulated in fp32, rounded to bf16, SiLU, int8; its
``schedule`` on the tensor cores and its ``cuda_cores`` schedule) against PyTorch eager
doing the same (cuBLAS bf16 matmul, then SiLU and quantization), in one run.

    python benchmarks/ffn_bf16.py [--shape 1024,12288,4096] [--repeat 20] [--no-compile]
    python benchmarks/ffn_bf16.py --shape 16,12288,4096     # a decode step (split-K schedule)

Each call is timed alone, its launches' host time included, for tcomp and the baselines
alike (PyTorch eager launches three kernels; torch.compile's inductor fuses the epilogue),
and back to back (20 calls between two events: the kernels' time, the host's launches
hidden behind them).

Both outputs are compared with a reference computed in float64 from the same bf16
inputs, rounded to bf16 where the algorithm says: the matmul's result and SiLU's (SiLU
of a bf16 value is bf16); the tcomp output is poisoned first.
"""

from __future__ import annotations

import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import bf16_benchmark_args, bf16_operands, time_cuda, time_cuda_batched, variant_label  # noqa: E402  (benchmarks/timing.py)


def main(argv=None) -> int:
    args, (M, N, K) = bf16_benchmark_args(__doc__, argv)

    import torch

    import ffn_bf16 as ffn
    import tcomp as tc

    a, w = bf16_operands(M, K, (K, N))

    def quantize(y):
        return torch.clamp(torch.round(y / ffn.SCALE), -128, 127).to(torch.int8)

    def eager():
        # SiLU of a bf16 tensor is bf16 (computed in fp32, rounded), as in the algorithm
        return quantize(torch.nn.functional.silu(torch.matmul(a, w)).float())

    # the algorithm's rounding points: C and SiLU(C) are bfloat16, the quantization is in fp32
    c64 = a.double() @ w.double()
    q64 = quantize(torch.nn.functional.silu(c64.to(torch.bfloat16).float()).to(torch.bfloat16).float())

    flops = 2.0 * M * N * K

    def differ(x):
        d = (x.int() - q64.int()).abs()
        return d.max().item(), (d > 0).float().mean().item() * 100

    def both_timings(fn):
        """Seconds of one call timed alone and of one call among 20 back to back."""
        return time_cuda(fn, args.repeat), time_cuda_batched(fn, calls=20, repeat=max(3, args.repeat // 4))

    rows, worst = [], 0
    schedules = [("tcomp fused (tensor cores)", ffn.schedule), ("tcomp fused (CUDA cores)", ffn.cuda_cores)] + [
        (f"tcomp {variant_label(v)}", lambda s, Q, v=v: ffn.schedule(s, Q, **v)) for v in args.variants]
    for label, apply in schedules:
        Q = ffn.algorithm(M, N, K)
        s = tc.create_schedule(Q)
        apply(s, Q)
        mod = tc.build(s)
        q = torch.full((M, N), -99, dtype=torch.int8, device="cuda")
        mod(a, w, q)
        torch.cuda.synchronize()
        rows.append((label, *both_timings(lambda: mod(a, w, q)), q))
        worst = max(worst, differ(q)[0])
    q_eager = eager()
    t_eager, b_eager = both_timings(eager)
    t_matmul, b_matmul = both_timings(lambda: torch.matmul(a, w))
    baselines = [("PyTorch eager (cuBLAS bf16)", t_eager, b_eager, q_eager)]
    if not args.no_compile:
        compiled = torch.compile(eager)
        baselines.append(("torch.compile of eager", *both_timings(compiled), compiled()))
    print(f"{'':34s} {'one call':>21s} {'back to back':>15s}")
    for name, t, b, out in rows + baselines:
        dmax, pct = differ(out)
        print(f"{name:34s} {t * 1e3:8.3f} ms {flops / t / 1e12:7.1f} TFLOP/s {b * 1e3:8.3f} ms  vs float64 "
              f"reference: max |diff| {dmax}, {pct:.4f}% differ", flush=True)
    print(f"{'cuBLAS bf16 matmul alone':34s} {t_matmul * 1e3:8.3f} ms {flops / t_matmul / 1e12:7.1f} TFLOP/s "
          f"{b_matmul * 1e3:8.3f} ms")
    for name, t, b, _ in rows:
        print(f"{name} / eager time: {t / t_eager:.2f}x (back to back {b / b_eager:.2f}x); / cuBLAS's matmul "
              f"alone: {t / t_matmul:.3f}x (back to back {b / b_matmul:.3f}x)")
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
