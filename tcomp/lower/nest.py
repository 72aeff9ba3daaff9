"""Build the loop nest of every kernel from the stage layouts.

A kernel is a root stage with every stage placed (transitively) inside it. What
the body of each loop holds, and in which order (producers, barriers, the inner
loop, epilogues), is :func:`tcomp.lower.loop_body.loop_body`'s, which the
polyhedral model shares. A reduction's initialization sits just before its
outermost reduction loop, inside the spatial loops that come after it.
"""

from __future__ import annotations

from ..dtypes import itemsize
from ..errors import InternalError, LoweringError
from ..ir.expr import Expr, IntImm, Load, Reduce, TensorRead, binary, compare, logical_and, reduction_identity
from ..ir.simplify import simplify
from ..ir.stmt import (Allocate, AsyncCommit, AsyncWait, Barrier, BarrierArrive, BarrierInit, BarrierWait, Buffer, For,
                       ProducerLoop, Stmt, Store, seq)
from ..ir.visitor import free_vars, rewrite, substitute
from ..schedule.stage import Stage
from .bounds import StageLayout, region_offset, storage_axes
from .double_buffer import stage_through_registers
from .pipeline import one_copy_a_slot, prologue_of, stage_through_ring
from .tensor_copies import stage_through_boxes, tensor_map_table
from .loop_body import enclosing_serial_loops, loop_body, loop_kind, placements, runs_again


class NestBuilder:
    def __init__(self, schedule, layouts: dict, global_buffers: dict):
        self.schedule = schedule
        self.layouts = layouts
        self.global_buffers = global_buffers  # tensor -> global Buffer
        self.attached_at, self.reverse_at = placements(schedule)  # (stage, leaf var) -> [stages]
        self.tensor_map = tensor_map_table()  # the TMA copies' tensor maps

    # ------------------------------------------------------------------ expressions

    def load(self, read: TensorRead) -> Expr:
        """A read of a tensor in the lowered program: a flat load from its buffer."""
        t = read.tensor
        stage = self.schedule.stage_of(t)
        layout = self.layouts.get(stage)
        if stage is None or stage.attach.kind in ("root", "reverse_at") or layout.scope == "global":
            buf = self.global_buffers[t] if layout is None or layout.scope != "global" else layout.buffer
            return Load(buf, flat_index(read.indices, None, buf.shape))
        return Load(layout.buffer, self.region_index(stage, layout, read.indices))

    def region_index(self, stage: Stage, layout: StageLayout, indices) -> Expr:
        """Flat index into a stage's region buffer, in the buffer's storage order."""
        by_axis = dict(zip(stage.root_axes, indices))
        order = storage_axes(stage)
        offsets = [region_offset(layout.ranges[ax], by_axis[ax]) for ax in order]
        if layout.buffer.blocks:
            return blocked_index(offsets, layout.buffer.shape, layout.buffer.blocks, layout.buffer.swizzle,
                                 16 // itemsize(layout.buffer.dtype))
        return flat_index(offsets, None, layout.buffer.shape)

    def lower_expr(self, e: Expr, values: dict) -> Expr:
        """Substitute loop values for the stage's axes and turn tensor reads into loads."""
        e = substitute(e, values)
        return rewrite(e, lambda n: self.load(n) if isinstance(n, TensorRead) else None)

    # ------------------------------------------------------------------ statements

    def stage_stmt(self, stage: Stage) -> Stmt:
        layout: StageLayout = self.layouts[stage]
        body = layout.body
        buf = layout.buffer
        values = [layout.values[ax] for ax in stage.root_axes]
        if layout.scope == "global":
            index = flat_index(values, None, buf.shape)
        else:
            index = self.region_index(stage, layout, values)
        reduce_leaves = [v for v in stage.leaf_vars if v.kind == "reduce"]
        # NOTE: zero padding (tcomp.lower.padding) drops the guards past a tensor's edge,
        # or, in a zero-filled tile, stores a zero where they fail
        padded = [p for p in layout.predicates if any(p is q for q in layout.padded)]
        preds = list(_dedupe(p for p in layout.predicates if not any(p is q for q in padded)))
        in_bounds = logical_and(*_dedupe(padded)) if layout.zero_fill else None
        if isinstance(body, Reduce):
            source = self.lower_expr(body.source, layout.values)
            current = Load(buf, index)
            update_value = _combine(body.combiner, current, source)
            innermost = Store(buf, index, update_value, logical_and(*preds))
            reduce_set = set(reduce_leaves) | {ax for ax in stage.reduce_axes}
            init_preds = [p for p in preds if not (free_vars(p) & reduce_set)]
            init = Store(buf, index, reduction_identity(body.combiner, body.dtype), logical_and(*init_preds))
        else:
            innermost = Store(buf, index, self.lower_expr(body, layout.values), logical_and(*preds),
                              in_bounds=in_bounds)
            init = None
        first_reduce = stage.leaf_vars.index(reduce_leaves[0]) if reduce_leaves else None
        stmt = innermost
        for pos in reversed(range(len(stage.leaf_vars))):
            var = stage.leaf_vars[pos]
            stmt = self._loop(stage, layout, var, stmt)
            if pos == first_reduce:
                init_nest = init
                for v in reversed(stage.leaf_vars[pos + 1:]):
                    if v.kind != "reduce":
                        init_nest = For(v, layout.extents[v], loop_kind(stage, v), init_nest)
                stmt = seq(init_nest, stmt)
        return stmt

    def _loop(self, stage: Stage, layout: StageLayout, var, inner: Stmt) -> Stmt:
        extent = layout.extents[var]
        kind = loop_kind(stage, var)
        steps = loop_body(stage, var, self.layouts, self.attached_at, self.reverse_at)
        allocs, staged, rings = [], {}, {}
        barriers = None  # the mbarriers of TMA rings' slots
        start = None  # a TMA ring's tiles in the runs of this loop before (ring_start)
        for p in self.attached_at.get((stage, var), []):
            pl = self.layouts[p]
            if any(step.kind == "commit" and step.stage is p for step in steps):
                _check_overlapped(p, pl, stage, var, kind, "double_buffer")
                staged[p] = stage_through_registers(self.stage_stmt(p), var, extent, p.name)
            if any(step.kind == "land" and step.stage is p for step in steps):
                _check_overlapped(p, pl, stage, var, kind, "pipeline")
                if p.pipeline_copy == "tma":
                    if runs_again(stage, var, self.layouts) and not p.pipeline_specialized:
                        raise LoweringError(f"pipeline(copy=\"tma\") of {p.name}: its ring's barriers count the "
                                            f"tiles of one run of loop {var.name} of {stage.name}, which a serial loop "
                                            "around runs again; pipeline it with cp.async, or give the ring a "
                                            "producer warpgroup (specialized=True), which counts the tiles of every run")
                    barriers = barriers or Buffer(f"{var.name}_landed", "uint64", (p.pipeline_stages,), "shared")
                    start = ring_start(stage, var, extent, self.layouts) if start is None else start
                    rings[p] = stage_through_boxes(p, pl, self.tensor_read(pl), var, extent, p.pipeline_stages,
                                                   p.pipeline_reader_lag, barriers, self.tensor_map,
                                                   start)
                else:
                    rings[p] = stage_through_ring(self.stage_stmt(p), pl.buffer, var, extent, p.pipeline_stages,
                                                  p.name, p.pipeline_reader_lag)
            elif pl.scope != "global":  # a global buffer is a kernel argument, shared by all
                allocs.append(pl.buffer)
        _check_ring_sizes(rings, stage, var)
        specialized = any(p.pipeline_specialized for p in rings)
        released = Buffer(f"{var.name}_released", "uint64", (barriers.size,), "shared") if specialized else None
        # the ring's count of tiles at this iteration: the loop's own where it runs once,
        # else the tiles of the runs before as well (a warp-specialized ring's barriers
        # go on from one run to the next)
        count = binary("+", start, var) if specialized else var
        plain_fills = any(step.kind == "fill" for step in steps)
        body = []
        for step in steps:
            if step.kind == "barrier" and specialized and step.staging:
                # the consumers release the slot the block barrier protected; the tiles land
                # on the slots' barriers (block barriers stay only for tiles filled here)
                if step.staging == "refill":
                    body.append(_release(rings, count, released))
                if plain_fills:
                    body.append(Barrier())
            elif step.kind == "barrier":
                body.append(Barrier())
            elif step.kind == "inner":
                body.append(inner)
            elif step.kind in ("fill", "epilogue"):
                body.append(self.stage_stmt(step.stage))
            elif step.kind == "land":  # one wait for every ring's copies of this tile
                if step.stage is next(iter(rings)):
                    body.append(_landing(step.stage, count, barriers))
            elif step.kind == "issue" and specialized:
                continue  # the producer warpgroup's
            elif step.kind == "issue" and barriers is not None:  # every ring's tile in one copy
                if step.stage is next(iter(rings)):
                    body.append(one_copy_a_slot([ring.issue for ring in rings.values()]))
            elif step.kind == "issue":
                body.append(rings[step.stage].issue)
                if step.stage is list(rings)[-1]:
                    body.append(AsyncCommit())
            else:
                body.append(staged[step.stage].commit if step.kind == "commit" else staged[step.stage].prefetch)
        loop: Stmt = seq(*body)
        for ring in rings.values():
            loop = ring.reading_slot(loop, count)
        for b in reversed(allocs):
            loop = Allocate(b, loop)
        loop = For(var, extent, kind, loop)
        if specialized:  # the inits' block barrier and the warpgroups' roles: tcomp.lower.warp_roles
            producer = _producer_loop(list(rings.values()), extent, released, start)
            loop = Allocate(barriers, Allocate(released, seq(BarrierInit(barriers, 1),
                                                             BarrierInit(released, 0), producer, loop)))
        elif rings:
            loop = seq(prologue_of(list(rings.values())), loop)
            if barriers is not None:  # the rings' copy of a tile is one arrival on its slot's barrier
                loop = Allocate(barriers, seq(BarrierInit(barriers, 1), Barrier(), loop))
        if rings:
            for ring in reversed(list(rings.values())):
                loop = Allocate(ring.ring, loop)
        if staged:
            loop = seq(*[st.prologue for st in staged.values()], loop)
            for st in reversed(list(staged.values())):
                loop = Allocate(st.registers, loop)
        return loop

    def tensor_read(self, layout: StageLayout) -> Buffer:
        """The buffer a tile's expression reads, where it is one read of a tensor (else
        the tile's own buffer, which ``stage_through_boxes`` then refuses)."""
        body = layout.body
        return self.load(body).buffer if isinstance(body, TensorRead) else layout.buffer


def _release(rings: dict, loop, released: Buffer) -> Stmt:
    """At the start of iteration ``loop`` of a warp-specialized ring, each consumer warp
    releases the slot read ``reader_lag + 1`` iterations before (its readers retired at
    the end of the last iteration)."""
    ring = next(iter(rings.values()))
    behind = 1 + ring.ring.reader_lag
    return BarrierArrive(released, binary("%", binary("-", loop, behind), ring.stages),
                         compare("<", behind - 1, loop))


def _producer_loop(rings: list, extent: int, released: Buffer, start) -> Stmt:
    """The producer's loop over the tiles of one run of the ring's loop (``start``: the
    tiles of the runs before): each waits until its slot's last tile has been released (a
    fresh barrier counts as released once: the first use of each slot waits for nothing),
    then the copies of every ring."""
    tile, stages = rings[0].prologue_tile, rings[0].stages
    copies = [substitute(r.producer, {r.prologue_tile: tile}) for r in rings]
    count = binary("+", start, tile)
    free = BarrierWait(released, binary("%", count, stages), binary("%", binary("+", binary("//", count, stages), 1), 2))
    return ProducerLoop(tile, extent, seq(free, one_copy_a_slot(copies)))


def ring_start(stage: Stage, var, extent: int, layouts: dict):
    """The tiles a ring at loop ``var`` of ``stage`` (``extent`` iterations) has taken in
    the runs of that loop before this one: the runs of the serial loops around it, counted
    row-major, times ``extent`` (0 where none encloses it)."""
    runs = IntImm(0)
    for loop, loop_extent in enclosing_serial_loops(stage, var, layouts):
        runs = binary("+", binary("*", runs, loop_extent), loop)
    return binary("*", runs, extent)


def _landing(stage: Stage, loop, barriers) -> Stmt:
    """The wait of iteration ``loop`` for its tile: the slot's barrier phase (TMA), or all
    but the groups of the tiles issued later (cp.async)."""
    if barriers is None:
        return AsyncWait(stage.pipeline_stages - 2 - stage.pipeline_reader_lag)
    stages = stage.pipeline_stages
    return BarrierWait(barriers, binary("%", loop, stages), binary("%", binary("//", loop, stages), 2))


def _check_overlapped(producer: Stage, layout: StageLayout, consumer: Stage, var, kind: str, primitive: str) -> None:
    """A double-buffered or pipelined tile is a shared one computed at a serial loop."""
    if layout.scope != "shared":
        verb = "double buffered" if primitive == "double_buffer" else "pipelined"
        raise LoweringError(f"{primitive} of {producer.name}: only a shared-memory tile can be {verb}, and "
                            f"{producer.name} is {layout.scope}")
    if kind != "serial":
        raise LoweringError(f"{primitive} of {producer.name}: it is computed at loop {var.name} of "
                            f"{consumer.name}, which is {kind}; the loop it is computed at must be serial")


def _check_ring_sizes(rings: dict, consumer: Stage, var) -> None:
    """The pipelined tiles of one loop share its waits, so they keep as many tiles in flight."""
    for what, key in (("stage counts", "pipeline_stages"), ("reader lags", "pipeline_reader_lag"),
                      ("copies", "pipeline_copy"), ("producers", "pipeline_specialized")):
        counts = {p.name: getattr(p, key) for p in rings}
        if len(set(counts.values())) > 1:
            shown = ", ".join(f"{name}: {n}" for name, n in counts.items())
            raise LoweringError(f"the tiles pipelined at loop {var.name} of {consumer.name} have different {what} "
                                f"({shown}); they share the loop's waits, so give them the same")


def _dedupe(preds):
    seen = set()
    for p in preds:
        key = str(p)
        if key not in seen:
            seen.add(key)
            yield p


def flat_index(indices, mins, shape) -> Expr:
    """Row-major flat index of ``indices`` (minus the region's ``mins``) in a buffer of ``shape``."""
    if len(indices) != len(shape):
        raise InternalError(f"{len(indices)} indices for a buffer of rank {len(shape)}")
    result: Expr = IntImm(0)
    for d, ix in enumerate(indices):
        if mins is not None:
            ix = binary("-", ix, mins[d])
        result = binary("+", binary("*", result, shape[d]), ix)
    return simplify(result)


def blocked_index(indices, shape, blocks, swizzle: bool = False, chunk: int = 8) -> Expr:
    """Flat index of ``indices`` in a buffer of ``shape`` whose last two dimensions are
    stored as a row-major grid of ``blocks`` (rows, cols), each block row-major; with
    ``swizzle`` the ``chunk``-element pieces of row r are permuted, piece c stored at
    ``c ^ (r % 8)``."""
    *lead, row, col = indices
    *lead_shape, rows, cols = shape
    block_rows, block_cols = blocks
    size = block_rows * block_cols
    row_in, col_in = binary("%", row, IntImm(block_rows)), binary("%", col, IntImm(block_cols))
    if swizzle:  # NOTE: the pattern repeats every 8 rows, whatever the blocks' height
        piece = binary("^", binary("//", col_in, IntImm(chunk)), binary("%", row, IntImm(8)))
        col_in = binary("+", binary("*", piece, IntImm(chunk)), binary("%", col, IntImm(chunk)))
    inner = binary("+", binary("+", binary("*", binary("//", row, IntImm(block_rows)), IntImm(cols // block_cols * size)),
                               binary("*", binary("//", col, IntImm(block_cols)), IntImm(size))),
                   binary("+", binary("*", row_in, IntImm(block_cols)), col_in))
    outer = flat_index(lead, None, lead_shape) if lead else IntImm(0)
    return simplify(binary("+", binary("*", outer, IntImm(rows * cols)), inner))


def _combine(combiner: str, acc: Expr, value: Expr) -> Expr:
    if combiner == "sum":
        return binary("+", acc, value)
    if combiner in ("max", "min"):
        return binary(combiner, acc, value)
    raise LoweringError(f"unknown reduction {combiner}")


__all__ = ["NestBuilder", "flat_index", "Buffer"]
