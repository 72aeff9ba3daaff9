"""The bf16 matrix product on the tensor cores (examples/gemm_bf16.py: ``tensorize`` onto
mma.sync.m16n8k16, float32 accumulators and output) against cuBLAS bf16 and
torch.compile, in one run.

    python benchmarks/gemm_bf16.py [--shape 4096,4096,4096] [--calls 5]

cuBLAS (``torch.matmul`` of bf16 tensors) writes a bf16 C and tcomp a float32 one: 2 bytes
more per output element for tcomp. tcomp's output is poisoned with NaN first and compared
with a float64 product of the same bf16 inputs, within the bound of a float32 sum of K exact
products: ``2 K 2^-24 sum_k |a_ik w_kj|``. Timing: batched CUDA events (``timing.time_cuda_batched``).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import time_cuda_batched  # noqa: E402  (benchmarks/timing.py)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="4096,4096,4096", help="M,N,K")
    parser.add_argument("--calls", type=int, default=5, help="calls per timed event pair")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    args = parser.parse_args(argv)

    import time

    import torch

    import gemm_bf16
    import tcomp as tc

    M, N, K = (int(x) for x in args.shape.split(","))
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
    w = torch.randn(K, N, device="cuda", generator=gen).to(torch.bfloat16)
    out = gemm_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    gemm_bf16.schedule(s, out)
    start = time.perf_counter()
    mod = tc.build(s)
    built = time.perf_counter() - start
    c = torch.full((M, N), float("nan"), dtype=torch.float32, device="cuda")
    mod(a, w, c)
    torch.cuda.synchronize()
    want = a.double() @ w.double()
    scale = a.double().abs() @ w.double().abs()
    error = (c.double() - want).abs()
    wrong = int((error > 2 * K * 2.0 ** -24 * scale).sum().item()) + int(torch.isnan(c).sum().item())
    worst = float((error / scale.clamp_min(1e-30)).max().item())
    flops = 2.0 * M * N * K
    rows = [("tcomp tensorize (mma.sync m16n8k16)", time_cuda_batched(lambda: mod(a, w, c), calls=args.calls)),
            ("cuBLAS bf16 (torch.matmul, bf16 out)", time_cuda_batched(lambda: torch.matmul(a, w), calls=args.calls))]
    if not args.no_compile:
        compiled = torch.compile(lambda x, y: torch.matmul(x, y).float())
        compiled(a, w)
        rows.append(("torch.compile (matmul, float32 out)", time_cuda_batched(lambda: compiled(a, w), calls=args.calls)))
    print(f"shape {M}x{N}x{K}; tcomp build {built:.1f} s; elements outside the float32 bound: {wrong}; "
          f"largest error {worst:.2e} of sum |a w| (K 2^-24 = {K * 2.0 ** -24:.2e})")
    base = rows[1][1]
    for name, t in rows:
        print(f"{name:40s} {t * 1e3:8.3f} ms {flops / t / 1e12:7.1f} TFLOP/s  {base / t:6.3f}x cuBLAS", flush=True)
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
