"""``tc.check``: is a schedule legal, and what does it change?

The check is polyhedral (``tcomp.poly``): the algorithm's dependences against the
order, storage and parallelism that the schedule's loop nest has. A legal schedule
gets a :class:`CheckReport` (reassociated reductions, recomputation factors of the
producers placed at a consumer's loop); an illegal one raises
``tc.IllegalScheduleError`` naming the schedule call, the stages and tensor, the
violated dependence (in words and as an isl relation), one violating pair of
iterations and the legal alternatives. The lowered kernels' TMA rings are run on a model
of their slots too (``tcomp.lower.ring_protocol``): a tile read before it lands, or a slot
refilled while its tile may still be read, is illegal as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import IllegalScheduleError
from .lower import check_schedule


@dataclass(frozen=True)
class CheckReport:
    legal: bool
    reassociations: tuple = ()  # tcomp.poly.Reassociation records
    notes: tuple = ()
    recomputation: tuple = ()  # tcomp.poly.Recomputation records, one per compute_at stage

    def __str__(self) -> str:
        if not self.legal:
            return "\n".join(["illegal"] + list(self.notes))
        lines = ["legal: every dependence of the algorithm holds in the scheduled order"]
        lines += [f"reassociation: {r}" for r in self.reassociations] or \
            ["reassociation: none (every reduction accumulates in the algorithm's order)"]
        lines += [f"recomputation: {r}" for r in self.recomputation]
        lines += list(self.notes)
        return "\n".join(lines)


def check(s, target=None) -> CheckReport:
    """Check schedule ``s`` against its algorithm's dependences (docs/semantics.md).

    Returns a :class:`CheckReport` for a legal schedule. Raises
    ``tc.IllegalScheduleError`` for one that would compute something else (a consumer
    reading a partial reduction, a producer placed where not all its readers see it,
    a data race between threads or blocks, an access outside a tensor), and the
    ``tc.ScheduleError``, ``tc.LoweringError`` or ``tc.CodegenError`` that ``tc.build``
    would raise for a schedule that cannot be lowered, launched or generated: a
    schedule that ``check`` calls legal builds (only compiling remains). ``target`` is
    the GPU whose instructions and limits count (a name of ``tcomp.target.target_names()``
    or a ``Target``; default ``tcomp.target.DEFAULT_TARGET``).
    """
    return checked_program(s, target)[0]


def checked_program(s, target=None):
    """``(CheckReport, lowered Program, generated source)`` of a legal schedule that
    lowers, fits the target's launch limits and generates code; the errors of
    :func:`check` otherwise."""
    from .codegen import program_source, simulator_enabled
    from .lower import lower
    from .lower.ring_protocol import ring_protocol_problems
    from .poly import legality
    from .target import check_resources, get_target

    gpu = get_target(target)
    check_schedule(s, gpu)
    result = legality(s)
    if result.violations:
        err = IllegalScheduleError(result.violations[0].message())
        err.violation = result.violations[0]
        raise err
    program = lower(s, target=gpu)
    for kernel in program.kernels:  # the TMA rings' barriers, as lowering placed them
        problems = ring_protocol_problems(kernel)
        if problems:
            raise IllegalScheduleError(f"the protocol of a TMA ring is broken: {problems[0]}")
    check_resources(program, gpu)
    source = program_source(program, simulator_enabled(), target=gpu)
    report = CheckReport(legal=True, reassociations=result.reassociations, recomputation=result.recomputation)
    return report, program, source
