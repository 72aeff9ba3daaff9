"""The schedule call that a violation blames, as the user wrote it.

A check decides which stage, and which loop's ``bind``, is to blame; this finds that
call in the schedule's trace and gives its source text and its call site (the user's
file and line): a :class:`~tcomp.poly.violation.Violation`'s ``call`` and ``site``.
"""

from __future__ import annotations


def _entry(s, stage, bound):
    """The last trace entry that binds ``bound`` of ``stage`` (or, without ``bound``, places
    ``stage``), or None."""
    for entry in reversed(s.trace):
        if entry.target is not stage:
            continue
        if bound is not None and entry.method == "bind" and entry.args and entry.args[0] is bound:
            return entry
        if bound is None and entry.method in ("compute_at", "reverse_compute_at", "compute_root",
                                              "compute_inline"):
            return entry
    return None


def call_text(s, stage, bound=None) -> str:
    """The blamed call as source text: ``s['Q'].compute_at(s['C'], k)``."""
    entry = _entry(s, stage, bound)
    if entry is None:
        if bound is not None:
            return f"s[{stage.name!r}].bind({bound.name}, {stage.bindings.get(bound)!r})"
        return f"the placement of {stage.name}"
    args = ", ".join(_arg_text(a) for a in entry.args)
    return f"s[{stage.name!r}].{entry.method}({args})"


def call_site(s, stage, bound=None):
    """The blamed call's CallSite (the user's file and line), or None."""
    entry = _entry(s, stage, bound)
    if entry is not None:
        return entry.site
    return stage.attach.site


def _arg_text(a) -> str:
    from ..lang.tensor import IterVar

    if isinstance(a, IterVar):
        return a.name
    if hasattr(a, "schedule") and hasattr(a, "name"):
        return f"s[{a.name!r}]"
    if hasattr(a, "name") and hasattr(a, "shape"):
        return a.name
    return repr(a)

