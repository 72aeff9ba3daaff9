"""Reassociation: the reductions that a legal schedule accumulates in another order
than the algorithm (an rfactor, a tensorized reduction, reordered or split reduction
loops), and whether the order can change the result (a floating-point sum may, max
and min cannot).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from . import explain as ex
from ..ir.stmt import ACROSS_THREADS
from .algorithm import statement_name
from .scheduled import ScheduledProgram, same_context


@dataclass(frozen=True)
class Reassociation:
    """A reduction that the schedule accumulates in another order than the algorithm."""

    stage: str
    combiner: str
    exact: bool  # max/min: the order does not change the result
    description: str

    def __str__(self) -> str:
        return self.description


def _effect(exact: bool) -> str:
    """What another order does to the result: nothing for max and min."""
    return ("exact for max and min: the result is the same" if exact else
            "a floating-point sum may differ from the algorithm's in the last bits")


def _reduction_of(s, stage):
    """The reduction ``stage`` computes: its own, or, where ``s.cache_write`` moved it into a
    cache that the stage copies out, the cache's."""
    if stage.op.reduction is not None or not stage.rfactor_parts:
        return stage.op.reduction
    return s[stage.op.body.tensor].op.reduction


def reassociations(s, prog: ScheduledProgram) -> tuple:
    """Reductions whose scheduled order of accumulation differs from the algorithm's:
    two updates of one element (in one copy) in the other order."""
    out = []
    for stage in s.stages:
        red = _reduction_of(s, stage)
        if red is None or stage.attach.kind == "inline":
            continue
        if stage.rfactor_parts:
            exact = red.combiner in ("max", "min")
            partial = red.source.tensor.name
            out.append(Reassociation(stage.name, red.combiner, exact, (
                f"{stage.name}: rfactor splits the {red.combiner} into {stage.rfactor_parts} partial results "
                f"({partial}), combined afterwards; "
                + _effect(exact))))
        if stage.op.reduction is None:
            continue  # a cache_write took the reduction over: its own stage is checked below
        tensorized = [(v.name, kind) for v, kind in stage.annotations.items() if kind.startswith("tensorize")]
        if tensorized:
            name, kind = tensorized[0]
            intrinsic = kind.partition(".")[2] or "mma_m16n8k16"
            out.append(Reassociation(stage.name, red.combiner, False, (
                f"{stage.name}: tensorize({name}, {intrinsic!r}) adds each k step's 16 products inside "
                f"one {'wgmma' if kind != 'tensorize' else 'mma.sync'} instruction, in the hardware's order; "
                + _effect(False))))
            continue
        across = [v.name for v, kind in stage.annotations.items() if kind == ACROSS_THREADS]
        if across:
            exact = red.combiner in ("max", "min")
            out.append(Reassociation(stage.name, red.combiner, exact, (
                f"{stage.name}: reduce_across_threads({across[0]}) combines the threads' terms in a tree "
                f"(warp shuffles, then the warps' totals); "
                + _effect(exact))))
            continue
        upd = next((st for st in prog.of_stage(stage) if st.kind == "update"), None)
        if upd is None:
            continue
        nsp, nred = len(stage.root_axes), len(stage.reduce_axes)
        el = [f"e{d}" for d in range(nsp)]
        k1 = [f"k{d}" for d in range(nred)]
        k2 = [f"q{d}" for d in range(nred)]
        lex = " or ".join("(" + " and ".join([f"{k1[m]} = {k2[m]}" for m in range(d)] + [f"{k1[d]} < {k2[d]}"])
                          + ")" for d in range(nred))
        name = statement_name(stage, "update")
        before = isl.Map(f"{{ {name}[{', '.join(el + k1)}] -> {name}[{', '.join(el + k2)}] : {lex} }}")
        same_copy = upd.write.apply_range(upd.write.reverse()).intersect(same_context(upd))
        order = upd.origin.apply_range(before).apply_range(upd.origin.reverse())
        swapped = same_copy.intersect(order).intersect(upd.time.lex_gt_map(upd.time))
        if swapped.is_empty():
            continue
        pair = swapped.lexmin()
        first, second = ex.point(pair.domain().apply(upd.origin)), ex.point(pair.range().apply(upd.origin))
        names = [ax.name for ax in stage.reduce_axes]
        exact = red.combiner in ("max", "min")
        effect = _effect(exact)
        out.append(Reassociation(stage.name, red.combiner, exact, (
            f"{stage.name}: the schedule changes the order in which the {red.combiner} over "
            f"{', '.join(names)} accumulates ({stage.name}[{ex.join(first[:nsp])}] adds "
            f"{ex.assign(names, second[nsp:])} before {ex.assign(names, first[nsp:])}; loops "
            f"{', '.join(v.name for v in stage.leaf_vars)}); {effect}")))
    return tuple(out)

