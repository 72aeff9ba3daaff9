"""``tcomp autoschedule FILE --shapes "M=1:1116,M=7239:36"``: a search per extent of one
axis, then which set of bucket kernels costs least for those calls per group
(``tcomp.search.buckets``), preparation included, and the chosen kernels' schedules
written.

Each extent's search is timed: its wall seconds are that kernel's preparation (what a
model that first meets the shape would wait for); its winner's time (measured on a GPU,
else the cost model's) is the kernel's time per call. ``--groups`` is the number of
groups (requests) to weigh the preparation against.
"""

from __future__ import annotations

import os
import time

from ..cost.report import fmt_time
from ..search.buckets import cheapest, cheapest_ranges, kernel_sets, parse_calls
from .common import format_shape


def run_buckets(args, workload, search, write) -> int:
    """Search every extent of ``args.shapes`` with ``search(out) -> SearchResult``, report
    the kernel sets and write the cheapest one's schedules beside ``args.out`` with
    ``write(path, result, shape, shape_option)``."""
    from ..workload import parse_shape

    axis, calls = parse_calls(args.shapes)
    base = parse_shape(args.shape)
    if axis in base:
        from ..errors import TcompError

        raise TcompError(f"--shape sets {axis}, which --shapes buckets; leave it out of --shape")
    found = {}
    for extent in sorted(calls):
        out, shape = workload.build_algorithm({**base, axis: extent})
        print(f"\n== {axis} = {extent} ({calls[extent]} calls a group): {format_shape(shape)}", flush=True)
        start = time.perf_counter()
        result = search(out)
        seconds = time.perf_counter() - start
        took = result.measured if result.measured is not None else result.predicted
        found[extent] = (result, shape, seconds, took)
        print(f"   {fmt_time(took)} a call ({'measured' if result.measured is not None else 'predicted'}), "
              f"{seconds:.1f} s to prepare: {result.description}", flush=True)
    sets = kernel_sets(calls, [], lambda e: found[e][2], lambda e: found[e][3])
    print(f"\nkernel sets for {args.groups} groups of {', '.join(f'{n} x {axis}={e}' for e, n in calls.items())}:",
          flush=True)
    print(f"  {'buckets':24s} {'preparation':>12s} {'per group':>12s} {'total':>12s}")
    for s in sorted(sets, key=lambda s: s.total(args.groups)):
        print(f"  {', '.join(map(str, s.extents)):24s} {s.preparation:11.1f}s {fmt_time(s.per_group):>12s} "
              f"{s.total(args.groups):11.2f}s", flush=True)
    for first, last, s in cheapest_ranges(sets):
        span = f"{first}-{last}" if last is not None else f"{first} and more"
        print(f"  cheapest for {span} groups: {s.name}", flush=True)
    chosen = cheapest(sets, args.groups)
    print(f"chosen for {args.groups} groups: {chosen.name}", flush=True)
    if args.out:
        stem, _ = os.path.splitext(args.out)
        for extent in chosen.extents:
            result, shape, _, _ = found[extent]
            path = f"{stem}_{axis}{extent}.py"
            write(path, result, shape, ",".join(f"{k}={v}" for k, v in {**base, axis: extent}.items()))
            print(f"written: {path}", flush=True)
    return 0


__all__ = ["run_buckets"]
