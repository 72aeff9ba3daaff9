"""Legal alternatives: the schedule calls that would be legal in place of the one that
a violation blames (another placement of the stage; another loop bound to the index,
or none; one shared copy instead of one per thread).

Each candidate is tried on the schedule itself, judged by the ``is_legal`` that the
caller passes (:func:`tcomp.poly.legality.is_legal`), and the schedule is restored.
"""

from __future__ import annotations

from dataclasses import replace

from .placement import readers
from .violation import Violation


def with_alternatives(s, v: Violation, is_legal) -> Violation:
    """``v`` with the legal alternatives of the call it blames (a bind, or a placement
    at a loop); ``v`` itself where it blames neither."""
    stage = v.stage
    if stage is None:
        return v
    if v.bound is not None:
        alts, what = _binding_alternatives(s, stage, v.bound, is_legal)
    elif stage.attach.kind in ("at", "reverse_at"):
        alts, what = _placement_alternatives(s, stage, is_legal)
    else:
        return v
    return replace(v, alternatives=tuple(alts), alternatives_of=what)


def _placement_alternatives(s, stage, is_legal):
    from ..schedule.stage import Attach

    old = stage.attach
    candidates = []
    if old.kind == "at":
        for st in [old.stage] + [r for r in readers(s, stage) if r is not old.stage]:
            candidates += [("at", st, v) for v in st.leaf_vars]
        if stage.op.reduction is None:
            candidates.append(("inline", None, None))
    else:
        candidates += [("reverse_at", old.stage, v) for v in old.stage.leaf_vars]
    candidates.append(("root", None, None))
    legal = []
    try:
        for kind, st, v in candidates:
            if kind == old.kind and st is old.stage and v is old.axis:
                continue
            stage.attach = Attach(kind, st, v, old.site)
            if is_legal(s):
                legal.append(_placement_text(stage, kind, st, v))
    finally:
        stage.attach = old
    verb = {"at": "compute_at", "reverse_at": "reverse_compute_at"}[old.kind]
    return legal, f" (instead of this {verb})"


def _placement_text(stage, kind, st, v) -> str:
    if kind == "root":
        return f"s[{stage.name!r}].compute_root()"
    if kind == "inline":
        return f"s[{stage.name!r}].compute_inline()"
    verb = "compute_at" if kind == "at" else "reverse_compute_at"
    return f"s[{stage.name!r}].{verb}(s[{st.name!r}], {v.name})"


def _binding_alternatives(s, stage, var, is_legal):
    tag = stage.bindings.get(var)
    if tag is None:
        return [], ""
    saved_bindings, saved_scope = dict(stage.bindings), stage.scope
    legal = []
    try:
        stage.bindings = {k: t for k, t in saved_bindings.items() if k is not var}
        if is_legal(s):
            legal.append(f"leave {var.name} unbound (a serial loop)")
        for v in stage.leaf_vars:
            if v is var or v in saved_bindings or v in stage.annotations:
                continue
            stage.bindings = {k: t for k, t in saved_bindings.items() if k is not var}
            stage.bindings[v] = tag
            if is_legal(s):
                legal.append(f"s[{stage.name!r}].bind({v.name}, {tag!r})")
        stage.bindings = saved_bindings
        if stage.attach.kind == "at" and (stage.scope or "local") == "local":
            stage.scope = "shared"
            if is_legal(s):
                legal.append(f"s[{stage.name!r}].set_scope('shared') (one copy that all threads share)")
    finally:
        stage.bindings, stage.scope = saved_bindings, saved_scope
    extra = "; a reduction loop runs in parallel only through an explicit split-K (rfactor)" \
        if var.kind == "reduce" else ""
    return legal, f" (instead of binding {var.name} to {tag}{extra})"

