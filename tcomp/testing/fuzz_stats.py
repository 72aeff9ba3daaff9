"""The fuzzer's statistics: what a run drew, counted by outcome and reason, and the
lines that ``tests/conftest.py`` prints at the end of the run."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tcomp.testing.oracle import Outcome


@dataclass
class FuzzStats:
    """Counts of what the fuzzer drew, by category and reason."""

    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, outcome: Outcome) -> None:
        self.counts[(outcome.category, outcome.reason)] += 1

    def total(self, category: str | None = None) -> int:
        return sum(n for (c, _), n in self.counts.items() if category is None or c == category)

    def lines(self) -> list:
        if not self.counts:
            return []
        head = (f"schedule fuzzer: {self.total()} schedules in {self.seconds:.0f} s: "
                f"{self.total('legal')} legal, {self.total('illegal')} illegal, "
                f"{self.total('hidden')} illegal but hidden by a later recomputation, "
                f"{self.total('rejected')} cleanly rejected, {self.total('skipped')} skipped, "
                f"{self.total('known')} known bugs")
        out = [head]
        for category in ("legal", "illegal", "hidden", "rejected", "skipped", "known", "failed"):
            reasons = sorted(((r, n) for (c, r), n in self.counts.items() if c == category),
                             key=lambda rn: -rn[1])
            for reason, n in reasons:
                out.append(f"  {category:9s} {n:5d}  {reason or '-'}")
        return out


#: what the fuzzer drew in this process (``tests/conftest.py`` prints it)
STATS = FuzzStats()

