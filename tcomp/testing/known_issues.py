"""Known bugs: the ones the fuzzer found and that are not fixed yet, each recognized by
a predicate, so that the fuzzer counts a case of one apart ("known") instead of
failing."""

from __future__ import annotations

#: Bugs the fuzzer found that are not fixed yet, each with an ``xfail(strict=True)`` test
#: in tests/fuzz/test_fuzz_regressions.py. ``(name, situation, predicate)``: ``situation`` is
#: "false positive" (an illegal schedule whose result matched) or "wrong result" (a legal
#: one whose result differs); ``predicate(wl, s, err_or_report, mod)`` recognizes the
#: bug. The fuzzer counts a recognized case apart ("known") instead of failing; delete
#: the entry together with the xfail mark once the bug is fixed.
KNOWN_ISSUES: list = []


def _race_in_a_kernel_with_barriers(wl, s, err, mod) -> bool:
    """A race reported on a tensor in device memory, between stages of a kernel that has
    barriers: the race check does not count a barrier that lowering placed for another
    buffer (a shared tile's fill) even where it orders the two accesses
    (tests/fuzz/test_fuzz_regressions.py, the xfail test of this issue)."""
    from ..ir.stmt import Barrier
    from ..ir.visitor import walk

    violation = getattr(err, "violation", None)
    if violation is None or violation.kind != "race":
        return False
    for kernel in mod.program.kernels:
        names = {b.name for b in kernel.params} | {b.name for b in mod.program.intermediates}
        if violation.tensor in names and any(isinstance(n, Barrier) for n in walk(kernel.body)):
            return True
    return False


KNOWN_ISSUES.append(("race check blind to another buffer's barrier", "false positive",
                     _race_in_a_kernel_with_barriers))


def known_issue(situation: str, wl, s, err_or_report, mod) -> str:
    """The name of the known bug that explains this outcome, or ''."""
    for name, where, predicate in KNOWN_ISSUES:
        if where != situation:
            continue
        try:
            if predicate(wl, s, err_or_report, mod):
                return name
        except Exception:  # noqa: BLE001 - a predicate that does not apply
            continue
    return ""

