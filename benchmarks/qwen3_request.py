"""The chapter's comprehensive case (section 5.6.3) for Qwen3-8B's FFN block: 36 layers, one
prefill of 7,239 rows, then 31 decode steps of one row, run by PyTorch eager, by
torch.compile and by tcomp (examples/qwen3_ffn.py: RMSNorm, the stacked gate/up
projection with SwiGLU, the down projection and the residual, bf16), in one run.

    python benchmarks/qwen3_request.py [--layers 36] [--prefill 7239] [--steps 31] [--no-compile]

tcomp's block is one PyTorch operator over two builds (``tcomp.torch.bucketed_op``: the
decode schedule at one row, the tensor-core schedule at the prefill's rows). Every
layer has weights of its own (36 x 302 MB at Qwen3-8B's sizes), so no layer finds the
previous one's in the L2, and each layer's output is the next one's input.

It prints, per provider:

- the check of one layer at one row and at the prefill's rows against a float64 reference
  rounded to bf16 where the block rounds (the normalized rows, each projection, SiLU,
  the product, the down projection and the sum);
- the block alone: one row as a CUDA graph replay (the kernels' time), the prefill's rows
  timed call by call;
- the request's stages as the chapter's table lists them: the prefill (``layers`` calls of
  the prefill's rows, timed call by call as a host submits them), the decode steps (each
  step's ``layers`` calls of one row captured as one CUDA graph and replayed ``steps``
  times; eager also launched call by call), and the totals.

The figures are the median over ``--repeat`` runs of each stage.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import tile_overrides, time_cuda, time_cuda_replayed  # noqa: E402  (benchmarks/timing.py)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=36, help="layers of the model (default 36)")
    parser.add_argument("--prefill", type=int, default=7239, help="rows of the prefill (default 7239)")
    parser.add_argument("--steps", type=int, default=31, help="decode steps of one row after the prefill")
    parser.add_argument("--hidden", type=int, default=4096, help="H (default Qwen3-8B's 4096)")
    parser.add_argument("--intermediate", type=int, default=12288, help="F (default Qwen3-8B's 12288)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each stage; the median is reported")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile provider")
    parser.add_argument("--breakdown", action="store_true", help="also each provider's kernels at the prefill's rows "
                                                                 "(torch.profiler: GPU time a call, by kernel)")
    parser.add_argument("--variant", action="append", default=[], metavar="PRODUCT:KEY=VALUE,...;...",
                        help="also time the block at the prefill's rows with these tiling arguments of its products "
                             "(gate_up, down), e.g. 'down:copy=tma,specialized=1;gate_up:group_rows=19' (repeatable)")
    args = parser.parse_args(argv)
    args.variants = [product_overrides(text, parser) for text in args.variant]
    for name in ("layers", "prefill", "steps", "hidden", "intermediate", "repeat"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.prefill < 16:
        parser.error("--prefill takes 16 rows or more (fewer rows are a decode step's schedule)")
    return args


def product_overrides(text: str, parser) -> dict:
    """``"down:copy=tma;gate_up:group_rows=19"`` -> ``{"down": {"copy": "tma"}, "gate_up":
    {"group_rows": 19}}`` (``timing.tile_overrides`` for each product's items)."""
    products = {}
    for part in filter(None, text.split(";")):
        product, sep, items = part.partition(":")
        if not sep or product.strip() not in ("gate_up", "down"):
            parser.error(f"--variant takes PRODUCT:KEY=VALUE,... parts (PRODUCT gate_up or down) separated by ';'; "
                         f"got {part!r}")
        products[product.strip()] = tile_overrides(items)
    return products


def eager_block(x, gamma, w, w_down):
    """The block as PyTorch eager runs it in bf16 (Qwen3's RMSNorm in fp32)."""
    import torch

    import rmsnorm

    xf = x.float()
    n = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + rmsnorm.EPS) * gamma.float()).to(torch.bfloat16)
    z = torch.nn.functional.silu(n @ w[0]) * (n @ w[1])
    return x + z @ w_down


def reference_block(x, gamma, w, w_down):
    """The block in float64, rounded to bf16 where the algorithm rounds (a float64 tensor)."""
    import torch

    import rmsnorm

    def bf16(t):
        return t.to(torch.bfloat16).double()

    xd = x.double()
    n = bf16(xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + rmsnorm.EPS) * gamma.double())
    g, u = bf16(n @ w[0].double()), bf16(n @ w[1].double())
    z = bf16(bf16(torch.nn.functional.silu(g)) * u)
    return bf16(xd + bf16(z @ w_down.double()))


def tcomp_block(prefill: int, hidden: int, intermediate: int, overrides: dict | None = None, label: str = ""):
    """One operator over tcomp's builds of the block at one row and at ``prefill`` rows
    (``overrides``: ``qwen3_ffn.schedule``'s ``gate_up`` and ``down`` at ``prefill`` rows)."""
    import time

    import qwen3_ffn
    import tcomp as tc
    import tcomp.torch

    modules = {}
    for rows in (1, prefill):
        start = time.time()
        out = qwen3_ffn.algorithm(rows, hidden, intermediate)
        s = tc.create_schedule(out)
        qwen3_ffn.schedule(s, out, **((overrides or {}) if rows == prefill else {}))
        modules[rows] = tc.build(s)
        print(f"tcomp{label}: built the block at {rows} rows in {time.time() - start:.1f} s", flush=True)
    names = [b.name for b in modules[1].program.inputs]
    if names != ["X", "gamma", "W", "W_down"]:
        raise SystemExit(f"the block's inputs are {names}; this benchmark passes X, gamma, W, W_down")
    suffix = f"_v{abs(hash(label)) % 10 ** 8}" if label else ""
    return tcomp.torch.bucketed_op(modules, f"qwen3::ffn_request_{prefill}x{hidden}x{intermediate}{suffix}")


def kernel_breakdown(block, args: tuple, calls: int = 5) -> list:
    """``[(kernel name, microseconds a call)]`` of ``block(*args)``'s GPU kernels, the
    longest first, from ``torch.profiler`` over ``calls`` calls after a warm-up."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    block(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            block(*args)
        torch.cuda.synchronize()
    rows = [(e.key, e.device_time_total / calls) for e in prof.key_averages() if e.device_time_total > 0]
    return sorted(rows, key=lambda row: -row[1])


def layer_weights(layers: int, hidden: int, intermediate: int):
    """Seeded random bf16 weights of every layer: (gamma [H], W [2, H, F], W_down [F, H]),
    scaled so that the block's output stays near its input's size."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(0)
    weights = []
    for _ in range(layers):
        gamma = (1 + 0.1 * torch.randn(hidden, device="cuda", generator=gen)).to(torch.bfloat16)
        w = (torch.randn(2, hidden, intermediate, device="cuda", generator=gen) / hidden ** 0.5).to(torch.bfloat16)
        w_down = (torch.randn(intermediate, hidden, device="cuda", generator=gen)
                  / intermediate ** 0.5).to(torch.bfloat16)
        weights.append((gamma, w, w_down))
    return weights


def main(argv=None) -> int:
    args = parse_args(argv)

    import torch

    providers = {"PyTorch eager": eager_block}
    if not args.no_compile:
        providers["torch.compile"] = torch.compile(eager_block, dynamic=False)
    providers["tcomp"] = tcomp_block(args.prefill, args.hidden, args.intermediate)
    variants = {f"tcomp {text}": tcomp_block(args.prefill, args.hidden, args.intermediate, overrides, f" {text}")
                for text, overrides in zip(args.variant, args.variants)}

    weights = layer_weights(args.layers, args.hidden, args.intermediate)
    gen = torch.Generator(device="cuda").manual_seed(1)
    prompt = torch.randn(args.prefill, args.hidden, device="cuda", generator=gen).to(torch.bfloat16)
    token = torch.randn(1, args.hidden, device="cuda", generator=gen).to(torch.bfloat16)

    worst = {}
    print("\none layer against float64 (max |diff| over the largest |reference|; tolerance 2^-6):")
    for rows, x in ((1, token), (args.prefill, prompt)):
        want = reference_block(x, *weights[0])
        scale = want.abs().max().item()
        for name, block in providers.items():
            got = block(x, *weights[0]).double()
            error = (got - want).abs().max().item() / scale if torch.isfinite(got).all() else float("inf")
            worst[name] = max(worst.get(name, 0.0), error)
            print(f"  {name:14s} {rows:5d} rows: {error:.2e}", flush=True)
        del want

    def through_the_layers(block, x):
        """A stage: ``x`` through every layer, each layer's output the next one's input."""
        def run():
            y = x
            for layer in weights:
                y = block(y, *layer)
            return y
        return run

    print("\nthe block alone (one layer's weights):")
    for name, block in providers.items():
        one = time_cuda_replayed(lambda: block(token, *weights[0]), calls=args.layers, repeat=5)
        many = time_cuda(lambda: block(prompt, *weights[0]), 10)
        print(f"  {name:14s} 1 row (graph replay) {one * 1e6:8.1f} us   {args.prefill} rows {many * 1e3:8.3f} ms",
              flush=True)

    for name, block in variants.items():
        want = reference_block(prompt, *weights[0])
        got = block(prompt, *weights[0]).double()
        error = (got - want).abs().max().item() / want.abs().max().item() if torch.isfinite(got).all() else float("inf")
        worst[name] = error
        del want, got
        many = time_cuda(lambda: block(prompt, *weights[0]), 10)
        print(f"  {name}: {args.prefill} rows {many * 1e3:8.3f} ms (error {error:.2e})", flush=True)
        if args.breakdown:
            for kernel, us in kernel_breakdown(block, (prompt, *weights[0])):
                print(f"      {us:9.1f}  {kernel[:60]}", flush=True)

    if args.breakdown:
        print(f"\neach provider's kernels at {args.prefill} rows (torch.profiler, us a call):")
        for name, block in providers.items():
            for kernel, us in kernel_breakdown(block, (prompt, *weights[0])):
                print(f"  {name:14s} {us:9.1f}  {kernel[:90]}", flush=True)

    stages = {}
    for name, block in providers.items():
        t_prefill = time_cuda(through_the_layers(block, prompt), args.repeat, warmup=1)
        t_decode = time_cuda_replayed(through_the_layers(block, token), calls=args.steps, repeat=args.repeat) * args.steps
        stages[name] = (t_prefill, t_decode)
        print(f"  {name}: prefill {t_prefill * 1e3:.2f} ms, decode (graph replays) {t_decode * 1e3:.2f} ms",
              flush=True)
    launched = time_cuda(through_the_layers(eager_block, token), args.repeat) * args.steps

    calls_prefill, calls_decode = args.layers, args.layers * args.steps
    print(f"\nthe request: {args.layers} layers, a prefill of {args.prefill} rows, {args.steps} decode steps of one "
          f"row (H = {args.hidden}, F = {args.intermediate}); medians of {args.repeat} runs, ms\n")
    print(f"| stage | calls | {' | '.join(providers)} |")
    print(f"| --- | ---: | {' | '.join('---:' for _ in providers)} |")
    print(f"| prefill, {args.prefill} rows | {calls_prefill} | "
          + " | ".join(f"{stages[n][0] * 1e3:.2f}" for n in providers) + " |")
    print(f"| decode, 1 row (graph replays) | {calls_decode} | "
          + " | ".join(f"{stages[n][1] * 1e3:.2f}" for n in providers) + " |")
    print(f"| request | {calls_prefill + calls_decode} | "
          + " | ".join(f"{sum(stages[n]) * 1e3:.2f}" for n in providers) + " |")
    print(f"\nPyTorch eager's decode launched call by call (no graph): {launched * 1e3:.2f} ms")
    print("per call: " + "; ".join(f"{n} {stages[n][0] / calls_prefill * 1e3:.3f} ms a prefill call, "
                                   f"{stages[n][1] / calls_decode * 1e6:.1f} us a decode call" for n in providers))
    base = stages["PyTorch eager"]
    for name in providers:
        if name != "PyTorch eager":
            print(f"{name} / eager: prefill {stages[name][0] / base[0]:.3f}x, decode {stages[name][1] / base[1]:.3f}x, "
                  f"request {sum(stages[name]) / sum(base):.3f}x")
    bad = [n for n, e in worst.items() if not e <= 2.0 ** -6]
    if bad:
        print(f"FAILED: {', '.join(bad)} differ from the reference beyond the tolerance")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
