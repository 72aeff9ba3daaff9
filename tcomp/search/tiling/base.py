"""What a tiling rule is, and the registry of them.

A tiling rule says how to tile one kind of kernel (a ``tcomp.search.kernels.Group``):
whether it can (:meth:`Rule.applies`), which parameters it takes (:meth:`Rule.choices`),
which combinations of them make sense (:meth:`Rule.valid`) and which schedule primitives
it calls (:meth:`Rule.apply`). The ``space`` argument of these methods gives the
algorithm's stages (``space.stages``: name -> ``StageInfo``) and the GPU the search runs
for (``space.target``: a ``tcomp.target.Target``), whose shared memory, register file
and SM count size the tiles.

``register_rule`` adds a rule to the space of every later search: a new kind of kernel
(tensor cores) joins the space without a change to the search.
"""

from __future__ import annotations

from ..kernels import Group
from ..registry import RuleRegistry


class Rule:
    """How to tile one kind of kernel. Subclasses set ``name`` and implement the four
    methods; ``tcomp.search.tiling`` has the built-in ones."""

    name = "rule"
    #: the values of parameters added after points were recorded without them (a tuning
    #: database's older records): such a point means these
    defaults: dict = {}

    def applies(self, group: Group, space) -> bool:
        """Can this rule tile ``group``?"""
        raise NotImplementedError

    def choices(self, group: Group, space) -> dict:
        """``{parameter: [values, ...]}``, each list in increasing order."""
        raise NotImplementedError

    def valid(self, group: Group, space, params: dict) -> bool:
        """Cheap constraints between parameters (thread counts, divisibility, the
        target's shared memory and registers)."""
        return True

    def apply(self, s, group: Group, params: dict) -> None:
        """Call the schedule primitives on ``s`` that tile ``group`` with ``params``."""
        raise NotImplementedError

    def seeds(self, group: Group, space) -> list:
        """Parameter choices (complete dicts) that measured fast on a GPU for kernels
        like ``group``: the search screens them beside its random draws and measures them
        first, so that what a hand schedule found is never left to chance. The space keeps
        those among the rule's choices that meet its constraints. None by default."""
        return []


#: a tiling rule is a ``Rule``; the longer name where both kinds of rule are in sight
TilingRule = Rule

_RULES = RuleRegistry("rule")


def register_rule(rule: Rule) -> Rule:
    """Add the tiling rule ``rule`` to the space of every later search; returns it.
    Rules are tried in the order they were registered."""
    return _RULES.add(rule)


def unregister_rule(rule: Rule) -> None:
    """Take the tiling rule ``rule`` out of the spaces made from now on."""
    _RULES.remove(rule)


def registered_rules() -> list:
    """The tiling rules a new space tries, in the order they were registered."""
    return _RULES.rules()


__all__ = ["Rule", "TilingRule", "register_rule", "registered_rules", "unregister_rule"]
