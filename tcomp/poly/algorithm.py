"""The algorithm as a polyhedral program: what must be computed, in the original order.

Every stage that is not inlined is one statement (an elementwise compute) or two (a
reduction: ``C_init[i, j]`` sets the accumulator, ``C_update[i, j, k]`` adds one
term). Inlined stages are substituted into their readers first, casts included, so
that the statements are exactly the computations that get storage. Each statement
has its instances as an isl set, its write and reads as isl maps onto tensor
elements, and a place in the original order: stages in dependence order, each over
its axes in order, a reduction's update loop innermost::

    C_init[i, j]        -> [n, i, j, 0, 0]
    C_update[i, j, k]   -> [n, i, j, 1, k]
    Y[i, j]             -> [n + 1, i, j, 0, 0]

:func:`dependences` gives the read-after-write, write-after-read and write-after-write
dependences of that order, and the value-based flow: for every read, the one write
whose value it sees (for a reduction's result: its last update).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..ir.visitor import walk
from ..lang.tensor import TensorRead
from ..lower.inline import expand_inline
from .affine import NonAffine, aff, box

RESERVED = {"and", "or", "not", "mod", "floor", "ceil", "min", "max", "exists", "true", "false",
            "infty", "implies", "xor", "ceild", "floord", "rat"}


def statement_name(stage, kind: str) -> str:
    """The isl tuple name of a stage's statement: ``Y``, ``C_init`` or ``C_update``."""
    name = stage.name if kind == "compute" else f"{stage.name}_{kind}"
    return name if name not in RESERVED else f"{name}_"


def isl_name(name: str, taken: set) -> str:
    """A fresh isl identifier based on ``name``."""
    base = name if name not in RESERVED else f"{name}_"
    out, n = base, 1
    while out in taken:
        n += 1
        out = f"{base}{n}"
    taken.add(out)
    return out


@dataclass(frozen=True)
class Statement:
    """One statement of the algorithm."""

    name: str  # isl tuple name: "Y", "C_init" or "C_update"
    stage: object
    kind: str  # "compute" | "init" | "update"
    dims: tuple  # isl names of its axes (spatial, then reduce for an update)
    axes: tuple  # the IterVars behind ``dims``
    domain: isl.Set
    write: isl.Map  # instance -> element of the stage's tensor
    reads: tuple  # (tensor, isl.Map instance -> element), tensors computed by stages only
    order: isl.Map  # instance -> its time in the original order


@dataclass(frozen=True)
class Algorithm:
    """The statements of a schedule's algorithm (inlined stages substituted)."""

    statements: tuple
    order: isl.UnionMap

    def of_stage(self, stage) -> tuple:
        return tuple(st for st in self.statements if st.stage is stage)

    def writers(self, tensor) -> tuple:
        return tuple(st for st in self.statements if st.stage.tensor is tensor)

    def statement(self, name: str) -> Statement:
        return next(st for st in self.statements if st.name == name)


@dataclass(frozen=True)
class Dependences:
    """Dependences of the original order, each a map source instance -> sink instance."""

    flow: isl.UnionMap  # value-based: the write whose value a read sees
    raw: isl.UnionMap  # memory-based read after write
    war: isl.UnionMap  # write after read
    waw: isl.UnionMap  # write after write


def reads_of(body) -> list:
    """The tensor reads of an (inline-expanded) stage body."""
    return [n for n in walk(body) if isinstance(n, TensorRead)]


def access_text(tensor, indices, names: dict, prefix: str = "o") -> tuple[str, str]:
    """``(tuple, constraints)`` for reading ``tensor`` at ``indices``; a non-affine index
    is over-approximated by the whole extent of its dimension."""
    outs, cons = [], []
    for d, (ix, extent) in enumerate(zip(indices, tensor.shape)):
        o = f"{prefix}{d}"
        outs.append(o)
        try:
            cons.append(f"{o} = {aff(ix, names)}")
        except NonAffine:
            cons.append(f"0 <= {o} < {extent}")
    return f"{tensor.name}[{', '.join(outs)}]", " and ".join(cons) or "true"


def algorithm(s) -> Algorithm:
    """The algorithm of schedule ``s`` as a polyhedral program (see the module docstring)."""
    stages = [st for st in s.stages if st.attach.kind != "inline"]
    statements = []
    width = 2 + max(len(st.op.axis) + len(st.op.reduce_axis) for st in stages)
    for n, st in enumerate(stages):
        body = expand_inline(st.op.body, s)
        taken: set = set()
        names = {ax: isl_name(ax.name, taken) for ax in list(st.op.axis) + list(st.op.reduce_axis)}
        spatial = [names[ax] for ax in st.op.axis]
        reduce = [names[ax] for ax in st.op.reduce_axis]
        out_tuple = f"{st.tensor.name}[{', '.join(spatial)}]"
        reads = reads_of(body)
        if st.op.reduction is None:
            kinds = [("compute", list(st.op.axis), spatial, 0)]
        else:
            kinds = [("init", list(st.op.axis), spatial, 0),
                     ("update", list(st.op.axis) + list(st.op.reduce_axis), spatial + reduce, 1)]
        for kind, axes, dims, phase in kinds:
            name = statement_name(st, kind)
            inst = f"{name}[{', '.join(dims)}]"
            dom = box(dims, [ax.extent for ax in axes])
            domain = isl.Set(f"{{ {inst} : {dom} }}")
            write = isl.Map(f"{{ {inst} -> {out_tuple} : {dom} }}")
            read_maps = []
            if kind != "init":
                for r in reads:
                    if r.tensor.op is None or s.stage_of(r.tensor) is None:
                        continue  # a placeholder: never written
                    tup, cons = access_text(r.tensor, r.indices, names)
                    read_maps.append((r.tensor, isl.Map(f"{{ {inst} -> {tup} : {dom} and {cons} }}")))
                if kind == "update":
                    read_maps.append((st.tensor, isl.Map(f"{{ {inst} -> {out_tuple} : {dom} }}")))
            rest = reduce if kind == "update" else []
            time = [str(n)] + spatial + [str(phase)] + rest
            time += ["0"] * (width - len(time))
            order = isl.Map(f"{{ {inst} -> [{', '.join(time)}] : {dom} }}")
            statements.append(Statement(name, st, kind, tuple(dims), tuple(axes), domain, write,
                                        tuple(read_maps), order))
    union = isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    for stmt in statements:
        union = union.union(isl.UnionMap.from_map(stmt.order))
    return Algorithm(tuple(statements), union)


def union_of(maps) -> isl.UnionMap:
    """The union of isl maps (or union maps)."""
    out = isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    for m in maps:
        out = out.union(isl.UnionMap.from_map(m) if isinstance(m, isl.Map) else m)
    return out


def writes_of(alg: Algorithm, tensor=None) -> isl.UnionMap:
    """Every write (of ``tensor``, or of any tensor): instance -> element."""
    return union_of(st.write for st in alg.statements if tensor is None or st.stage.tensor is tensor)


def reads_in(alg: Algorithm, tensor=None, exclude_self: bool = False) -> isl.UnionMap:
    """Every read (of ``tensor``; without a reduction's reads of its own accumulator when
    ``exclude_self``): instance -> element."""
    maps = []
    for st in alg.statements:
        for t, m in st.reads:
            if (tensor is None or t is tensor) and not (exclude_self and t is st.stage.tensor):
                maps.append(m)
    return union_of(maps)


def value_flow(alg: Algorithm, tensor) -> isl.UnionMap:
    """The value-based flow into reads of ``tensor`` by other stages: write -> read.
    For a reduction this is its last update: ``C_update[i, j, k = K - 1] -> Y[i, j]``."""
    sink = reads_in(alg, tensor, exclude_self=True)
    info = isl.UnionAccessInfo.from_sink(sink).set_must_source(writes_of(alg, tensor))
    return info.set_schedule_map(alg.order).compute_flow().get_must_dependence()


def dependences(alg: Algorithm) -> Dependences:
    """Every dependence of the original order (value-based flow, and the memory-based
    read-after-write, write-after-read and write-after-write)."""
    writes, reads = writes_of(alg), reads_in(alg)
    flow = isl.UnionAccessInfo.from_sink(reads).set_must_source(writes).set_schedule_map(alg.order)
    flow = flow.compute_flow().get_must_dependence()

    def memory(sink, source):
        info = isl.UnionAccessInfo.from_sink(sink).set_may_source(source).set_schedule_map(alg.order)
        return info.compute_flow().get_may_dependence()

    return Dependences(flow=flow, raw=memory(reads, writes), war=memory(writes, reads),
                       waw=memory(writes, writes))
