"""Timing helper shared by the GPU benchmarks."""

from __future__ import annotations

import statistics
import sys


def time_cuda(fn, repeat: int, warmup: int = 3) -> float:
    """Median seconds of ``fn`` over ``repeat`` runs, each timed with CUDA events (one
    launch's host cost included: see ``time_cuda_batched``)."""
    return time_cuda_batched(fn, calls=1, repeat=repeat, warmup=warmup)


def time_cuda_batched(fn, calls: int = 20, repeat: int = 10, warmup: int = 3) -> float:
    """Median seconds per call of ``fn`` over ``repeat`` event pairs, each around ``calls``
    calls issued back to back: the host's launch cost hides behind the GPU's work, so
    this is the kernel's time, not the caller's (``time_cuda`` includes one launch)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()

    def issue():
        for _ in range(calls):
            fn()

    return _median_per_call(issue, calls, repeat)


def _median_per_call(issue, calls: int, repeat: int) -> float:
    """Median seconds per call over ``repeat`` event pairs, each around ``issue()`` (which
    issues ``calls`` calls)."""
    import torch

    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        issue()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / calls)
    return statistics.median(times)


def time_cuda_replayed(fn, calls: int = 20, repeat: int = 10, warmup: int = 3) -> float:
    """Median seconds per call of ``fn`` (torch work) over ``repeat`` replays of one CUDA
    graph of ``calls`` calls: no host launch between the calls, as the search times a tcomp
    module (``tcomp.search.measure``). Where ``fn`` cannot be captured, its calls are timed
    back to back instead (:func:`time_cuda_batched`)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # NOTE: warm-up on a side stream, as capture requires
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
    except RuntimeError as err:
        print(f"note: a CUDA graph could not capture {getattr(fn, '__name__', fn)} ({str(err)[:80]}); timed "
              f"back to back instead", file=sys.stderr)
        torch.cuda.synchronize()
        return time_cuda_batched(fn, calls=calls, repeat=repeat, warmup=warmup)
    graph.replay()
    torch.cuda.synchronize()
    return _median_per_call(graph.replay, calls, repeat)


def build_scheduled(label: str, out, apply, width: int = 48):
    """``tc.build`` of ``out`` scheduled by ``apply(s, out)``; None where tcomp refuses the
    schedule, the refusal printed after ``label``."""
    import tcomp as tc

    s = tc.create_schedule(out)
    try:
        apply(s, out)
        return tc.build(s)
    except tc.TcompError as e:
        print(f"{label:{width}s} refused: {e}", flush=True)
        return None


def sgemm_setup(n: int, repeat: int):
    """Fixed-seed fp32 ``n x n`` inputs on the GPU, their float64 product, and cuBLAS's
    time for them (TF32 off), printed: ``(a, b, ref, seconds)``."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", generator=gen)
    b = torch.randn(n, n, device="cuda", generator=gen)
    t = time_cuda(lambda: torch.matmul(a, b), repeat)
    print(f"cuBLAS fp32 (TF32 off): {t * 1e3:.3f} ms  {2.0 * n ** 3 / t / 1e12:.1f} TFLOP/s", flush=True)
    return a, b, a.double() @ b.double(), t


def build_sgemm(s, a, b, ref):
    """Build schedule ``s`` of C = A @ B, run it once on ``a``, ``b`` into a NaN-poisoned
    output and compare with ``ref``: ``(module, output, build seconds, relative error,
    correct)``."""
    import time

    import torch

    import tcomp as tc

    t0 = time.time()
    mod = tc.build(s)
    c = torch.full(ref.shape, float("nan"), device="cuda")
    mod(a, b, c)
    torch.cuda.synchronize()
    build_s = time.time() - t0
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    return mod, c, build_s, err, bool(torch.isfinite(c).all()) and err < 1e-5


def bf16_benchmark_args(doc: str, argv=None, shape: str = "1024,12288,4096"):
    """The command line of the bf16 layer benchmarks: ``--shape M,N,K``, ``--repeat``,
    ``--no-compile`` (skip the torch.compile baseline) and ``--variant KEY=VALUE,...``
    (repeatable: one more tcomp row, the example's schedule with those ``mma_warp_tiles``
    arguments replaced; ``args.variants`` holds them as dicts); returns (args, (M, N, K))."""
    import argparse

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default=shape, help="M,N,K")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE,...",
                        help="also time the schedule with these mma_warp_tiles arguments, e.g. stages=4,BK=64")
    args = parser.parse_args(argv)
    args.variants = [tile_overrides(text) for text in args.variant]
    return args, tuple(int(x) for x in args.shape.split(","))


def tile_overrides(text: str) -> dict:
    """``"stages=4,rows_fastest=1,copy=tma"`` -> ``{"stages": 4, "rows_fastest": 1, "copy":
    "tma"}`` (integers, the ring's copy, and SwiGLU's quantizing phase ``quantize=NAME``)."""
    overrides = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if sep and (key == "copy" and value in ("cp.async", "tma") or key == "quantize" and value.isidentifier()):
            overrides[key] = value
            continue
        if not sep or not value.lstrip("-").isdigit():
            raise SystemExit(f"--variant takes KEY=INTEGER items (or copy=tma, quantize=NAME) separated by commas; "
                             f"got {item!r}")
        overrides[key] = int(value)
    return overrides


def variant_label(overrides: dict) -> str:
    """A row label for a ``--variant``: ``stages=4 rows_fastest=1``."""
    return " ".join(f"{k}={v}" for k, v in overrides.items())


def bf16_product_reference(M: int, N: int, K: int):
    """Seeded random bf16 A (M x K) and W (K x N) on the GPU, their product in float64, the
    sum of |a w| of each output and the bound of a float32 sum of K exact products,
    ``2 K 2^-24 sum_k |a_ik w_kj|``: ``(a, w, want, scale, bound)``."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
    w = torch.randn(K, N, device="cuda", generator=gen).to(torch.bfloat16)
    want = a.double() @ w.double()
    scale = a.double().abs() @ w.double().abs()
    return a, w, want, scale, 2 * K * 2.0 ** -24 * scale


def bf16_operands(M: int, K: int, weight_shape: tuple):
    """Seeded random bf16 inputs on the GPU: A (M x K) and weights of ``weight_shape``
    scaled by 1 / sqrt(K), so that the products stay near 1."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
    w = (torch.randn(*weight_shape, device="cuda", generator=gen) / K ** 0.5).to(torch.bfloat16)
    return a, w
