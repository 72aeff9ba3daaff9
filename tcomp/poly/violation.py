"""The record of one way in which a schedule computes something other than its
algorithm, and the message that names the call to change and why.

Every check of :mod:`tcomp.poly.legality` returns :class:`Violation` records.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One way in which a schedule computes something other than its algorithm."""

    kind: str  # "placement" | "flow" | "race" | "coverage" | "bounds"
    stage: object  # the stage whose schedule call is to blame
    bound: object  # the loop whose bind() is to blame, or None (then: the stage's placement)
    call: str  # that call, as source text
    site: object  # its CallSite (file:line), or None
    consumer: str  # the stages and the tensor involved
    producer: str
    tensor: str
    dependence: str  # the violated dependence, in words
    relation: str  # ... and as an isl relation
    counterexample: str  # one concrete violating pair of iterations
    hidden: str = ""  # why the final result happens to be right anyway ("" if it is not)
    alternatives: tuple = ()  # schedule calls that would be legal instead
    alternatives_of: str = ""  # what the alternatives replace

    def message(self) -> str:
        where = f" at {self.site}" if self.site is not None else ""
        if self.kind == "coverage":
            stages = f"  stage: {self.producer}, tensor {self.tensor} (an output)"
        elif self.kind == "bounds":
            stages = f"  stage: {self.producer}, tensor {self.tensor}"
        elif self.kind == "race" and self.consumer == self.producer:
            stages = f"  stages: {self.producer} (two of its instances), tensor {self.tensor}"
        elif self.kind == "race":
            stages = f"  stages: {self.producer} and {self.consumer}, tensor {self.tensor}"
        else:
            stages = f"  stages: {self.consumer} reads tensor {self.tensor}, computed by {self.producer}"
        lines = [f"{self.call}{where} is illegal: {self.headline()}", stages,
                 f"  violated {'bound' if self.kind == 'bounds' else 'dependence'}: {self.dependence}",
                 f"    as an isl relation: {self.relation}",
                 f"  counterexample: {self.counterexample}"]
        if self.hidden:
            lines.append(f"  note: {self.hidden}")
        if self.alternatives_of:
            alts = "; ".join(self.alternatives) if self.alternatives else "none found"
            lines.append(f"  legal alternatives{self.alternatives_of}: {alts}")
        return "\n".join(lines)

    def headline(self) -> str:
        if self.kind == "placement":
            return f"{self.consumer} reads {self.tensor} outside the loop where {self.producer} is computed"
        if self.kind == "race":
            return f"a data race on {self.tensor}"
        if self.kind == "coverage":
            return f"{self.producer} leaves part of the output {self.tensor} uncomputed"
        if self.kind == "bounds":
            return f"{self.producer} accesses {self.tensor} outside its shape"
        return f"{self.consumer} reads {self.tensor} before {self.producer} has finished computing it"

