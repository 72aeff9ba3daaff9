"""The trace as Python source.

A schedule's trace (:mod:`tcomp.schedule.trace`) prints as a Python function
``def schedule(s, out): ...`` that replays to the same schedule on a fresh
``tc.create_schedule`` of the same algorithm: every loop handle a call returns or takes
is named after its stage (``C_i_o``), and a stage's root loops are fetched the first
time one is used.
"""

from __future__ import annotations

import os

from ..lang.tensor import IterVar, Tensor
from .stage import Stage
from .trace import TraceEntry


def handle_name(stage_name: str, var_name: str) -> str:
    return f"{stage_name}_{var_name}"


class TracePrinter:
    """Turns trace entries into Python source."""

    def __init__(self, schedule):
        self.schedule = schedule
        self.known: set = set()
        self.lines: list[str] = []

    def _stage_of(self, var):
        for st in self.schedule.stages:
            if var in st.all_vars():
                return st
        return None

    def _ensure_root(self, var):
        if var in self.known:
            return
        st = self._stage_of(var)
        if st is None:
            return
        group = st.root_axes if var in st.root_axes else st.reduce_axes
        attr = "axis" if var in st.root_axes else "reduce_axis"
        names = [handle_name(st.name, v.name) for v in group]
        lhs = ", ".join(names) + ("," if len(names) == 1 else "")
        self.lines.append(f"    {lhs} = s[{st.name!r}].{attr}")
        self.known.update(group)

    def arg(self, value) -> str:
        if isinstance(value, IterVar):
            self._ensure_root(value)
            st = self._stage_of(value)
            return handle_name(st.name if st else "", value.name)
        if isinstance(value, Stage):
            return f"s[{value.name!r}]"
        if isinstance(value, Tensor):
            return repr(value.name)
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self.arg(v) for v in value)
            return f"[{inner}]"
        return repr(value)

    def entry(self, e: TraceEntry, with_sites: bool) -> None:
        args = ", ".join([self.arg(a) for a in e.args] + [f"{k}={self.arg(v)}" for k, v in e.kwargs])
        target = f"s[{e.target.name!r}]" if isinstance(e.target, Stage) else "s"
        call = f"{target}.{e.method}({args})"
        handles = [r for r in e.results if isinstance(r, IterVar)]
        if handles:
            st = self._stage_of(handles[0])
            names = [handle_name(st.name, h.name) for h in handles]
            self.known.update(handles)
            lhs = ", ".join(names) + ("," if e.unpack and len(names) == 1 else "")
            call = f"{lhs} = {call}"
        site = f"  # {os.path.basename(e.site.filename)}:{e.site.lineno}" if with_sites else ""
        self.lines.append(f"    {call}{site}")

    def source(self, entries, with_sites: bool = True) -> str:
        for e in entries:
            self.entry(e, with_sites)
        body = self.lines or ["    pass"]
        return "def schedule(s, out):\n" + "\n".join(body) + "\n"
