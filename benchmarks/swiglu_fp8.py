"""SwiGLU with per-row float8 quantization (examples/swiglu_fp8.py) against PyTorch eager
and torch.compile doing the same, and cuBLAS's two projections alone, in one run.

    python benchmarks/swiglu_fp8.py [--shape 1024,12288,4096] [--repeat 20] [--no-compile]

The baselines compute ``silu(A @ W_g) * (A @ W_u)`` in bfloat16 (each matmul's result,
SiLU's and the product's rounded to bf16, as the algorithm says), the row max of its
magnitude and the e4m3 quantization ``Z / (max / 448)``. Every output is compared with a
reference that accumulates the projections in float64 (then rounds where the algorithm
rounds): the fp8 values may differ by one step where a projection's float32 sum rounds to
the other neighbouring bf16 value. The tcomp output is poisoned with NaN first. Each call
is timed alone with CUDA events, its launches' host time included.
"""

from __future__ import annotations

import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import bf16_benchmark_args, bf16_operands, time_cuda, variant_label  # noqa: E402  (benchmarks/timing.py)


def main(argv=None) -> int:
    args, (M, N, K) = bf16_benchmark_args(__doc__, argv)

    import torch

    import swiglu_fp8 as sw
    import tcomp as tc

    a, w = bf16_operands(M, K, (2, K, N))
    fp8 = torch.float8_e4m3fn

    def quantize(z):
        scale = z.float().abs().amax(dim=1, keepdim=True) / sw.FP8_MAX
        return (z.float() / scale).to(fp8)

    def eager():
        g, u = torch.matmul(a, w[0]), torch.matmul(a, w[1])
        return quantize(torch.nn.functional.silu(g) * u)

    def projections():
        return torch.matmul(a, w[0]), torch.matmul(a, w[1])

    g64, u64 = (a.double() @ w[h].double() for h in (0, 1))
    z64 = (torch.nn.functional.silu(g64.to(torch.bfloat16).float()).to(torch.bfloat16).float()
           * u64.to(torch.bfloat16).float()).to(torch.bfloat16)
    q64 = quantize(z64)

    def steps(x):
        """fp8 steps between x and the reference: (largest, % of outputs that differ)."""
        line = [torch.where(b >= 128, 128 - b, b) for b in (x.view(torch.uint8).int(), q64.view(torch.uint8).int())]
        d = (line[0] - line[1]).abs()
        return d.max().item(), (d > 0).float().mean().item() * 100

    flops = 2.0 * 2 * M * N * K
    tcomp_rows = []
    for label, overrides in [("tcomp, two kernels (tensor cores)", {})] + [
            (f"tcomp {variant_label(v)}", v) for v in args.variants]:
        out = sw.algorithm(M, N, K)
        s = tc.create_schedule(out)
        sw.schedule(s, out, **overrides)
        mod = tc.build(s)
        q = torch.full((M, N), float("nan"), device="cuda").to(fp8)
        mod(a, w, q)
        torch.cuda.synchronize()
        tcomp_rows.append((label, time_cuda(lambda: mod(a, w, q), args.repeat), q))
    rows = tcomp_rows[:1] + [("PyTorch eager (cuBLAS bf16)", time_cuda(eager, args.repeat), eager())] + tcomp_rows[1:]
    if not args.no_compile:
        compiled = torch.compile(eager)
        rows.append(("torch.compile of eager", time_cuda(compiled, args.repeat), compiled()))
    t_proj = time_cuda(projections, args.repeat)
    worst = 0
    for name, t, result in rows:
        dmax, pct = steps(result)
        worst = max(worst, dmax) if name.startswith("tcomp") else worst
        print(f"{name:36s} {t * 1e3:8.3f} ms {flops / t / 1e12:7.1f} TFLOP/s  vs float64 reference: "
              f"max {dmax} fp8 steps, {pct:.4f}% differ", flush=True)
    print(f"{'cuBLAS bf16, the two projections':36s} {t_proj * 1e3:8.3f} ms {flops / t_proj / 1e12:7.1f} TFLOP/s")
    print(f"tcomp / eager time: {rows[0][1] / rows[1][1]:.2f}x")
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
