"""``tcomp explain``: the loop nest and the cost model's figures for each kernel."""

from __future__ import annotations

from .common import add_workload_args, format_shape, prepare, section


def add_parser(sub) -> None:
    p = sub.add_parser(
        "explain", help="print the loop nest and the cost model's figures for each kernel",
        description="Load a workload file, apply its schedule (or --schedule), print the loop nest, then for each "
                    "kernel the cost model's figures on the target: flops, bytes crossing device memory (by "
                    "tensor), shared memory and registers, blocks per SM and the resource that limits them, "
                    "occupancy, waves, roofline, bytes in flight against Little's law, the terms of the "
                    "predicted time and which one binds; then the totals. Needs no GPU.")
    add_workload_args(p)
    p.add_argument("--target", default="h200", metavar="NAME",
                   help="GPU to estimate for: h200 (default), h100, rtx_a6000, rtx_pro_6000")
    p.add_argument("--regs", type=int, default=None, metavar="N",
                   help="registers per thread, when known (from ptxas -v); default: estimated from the "
                        "schedule's local buffers")
    p.set_defaults(func=run)


def run(args) -> int:
    import tcomp as tc

    from ..cost import TARGETS, get_target
    from ..workload import WorkloadError

    try:
        target = get_target(args.target)
    except tc.TcompError:
        raise WorkloadError(f"unknown target {args.target!r}; choose one of {', '.join(TARGETS)}") from None
    s, out, shape, where = prepare(args)
    print(f"workload: {args.file}\nshape:    {format_shape(shape)}\nschedule: {where}", flush=True)
    section("loop nest (tc.lower)")
    program = tc.lower(s)
    print(program, flush=True)
    section(f"cost on the {target.name} (tc.estimate)")
    print(tc.estimate(program, target=target, regs_per_thread=args.regs), flush=True)
    return 0
