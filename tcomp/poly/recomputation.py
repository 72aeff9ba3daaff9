"""Recomputation: how many times a stage placed at a consumer's loop computes each
element of its tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import explain as ex
from .counting import instance_count
from .scheduled import ScheduledProgram


@dataclass(frozen=True)
class Recomputation:
    """How many times a stage placed at another stage's loop computes each element."""

    stage: str
    at: str  # "Q.j_o"
    factor: float
    exact: bool

    def __str__(self) -> str:
        approx = "" if self.exact else "about "
        return (f"{self.stage} computed at {self.at}: each element computed {approx}"
                f"{ex.factor(self.factor)} time{'' if self.factor == 1 else 's'}")


def recomputation(s, prog: ScheduledProgram) -> tuple:
    """For every stage placed with compute_at: how many times each element is computed
    (a stage in registers inside a thread loop that it does not depend on is computed by
    every one of those threads, for its own copy)."""
    out = []
    for stage in s.stages:
        if stage.attach.kind != "at":
            continue
        main = next((st for st in prog.of_stage(stage) if st.kind in ("init", "compute")), None)
        if main is None:
            continue
        n, exact = instance_count(main)
        if prog.storage[stage.tensor].scope == "local":
            for lp in main.idle:
                # a loop further in bound to the same thread index runs in the same threads
                inner = main.loops[main.loops.index(lp) + 1:]
                if not any(other.tag == lp.tag for other in inner):
                    n *= lp.extent
        elements = 1
        for d in stage.tensor.shape:
            elements *= d
        out.append(Recomputation(stage.name, f"{stage.attach.stage.name}.{stage.attach.axis.name}",
                                 n / elements, exact))
    return tuple(out)

