"""Boundary tiles on the GPU: a rung at a shape no tile divides against the same rung at
the next shape that its tiles divide, TFLOP/s and their ratio, cuBLAS fp32 at both.

    python benchmarks/boundary_tiles.py [--repeat 20] [--pairs vectorized:1000:1024,warptiled:4000:4096]

Every run is checked against a float64 reference (output poisoned with NaN first).
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
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--pairs", default="vectorized:1000:1024,warptiled:4000:4096",
                        help="comma-separated RUNG:ODD:EVEN (sizes of M = N = K)")
    args = parser.parse_args(argv)

    import sgemm_ladder as ladder
    import tcomp as tc

    rows, ok_all = [], True
    for pair in args.pairs.split(","):
        rung, odd, even = pair.split(":")
        figures = {}
        for n in (int(odd), int(even)):
            a, b, ref, t_cublas = sgemm_setup(n, args.repeat)
            C = ladder.algorithm(n, n, n)
            s = tc.create_schedule(C)
            ladder.SCHEDULES[rung](s, C)
            mod, c, build_s, err, ok = build_sgemm(s, a, b, ref)
            ok_all &= ok
            t = time_cuda(lambda: mod(a, b, c), args.repeat)
            tflops = 2.0 * n ** 3 / t / 1e12
            figures[n] = tflops
            print(f"{rung} {n}^3: {t * 1e3:.3f} ms {tflops:.2f} TFLOP/s, {t_cublas / t:.2f}x cuBLAS, "
                  f"correct={ok} (rel err {err:.1e}), build {build_s:.1f} s", flush=True)
            rows.append((rung, n, t, tflops, t_cublas / t, ok))
        print(f"{rung}: {odd}^3 reaches {figures[int(odd)] / figures[int(even)]:.2f}x the TFLOP/s of {even}^3",
              flush=True)

    print("\n| rung | M = N = K | ms | TFLOP/s | x cuBLAS | correct |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for rung, n, t, tflops, ratio, ok in rows:
        print(f"| {rung} | {n} | {t * 1e3:.3f} | {tflops:.2f} | {ratio:.2f} | {ok} |")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
