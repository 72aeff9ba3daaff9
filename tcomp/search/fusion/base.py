"""What a fusion rule is, and the registry of them.

A fusion rule is one way an intermediate stage can share a kernel with the stages that
read it. For each stage the space offers the name of every registered rule that
:meth:`FusionRule.proposes` it, then ``"root"`` (its own kernel); a fusion choice picks
one per stage. The rules say:

- which stages they can take (:meth:`FusionRule.proposes`);
- whose kernel such a stage joins (:meth:`FusionRule.host`: by default its one consumer;
  the space follows hosts until it reaches a stage at root, the kernel's anchor);
- whether a whole fusion choice keeps the stage's readers where it needs them
  (:meth:`FusionRule.valid`);
- what schedule primitives compute the stage in that kernel (:meth:`FusionRule.apply`),
  called before the kernel's tiling rule. A rule whose stages the tiling rules must place
  themselves (a product's epilogue at the thread tile) does nothing there: the tiling
  rules read ``Group.members`` by the rule's name.

``register_fusion_rule`` adds a rule to the space of every later search: a new way to
group stages into kernels is a new module, not an edit of the space.
"""

from __future__ import annotations

from ..registry import RuleRegistry
from ..stages import StageInfo


class FusionRule:
    """One way a stage shares a kernel (see the module docstring). Subclasses set
    ``name``, the choice as points and saved descriptions spell it, and implement
    :meth:`proposes`; the other methods have defaults."""

    name = "fusion_rule"

    def proposes(self, stage: StageInfo, space) -> bool:
        """May ``stage`` (an intermediate stage of ``space``'s algorithm) take this choice?"""
        raise NotImplementedError

    def host(self, stage: StageInfo, space) -> str:
        """The stage whose kernel ``stage`` joins under this choice: its one consumer."""
        return stage.consumers[0]

    def valid(self, stage: StageInfo, choice: dict, space) -> bool:
        """Does the whole fusion ``choice`` (``{stage: choice name}``) let ``stage`` take
        this one? ``space.kernel_of(name, choice)`` names the anchor of any stage's kernel."""
        return True

    def apply(self, s, stage: str, group) -> None:
        """Call the primitives on ``s`` that compute ``stage`` inside ``group``'s kernel,
        before the kernel's tiling rule runs; by default none (the tiling rule places it)."""


_FUSION_RULES = RuleRegistry("fusion rule", reserved=("root",))


def register_fusion_rule(rule: FusionRule) -> FusionRule:
    """Add ``rule`` to the fusion choices of every later search space; returns it.

    Its choice is offered after those of the rules registered before it, and before
    ``"root"``. A name may be registered once (and ``"root"`` is taken)."""
    return _FUSION_RULES.add(rule)


def unregister_fusion_rule(rule: FusionRule) -> None:
    """Take ``rule`` out of the spaces made from now on."""
    _FUSION_RULES.remove(rule)


def registered_fusion_rules() -> list:
    """The fusion rules a new space offers, in the order it offers their choices."""
    return _FUSION_RULES.rules()


__all__ = ["FusionRule", "register_fusion_rule", "registered_fusion_rules", "unregister_fusion_rule"]
