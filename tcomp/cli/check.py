"""``tcomp check``: is a workload's schedule legal (and does it build)?"""

from __future__ import annotations

import time

from .common import add_target_arg, add_workload_args, format_shape, prepare


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="check a schedule's legality against the algorithm",
        description="Load a workload file, apply its schedule (or --schedule), run tc.check and print the "
                    "report. Exit status 1 for an illegal schedule.")
    add_workload_args(p)
    add_target_arg(p, "the GPU whose limits (threads, shared memory, matrix instructions) the schedule must fit")
    p.set_defaults(func=run)


def run(args) -> int:
    import tcomp as tc

    s, out, shape, where = prepare(args)
    print(f"workload: {args.file}\nshape:    {format_shape(shape)}\nschedule: {where}\ntarget:   {args.target}",
          flush=True)
    t0 = time.perf_counter()
    try:
        report = tc.check(s, target=args.target)
    except tc.IllegalScheduleError as err:
        print(f"illegal schedule (checked in {time.perf_counter() - t0:.2f} s):\n{err}", flush=True)
        return 1
    except (tc.ScheduleError, tc.LoweringError, tc.CodegenError) as err:
        print(f"the schedule cannot be built ({type(err).__name__}, checked in "
              f"{time.perf_counter() - t0:.2f} s):\n{err}", flush=True)
        return 1
    print(f"checked in {time.perf_counter() - t0:.2f} s (polyhedral dependence check, tc.check)", flush=True)
    print(report, flush=True)
    return 0 if getattr(report, "legal", True) else 1
