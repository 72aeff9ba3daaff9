"""The search space: fusion boundaries over the algorithm's DAG, and the rules that tile
each kernel.

A **point** of the space is a fusion choice for every intermediate stage plus, for every
kernel that choice makes, a rule and that rule's parameters. Applying a point to a fresh
``tc.create_schedule`` calls schedule primitives only, so the point's schedule prints as
a replayable trace (``Schedule.trace_source``).

Fusion choices (docs/architecture.md, "Search"), per intermediate stage:

- ``"inline"``: an elementwise stage is substituted into its consumer (``compute_inline``);
- ``"fused"``: a reduction is computed at its consumer's thread tile, in the consumer's
  kernel (the accumulator of a fused epilogue);
- ``"staged"``: an elementwise stage that a matrix product reads as an operand is
  computed where the product fills its shared-memory tile of that operand (a
  quantization or a cast in the product's prologue), in the product's kernel;
- ``"root"``: the stage is its own kernel and writes its result to device memory.

A stage's kernel (its **group**) is the nearest consumer, following inline and fused
stages, that is at root (or the output). For a chain of n operators this gives the
2^(n-1) partitions, fewer where a choice cannot be taken (a reduction is never inlined;
a stage read by several consumers, or read by a reduction other than as a matrix
product's operand, stays at root).

Rules (``tcomp.search.rules``) say which groups they can tile, what parameters they take
and how to apply them. ``register_rule`` adds one: a new kind of kernel (tensor cores)
joins the space without a change to the search.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from ..errors import TcompError
from ..lang.canonical import canonical_form
from ..lang.tensor import ComputeOp, Reduce

FUSION_CHOICES = ("inline", "fused", "staged", "root")


@dataclass(frozen=True)
class StageInfo:
    """What the space needs to know of one compute stage of the algorithm."""

    name: str
    shape: tuple
    reduction: bool  # has reduction axes
    consumers: tuple  # names of the compute stages that read it
    reads: tuple  # names of the tensors it reads (placeholders and stages)
    op: object = field(default=None, compare=False, repr=False)  # its ComputeOp


@dataclass(frozen=True)
class Group:
    """One kernel of a fusion choice: its root stage (the anchor, whose result goes to
    device memory) and the stages computed inside it."""

    anchor: str
    inlined: tuple = ()  # elementwise stages substituted into the kernel
    fused: tuple = ()  # reductions computed at the anchor's thread tile
    staged: tuple = ()  # elementwise operands of the product computed in its tile fills
    stages: dict = field(default_factory=dict, compare=False, repr=False)  # name -> StageInfo

    @property
    def reductions(self) -> tuple:
        anchor = self.stages[self.anchor]
        return self.fused + ((self.anchor,) if anchor.reduction else ())


@dataclass(frozen=True)
class Point:
    """A fusion choice and one tiling per kernel: ``fusion`` is ((stage, choice), ...);
    ``tilings`` is ((anchor, rule name, ((param, value), ...)), ...)."""

    fusion: tuple
    tilings: tuple

    def as_dict(self) -> dict:
        return {"fusion": dict(self.fusion),
                "tilings": {anchor: {"rule": rule, **dict(params)} for anchor, rule, params in self.tilings}}

    def describe(self) -> str:
        """A one-line summary: the kernels and each one's rule and parameters."""
        parts = []
        for anchor, rule, params in self.tilings:
            shown = " ".join(f"{k}={v}" for k, v in params)
            parts.append(f"{anchor}: {rule} {shown}".rstrip())
        return "; ".join(parts)


class Rule:
    """How to tile one kind of kernel. Subclasses set ``name`` and implement the four
    methods; ``tcomp.search.rules`` has the built-in ones."""

    name = "rule"

    def applies(self, group: Group, space: "Space") -> bool:
        """Can this rule tile ``group``?"""
        raise NotImplementedError

    def choices(self, group: Group, space: "Space") -> dict:
        """``{parameter: [values, ...]}``, each list in increasing order."""
        raise NotImplementedError

    def valid(self, group: Group, space: "Space", params: dict) -> bool:
        """Cheap constraints between parameters (thread counts, divisibility)."""
        return True

    def apply(self, s, group: Group, params: dict) -> None:
        """Call the schedule primitives on ``s`` that tile ``group`` with ``params``."""
        raise NotImplementedError


_RULES: list = []


def register_rule(rule: Rule) -> Rule:
    """Add ``rule`` to the space of every later search; returns it."""
    if any(r.name == rule.name for r in _RULES):
        raise ValueError(f"a rule named {rule.name!r} is registered already")
    _RULES.append(rule)
    return rule


def registered_rules() -> list:
    from . import rules  # noqa: F401  (registers the built-in rules)

    return list(_RULES)


#: the valid parameters of a rule for a group of an algorithm, shared by every Space of
#: that algorithm in this process (enumerating a rule's choices takes about a second),
#: at most this many entries, the oldest dropped first
_VALID_PARAMS: dict = {}
_VALID_PARAMS_KEPT = 64


class Space:
    """The points of one algorithm (see the module docstring)."""

    def __init__(self, out, rules: list | None = None):
        from ..schedule import create_schedule

        self.out = out
        self.rules = list(rules) if rules is not None else registered_rules()
        s = create_schedule(out)
        self.output_names = tuple(t.name for t in s.outputs)
        self.stages = _stage_infos(s)
        self.options = {name: self._options(info) for name, info in self.stages.items()
                        if name not in self.output_names}
        self._tileable: list | None = None
        # the algorithm, names included: what a rule's constraints may depend on
        self._identity = canonical_form(out) + "\nnames " + ", ".join(self.stages)

    # ------------------------------------------------------------------ fusion

    def _options(self, info: StageInfo) -> tuple:
        if len(info.consumers) != 1:
            return ("root",)
        consumer = self.stages[info.consumers[0]]
        if consumer.reduction:
            from .rules import matrix_product_operands

            if not info.reduction and info.name in (matrix_product_operands(consumer.op) or ()):
                return ("staged", "root")
            return ("root",)  # NOTE: the tiling rules stage a reduction's inputs through shared memory
        return ("fused", "root") if info.reduction else ("inline", "root")

    def fusions(self) -> list:
        """Every fusion choice, as ((stage, choice), ...) in stage order."""
        names = list(self.options)
        return [tuple(zip(names, combo)) for combo in itertools.product(*(self.options[n] for n in names))]

    def groups(self, fusion) -> list:
        """The kernels of ``fusion``, in the order the stages run."""
        choice = dict(fusion)
        members: dict = {}
        for name in self.stages:
            if choice.get(name, "root") == "root":
                members.setdefault(name, [])
                continue
            anchor = name
            while choice.get(anchor, "root") != "root":
                anchor = self.stages[anchor].consumers[0]
            members.setdefault(anchor, []).append(name)
        groups = []
        for anchor, inside in members.items():
            groups.append(Group(anchor, tuple(n for n in inside if choice[n] == "inline"),
                                tuple(n for n in inside if choice[n] == "fused"),
                                tuple(n for n in inside if choice[n] == "staged"), self.stages))
        return groups

    def partitions(self) -> list:
        """The distinct partitions of the stages into kernels that some rule can tile:
        a list of tuples of frozensets of stage names."""
        seen = []
        for fusion in self.tileable_fusions():
            part = tuple(frozenset((g.anchor,) + g.inlined + g.fused + g.staged) for g in self.groups(fusion))
            if part not in seen:
                seen.append(part)
        return seen

    def rules_for(self, group: Group) -> list:
        """The rules that can tile ``group`` with at least one choice of parameters."""
        return [r for r in self.rules if r.applies(group, self) and self.valid_params(r, group)]

    def tileable_fusions(self) -> list:
        """The fusion choices whose every kernel some rule can tile (computed once)."""
        if self._tileable is None:
            self._tileable = [f for f in self.fusions() if all(self.rules_for(g) for g in self.groups(f))]
        return self._tileable

    # ------------------------------------------------------------------ points

    def _rule(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(f"no rule named {name!r}")

    def valid_params(self, rule: Rule, group: Group) -> list:
        """Every parameter choice of ``rule`` for ``group`` that meets its constraints, as
        sorted ((name, value), ...) tuples (computed once per rule, group and algorithm in a process)."""
        key = (rule, self._identity, group)
        if key not in _VALID_PARAMS:
            choices = rule.choices(group, self)
            names = sorted(choices)
            combos = itertools.product(*(choices[n] for n in names))
            if len(_VALID_PARAMS) >= _VALID_PARAMS_KEPT:
                del _VALID_PARAMS[next(iter(_VALID_PARAMS))]
            _VALID_PARAMS[key] = [tuple(zip(names, values)) for values in combos
                                  if rule.valid(group, self, dict(zip(names, values)))]
        return _VALID_PARAMS[key]

    def _draw_params(self, rule: Rule, group: Group, rng: random.Random) -> tuple | None:
        valid = self.valid_params(rule, group)
        return rng.choice(valid) if valid else None

    def sample(self, rng: random.Random, fusion=None) -> Point | None:
        """A random point (of ``fusion`` where given); None if no parameters fit."""
        fusions = self.tileable_fusions()
        if not fusions:
            raise TcompError(f"the search space of {', '.join(self.stages)} is empty: for every choice of "
                             f"kernels, some kernel has no tiling rule that fits it (rules: "
                             f"{', '.join(r.name for r in self.rules) or 'none'})")
        fusion = fusion if fusion is not None else rng.choice(fusions)
        tilings = []
        for group in self.groups(fusion):
            rule = rng.choice(self.rules_for(group))
            params = self._draw_params(rule, group, rng)
            if params is None:
                return None
            tilings.append((group.anchor, rule.name, params))
        return Point(tuple(fusion), tuple(tilings))

    def mutate(self, point: Point, rng: random.Random) -> Point | None:
        """A neighbour of ``point``: one fusion choice changed (see ``with_fusion``), or
        one parameter of one kernel moved to a neighbouring value."""
        fusion_names = [n for n, _ in point.fusion if len(self.options[n]) > 1]
        if fusion_names and rng.random() < 0.2:
            name = rng.choice(fusion_names)
            current = dict(point.fusion)[name]
            new = dict(point.fusion)
            new[name] = rng.choice([c for c in self.options[name] if c != current])
            return self.with_fusion(point, tuple((n, new[n]) for n, _ in point.fusion), rng)
        index = rng.randrange(len(point.tilings))
        anchor, rule_name, params = point.tilings[index]
        rule = self._rule(rule_name)
        group = next(g for g in self.groups(point.fusion) if g.anchor == anchor)
        choices = rule.choices(group, self)
        movable = [k for k, _ in params if len(choices.get(k, ())) > 1]
        if not movable:
            return None
        key = rng.choice(movable)
        values = choices[key]
        value = dict(params)[key]
        at = values.index(value) if value in values else 0
        steps = [n for n in (at - 1, at + 1) if 0 <= n < len(values)]
        changed = dict(params)
        changed[key] = values[rng.choice(steps)]
        if not rule.valid(group, self, changed):
            return None
        tilings = list(point.tilings)
        tilings[index] = (anchor, rule_name, tuple(sorted(changed.items())))
        return Point(point.fusion, tuple(tilings))

    def with_fusion(self, point: Point, fusion: tuple, rng: random.Random) -> Point | None:
        """``point``'s tilings under another fusion choice (None if the space lacks it).
        A kernel keeps the tiling of the old kernel that had the same anchor, or else of
        one that computed the same reduction (a matrix product fused into its consumer
        keeps its tile sizes), where that tiling is still valid; the others are drawn."""
        if fusion not in self.tileable_fusions():
            return None
        old_groups = {g.anchor: g for g in self.groups(point.fusion)}
        kept = {anchor: (rule, params) for anchor, rule, params in point.tilings}
        tilings = []
        for group in self.groups(fusion):
            sharing = [a for a, g in old_groups.items() if a != group.anchor and set(g.reductions) & set(group.reductions)]
            for anchor in [group.anchor] + sharing:
                old = kept.get(anchor)
                if old and old[0] in [r.name for r in self.rules_for(group)] and \
                        self._rule(old[0]).valid(group, self, dict(old[1])):
                    tilings.append((group.anchor, old[0], old[1]))
                    break
            else:
                rule = rng.choice(self.rules_for(group))
                params = self._draw_params(rule, group, rng)
                if params is None:
                    return None
                tilings.append((group.anchor, rule.name, params))
        return Point(fusion, tuple(tilings))

    def contains(self, point: Point) -> bool:
        """Is ``point`` a point of this space (a fusion it offers, rules that apply,
        parameter values among their choices that meet their constraints)?"""
        if point.fusion not in self.tileable_fusions():
            return False
        groups = {g.anchor: g for g in self.groups(point.fusion)}
        if set(groups) != {a for a, _, _ in point.tilings}:
            return False
        for anchor, rule_name, params in point.tilings:
            group = groups[anchor]
            rule = self._rule(rule_name)
            if rule not in self.rules_for(group):
                return False
            choices = rule.choices(group, self)
            values = dict(params)
            if set(values) != set(choices) or any(values[k] not in choices[k] for k in values):
                return False
            if not rule.valid(group, self, values):
                return False
        return True

    def apply(self, point: Point, s) -> None:
        """Call the primitives of ``point`` on ``s``, a fresh schedule of the algorithm."""
        groups = {g.anchor: g for g in self.groups(point.fusion)}
        for anchor, rule_name, params in point.tilings:
            group = groups[anchor]
            for name in group.inlined:
                s[name].compute_inline()
            self._rule(rule_name).apply(s, group, dict(params))

    def schedule(self, point: Point):
        """A fresh schedule of the algorithm with ``point`` applied."""
        from ..schedule import create_schedule

        s = create_schedule(self.out)
        self.apply(point, s)
        return s


def _stage_infos(s) -> dict:
    infos = {}
    consumers: dict = {}
    for st in s.stages:
        for t in st.op.input_tensors():
            consumers.setdefault(t.name, []).append(st.name)
    for st in s.stages:
        op = st.op
        if not isinstance(op, ComputeOp):
            continue
        infos[st.name] = StageInfo(
            name=st.name, shape=tuple(st.tensor.shape),
            reduction=isinstance(op.body, Reduce),
            consumers=tuple(dict.fromkeys(consumers.get(st.name, []))),
            reads=tuple(t.name for t in op.input_tensors()), op=op)
    return infos


__all__ = ["FUSION_CHOICES", "Group", "Point", "Rule", "Space", "StageInfo", "register_rule", "registered_rules"]
