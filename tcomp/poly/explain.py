"""Turning isl points and sets into the words of a user's schedule.

A counterexample is a point of a violating set; it reads best in the user's own loop
names (``Y[0, 0] at k_o=0 reads C[0, 0], which C still updates at k_o=1..127``).
"""

from __future__ import annotations

import islpy as isl

from ..ir.stmt import BLOCK_TAGS, THREAD_TAGS
from .scheduled import TAGS, Instances


def only_set(u) -> isl.Set:
    """The (first) set of a union set."""
    if isinstance(u, isl.Set):
        return u
    sets = u.get_set_list()
    return sets.get_at(0)


def point(u) -> list:
    """The coordinates of a point of ``u`` (a set or union set), as ints."""
    st = only_set(u)
    p = st.sample_point()
    n = p.get_space().dim(isl.dim_type.set)
    return [p.get_coordinate_val(isl.dim_type.set, d).to_python() for d in range(n)]


def at(inst: Instances, values) -> isl.Set:
    """The one-point set of instance ``values`` of ``inst``."""
    return isl.Set(f"{{ {inst.domain.get_tuple_name()}[{join(values)}] }}")


def dim_range(st: isl.Set, n: int) -> tuple:
    """The smallest and largest value of dimension ``n`` over ``st``."""
    keep = st.project_out(isl.dim_type.set, n + 1, st.dim(isl.dim_type.set) - n - 1)
    keep = keep.project_out(isl.dim_type.set, 0, n)
    return point(keep.lexmin())[0], point(keep.lexmax())[0]


def join(values) -> str:
    return ", ".join(str(v) for v in values)


def assign(names, values) -> str:
    return ", ".join(f"{n}={v}" for n, v in zip(names, values))


def span(name: str, lo: int, hi: int) -> str:
    return f"{name}={lo}" if lo == hi else f"{name}={lo}..{hi}"


def relation(rel, limit: int = 400) -> str:
    """An isl relation as text, cut short when it is long."""
    text = str(rel.coalesce() if hasattr(rel, "coalesce") else rel)
    return text if len(text) <= limit else text[:limit] + " ... }"


def factor(f: float) -> str:
    return f"{f:.0f}" if abs(f - round(f)) < 1e-9 else f"{f:.3g}"


def coord(tag: str, value: int) -> str:
    return f"{tag}={value}" if value >= 0 else f"every {tag.split('.')[0]}"


def origin_of(inst: Instances, values) -> list:
    return point(at(inst, values).apply(inst.origin))


def coords_of(inst: Instances, values) -> list:
    return point(at(inst, values).apply(inst.coords))


def instance(inst: Instances, values, verb: str) -> str:
    """``C[0, 0] (update k=3) at k_o=0 in threadIdx.x=1 updates``."""
    origin = origin_of(inst, values)
    stage = inst.stage
    nsp = len(stage.root_axes)
    what = f"{stage.name}[{join(origin[:nsp])}]"
    if inst.kind == "update":
        what += f" (update {assign([a.name for a in stage.reduce_axes], origin[nsp:])})"
    elif inst.kind == "init":
        what += " (initialization)"
    loops = [f"{lp.label}={v}" for lp, v in zip(inst.loops, values) if lp.tag is None]
    coords = coords_of(inst, values)
    threads = [f"{t}={c}" for t, c in zip(TAGS, coords) if t in THREAD_TAGS and c >= 0]
    blocks = [f"{t}={c}" for t, c in zip(TAGS, coords) if t in BLOCK_TAGS and c >= 0]
    text = f"{what}{' at ' + ', '.join(loops) if loops else ''}"
    if threads or blocks:
        text += f" in {', '.join(blocks + threads)}"
    if any(t in THREAD_TAGS for t in inst.uniform):
        text += " (the same in every thread)"
    return f"{text} {verb}"


def location(store, loc) -> str:
    n = {"global": 0, "shared": 3, "local": 6}[store.scope]
    rel = loc[n:]
    return f"[{join(rel)}]" if store.scope == "global" else f" (position {join(rel)} of its buffer)"


def copy_of(location, scope: str, launch: dict) -> str:
    """``: the copy of threadIdx.x=3`` for a location (its coordinates) in local
    (shared) memory, whose first coordinates are the thread's (block's); ``launch`` gives
    the grid's and the block's sizes (tags of size 1 go unsaid)."""
    if scope == "global":
        return ""
    coords = location[:6 if scope == "local" else 3]
    tags = [f"{t}={c}" for t, c in zip(TAGS, coords) if launch.get(t, 1) > 1]
    return f", the copy of {', '.join(tags)}" if tags else ""


def context(x: Instances, xv, pending) -> str:
    """`` at k_o=0``: the loops around ``x`` that the pending writes share and run later."""
    shown = []
    if pending:
        w, p = pending[0]
        wdims = {lp.dim: n for n, lp in enumerate(w.loops)}
        for n, lp in enumerate(x.loops[:len(x.loops) - x.own]):
            if lp.tag is not None or lp.dim not in wdims:
                continue
            if dim_range(p, wdims[lp.dim]) != (xv[n], xv[n]):
                shown.append(f"{lp.label}={xv[n]}")
    return f" at {', '.join(shown)}" if shown else ""


def pending_range(w: Instances, p: isl.Set, x: Instances, xv) -> str:
    """`` at k_o=1..127 (its k=8..1023)``: when the writes ``p`` of ``w`` still to come run."""
    xdims = {lp.dim: n for n, lp in enumerate(x.loops)}
    parts = []
    for n, lp in enumerate(w.loops):
        if lp.tag is not None or lp.dim not in xdims:
            continue
        lo, hi = dim_range(p, n)
        if (lo, hi) != (xv[xdims[lp.dim]], xv[xdims[lp.dim]]):
            parts.append(span(lp.label, lo, hi))
    if not parts:
        parts = [span(lp.label, *r) for n, lp in enumerate(w.loops) if lp.tag is None
                 for r in [dim_range(p, n)] if r[0] != r[1]]
    tail = ""
    if w.kind == "update":
        orig = p.apply(w.origin)
        nsp = len(w.stage.root_axes)
        ks = [span(ax.name, *dim_range(orig, nsp + d)) for d, ax in enumerate(w.stage.reduce_axes)]
        if set(ks) != set(parts):
            tail = f" (its {', '.join(ks)})"
    return (f" at {', '.join(parts)}" if parts else "") + tail
