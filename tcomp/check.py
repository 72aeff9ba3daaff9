"""``tc.check``: is a schedule legal, and what does it change?

This first version checks what lowering itself can tell (placements, bindings,
resources). The polyhedral dependence check of issue 3 will extend it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .lower import check_schedule


@dataclass(frozen=True)
class CheckReport:
    legal: bool
    reassociations: tuple = ()
    notes: tuple = ()

    def __str__(self) -> str:
        lines = ["legal" if self.legal else "illegal"]
        lines += [f"reassociation: {r}" for r in self.reassociations]
        lines += list(self.notes)
        return "\n".join(lines)


def check(s) -> CheckReport:
    """Check schedule ``s``; raise a ``tc.ScheduleError`` subclass if it cannot be built."""
    check_schedule(s)
    return CheckReport(legal=True)
