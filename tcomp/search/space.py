"""The search space: fusion choices over the algorithm's DAG, made by the fusion rules,
and the tiling rules that tile each kernel they make.

A **point** of the space is a fusion choice for every intermediate stage plus, for every
kernel that choice makes, a tiling rule and that rule's parameters. Applying a point to a
fresh ``tc.create_schedule`` calls schedule primitives only, so the point's schedule
prints as a replayable trace (``Schedule.trace_source``).

The space combines two kinds of rule, each a registry of its own:

- **fusion rules** (``tcomp.search.fusion``) say which stages share a kernel: for each
  intermediate stage the space offers every fusion rule that proposes it, then
  ``"root"`` (its own kernel, its result in device memory). The built-in ones:
  ``"inline"`` (an elementwise stage substituted into its consumer), ``"fused"`` (a
  reduction at its consumer's thread tile: a fused epilogue) and ``"staged"`` (a
  product's elementwise operand computed in its shared tile fills).
  ``register_fusion_rule`` adds one: a new way to group stages into kernels.
- **tiling rules** (``tcomp.search.tiling``) say which kernels they can tile, with which
  parameters, and how; ``register_rule`` adds one: a new kind of kernel (tensor cores).

A stage's kernel (its **group**) is found by following each stage's fusion rule to its
host (by default its one consumer) until a stage at root (or the output): that stage is
the kernel's anchor. For a chain of n operators the built-in rules give the 2^(n-1)
partitions, fewer where a choice cannot be taken (a reduction is never inlined; a stage
read by several consumers, or read by a reduction other than as a matrix product's
operand, stays at root). A fusion choice is in the space when every fusion rule accepts
it (``FusionRule.valid``) and some tiling rule can tile each of its kernels.

The tiling rules size their tiles by the GPU the space is made for (``Space(out,
target=...)``, the search's ``target``): its shared memory per block, its register file,
its SMs and the matrix instructions it has.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from ..errors import TcompError
from ..lang.canonical import canonical_form
from ..target import get_target
from .fusion.base import FusionRule, register_fusion_rule, registered_fusion_rules
from .kernels import EPILOGUE, INLINE, ROOT, STAGED, Group
from .stages import StageInfo, stage_infos
from .tiling.base import Rule, TilingRule, register_rule, registered_rules

#: the built-in fusion choices, ``"root"`` last
FUSION_CHOICES = (INLINE, EPILOGUE, STAGED, ROOT)


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


#: the valid parameters of a rule for a group of an algorithm on a target, shared by
#: every Space of that algorithm and target in this process (enumerating a rule's choices
#: takes about a second), at most this many entries, the oldest dropped first
_VALID_PARAMS: dict = {}
_VALID_PARAMS_KEPT = 64


class Space:
    """The points of one algorithm (see the module docstring)."""

    def __init__(self, out, rules: list | None = None, *, target=None, fusion_rules: list | None = None):
        """The space of ``out``'s schedules on ``target`` (a ``tcomp.target.Target`` or its
        name; None: the default GPU), made of ``rules`` (tiling rules; None: the registered
        ones) and ``fusion_rules`` (None: the registered ones)."""
        from ..schedule import create_schedule

        self.out = out
        self.target = get_target(target)
        self.rules = list(rules) if rules is not None else registered_rules()
        self.fusion_rules = list(fusion_rules) if fusion_rules is not None else registered_fusion_rules()
        s = create_schedule(out)
        self.output_names = tuple(t.name for t in s.outputs)
        self.stages = stage_infos(s)
        self.options = {name: self._options(info) for name, info in self.stages.items()
                        if name not in self.output_names}
        self._tileable: list | None = None
        # the algorithm, names included: what a rule's constraints may depend on
        self._identity = canonical_form(out) + "\nnames " + ", ".join(self.stages)

    # ------------------------------------------------------------------ fusion

    def _options(self, info: StageInfo) -> tuple:
        """The choices of ``info``: every fusion rule that proposes it, then root."""
        return tuple(r.name for r in self.fusion_rules if r.proposes(info, self)) + (ROOT,)

    def _fusion_rule(self, name: str) -> FusionRule:
        for r in self.fusion_rules:
            if r.name == name:
                return r
        raise KeyError(f"no fusion rule named {name!r}")

    def kernel_of(self, name: str, fusion) -> str:
        """The anchor of the kernel that computes stage ``name`` under ``fusion`` (a tuple
        ((stage, choice), ...) or a dict): its fusion rules' hosts followed to root."""
        choice = dict(fusion)
        anchor, followed = name, [name]
        while choice.get(anchor, ROOT) != ROOT:
            anchor = self._fusion_rule(choice[anchor]).host(self.stages[anchor], self)
            if anchor in followed:
                raise TcompError(f"the fusion rules' hosts of {name} go round in a circle: "
                                 f"{' -> '.join(followed + [anchor])}; a host must run after the stage it hosts")
            followed.append(anchor)
        return anchor

    def _fusion_accepted(self, fusion) -> bool:
        """Does every fusion rule of ``fusion`` accept the whole choice?"""
        choice = dict(fusion)
        return all(self._fusion_rule(how).valid(self.stages[name], choice, self)
                   for name, how in choice.items() if how != ROOT)

    def fusions(self) -> list:
        """Every fusion choice, as ((stage, choice), ...) in stage order."""
        names = list(self.options)
        return [tuple(zip(names, combo)) for combo in itertools.product(*(self.options[n] for n in names))]

    def groups(self, fusion) -> list:
        """The kernels of ``fusion``, in the order the stages run."""
        choice = dict(fusion)
        members: dict = {}
        for name in self.stages:
            if choice.get(name, ROOT) == ROOT:
                members.setdefault(name, [])
            else:
                members.setdefault(self.kernel_of(name, choice), []).append(name)
        return [Group(anchor, tuple((n, choice[n]) for n in inside), self.stages)
                for anchor, inside in members.items()]

    def partitions(self) -> list:
        """The distinct partitions of the stages into kernels that some rule can tile:
        a list of tuples of frozensets of stage names."""
        seen = []
        for fusion in self.tileable_fusions():
            part = tuple(frozenset(g.names) for g in self.groups(fusion))
            if part not in seen:
                seen.append(part)
        return seen

    def rules_for(self, group: Group) -> list:
        """The rules that can tile ``group`` with at least one choice of parameters."""
        return [r for r in self.rules if r.applies(group, self) and self.valid_params(r, group)]

    def tileable_fusions(self) -> list:
        """The fusion choices that every one of their fusion rules accepts and whose every
        kernel some tiling rule can tile (computed once)."""
        if self._tileable is None:
            self._tileable = [f for f in self.fusions()
                              if self._fusion_accepted(f) and all(self.rules_for(g) for g in self.groups(f))]
        return self._tileable

    # ------------------------------------------------------------------ points

    def _rule(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(f"no rule named {name!r}")

    def valid_params(self, rule: Rule, group: Group) -> list:
        """Every parameter choice of ``rule`` for ``group`` that meets its constraints, as
        sorted ((name, value), ...) tuples (computed once per rule, group, algorithm and target
        in a process)."""
        key = (rule, self._identity, self.target, group)
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

    def seed_points(self) -> list:
        """The points that the rules' seeds (``Rule.seeds``) make: for each fusion choice
        whose every kernel has a rule with a seed, each kernel tiled by its first such
        rule's seeds in turn (a kernel with fewer seeds keeps its first)."""
        points = []
        for fusion in self.tileable_fusions():
            per_group = [self._seeds_of(group) for group in self.groups(fusion)]
            if not per_group or None in per_group:
                continue
            for n in range(max(len(seeds) for _, _, seeds in per_group)):
                tilings = tuple((anchor, name, tuple(sorted(seeds[min(n, len(seeds) - 1)].items())))
                                for anchor, name, seeds in per_group)
                points.append(Point(tuple(fusion), tilings))
        return points

    def _seeds_of(self, group: Group):
        """(anchor, rule name, seeds) of the first rule for ``group`` with seeds that are
        parameter choices of the rule meeting its constraints, or None."""
        for rule in self.rules_for(group):
            choices = rule.choices(group, self)
            seeds = [seed for seed in rule.seeds(group, self)
                     if set(seed) == set(choices) and all(seed[k] in choices[k] for k in seed)
                     and rule.valid(group, self, seed)]
            if seeds:
                return group.anchor, rule.name, seeds
        return None

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
            sharing = [a for a, g in old_groups.items()
                       if a != group.anchor and set(g.reductions) & set(group.reductions)]
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
            values = {**rule.defaults, **dict(params)}
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
            for name, how in group.members:
                self._fusion_rule(how).apply(s, name, group)
            rule = self._rule(rule_name)
            rule.apply(s, group, {**rule.defaults, **dict(params)})

    def schedule(self, point: Point):
        """A fresh schedule of the algorithm with ``point`` applied."""
        from ..schedule import create_schedule

        s = create_schedule(self.out)
        self.apply(point, s)
        return s


__all__ = ["FUSION_CHOICES", "FusionRule", "Group", "Point", "Rule", "Space", "StageInfo", "TilingRule",
           "register_fusion_rule", "register_rule", "registered_fusion_rules", "registered_rules"]
