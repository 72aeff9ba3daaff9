"""Access bounds: every read and write of every stage, at every instance the scheduled
program executes, lies inside its tensor's shape.

The instances are the scheduled program's (``origin`` of its statements): the loop
guards that lowering adds for partial tiles count, so an access that only a guarded-off
instance would make is no violation. An index that is not affine (a data-dependent
gather) cannot be checked here and is left to ``tc.evaluate``.

A violation is a :class:`~tcomp.poly.violation.Violation` of kind ``"bounds"`` that blames
the ``tc.compute`` that reads (or writes) out of bounds, with the dimension, the index
range against the extent and one concrete instance.
"""

from __future__ import annotations

import islpy as isl

from ..lower.inline import expand_inline
from . import explain as ex
from .affine import NonAffine, aff
from .algorithm import Algorithm, reads_of
from .scheduled import ScheduledProgram
from .violation import Violation


def bounds_violations(s, alg: Algorithm, prog: ScheduledProgram) -> list:
    """One Violation per out-of-bounds access found (the first one of each stage)."""
    found = []
    for stmt in alg.statements:
        executed = _executed(stmt, prog)
        if executed is None:
            continue
        stage = stmt.stage
        names = dict(zip(stmt.axes, stmt.dims))
        accesses = [("writes", stage.tensor, [ax for ax in stage.op.axis])]
        if stmt.kind != "init":
            accesses += [("reads", r.tensor, list(r.indices)) for r in reads_of(expand_inline(stage.op.body, s))]
        for verb, tensor, indices in accesses:
            bad = _out_of_bounds(stmt, executed, tensor, indices, names)
            if bad is None:
                continue
            dim, lo, hi, instance, element = bad
            site = getattr(stage.op, "site", None)
            found.append(Violation(
                "bounds", stage, None, f"compute {stage.name!r}", site, stage.name, stage.name, tensor.name,
                dependence=(f"{stage.name} {verb} {tensor.name} out of bounds in dimension {dim}: index range "
                            f"[{lo}, {hi}] for extent {tensor.shape[dim]} (shape {tuple(tensor.shape)})"),
                relation=ex.relation(instance["set"]),
                counterexample=f"{stmt.name}[{ex.join(instance['point'])}] {verb} "
                               f"{tensor.name}[{ex.join(element)}]"))
            break
    return found


def _executed(stmt, prog: ScheduledProgram):
    """The algorithm instances of ``stmt`` that the scheduled program executes."""
    done = None
    for inst in prog.of_stage(stmt.stage):
        if inst.name != stmt.name:
            continue
        image = inst.origin.range()
        done = image if done is None else done.union(image)
    return None if done is None else done.coalesce()


def _out_of_bounds(stmt, executed: isl.Set, tensor, indices, names):
    """(dimension, lowest index, highest index, the instances that go out of bounds,
    one element they access) for the first dimension of ``tensor`` that ``indices``
    leave, or None when every access is inside."""
    inst = f"{stmt.name}[{', '.join(stmt.dims)}]"
    affine = []
    for ix in indices:
        try:
            affine.append(aff(ix, names))
        except NonAffine:
            affine.append(None)
    for dim, (index, extent) in enumerate(zip(affine, tensor.shape)):
        if index is None:
            continue
        access = isl.Map(f"{{ {inst} -> [{index}] }}")
        image = executed.apply(access)
        # NOTE: the image cut by the two half-spaces outside, not the image less the
        # range: equal sets, but subtracting took isl 30 s on persistent blocks' indices
        outside = image.intersect(isl.Set(f"{{ [o] : o < 0 or o >= {extent} }}"))
        if outside.is_empty():
            continue
        lo, hi = ex.point(image.lexmin())[0], ex.point(image.lexmax())[0]
        culprits = executed.intersect(outside.apply(access.reverse())).coalesce()
        for d, name in enumerate(stmt.dims):
            culprits = culprits.set_dim_name(isl.dim_type.set, d, name)
        point = ex.point(culprits.lexmin())
        values = dict(zip(stmt.dims, point))
        element = [_evaluate(a, values) if a is not None else "?" for a in affine]
        return dim, lo, hi, {"set": culprits, "point": point}, element
    return None


def _evaluate(text: str, values: dict) -> int:
    """An affine index (as isl text) at one instance."""
    point = isl.Set(f"{{ [{', '.join(values)}] : {' and '.join(f'{k} = {v}' for k, v in values.items())} }}")
    value = point.apply(isl.Map(f"{{ [{', '.join(values)}] -> [{text}] }}"))
    return ex.point(value)[0]
