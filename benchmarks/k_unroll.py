"""The warptiled SGEMM rung with the k loop of each step unrolled by 1, 2, 4, ... on the
GPU, against cuBLAS fp32 in the same run.

    python benchmarks/k_unroll.py [--size 4096] [--repeat 20] [--factors 1,2,4]

Every variant is checked against a float64 reference (output poisoned with NaN first).
A factor of 8 builds in about 3 minutes and 16 (the whole step) does not finish in 10.
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
    parser.add_argument("--factors", default="1,2,4", help="comma-separated k_unroll factors")
    args = parser.parse_args(argv)

    import sgemm_ladder as ladder
    import tcomp as tc

    n = args.size
    a, b, ref, t_cublas = sgemm_setup(n, args.repeat)
    flops = 2.0 * n ** 3
    print("| k_unroll | ms | TFLOP/s | x cuBLAS | correct | build s |")
    print("| ---: | ---: | ---: | ---: | --- | ---: |")
    ok_all = True
    for factor in (int(f) for f in args.factors.split(",")):
        C = ladder.algorithm(n, n, n)
        s = tc.create_schedule(C)
        ladder.schedule_warptiled(s, C, k_unroll=factor)
        mod, c, build_s, err, ok = build_sgemm(s, a, b, ref)
        ok_all &= ok
        t = time_cuda(lambda: mod(a, b, c), args.repeat)
        print(f"| {factor} | {t * 1e3:.3f} | {flops / t / 1e12:.2f} | {t_cublas / t:.3f} | {ok} | {build_s:.0f} |",
              flush=True)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
