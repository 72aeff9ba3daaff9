"""The polyhedral model of tcomp (the only package that imports islpy).

- :mod:`.algorithm`  the algorithm's statements, accesses, original order, dependences
- :mod:`.scheduled`  the scheduled program: instances, storage locations, execution order
- :mod:`.legality`   the checks (placement, value-based flow, races, coverage of the
                     outputs) and the reports
                     (reassociation, recomputation)
"""

from .algorithm import Algorithm, Dependences, Statement, algorithm, dependences, value_flow
from .legality import (Legality, Reassociation, Recomputation, Violation, coverage_violations,
                       flow_violations, is_legal,
                       legality, placement_violations, race_violations, readers, reassociations, recomputation)
from .scheduled import Instances, ScheduledProgram, scheduled_program

__all__ = [
    "Algorithm", "Dependences", "Statement", "algorithm", "dependences", "value_flow",
    "Legality", "Reassociation", "Recomputation", "Violation", "coverage_violations",
    "flow_violations", "is_legal", "legality",
    "placement_violations", "race_violations", "readers", "reassociations", "recomputation",
    "Instances", "ScheduledProgram", "scheduled_program",
]
