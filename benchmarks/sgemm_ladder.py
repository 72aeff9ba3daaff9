"""The SGEMM ladder on the GPU: each rung's TFLOP/s and its ratio to cuBLAS fp32,
plus the fused matmul + SiLU + int8 example against PyTorch eager, all in one run.

    python benchmarks/sgemm_ladder.py [--size 4096] [--repeat 20] [--rungs naive,shared,...]

Every rung is checked against a float64 reference (outputs poisoned with NaN first).
cuBLAS runs through torch with TF32 off, in the same process, on the same inputs.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash

from timing import build_sgemm, sgemm_setup, time_cuda  # noqa: E402  (benchmarks/timing.py)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rungs", default=None, help="comma-separated rung names (default: every rung)")
    args = parser.parse_args(argv)

    import torch

    import sgemm_ladder as ladder
    import matmul_silu_quant as fused
    import tcomp as tc

    n = args.size
    a, b, ref, t_cublas = sgemm_setup(n, args.repeat)
    flops = 2.0 * n ** 3
    rows = []
    for name in (args.rungs.split(",") if args.rungs else ladder.SCHEDULES):
        C = ladder.algorithm(n, n, n)
        s = tc.create_schedule(C)
        ladder.SCHEDULES[name](s, C)
        mod, c, compile_s, err, ok = build_sgemm(s, a, b, ref)
        t = time_cuda(lambda: mod(a, b, c), args.repeat)
        rows.append((name, t, flops / t / 1e12, t_cublas / t, ok, err, compile_s))
        print(f"{name:14s} {t * 1e3:8.3f} ms {flops / t / 1e12:6.2f} TFLOP/s  {t_cublas / t:5.2f}x cuBLAS  "
              f"correct={ok} (rel err {err:.1e}) build {compile_s:.1f}s", flush=True)

    # fused matmul + SiLU + int8 against PyTorch eager doing the same in fp32
    Q = fused.algorithm(n, n, n)
    s = tc.create_schedule(Q)
    fused.schedule(s, Q)
    mod = tc.build(s)
    q = torch.full((n, n), -99, dtype=torch.int8, device="cuda")
    mod(a, b, q)

    def eager():
        y = torch.nn.functional.silu(torch.matmul(a, b))
        return torch.clamp(torch.round(y / fused.SCALE), -128, 127).to(torch.int8)

    q_ref = eager()
    y64 = torch.nn.functional.silu(ref)
    q64 = torch.clamp(torch.round(y64 / fused.SCALE), -128, 127).to(torch.int8)
    diff = (q.int() - q64.int()).abs()
    t_fused = time_cuda(lambda: mod(a, b, q), args.repeat)
    t_eager = time_cuda(eager, args.repeat)
    print(f"fused matmul+SiLU+int8: {t_fused * 1e3:.3f} ms; PyTorch eager fp32: {t_eager * 1e3:.3f} ms; "
          f"speed-up {t_eager / t_fused:.2f}x; int8 vs float64 reference: max |diff| {diff.max().item()}, "
          f"{(diff > 0).float().mean().item() * 100:.4f}% differ (eager: "
          f"{((q_ref.int() - q64.int()).abs() > 0).float().mean().item() * 100:.4f}%)")

    print("\n| rung | ms | TFLOP/s | x cuBLAS | correct |")
    print("| --- | ---: | ---: | ---: | --- |")
    print(f"| cuBLAS fp32 | {t_cublas * 1e3:.3f} | {flops / t_cublas / 1e12:.1f} | 1.00 | reference |")
    for name, t, tf, ratio, ok, err, _ in rows:
        print(f"| {name} | {t * 1e3:.3f} | {tf:.2f} | {ratio:.2f} | {ok} |")
    return 0 if all(r[4] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
