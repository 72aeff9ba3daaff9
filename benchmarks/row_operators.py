"""Row operators in one kernel (issue 32): each example's hand schedule, which is
``rows_in_blocks`` (a block per row, the row staged in shared memory, its statistics in
interleaved slices), at its default parameters and at a few others. Cases:

- rmsnorm (examples/rmsnorm.py, bf16 with gamma): 1024 x 4096, 7239 x 4096 (the
  chapter's prefill) and 1 x 4096 (one decode row);
- softmax (examples/softmax.py, float32): 4096 x 4096, 4096 x 32768, and one row of
  151936 (a decode step's vocabulary, Qwen3's), where the example's ``split`` schedule
  (``rows_over_blocks``: the statistics in segments on blocks of their own) is the
  variant to compare with a block per row; 8192 x 1024, short rows, where a warp per row
  and several rows a block (``rows=``) are the variants to compare;
- layernorm (examples/layernorm.py, bf16 with gamma and beta): 1024 x 4096;
- gelu (examples/gelu_chain.py, bf16): 8192 x 8192, an elementwise chain with a bias
  broadcast down the rows (not a row operator; the same comparison).

Each is measured against PyTorch eager, torch.compile and the device copy of its bytes,
in one run:

    python benchmarks/row_operators.py [--cases rmsnorm1024,softmax4096,...] [--no-compile] [--quick]

"of copy" is the floor over the time: the operator's bytes (its inputs read once, its
output written once) at the bandwidth of ``Y.copy_(X)`` on the case's input. Times are
batched CUDA events (``timing.time_cuda_batched``: the kernels' time); "graph" is a CUDA
graph replay of one call, which is what a decode step sees. Outputs are poisoned first,
then compared with a float64 reference; bf16 outputs must lie within one bf16 rounding
of it, float32 ones within 1e-5 relative.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import time_cuda_batched  # noqa: E402  (benchmarks/timing.py)


#: case -> (example name, rows, row length)
CASES = {
    "rmsnorm1024": ("rmsnorm", 1024, 4096), "rmsnorm7239": ("rmsnorm", 7239, 4096), "rmsnorm1": ("rmsnorm", 1, 4096),
    "softmax4096": ("softmax", 4096, 4096), "softmax4096x32768": ("softmax", 4096, 32768),
    "softmax1x151936": ("softmax", 1, 151936), "softmax8192x1024": ("softmax", 8192, 1024),
    "layernorm1024": ("layernorm", 1024, 4096), "gelu8192": ("gelu_chain", 8192, 8192),
}

#: hand-schedule variants: label -> keyword arguments of the example's ``schedule`` (the
#: defaults first), or (another schedule of its SCHEDULES, its keyword arguments)
VARIANTS = {
    "default": {}, "every thread combines": dict(combine="every_thread"),
    "32 slices": dict(slices=32), "half the lanes": "half", "128 threads": dict(threads=128),
    "256 threads": dict(threads=256), "512 threads": dict(threads=512), "1024 threads": dict(threads=1024),
    "row stages in shared memory": dict(row_stages="shared"), "row read again": dict(stage_row=False),
    "row read again at 256 threads": dict(stage_row=False, threads=256),
    "row read again at 1024 threads": dict(stage_row=False, threads=1024),
    "split over blocks": ("split", {}), "split in 128 segments": ("split", dict(segments=128)),
    "split in 16 segments": ("split", dict(segments=16)),
    "a warp a row and 4 rows a block": dict(threads=32, rows=4), "a warp a row and 8 rows a block": dict(threads=32, rows=8),
    "a warp a row with shuffles": dict(threads=32, combine="every_thread", stage_row=False, rows=4),
    "a warp a row with shuffles and 8 rows a block": dict(threads=32, combine="every_thread", stage_row=False, rows=8),
    "a warp a row with shuffles and vector slices": dict(threads=32, combine="every_thread", stage_row=False, rows=4,
                                                          vector_slices=True),
    "vector slices": dict(vector_slices=True),
    "vector slices at 256 threads": dict(vector_slices=True, threads=256),
    "vector slices at 1024 threads": dict(vector_slices=True, threads=1024),
    "vector slices at 1024 threads and the row read again": dict(vector_slices=True, threads=1024, stage_row=False),
    "vector slices at 512 threads and the row read again": dict(vector_slices=True, threads=512, stage_row=False),
    "vector slices at 256 threads and the row read again": dict(vector_slices=True, threads=256, stage_row=False),
    "vector slices and every thread combines": dict(vector_slices=True, combine="every_thread"),
    "one thread combines at 1024 threads": dict(threads=1024, combine="one_thread"),
    "one thread combines at 512 threads": dict(threads=512, combine="one_thread"),
    "exponentials in shared memory and the row read again at 1024 threads": dict(threads=1024, stage_row=False,
                                                                           row_stages="shared"),
    "exponentials in shared memory and the row read again at 512 threads": dict(threads=512, stage_row=False,
                                                                          row_stages="shared"),
    "every thread adds at 64 threads": dict(combine="every_thread", threads=64),
    "one thread adds scalar slices at 64 threads": dict(combine="one_thread", threads=64, vector_slices=False),
    "a tree": dict(combine="tree"), "a tree and vector slices": dict(combine="tree", vector_slices=True),
    "a tree at 256 threads": dict(combine="tree", threads=256),
    "a tree at 512 threads": dict(combine="tree", threads=512),
    "a tree at 1024 threads": dict(combine="tree", threads=1024),
    "a tree and vector slices at 256 threads": dict(combine="tree", threads=256, vector_slices=True),
}


def torch_functions(example: str, torch):
    """(PyTorch eager, float64 reference, inputs maker(rows, length, generator)) of an example."""
    import gelu_chain
    import layernorm
    import rmsnorm

    def bf16(gen, *shape, scale=1.0, shift=0.0):
        return (torch.randn(*shape, device="cuda", generator=gen) * scale + shift).to(torch.bfloat16)

    def rms(x, g):
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + rmsnorm.EPS) * g.float()).bfloat16()

    def rms64(x, g):
        x = x.double()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + rmsnorm.EPS) * g.double()

    def ln(x, g, b):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, layernorm.EPS)

    def ln64(x, g, b):
        return torch.nn.functional.layer_norm(x.double(), (x.shape[-1],), g.double(), b.double(), layernorm.EPS)

    def gelu(x, b, r):  # each bf16 operator rounds to bf16, as the algorithm's casts do
        return torch.nn.functional.gelu(x + b, approximate="tanh") + r

    def gelu64(x, b, r):
        h = (x.double() + b.double()).bfloat16().double()
        c = gelu_chain.SQRT_2_OVER_PI
        return (0.5 * h * (1.0 + torch.tanh(c * (h + 0.044715 * h ** 3)))).bfloat16().double() + r.double()

    return {
        "gelu_chain": (gelu, gelu64, lambda M, N, gen: [bf16(gen, M, N, scale=2.0), bf16(gen, N), bf16(gen, M, N)]),
        "rmsnorm": (rms, rms64, lambda M, N, gen: [bf16(gen, M, N, scale=3.0), bf16(gen, N, scale=0.2, shift=1.0)]),
        "softmax": (lambda x: torch.softmax(x, -1), lambda x: torch.softmax(x.double(), -1),
                    lambda M, N, gen: [torch.randn(M, N, device="cuda", generator=gen) * 4.0]),
        "layernorm": (ln, ln64, lambda M, N, gen: [bf16(gen, M, N, scale=3.0, shift=20.0),
                                                   bf16(gen, N, scale=0.2, shift=1.0), bf16(gen, N)]),
    }[example]


def copy_floor(inputs, output, torch, timer=None) -> float:
    """Seconds to move the inputs' and the output's bytes at the bandwidth of a device
    copy of the first input (into a buffer allocated once), timed by ``timer`` (default:
    calls launched back to back, ``timing.time_cuda_batched``)."""
    from timing import time_cuda_batched

    x = inputs[0]
    y = torch.empty_like(x)
    t_copy = (timer or time_cuda_batched)(lambda: y.copy_(x))
    nbytes = sum(t.numel() * t.element_size() for t in inputs) + output.numel() * output.element_size()
    return t_copy * nbytes / (2 * x.numel() * x.element_size())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--quick", action="store_true", help="the example's schedule only, no variants")
    parser.add_argument("--variants", default=None, help="comma-separated labels of the variants to time, of: "
                        + ", ".join(VARIANTS))
    args = parser.parse_args(argv)

    import importlib
    import inspect

    import torch

    import tcomp as tc

    wrong = 0
    gen = torch.Generator(device="cuda").manual_seed(0)
    for case in args.cases.split(","):
        name, M, N = CASES[case]
        example = importlib.import_module(name)
        eager, reference, make = torch_functions(name, torch)
        inputs = make(M, N, gen)
        want = reference(*inputs)
        out = example.algorithm(M, N)
        y = torch.empty((M, N), dtype=inputs[0].dtype, device="cuda")
        floor = copy_floor(inputs, y, torch)
        print(f"== {case}: {M} x {N}, copy floor {floor * 1e6:.1f} us", flush=True)
        rows = []
        chosen = VARIANTS if args.variants is None else {v: VARIANTS[v] for v in args.variants.split(",")}
        for label, kwargs in (chosen.items() if not args.quick else [("default", {})]):
            function = example.schedule
            if isinstance(kwargs, tuple):
                function, kwargs = getattr(example, "SCHEDULES", {}).get(kwargs[0]), kwargs[1]
                if function is None:
                    continue
            if kwargs == "half":
                kwargs = dict(vector=inspect.signature(function).parameters["vector"].default // 2)
            takes = set(inspect.signature(function).parameters)
            if kwargs.get("threads", 0) > N // 8 or not set(kwargs) <= takes:
                continue
            s = tc.create_schedule(out)
            try:
                function(s, out, **kwargs)
                mod = tc.build(s)
            except tc.TcompError as e:  # a staged row longer than shared memory, rows a block that do not divide
                print(f"tcomp, {label}: not built: {str(e).splitlines()[0]}", flush=True)
                continue
            y.fill_(float("nan"))
            mod(*inputs, y)
            torch.cuda.synchronize()
            # one bf16 rounding of the output, and for the GELU chain one of G before the residual
            bound = 2.0 ** -8 * (want.abs() + (want - inputs[-1].double()).abs() * (name == "gelu_chain")) + 1e-6 \
                if y.dtype == torch.bfloat16 else 1e-5 * want.abs() + 1e-7
            bad = int(((y.double() - want).abs() > bound).sum().item()) + int(torch.isnan(y).sum().item())
            wrong += bad
            label = f"tcomp, {label}" + (f" ({bad} WRONG)" if bad else "")
            rows.append((label, time_cuda_batched(lambda: mod(*inputs, y)),
                         time_cuda_batched(mod.graph(*inputs, y).replay)))
        static = torch.cuda.CUDAGraph()
        with torch.cuda.graph(static):
            eager(*inputs)
        rows.append(("PyTorch eager", time_cuda_batched(lambda: eager(*inputs)), time_cuda_batched(static.replay)))
        if not args.no_compile:
            compiled = torch.compile(eager)
            compiled(*inputs)
            rows.append(("torch.compile", time_cuda_batched(lambda: compiled(*inputs)), None))
        print(f"{'':32s} {'batched':>9s} {'of copy':>8s} {'graph':>9s} {'tcomp default / this':>21s}")
        for label, t, t_graph in rows:
            graph = f"{t_graph * 1e6:7.1f}us" if t_graph else " " * 9
            print(f"{label:32s} {t * 1e6:7.1f}us {floor / t:8.2f} {graph} {rows[0][1] / t:21.2f}", flush=True)
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
