"""The scheduled program: what the loop nest of a schedule executes, and in which order.

Lowering (``tcomp.lower``) places every stage in a loop nest: a kernel per root
stage, producers computed at a consumer's loop in front of that loop's body (behind
a barrier when their storage is shared), epilogues placed with
``reverse_compute_at`` behind it, a reduction's initialization just before its
first reduction loop. This module describes the same nest polyhedrally:

- an *instance* of a statement is one iteration of every loop around it, the
  enclosing stages' loops first (``C_update[io, jo, ko, ii, ji, ki]`` for a matmul
  tile computed at a consumer's ``jo``); a producer computed at a consumer's loop
  has one instance per element per iteration of the loops outside it (its
  recomputation);
- ``origin`` maps an instance to the algorithm instance it computes
  (``C_update[i, j, k]``, see :mod:`tcomp.poly.algorithm`);
- ``write`` and ``reads`` map it to storage locations: a global buffer by the
  tensor's index; a shared buffer by block and position in the region the stage
  computes; a local buffer by block, thread and position (each thread has its own);
- ``time`` is its place in the order of execution. Loops bound to blocks or threads
  are not executed in order; an instance's block and thread indices are its
  coordinates (-1 when no loop around it is bound to that index: every thread does
  the same work; but 0 for a thread index of a reduction in shared or global memory,
  which lowering leaves to thread 0 there), and ``time`` is the position among the
  serial loops and statements (``order``, which barriers are placed in) followed by
  the coordinates.

The extents, regions and guards come from lowering's bound inference, and the order
of the steps in a loop body from lowering's ``loop_body``, so the program described is
the one that runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..ir.stmt import BLOCK_TAGS, THREAD_TAGS
from ..ir.visitor import free_vars, substitute
from ..lower import check_schedule
from ..lower.bounds import BoundInference, storage_scope
from ..lower.loop_body import loop_body, placements
from .affine import NonAffine, aff, condition
from .algorithm import isl_name, reads_of, statement_name

TAGS = BLOCK_TAGS + THREAD_TAGS
COORD_NAMES = ("bx", "by", "bz", "tx", "ty", "tz")


@dataclass(frozen=True)
class Loop:
    """One loop of the nest: a leaf loop of a stage."""

    dim: str  # its isl dimension name
    stage: object
    var: object  # the IterVar
    extent: int
    tag: str | None  # "blockIdx.x" ... "threadIdx.z", or None for a serial loop

    @property
    def label(self) -> str:
        return self.var.name


@dataclass(frozen=True)
class Storage:
    """Where a stage's tensor lives: ``scope`` global (indexed by the tensor's index),
    shared (one region per block) or local (one region per thread)."""

    tensor: object
    scope: str
    name: str  # the isl tuple name of its locations


@dataclass(frozen=True)
class Instances:
    """A statement of the scheduled program."""

    name: str  # the algorithm statement it computes: "Y", "C_init", "C_update"
    stage: object
    kind: str  # "compute" | "init" | "update"
    kernel: int
    loops: tuple  # Loop records, outermost first; the stage's own loops are the last ``own``
    own: int
    domain: isl.Set
    time: isl.Map  # instance -> [kernel, serial position ..., bx, by, bz, tx, ty, tz]
    order: isl.Map  # instance -> [kernel, serial position ...]
    coords: isl.Map  # instance -> [bx, by, bz, tx, ty, tz], -1 where not bound
    origin: isl.Map  # instance -> algorithm instance
    write: isl.Map  # instance -> location
    reads: tuple  # (tensor, isl.Map instance -> location), tensors computed by stages only
    uniform: tuple = ()  # tags that no loop around the statement uses (every thread alike)
    box_size: int = 0  # the product of its loop extents
    guarded: bool = False  # some guard (a partial tile) removes instances from that box
    idle: tuple = ()  # loops bound to blocks/threads around it that it does not depend on

    @property
    def own_loops(self) -> tuple:
        return self.loops[len(self.loops) - self.own:]


@dataclass(frozen=True)
class BarrierInstances:
    """A ``syncthreads()`` of the nest: all threads of a block wait there."""

    kernel: int
    loops: tuple
    domain: isl.Set
    order: isl.Map
    after: str  # what it follows, for messages


@dataclass(frozen=True)
class ScheduledProgram:
    statements: tuple
    barriers: tuple
    kernels: tuple  # root stage of each kernel, in launch order
    storage: dict  # tensor -> Storage
    launch: tuple  # per kernel: {tag: size} of the grid and the block
    layouts: dict = field(default_factory=dict)  # stage -> lowering's StageLayout

    def of_stage(self, stage) -> tuple:
        return tuple(st for st in self.statements if st.stage is stage)

    def statement(self, name: str) -> Instances:
        return next(st for st in self.statements if st.name == name)


def scheduled_program(s) -> ScheduledProgram:
    """The loop nest of schedule ``s`` as a polyhedral program (see the module docstring).

    Raises the same ScheduleError/LoweringError as ``tc.lower`` for placements that
    cannot be lowered at all.
    """
    return _Builder(s).build()


def same_context(inst: Instances) -> isl.Map:
    """``{ x1 -> x2 }``: instances in one iteration of every loop outside the stage's own
    (one copy of a producer computed at a consumer's loop) and in the same thread."""
    dims = [lp.dim for lp in inst.loops]
    ctx = dims[:len(dims) - inst.own]
    name = inst.domain.get_tuple_name()
    proj = isl.Map(f"{{ {name}[{', '.join(dims)}] -> [{', '.join(ctx)}] }}").intersect_domain(inst.domain)
    return proj.apply_range(proj.reverse()).intersect(inst.coords.apply_range(inst.coords.reverse()))


class _Builder:
    def __init__(self, s):
        self.s = s
        self.kernel_of = check_schedule(s)
        bounds = BoundInference(s)
        for st in self.kernel_of:
            bounds.layout(st)
        self.layouts = dict(bounds.layouts)
        self.attached_at, self.reverse_at = placements(s)
        taken: set = set()
        self.dims: dict = {}  # (stage, var) -> isl name
        for st in s.stages:
            if st in self.layouts:
                for v in st.leaf_vars:
                    self.dims[(st, v)] = isl_name(v.name, taken)
        self.storage = {st.tensor: self._storage(st) for st in self.layouts}
        self.raw: list = []  # per statement: dict of texts, parsed at the end
        self.raw_barriers: list = []

    # ------------------------------------------------------------------ storage

    def _storage(self, st) -> Storage:
        if st.attach.kind == "at":
            scope = storage_scope(st)
        else:
            scope = "global"
        return Storage(st.tensor, scope, f"{st.tensor.name}_{scope}")

    # ------------------------------------------------------------------ traversal

    def build(self) -> ScheduledProgram:
        roots = [st for st in self.s.stages if st.attach.kind == "root" and st in self.layouts]
        launch = []
        for k, root in enumerate(roots):
            sizes = {t: 1 for t in TAGS}
            for st, r in self.kernel_of.items():
                if r is root:
                    for v, tag in st.bindings.items():
                        sizes[tag] = max(sizes[tag], self.layouts[st].extents[v])
            launch.append(sizes)
            self.kernel, self.sizes = k, sizes
            self._stage(root, [], [str(k)])
        width = max([len(r["time"]) for r in self.raw] + [len(b["time"]) for b in self.raw_barriers])
        statements = tuple(self._parse(r, width) for r in self.raw)
        barriers = tuple(self._parse_barrier(b, width) for b in self.raw_barriers)
        return ScheduledProgram(statements, barriers, tuple(roots), self.storage, tuple(launch),
                                self.layouts)

    def _loop(self, st, v) -> Loop:
        return Loop(self.dims[(st, v)], st, v, self.layouts[st].extents[v], st.bindings.get(v))

    def _stage(self, st, loops: list, time: list) -> None:
        """Emit the statements of ``st`` and of the stages placed in its loops, as
        ``NestBuilder.stage_stmt`` builds them: ``loops`` and ``time`` describe the
        position of the stage's outermost loop."""
        leaf = st.leaf_vars
        reduce_leaves = [v for v in leaf if v.kind == "reduce"]
        first_reduce = leaf.index(reduce_leaves[0]) if reduce_leaves else None
        items = ([("init",)] if first_reduce == 0 else []) + [("loop", 0)]
        self._items(st, items, loops, time, first_reduce)

    def _items(self, st, items, loops, time, first_reduce) -> None:
        for beta, item in enumerate(items):
            t = time + [str(beta)]
            kind = item[0]
            if kind == "loop":
                pos = item[1]
                lp = self._loop(st, st.leaf_vars[pos])
                self._body(st, pos, loops + [lp], t + ([lp.dim] if lp.tag is None else []), first_reduce)
            elif kind == "init":
                self._init(st, loops, t, first_reduce)
            elif kind == "store":
                self._statement(st, "update" if first_reduce is not None else "compute", loops, t)
            elif kind == "stage":
                self._stage(item[1], loops, t)
            elif kind == "barrier":
                self.raw_barriers.append({"kernel": self.kernel, "loops": list(loops), "time": t,
                                          "after": item[1]})

    def _body(self, st, pos, loops, time, first_reduce) -> None:
        """The body of ``st``'s loop at ``pos``, in the order that lowering lays it out
        (``tcomp.lower.loop_body``): producers, barriers, the inner loop (or the
        store), epilogues. A double-buffered tile is written to shared memory where it
        is committed, at the start of the iteration; its prefetch reads inputs only. A
        pipelined tile likewise, where its copies land (``tcomp.lower.pipeline``)."""
        inner = []
        if pos + 1 < len(st.leaf_vars):
            if pos + 1 == first_reduce:
                inner.append(("init",))
            inner.append(("loop", pos + 1))
        else:
            inner.append(("store",))
        items = []
        for step in loop_body(st, st.leaf_vars[pos], self.layouts, self.attached_at, self.reverse_at):
            if step.kind == "barrier":
                items.append(("barrier", step.why))
            elif step.kind == "inner":
                items += inner
            elif step.kind not in ("prefetch", "issue"):  # NOTE: a pipelined tile is written where it lands
                items.append(("stage", step.stage))
        self._items(st, items, loops, time, first_reduce)

    def _init(self, st, loops, time, first_reduce) -> None:
        """A reduction's initialization: inside the stage's loops before its first
        reduction loop, in a nest of the spatial loops that come after it."""
        t = list(time)
        nest = []
        for v in st.leaf_vars[first_reduce + 1:]:
            if v.kind != "reduce":
                lp = self._loop(st, v)
                nest.append(lp)
                t += ["0"] + ([lp.dim] if lp.tag is None else [])
        self.raw.append(self._describe(st, "init", loops + nest, first_reduce + len(nest), t))

    def _statement(self, st, kind, loops, time) -> None:
        self.raw.append(self._describe(st, kind, loops, len(st.leaf_vars), time))

    # ------------------------------------------------------------------ one statement

    def _describe(self, st, kind, loops, own, time) -> dict:
        layout = self.layouts[st]
        names = {lp.var: lp.dim for lp in loops}
        axes = list(st.root_axes) + (list(st.reduce_axes) if kind == "update" else [])
        exprs = []  # every expression the statement evaluates, to see which loops it uses
        origin_vals = []
        for ax in axes:
            origin_vals.append(layout.values[ax])
        exprs += origin_vals
        preds = list(layout.predicates)
        if kind == "init":
            reduce_vars = {v for v in st.all_vars() if v.kind == "reduce"}
            preds = [p for p in preds if not (free_vars(p) & reduce_vars)]
        exprs += preds
        write_index = [layout.values[ax] for ax in st.root_axes]
        read_specs = []
        if kind != "init":
            for r in reads_of(layout.body):
                producer = self.s.stage_of(r.tensor)
                if producer is None or producer not in self.layouts:
                    continue
                index = [substitute(ix, layout.values) for ix in r.indices]
                read_specs.append((r.tensor, index))
            if kind == "update":
                read_specs.append((st.tensor, write_index))
        for tensor, index in [(st.tensor, write_index)] + read_specs:
            exprs += index + self._region_mins(tensor)
        used = set()
        for e in exprs:
            used |= free_vars(e)
        coords, uniform = [], []
        cons = []
        size = 1
        for lp in loops:
            if lp.tag is None or lp.var in used:
                cons.append(f"0 <= {lp.dim} < {lp.extent}")
                size *= lp.extent
            else:
                cons.append(f"{lp.dim} = 0")  # a bound loop the statement does not depend on
        # a shared or global accumulator has a single writer in every thread dimension
        # that its stores do not depend on (lowering's guard_bound_loops): thread 0
        single_writer = kind in ("init", "update") and self.storage[st.tensor].scope != "local"
        for tag in TAGS:
            bound = [lp for lp in loops if lp.tag == tag and lp.var in used]
            if bound:
                coords.append(bound[0].dim)
                cons += [f"{lp.dim} = {bound[0].dim}" for lp in bound[1:]]
            elif single_writer and tag in THREAD_TAGS and self.sizes[tag] > 1:
                coords.append("0")
            else:
                coords.append("-1")
                if any(lp.tag == tag for lp in loops) or self.sizes[tag] > 1:
                    uniform.append(tag)
        guarded = False
        for p in preds:
            try:
                cons.append(condition(p, names))
                guarded = True
            except NonAffine:
                pass  # a guard isl cannot express: keep the instance (over-approximation)
        name = statement_name(st, kind)
        inst = f"{name}[{', '.join(lp.dim for lp in loops)}]"
        dom = " and ".join(cons) or "true"
        origin = self._tuple_eq(statement_name(st, kind), origin_vals, names, "a")
        write = self._location(st.tensor, write_index, names, coords)
        reads = [(tensor, self._location(tensor, index, names, coords)) for tensor, index in read_specs]
        return {"stage": st, "kind": kind, "name": name, "kernel": self.kernel, "loops": list(loops),
                "own": own, "inst": inst, "dom": dom, "time": list(time), "coords": coords,
                "origin": origin, "write": write, "reads": reads, "uniform": tuple(uniform), "size": size,
                "guarded": guarded, "idle": tuple(lp for lp in loops if lp.tag and lp.var not in used)}

    def _region_mins(self, tensor) -> list:
        producer = self.s.stage_of(tensor)
        if producer.attach.kind != "at" or self.storage[tensor].scope == "global":
            return []
        layout = self.layouts[producer]
        return [layout.ranges[ax].min for ax in producer.root_axes]

    def _tuple_eq(self, tuple_name, values, names, prefix) -> tuple:
        outs, cons = [], []
        for d, v in enumerate(values):
            o = f"{prefix}{d}"
            outs.append(o)
            cons.append(f"{o} = {aff(v, names)}")
        return f"{tuple_name}[{', '.join(outs)}]", " and ".join(cons) or "true"

    def _location(self, tensor, index, names, coords) -> tuple:
        """``(tuple, constraints)`` of the location of ``tensor[index]`` as seen by an
        instance with the given coordinates."""
        store = self.storage[tensor]
        producer = self.s.stage_of(tensor)
        outs, cons = [], []
        if store.scope in ("shared", "local"):
            tags = BLOCK_TAGS if store.scope == "shared" else TAGS
            for tag in tags:
                c = f"m{TAGS.index(tag)}"
                outs.append(c)
                value = coords[TAGS.index(tag)]
                if value == "-1":  # every thread (block) does this: every copy
                    cons.append(f"0 <= {c} < {self.sizes[tag]}")
                else:
                    cons.append(f"{c} = {value}")
        layout = self.layouts[producer]
        for d, ix in enumerate(index):
            o = f"e{d}"
            outs.append(o)
            try:
                text = aff(ix, names)
                if producer.attach.kind == "at" and store.scope != "global":
                    text = f"({text}) - ({aff(layout.ranges[producer.root_axes[d]].min, names)})"
                cons.append(f"{o} = {text}")
            except NonAffine:
                extent = (layout.ranges[producer.root_axes[d]].extent
                          if producer.attach.kind == "at" and store.scope != "global" else tensor.shape[d])
                cons.append(f"0 <= {o} < {extent}")
        return f"{store.name}[{', '.join(outs)}]", " and ".join(cons) or "true"

    # ------------------------------------------------------------------ parsing

    def _parse(self, r: dict, width: int) -> Instances:
        inst, dom = r["inst"], r["dom"]
        serial = r["time"] + ["0"] * (width - len(r["time"]))
        domain = isl.Set(f"{{ {inst} : {dom} }}")
        order = isl.Map(f"{{ {inst} -> [{', '.join(serial)}] : {dom} }}")
        time = isl.Map(f"{{ {inst} -> [{', '.join(serial + r['coords'])}] : {dom} }}")
        coords = isl.Map(f"{{ {inst} -> [{', '.join(r['coords'])}] : {dom} }}")

        def rel(pair):
            tup, cons = pair
            return isl.Map(f"{{ {inst} -> {tup} : {dom} and {cons} }}")

        return Instances(r["name"], r["stage"], r["kind"], r["kernel"], tuple(r["loops"]), r["own"],
                         domain, time, order, coords, rel(r["origin"]), rel(r["write"]),
                         tuple((t, rel(p)) for t, p in r["reads"]), r["uniform"], r["size"],
                         r["guarded"], r["idle"])

    def _parse_barrier(self, b: dict, width: int) -> BarrierInstances:
        loops = [lp for lp in b["loops"] if lp.tag is None]
        dims = [lp.dim for lp in loops]
        inst = f"[{', '.join(dims)}]"
        dom = " and ".join(f"0 <= {lp.dim} < {lp.extent}" for lp in loops) or "true"
        serial = b["time"] + ["0"] * (width - len(b["time"]))
        domain = isl.Set(f"{{ {inst} : {dom} }}")
        order = isl.Map(f"{{ {inst} -> [{', '.join(serial)}] : {dom} }}")
        return BarrierInstances(b["kernel"], tuple(loops), domain, order, b["after"])
