"""Bound inference: the loops, extents and storage of every stage.

For a stage computed at a consumer's loop, the region it must compute is the
union of what the consumer reads in one iteration of that loop: the consumer's
loops outside (and at) the attach point are fixed, those inside range fully.
Loops bound to threads stay fixed for local storage and are relaxed (range
fully) for shared storage, since one shared buffer serves every thread of the
block. For a stage placed with ``reverse_compute_at``, the region is what the
producer has completed in one iteration of its loop.

Boundary tiles are shifted inwards (Halide's ``ShiftInwards``): when a kernel's root stage
splits a spatial axis of extent E by a factor F that does not divide it and binds the
outer loop to a block index (itself, or every loop that splits and fuses make of it: a
grouped launch order), the block's tile starts at ``min(outer * F, E - F)`` instead
of ``outer * F``. The last block then overlaps its neighbour instead of running past the
edge, every block computes a whole tile, and no load or store needs the tail's guard.
This is done only where computing an element twice is harmless: the root stage is not a
reduction (which would accumulate twice into global memory) and every other stage of the
kernel keeps its values in shared or local memory, or (placed with
``reverse_compute_at``) stores them to global memory without a reduction, so that two
blocks that compute the same element store the same value there.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LoweringError, ScheduleError
from ..ir.expr import Expr, IntImm, TensorRead, binary, compare
from ..ir.simplify import difference, simplify
from ..ir.stmt import BLOCK_TAGS, THREAD_TAGS, Buffer
from ..ir.visitor import substitute, walk
from ..schedule.stage import Fuse, Split, Stage
from .inline import expand_inline
from .intervals import Interval, StridedInterval, interval, strided_interval, union, upper_bound
from .padding import zero_padding


@dataclass(frozen=True)
class StageLayout:
    """What lowering needs to know about one (non-inlined) stage."""

    stage: Stage
    body: Expr  # the stage's expression with inlined stages substituted
    ranges: dict  # root axis (spatial and reduce) -> Interval of absolute indices
    extents: dict  # leaf loop var -> constant extent
    values: dict  # root axis -> absolute index as an expression of the leaf loop vars
    predicates: tuple  # conditions on the leaf vars under which an iteration is real
    buffer: Buffer | None
    scope: str
    #: those of ``predicates`` that zero padding replaces (``tcomp.lower.padding``): a
    #: padded product drops them; a zero-filled tile (``zero_fill``) stores a zero
    #: where they fail instead of skipping the element
    padded: tuple = ()
    zero_fill: bool = False


def storage_axes(stage: Stage) -> tuple:
    """The stage's axes in the order its buffer stores them (outermost first)."""
    if stage.storage_axes is not None and storage_scope(stage) != "global":
        return stage.storage_axes
    return stage.root_axes


def storage_scope(stage: Stage) -> str:
    if stage.attach.kind == "at":
        return stage.scope or "local"
    return "global"


class BoundInference:
    def __init__(self, schedule):
        self.schedule = schedule
        self.layouts: dict = {}
        self.bodies = {st: expand_inline(st.op.body, schedule)
                       for st in schedule.stages if st.attach.kind != "inline"}
        self.var_extents: dict = {}  # every leaf loop var seen so far -> extent
        self.padding = zero_padding(schedule, self.bodies, storage_scope)

    def layout(self, stage: Stage) -> StageLayout:
        if stage not in self.layouts:
            self.layouts[stage] = None  # marks "in progress" to catch cycles
            self.layouts[stage] = self._compute(stage)
        elif self.layouts[stage] is None:
            raise ScheduleError(f"the placement of {stage.name} is circular "
                                "(it is computed inside a stage that is computed inside it)")
        return self.layouts[stage]

    # ------------------------------------------------------------------ per stage

    def _compute(self, stage: Stage) -> StageLayout:
        kind = stage.attach.kind
        if kind == "root":
            ranges = {ax: Interval(IntImm(0), ax.extent) for ax in stage.root_axes + stage.reduce_axes}
        elif kind == "at":
            ranges = self._ranges_at(stage)
        elif kind == "reverse_at":
            ranges = self._ranges_reverse_at(stage)
        else:
            raise LoweringError(f"stage {stage.name} is inlined and has no loops")
        inward = self._inward_splits(stage) if kind == "root" else frozenset()
        padded_k = frozenset(self.padding.products.get(stage, ())) & frozenset(stage.reduce_axes)
        extents, values = _leaf_structure(stage, ranges, inward, padded_k)
        self.var_extents.update(extents)
        predicates, edges = self._predicates(stage, ranges, extents, values, inward)
        zero_fill = stage in self.padding.tiles
        padded_axes = self.padding.products.get(stage, tuple(edges) if zero_fill else ())
        padded = tuple(atom for ax in padded_axes for atom in edges.get(ax, ()))
        scope = storage_scope(stage)
        if scope == "global":
            laid_out = [name for name, used in (("storage_pad", any(stage.storage_padding.values())),
                                                ("storage_blocks", stage.storage_block_shape and
                                                 not stage.storage_swizzled),
                                                ("storage_swizzle", stage.storage_swizzled)) if used]
            if laid_out:
                raise LoweringError(f"{' and '.join(laid_out)} of {stage.name}: {stage.name} is in device memory, "
                                    "where its layout is the tensor's own; lay out a shared or local cache of it "
                                    "instead")
            buffer = Buffer(stage.name, stage.tensor.dtype, stage.tensor.shape, "global")
        else:
            padding = stage.storage_padding
            shape = tuple(ranges[ax].extent + padding.get(ax, 0) for ax in storage_axes(stage))
            blocks = stage.storage_block_shape
            if blocks and blocks[0] is None:  # storage_swizzle(panels=True): blocks as tall as the buffer
                blocks = (shape[-2], blocks[1])
            if blocks and (shape[-2] % blocks[0] or shape[-1] % blocks[1]):
                how = (f"storage_swizzle() stores blocks of 8 rows of 128 bytes ({blocks[1]} values)"
                       if stage.storage_swizzled else f"storage_blocks({blocks[0]}, {blocks[1]}) stores such blocks")
                raise ScheduleError(f"{how} of {stage.name}, whose buffer is {' x '.join(map(str, shape))}: its last "
                                    f"two dimensions must be multiples of {blocks[0]} and {blocks[1]}")
            buffer = Buffer(stage.name, stage.tensor.dtype, shape, scope, blocks, stage.storage_swizzled)
        return StageLayout(stage, self.bodies[stage], ranges, extents, values, predicates, buffer, scope, padded,
                           zero_fill)

    def _inward_splits(self, root: Stage) -> frozenset:
        """The splits of kernel root ``root`` whose boundary tile is shifted inwards (see
        the module docstring), or none where recomputing an element is not harmless."""
        if root.reduce_axes:
            return frozenset()
        for st in self.schedule.stages:
            if st is root or st.attach.kind == "inline" or _kernel_root(st) is not root:
                continue
            if st.attach.kind == "at" and storage_scope(st) in ("local", "shared"):
                continue
            if st.attach.kind == "reverse_at" and not st.reduce_axes:
                continue
            return frozenset()
        return frozenset(rel for rel in root.relations
                         if isinstance(rel, Split) and rel.parent in root.root_axes
                         and _on_blocks(root, rel.outer)
                         and rel.parent.extent > rel.factor and rel.parent.extent % rel.factor)

    def _predicates(self, stage, ranges, extents, values, inward=frozenset()) -> tuple:
        """The guards of the stage's statement, and those of them that fail exactly where an
        axis runs past its tensor's edge (axis -> guards)."""
        preds, edges = [], {}
        # tails of splits whose factor does not divide the extent
        loop_values = _loop_values(stage, extents, inward)
        whole = {ax: ax for ax in stage.reduce_axes}  # var -> the reduction axis whose whole value it is
        for rel in stage.relations:
            if isinstance(rel, Split) and rel.parent in whole and extents[rel.outer] == 1:
                whole[rel.inner] = whole[rel.parent]
            if isinstance(rel, Split) and rel.parent not in stage.root_axes:
                parent_extent = _relation_extent(stage, rel.parent, ranges, extents)
                if parent_extent % rel.factor != 0 and parent_extent > rel.factor:
                    preds.append(compare("<", loop_values[rel.parent], parent_extent))
                    if rel.parent in whole:  # the reduction axis running past its end
                        edges.setdefault(whole[rel.parent], []).append(preds[-1])
        # a split of a root axis whose factor does not divide the region, or a region that
        # runs past the tensor's edge (a tile of a size no tile divides)
        all_extents = {**self.var_extents, **extents}
        for ax in stage.root_axes + stage.reduce_axes:
            limit = ax.extent
            region = ranges[ax]
            whole_axis = region.extent == limit and isinstance(region.min, IntImm) and region.min.value == 0
            rel_hi = upper_bound(loop_values[ax], all_extents)
            if rel_hi is None or rel_hi >= ranges[ax].extent:
                preds.append(compare("<", loop_values[ax], ranges[ax].extent))
                if whole_axis:
                    edges.setdefault(ax, []).append(preds[-1])
            hi = upper_bound(values[ax], all_extents)
            if hi is None or hi >= limit:
                preds.append(compare("<", values[ax], limit))
                edges.setdefault(ax, []).append(preds[-1])
        return tuple(preds), edges

    def _reads_of(self, producer: Stage, consumer: Stage) -> list:
        body = self.bodies[consumer]
        return [n for n in walk(body) if isinstance(n, TensorRead) and n.tensor is producer.tensor]

    def _ranges_at(self, stage: Stage) -> dict:
        consumer, axis = stage.attach.stage, stage.attach.axis
        if consumer.attach.kind == "inline":
            raise ScheduleError(f"{stage.name} is computed at a loop of {consumer.name}, which is inlined "
                                "and has no loops")
        readers = [st for st in self.bodies if st is not stage and self._reads_of(stage, st)]
        if not readers:
            raise ScheduleError(f"{stage.name} is computed at {consumer.name}.{axis.name}, but "
                                f"neither {consumer.name} nor any stage placed inside it reads {stage.name}")
        clayout = self.layout(consumer)
        shared = storage_scope(stage) == "shared"
        env = self._loop_env(consumer, clayout, axis, relax_threads=shared)
        if shared:
            env.update(self._enclosing_thread_loops(consumer))
        per_dim: list = [[] for _ in stage.root_axes]
        strided: list = [[] for _ in stage.root_axes]
        own_threads = {} if shared else self._fixed_thread_loops(consumer, axis)
        for reader in readers:
            for inner in self._path_inside(reader, consumer, axis, stage):
                env.update({v: Interval(IntImm(0), e) for v, e in self.layout(inner).extents.items()})
                # a local buffer is the thread's own: a loop inside bound to a thread index that
                # the attach point fixes runs in this thread only where the two indices agree
                env.update({v: Interval(own_threads[tag], 1) for v, tag in inner.bindings.items()
                            if tag in own_threads})
            rlayout = self.layout(reader)
            for r in self._reads_of(stage, reader):
                for dim in range(len(stage.root_axes)):
                    index = substitute(r.indices[dim], rlayout.values)
                    per_dim[dim].append(interval(index, env))
                    strided[dim].append(strided_interval(index, env))
        ranges = {}
        for ax, ivs, gappy in zip(stage.root_axes, per_dim, strided):
            ranges[ax] = _same_strided(gappy) if storage_scope(stage) == "local" else None
            ranges[ax] = ranges[ax] or union(ivs)
        for ax in stage.reduce_axes:
            ranges[ax] = Interval(IntImm(0), ax.extent)
        return ranges

    def _path_inside(self, reader: Stage, consumer: Stage, axis, producer: Stage) -> list:
        """The stages from ``reader`` up to (not including) ``consumer``, when ``reader`` is
        placed inside ``consumer``'s loop ``axis``; a ScheduleError when it is not."""
        path, st = [], reader
        while st is not consumer:
            if st.attach.kind not in ("at", "reverse_at"):
                raise ScheduleError(
                    f"{producer.name} is computed at {consumer.name}.{axis.name}, but {reader.name} "
                    f"also reads it and is not computed inside that loop; compute {producer.name} at "
                    "root or give each reader its own copy with cache_read")
            path.append(st)
            parent = st.attach.stage
            if parent is consumer and consumer.leaf_vars.index(st.attach.axis) < \
                    consumer.leaf_vars.index(axis):
                raise ScheduleError(
                    f"{producer.name} is computed at {consumer.name}.{axis.name}, inside the loop "
                    f"{st.attach.axis.name} where its reader {st.name} is computed")
            st = parent
        return path

    def _ranges_reverse_at(self, stage: Stage) -> dict:
        producer, axis = stage.attach.stage, stage.attach.axis
        reads = self._reads_of(producer, stage)
        if not reads:
            raise ScheduleError(f"{stage.name} is placed in {producer.name}.{axis.name} with "
                                f"reverse_compute_at, but it does not read {producer.name}")
        players = self.layout(producer)
        env = self._loop_env(producer, players, axis, relax_threads=False)
        produced = [interval(players.values[ax], env) for ax in producer.root_axes]
        ranges = {}
        for ax in stage.root_axes:
            dims = {dim for r in reads for dim, ix in enumerate(r.indices) if ix is ax}
            if len(dims) > 1:
                raise LoweringError(f"{stage.name} reads {producer.name} with axis {ax.name} in two "
                                    "dimensions; reverse_compute_at needs a one-to-one access")
            ranges[ax] = produced[dims.pop()] if dims else Interval(IntImm(0), ax.extent)
        for r in reads:
            for dim, ix in enumerate(r.indices):
                if ix not in stage.root_axes:
                    raise LoweringError(
                        f"reverse_compute_at of {stage.name} needs it to read {producer.name} at its own "
                        f"axes; it reads {producer.name}[{', '.join(str(i) for i in r.indices)}]")
        for ax in stage.reduce_axes:
            ranges[ax] = Interval(IntImm(0), ax.extent)
        return ranges

    def _enclosing_thread_loops(self, stage: Stage) -> dict:
        """Thread-bound loops of the stages that ``stage`` is (transitively) placed in:
        one shared buffer serves all of their threads."""
        env = {}
        while stage.attach.kind in ("at", "reverse_at"):
            stage = stage.attach.stage
            layout = self.layout(stage)
            for v, tag in stage.bindings.items():
                if tag in THREAD_TAGS:
                    env[v] = Interval(IntImm(0), layout.extents[v])
        return env

    def _fixed_thread_loops(self, stage: Stage, axis) -> dict:
        """{thread index: loop variable} of ``stage``'s loops bound to threads at or
        outside its loop ``axis``."""
        pos = stage.leaf_vars.index(axis)
        return {stage.bindings[v]: v for v in stage.leaf_vars[:pos + 1] if stage.bindings.get(v) in THREAD_TAGS}

    def _loop_env(self, stage: Stage, layout: StageLayout, axis, relax_threads: bool) -> dict:
        """Intervals of ``stage``'s leaf vars for one iteration of its loop ``axis``."""
        pos = stage.leaf_vars.index(axis)
        env = {}
        for n, v in enumerate(stage.leaf_vars):
            tag = stage.bindings.get(v, "")
            fixed = n <= pos and not (relax_threads and tag in THREAD_TAGS)
            env[v] = Interval(v, 1) if fixed else Interval(IntImm(0), layout.extents[v])
        return env


def _same_strided(regions: list) -> StridedInterval | None:
    """The strided region that every read covers exactly, if they all cover the same one:
    registers then hold only the indices a thread's strided sub-tiles use."""
    first = regions[0]
    if first is None or any(r is None or r.pieces != first.pieces or difference(r.min, first.min) != 0
                            for r in regions[1:]):
        return None
    return first


def region_offset(region: Interval, index: Expr) -> Expr:
    """Position of absolute ``index`` within ``region`` (its buffer's coordinate)."""
    offset = binary("-", index, region.min)
    return region.compress(offset) if isinstance(region, StridedInterval) else simplify(offset)


def _relation_extent(stage, var, ranges, extents) -> int:
    if var in ranges:
        return ranges[var].extent
    return extents[var]


def _kernel_root(stage: Stage) -> Stage:
    """The root-attached stage whose kernel ``stage`` is computed in."""
    seen = set()
    while stage.attach.kind in ("at", "reverse_at") and stage not in seen:
        seen.add(stage)
        stage = stage.attach.stage
    return stage


def _leaf_structure(stage: Stage, ranges: dict, inward=frozenset(), padded=frozenset()):
    """Extents of every loop var, and each root axis as an expression of the leaf vars;
    the splits in ``inward`` have their last tile shifted inwards. An inner loop of a split
    has the factor's extent, or the parent's where that is smaller, except under a
    reduction axis in ``padded`` (zero padding: a k step of 16 stays 16 where K < 16)."""
    extents = {ax: ranges[ax].extent for ax in stage.root_axes + stage.reduce_axes}
    padded = set(padded)
    for rel in stage.relations:
        if isinstance(rel, Split):
            e = extents[rel.parent]
            extents[rel.outer] = -(-e // rel.factor)
            extents[rel.inner] = rel.factor if rel.parent in padded else min(rel.factor, e)
            if rel.parent in padded:
                padded.add(rel.inner)
        else:
            extents[rel.fused] = extents[rel.outer] * extents[rel.inner]
    values = _loop_values(stage, extents, inward)
    absolute = {}
    for ax in stage.root_axes + stage.reduce_axes:
        region, offset = ranges[ax], values[ax]
        if isinstance(region, StridedInterval):
            offset = region.expand(offset)
        absolute[ax] = simplify(binary("+", region.min, offset))
    return extents, absolute


def _on_blocks(stage: Stage, axis) -> bool:
    """Is every loop that ``axis`` becomes bound to a block index: the axis itself, or the
    pieces a split makes of it, or the axis a fuse makes of it (a grouped launch order
    splits the block rows into groups and fuses each group's rows with the block
    columns)? Then each block has one value of ``axis``."""
    if stage.bindings.get(axis) in BLOCK_TAGS:
        return True
    for rel in stage.relations:
        if isinstance(rel, Split) and rel.parent is axis:
            return _on_blocks(stage, rel.outer) and _on_blocks(stage, rel.inner)
        if isinstance(rel, Fuse) and axis in (rel.outer, rel.inner):
            return _on_blocks(stage, rel.fused)
    return False


def _loop_values(stage: Stage, extents: dict, inward=frozenset()) -> dict:
    """Each var of the stage (root or intermediate) as an expression of the leaf vars,
    relative to the start of the stage's region. A split in ``inward`` starts its tiles
    at ``min(outer * factor, extent - factor)``."""
    values: dict = {v: v for v in stage.leaf_vars}
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            start = binary("*", values[rel.outer], rel.factor)
            if rel in inward:
                start = binary("min", start, extents[rel.parent] - rel.factor)
            values[rel.parent] = simplify(binary("+", start, values[rel.inner]))
        else:
            fused = values[rel.fused]
            values[rel.outer] = simplify(binary("//", fused, extents[rel.inner]))
            values[rel.inner] = simplify(binary("%", fused, extents[rel.inner]))
    return values


def check_bindings(schedule, kernel_of: dict) -> None:
    for st in schedule.stages:
        for var, tag in st.bindings.items():
            if tag in BLOCK_TAGS and st.attach.kind == "inline":
                raise ScheduleError(
                    f"{st.name}.{var.name} is bound to {tag}, but {st.name} is inlined (compute_inline) "
                    f"and has no loops of its own; bind the loops of the stage it is inlined into")
            if tag in BLOCK_TAGS and st.attach.kind != "root":
                raise ScheduleError(
                    f"{st.name}.{var.name} is bound to {tag}, but {st.name} is computed inside "
                    f"{kernel_of[st].name}'s kernel; only the kernel's root stage can bind blocks")
            if tag in THREAD_TAGS and st.attach.kind in ("at", "reverse_at") and storage_scope(st) != "shared":
                outer = _enclosing_binding(st, tag)
                if outer is not None:
                    raise ScheduleError(
                        f"{st.name}.{var.name} is bound to {tag}, but {st.name} is computed inside "
                        f"{outer}, which is already bound to {tag}: each thread computes only its own "
                        f"part of {st.name}'s {storage_scope(st)} buffer. Leave {var.name} unbound, or "
                        f"make {st.name} a shared tile (set_scope('shared')) that the block fills together")


def _enclosing_binding(stage: Stage, tag: str) -> str | None:
    """``"Stage.loop"`` of a loop bound to ``tag`` that encloses ``stage``'s placement."""
    while stage.attach.kind in ("at", "reverse_at"):
        host, axis = stage.attach.stage, stage.attach.axis
        for v in host.leaf_vars[:host.leaf_vars.index(axis) + 1]:
            if host.bindings.get(v) == tag:
                return f"{host.name}.{v.name}"
        stage = host
    return None
