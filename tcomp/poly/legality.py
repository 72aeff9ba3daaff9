"""Legality: does the scheduled program compute the algorithm?

A schedule is legal when every read sees the value that it sees in the original
order, no two instances that touch the same shared or global location, one of them
writing, run in different threads of a block without a barrier between them, or in
different blocks of one kernel at all, every element of an output is computed, and no
access leaves its tensor. :func:`legality` runs the checks, each a pure function
returning :class:`~tcomp.poly.violation.Violation` records, and reports the first
violation in this order:

- :func:`~tcomp.poly.placement.placement_violations`: a producer computed at a loop
  (``compute_at``) gets storage local to that loop; every reader must be inside that
  loop;
- :func:`~tcomp.poly.access_bounds.bounds_violations`: reads and writes outside a
  tensor's shape, at the instances the schedule executes;
- :func:`~tcomp.poly.flow.flow_violations`: for every read of a computed tensor, the
  last write of its location before it (isl's dataflow analysis over the scheduled
  order) must be the write that the algorithm's own order makes it read (a wrong read
  that a later recomputation hides comes last);
- :func:`~tcomp.poly.races.race_violations`: conflicting accesses from different
  threads or blocks;
- :func:`~tcomp.poly.coverage.coverage_violations`: output elements (or reduction
  terms) nothing computes.

The violation reported comes with the legal alternatives of the call it blames
(:mod:`tcomp.poly.alternatives`). :func:`~tcomp.poly.reassociation.reassociations` and
:func:`~tcomp.poly.recomputation.recomputation` describe what a legal schedule
changes: the order in which a reduction accumulates, and how often a producer placed
at a consumer's loop computes each element.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .access_bounds import bounds_violations
from .algorithm import algorithm
from .alternatives import with_alternatives
from .coverage import coverage_violations
from .flow import flow_violations
from .placement import check_attach_loops, placement_violations
from .races import race_violations
from .reassociation import reassociations
from .recomputation import recomputation
from .scheduled import ScheduledProgram, scheduled_program


@dataclass(frozen=True)
class Legality:
    """What :func:`legality` found."""

    violations: tuple
    reassociations: tuple = ()
    recomputation: tuple = ()
    program: ScheduledProgram | None = field(default=None, repr=False, compare=False)

    @property
    def legal(self) -> bool:
        return not self.violations


def legality(s, alternatives: bool = True, describe: bool = True) -> Legality:
    """Check schedule ``s`` against its algorithm.

    Returns the most telling violation (a misplaced producer; else a read of a wrong
    value that reaches the result; else a race; else a wrong read that a later
    recomputation hides), with the legal alternatives of the blamed call when
    ``alternatives``; for a legal schedule, its reassociations and recomputation
    factors when ``describe``. The ScheduleErrors of placements that cannot be
    lowered at all propagate.
    """
    check_attach_loops(s)
    alg = algorithm(s)
    found = placement_violations(s, alg)
    prog = None
    if not found:
        prog = scheduled_program(s)
        flows = flow_violations(s, alg, prog, first_only=not alternatives)
        visible = [v for v in flows if not v.hidden]
        found = (bounds_violations(s, alg, prog) or visible or race_violations(s, prog)
                 or coverage_violations(s, alg, prog) or flows)
    if found:
        v = found[0]
        return Legality((with_alternatives(s, v, is_legal) if alternatives else v,), program=prog)
    if not describe:
        return Legality((), program=prog)
    return Legality((), reassociations(s, prog), recomputation(s, prog), prog)


def is_legal(s) -> bool:
    """True when ``s`` has no violation and can be lowered."""
    from ..errors import TcompError

    try:
        return legality(s, alternatives=False, describe=False).legal
    except TcompError:
        return False

