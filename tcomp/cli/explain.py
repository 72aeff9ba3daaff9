"""``tcomp explain``: the loop nest and the cost model's figures for each kernel."""

from __future__ import annotations

from .common import add_target_arg, add_workload_args, format_shape, prepare, section


def add_parser(sub) -> None:
    p = sub.add_parser(
        "explain", help="print the loop nest and the cost model's figures for each kernel",
        description="Load a workload file, apply its schedule (or --schedule), print the loop nest, then for each "
                    "kernel the cost model's figures on the target: flops, bytes crossing device memory (by "
                    "tensor), shared memory and registers, blocks per SM and the resource that limits them, "
                    "occupancy, waves, roofline, bytes in flight against Little's law, the terms of the "
                    "predicted time and which one binds; then the totals. Needs no GPU.")
    add_workload_args(p)
    add_target_arg(p, "the GPU to estimate for")
    p.add_argument("--regs", type=int, default=None, metavar="N",
                   help="registers per thread, when known (from ptxas -v); default: estimated from the "
                        "schedule's local buffers")
    p.set_defaults(func=run)


def run(args) -> int:
    import tcomp as tc

    from ..search.space import Space
    from ..search.tiling.tensor_cores import tensor_core_notes
    from ..target import get_target

    target = get_target(args.target)  # NOTE: one of target_names(), as argparse checked
    s, out, shape, where = prepare(args)
    print(f"workload: {args.file}\nshape:    {format_shape(shape)}\nschedule: {where}", flush=True)
    section("loop nest (tc.lower)")
    program = tc.lower(s)
    print(program, flush=True)
    notes = tensor_core_notes(Space(out, target=target))
    if notes:
        section(f"tensor cores on the {target.name} (what the search's rules offer this algorithm)")
        print("\n".join(notes), flush=True)
    section(f"cost on the {target.name} (tc.estimate)")
    print(tc.estimate(program, target=target, regs_per_thread=args.regs), flush=True)
    return 0
