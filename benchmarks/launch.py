"""Host time per call: tcomp eager, tcomp graph replay, torch.matmul, and a chain of three
modules eager against one graph replay, on the GPU.

    python benchmarks/launch.py [--calls 1000] [--size 64]

Each figure is the wall time of ``--calls`` calls issued back to back, then one
synchronize, divided by the number of calls (at this size
the GPU finishes each kernel in a few microseconds, so the host's cost per call is what
is measured; the issue time alone is printed too). The module is a 64x64x64 fp32 matmul
(the SGEMM ladder's shared-memory kernel), one kernel, called with torch CUDA tensors and with
numba device arrays. The chain is the unfused matmul, SiLU and int8
quantization, one module each. Every variant is checked once against a float64
reference (outputs poisoned first).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))


def _matmul_module(n):
    """The SGEMM ladder's shared-memory kernel (32x32 tiles): a few µs of GPU time at 64^3, less
    than the host time being measured."""
    import sgemm_ladder as ladder
    import tcomp as tc

    C = ladder.algorithm(n, n, n)
    s = tc.create_schedule(C)
    ladder.schedule_shared(s, C)
    return tc.build(s)


def _one_thread_per_element(out):
    import tcomp as tc

    s = tc.create_schedule(out)
    i, j = s[out].axis
    io, jo, ii, ji = s[out].tile(i, j, 16, 16)
    s[out].bind(io, "blockIdx.y")
    s[out].bind(jo, "blockIdx.x")
    s[out].bind(ii, "threadIdx.y")
    s[out].bind(ji, "threadIdx.x")
    return s


def _chain_modules(n):
    import tcomp as tc

    C_in = tc.placeholder((n, n), "float32", name="C_in")
    Y = tc.compute((n, n), lambda i, j: tc.silu(C_in[i, j]), name="Y")
    Y_in = tc.placeholder((n, n), "float32", name="Y_in")
    Q = tc.compute((n, n), lambda i, j: tc.quantize(Y_in[i, j], 0.05, "int8"), name="Q")
    return _matmul_module(n), tc.build(_one_thread_per_element(Y)), tc.build(_one_thread_per_element(Q))


def per_call_us(fn, calls: int) -> tuple:
    """Microseconds per call of ``fn`` over ``calls`` calls: to issue them (the host's
    time), and until one synchronize after them returns (host or GPU, whichever is
    slower)."""
    import torch

    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    issued = time.perf_counter()
    torch.cuda.synchronize()
    done = time.perf_counter()
    return (issued - start) / calls * 1e6, (done - start) / calls * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args(argv)

    import torch
    from numba import cuda

    import tcomp as tc

    n = args.size
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", generator=gen)
    b = torch.randn(n, n, device="cuda", generator=gen)
    c = torch.full((n, n), float("nan"), device="cuda")
    ref = a.double() @ b.double()
    mod = _matmul_module(n)
    da, db, dc = (cuda.as_cuda_array(x) for x in (a, b, c))
    graph = mod.graph(a, b, c)
    ok = True

    def correct(what, got):
        nonlocal ok
        good = bool(torch.isfinite(got).all()) and ((got.double() - ref).abs().max() < 1e-3).item()
        ok &= good
        print(f"{what}: correct={good}", flush=True)

    for what, run in (("eager, torch", lambda: mod(a, b, c)), ("eager, device arrays", lambda: mod(da, db, dc)),
                      ("graph replay", graph.replay)):
        c.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        correct(what, c)

    rows = [
        ("tcomp eager, torch tensors", per_call_us(lambda: mod(a, b, c), args.calls)),
        ("tcomp eager, numba device arrays", per_call_us(lambda: mod(da, db, dc), args.calls)),
        ("tcomp graph replay", per_call_us(graph.replay, args.calls)),
        ("torch.matmul(a, b, out=c)", per_call_us(lambda: torch.matmul(a, b, out=c), args.calls)),
    ]

    mm, silu, quant = _chain_modules(n)
    y = torch.full((n, n), float("nan"), device="cuda")
    q = torch.full((n, n), -77, dtype=torch.int8, device="cuda")

    def chain():
        mm(a, b, c)
        silu(c, y)
        quant(y, q)

    chain_graph = tc.graph(chain)
    q_ref = torch.clamp(torch.round(torch.nn.functional.silu(ref) / 0.05), -128, 127).to(torch.int8)
    for what, run in (("chain eager", chain), ("chain graph replay", chain_graph.replay)):
        q.fill_(-77)
        run()
        torch.cuda.synchronize()
        diff = (q.int() - q_ref.int()).abs()
        good = diff.max().item() <= 1 and (diff > 0).float().mean().item() < 0.01
        ok &= good
        print(f"{what}: correct={good}", flush=True)
    rows += [
        ("chain of 3 modules, eager", per_call_us(chain, args.calls)),
        ("chain of 3 modules, one graph replay", per_call_us(chain_graph.replay, args.calls)),
    ]

    print(f"\n{torch.cuda.get_device_name()}, {n}x{n}x{n}, {args.calls} calls then one synchronize")
    print("| what | µs per call to issue (host) | µs per call, synchronized |")
    print("| --- | ---: | ---: |")
    for what, (issue, wall) in rows:
        print(f"| {what} | {issue:.1f} | {wall:.1f} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
