"""What the FFN projection's epilogue costs its kernel: the example's schedule
(examples/ffn_bf16.py) on three algorithms that differ only after the bf16 rounding of
A @ W: the example's SiLU then int8 quantization, the quantization alone, and the bf16
value itself written out (2 bytes an element instead of 1), against cuBLAS's matmul alone,
in one run.

    python benchmarks/epilogue_cost.py [--shapes 7239,12288,4096 1024,12288,4096]

A kernel runs its epilogue after its k loop, with the tensor cores idle where one block
holds an SM; the difference between the rows is what the epilogue's instructions cost.
Timing: batched CUDA events (``timing.time_cuda_batched``); outputs poisoned, then compared
with a float64 reference rounded where the algorithm rounds.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import bf16_operands, time_cuda_batched  # noqa: E402  (benchmarks/timing.py)


def algorithm(M: int, N: int, K: int, epilogue: str):
    """bf16(A @ W) followed by ``epilogue``: "silu+quantize" (the example's), "quantize" or
    "bf16" (the rounded product itself)."""
    import ffn_bf16 as ffn
    import tcomp as tc
    from tcomp.testing.algorithms import ffn_bf16

    *_, Cb, _, Q = ffn_bf16(M, N, K, ffn.SCALE)
    if epilogue == "silu+quantize":
        return Q
    if epilogue == "bf16":
        return Cb
    Y = tc.compute((M, N), lambda i, j: Cb[i, j] * 1.0, name="Y")
    return tc.compute((M, N), lambda i, j: tc.quantize(Y[i, j], ffn.SCALE, "int8"), name="Q")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", nargs="+", default=["7239,12288,4096", "1024,12288,4096"], help="M,N,K ...")
    args = parser.parse_args(argv)

    import torch

    import gemm_bf16
    import tcomp as tc

    worst = 0
    for shape in args.shapes:
        M, N, K = (int(x) for x in shape.split(","))
        a, w = bf16_operands(M, K, (K, N))
        exact = (a.double() @ w.double()).to(torch.bfloat16)
        print(f"== {M} x {N} x {K}", flush=True)
        t_cublas = time_cuda_batched(lambda: torch.matmul(a, w), calls=5)
        for epilogue in ("silu+quantize", "quantize", "bf16"):
            out = algorithm(M, N, K, epilogue)
            s = tc.create_schedule(out)
            for stage in () if epilogue == "bf16" else ("Cb", "Y"):
                s[stage].compute_inline()
            gemm_bf16.product_on_tensor_cores(s, out, "C", "A", "W", {})
            mod = tc.build(s)
            dtype = torch.bfloat16 if epilogue == "bf16" else torch.int8
            got = torch.full((M, N), -99, dtype=dtype, device="cuda")
            mod(a, w, got)
            torch.cuda.synchronize()
            if epilogue == "bf16":
                want = exact
                diff = ((got.float() - want.float()).abs() / want.float().abs().clamp(min=1.0)).max().item()
                ok = diff <= 2 ** -7
            else:
                y = torch.nn.functional.silu(exact.float()).to(torch.bfloat16) if epilogue == "silu+quantize" \
                    else exact
                want = torch.clamp(torch.round(y.float() / 0.05), -128, 127).to(torch.int8)
                diff = (got.int() - want.int()).abs().max().item()
                ok = diff <= 1
            worst = max(worst, 0 if ok else 1)
            t = time_cuda_batched(lambda: mod(a, w, got), calls=5)
            print(f"tcomp, {epilogue:14s} {t * 1e3:8.3f} ms  {t / t_cublas:5.3f}x cuBLAS  "
                  f"max diff {diff:.3g}{'' if ok else '  WRONG'}", flush=True)
        print(f"cuBLAS matmul alone   {t_cublas * 1e3:8.3f} ms", flush=True)
    return worst


if __name__ == "__main__":
    sys.exit(main())
