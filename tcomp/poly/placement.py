"""Placement: a producer placed with ``compute_at`` gets storage local to that loop,
so every stage that reads it must run inside that loop.

Also the stages that read a stage (:func:`readers`), and the refusal of a stage placed
at a loop that a later split or fuse replaced (:func:`check_attach_loops`: an error,
not a violation).
"""

from __future__ import annotations

import islpy as isl

from ..ir.visitor import walk
from ..lang.tensor import TensorRead
from . import explain as ex
from .algorithm import Algorithm, value_flow
from .blamed_call import call_site, call_text
from .violation import Violation


def check_attach_loops(s) -> None:
    """A stage placed at a loop that a later split or fuse replaced has no place at all."""
    from ..errors import ScheduleError

    for st in s.stages:
        att = st.attach
        if att.kind in ("at", "reverse_at") and att.axis not in att.stage.leaf_vars:
            verb = "computed at" if att.kind == "at" else "placed (reverse_compute_at) at"
            where = f" at {att.site}" if att.site is not None else ""
            raise ScheduleError(
                f"{st.name} is {verb} {att.stage.name}.{att.axis.name}{where}, but that loop was split or "
                f"fused afterwards; {att.stage.name}'s loops now are "
                f"{', '.join(v.name for v in att.stage.leaf_vars)}: place {st.name} at one of them")


def readers(s, stage) -> list:
    """The stages (not inlined) whose expression, inlined stages substituted, reads ``stage``."""
    from ..lower.inline import expand_inline

    out = []
    for st in s.stages:
        if st is stage or st.attach.kind == "inline":
            continue
        body = expand_inline(st.op.body, s)
        if any(isinstance(n, TensorRead) and n.tensor is stage.tensor for n in walk(body)):
            out.append(st)
    return out


def _inside(reader, target, axis) -> bool:
    """Whether ``reader`` runs inside loop ``axis`` of ``target`` (or is ``target``)."""
    st, seen = reader, set()
    while st is not target:
        if st.attach.kind not in ("at", "reverse_at") or st in seen:
            return False
        seen.add(st)
        parent = st.attach.stage
        if parent is target:
            return target.leaf_vars.index(st.attach.axis) >= target.leaf_vars.index(axis)
        st = parent
    return True


def placement_violations(s, alg: Algorithm) -> list:
    """Producers placed with ``compute_at`` at a loop that does not enclose all their
    readers (the producer's storage lives in that loop)."""
    out = []
    for p in s.stages:
        if p.attach.kind != "at" or p.attach.stage.attach.kind == "inline":
            continue
        target, axis = p.attach.stage, p.attach.axis
        if axis not in target.leaf_vars:
            continue
        for r in readers(s, p):
            if _inside(r, target, axis):
                continue
            stmt = next(st for st in alg.of_stage(r) if st.kind != "init")
            read = next(m for t, m in stmt.reads if t is p.tensor)
            pair = read.lexmin()
            inst, elem = ex.point(pair.domain()), ex.point(pair.range())
            ce = (f"{r.name}[{ex.join(inst[:len(r.root_axes)])}] reads {p.name}[{ex.join(elem)}], but "
                  f"{p.name} is only computed inside loop {axis.name} of {target.name}, into storage "
                  f"that lives in that loop, and {r.name} {_where(r)}")
            flow = value_flow(alg, p.tensor).intersect_range(isl.UnionSet(stmt.domain))
            out.append(Violation(
                "placement", p, None, call_text(s, p), call_site(s, p), r.name, p.name, p.tensor.name,
                dependence=(f"flow (read after write): every {r.name} that reads {p.name} must run after "
                            f"{p.name} has computed that element, inside the loop that holds it"),
                relation=ex.relation(flow), counterexample=ce))
    return out


def _where(stage) -> str:
    if stage.attach.kind == "root":
        return f"is computed in its own kernel k_{stage.name}, outside that loop"
    verb = "computed at" if stage.attach.kind == "at" else "placed at"
    return f"is {verb} {stage.attach.stage.name}.{stage.attach.axis.name}, outside that loop"

