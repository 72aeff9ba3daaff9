"""The polyhedral model of tcomp (the only package that imports islpy).

- :mod:`.algorithm`      the algorithm's statements, accesses, original order, dependences
- :mod:`.scheduled`      the scheduled program: instances, storage locations, execution order
- :mod:`.legality`       the checks in order, and what they found (:class:`Legality`)
- :mod:`.violation`      the record of one violation, and its message
- :mod:`.placement`, :mod:`.access_bounds`, :mod:`.flow`, :mod:`.races`, :mod:`.coverage`
                         the checks: placement, bounds, value-based flow, races,
                         coverage of the outputs
- :mod:`.alternatives`   the legal alternatives of the call a violation blames
- :mod:`.reassociation`, :mod:`.recomputation`
                         the reports on a legal schedule
- :mod:`.blamed_call`, :mod:`.counting`, :mod:`.explain`, :mod:`.affine`
                         the blamed call's text and site; counting instead of set
                         algebra; counterexamples in words; expressions as isl text
"""

from .algorithm import Algorithm, Dependences, Statement, algorithm, dependences, value_flow
from .coverage import coverage_violations
from .flow import flow_violations
from .legality import Legality, is_legal, legality
from .placement import placement_violations, readers
from .races import race_violations
from .reassociation import Reassociation, reassociations
from .recomputation import Recomputation, recomputation
from .scheduled import Instances, ScheduledProgram, scheduled_program
from .violation import Violation

__all__ = [
    "Algorithm", "Dependences", "Statement", "algorithm", "dependences", "value_flow",
    "Legality", "Reassociation", "Recomputation", "Violation", "coverage_violations",
    "flow_violations", "is_legal", "legality",
    "placement_violations", "race_violations", "readers", "reassociations", "recomputation",
    "Instances", "ScheduledProgram", "scheduled_program",
]
