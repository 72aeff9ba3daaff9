"""Reproducers: a drawn schedule as a runnable Python program (the workload, the
schedule as its trace prints it, and the check), for a failure's message."""

from __future__ import annotations

from tcomp.testing.fuzz_workloads import FuzzWorkload


def pending_call_source(s, pending) -> str:
    """The call in progress, in the notation of ``s.trace_source()``."""
    from tcomp.call_site import CallSite
    from tcomp.schedule.trace import TraceEntry
    from tcomp.schedule.trace_source import TracePrinter

    printer = TracePrinter(s)
    printer.source(s.trace, with_sites=False)
    printer.lines = []
    target, method, args = pending
    printer.entry(TraceEntry(target, method, tuple(args), (), CallSite("<fuzz>", 0)), with_sites=False)
    return "\n".join(printer.lines)


def repro_source(wl: FuzzWorkload, s, pending=None, seed: int | None = None) -> str:
    """A runnable reproducer: the workload, the schedule as Python, the check."""
    body = s.trace_source(with_sites=False)
    if pending is not None:
        body = body.replace("    pass\n", "")
        body += pending_call_source(s, pending) + "  # <- raises\n"
    lines = ["import tcomp as tc",
             "from tcomp.testing.fuzz import WORKLOADS, evaluate_schedule",
             "",
             body.rstrip("\n"),
             "",
             f"wl = {wl.expression()}",
             "s = tc.create_schedule(wl.out)",
             "schedule(s, wl.out)"]
    if pending is None:
        lines.append(f"print(evaluate_schedule(wl, s, seed={seed if seed is not None else 0}))")
    return "\n".join(lines) + "\n"
