"""Coverage: every element of an output is computed, every term of a reduction added.

An intermediate element that nothing computes but something reads is a flow violation
already (:mod:`tcomp.poly.flow`); an output's element has no reader, so it is checked
here.
"""

from __future__ import annotations

import math

from . import explain as ex
from .algorithm import Algorithm
from .counting import maps_onto_box
from .scheduled import ScheduledProgram
from .violation import Violation


def coverage_violations(s, alg: Algorithm, prog: ScheduledProgram) -> list:
    """Elements of an output that no instance of the scheduled program computes (or
    reduction terms it never adds). An intermediate element that nobody computes but
    somebody reads is a flow violation already; one of an output has no reader."""
    for stage in s.stages:
        if stage.tensor not in s.outputs or stage.attach.kind == "inline":
            continue
        for stmt in alg.of_stage(stage):
            writers = [w for w in prog.of_stage(stage) if w.name == stmt.name]
            if _covered_by_count(stmt, writers):
                continue
            missing = stmt.domain
            for w in writers:
                missing = missing.subtract(w.origin.range())
            if missing.is_empty():
                continue
            point = ex.point(missing.lexmin())
            nsp = len(stage.root_axes)
            what = f"{stage.name}[{ex.join(point[:nsp])}]"
            if stmt.kind == "update":
                what = (f"the term {ex.assign([ax.name for ax in stage.reduce_axes], point[nsp:])} "
                        f"of {what}")
            elif stmt.kind == "init":
                what = f"the initialization of {what}"
            return [Violation(
                "coverage", stage, None, f"the schedule of {stage.name}", stage.attach.site, stage.name,
                stage.name, stage.tensor.name,
                dependence=f"every element of the output {stage.tensor.name} must be computed, every term "
                           f"of a reduction added",
                relation=f"missing: {ex.relation(missing)}",
                counterexample=f"no instance of the scheduled program computes {what}")]
    return []


def _covered_by_count(stmt, writers) -> bool:
    """A cheap proof that ``writers`` compute every instance of ``stmt``: one scheduled
    statement that maps onto its domain (:func:`~tcomp.poly.counting.maps_onto_box`).
    (The subtraction that proves it otherwise took two seconds on the warptiled nest,
    whose indices are full of divisions.)"""
    if len(writers) != 1:
        return False
    return maps_onto_box(writers[0], writers[0].origin, stmt.domain, math.prod(ax.extent for ax in stmt.axes))

