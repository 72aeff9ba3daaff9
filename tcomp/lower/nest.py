"""Build the loop nest of every kernel from the stage layouts.

A kernel is a root stage with every stage placed (transitively) inside it.
Producers computed at a loop come first in that loop's body, behind a barrier
when their storage is shared; consumers placed with reverse_compute_at come
last. A reduction's initialization sits just before its outermost reduction
loop, inside the spatial loops that come after it.
"""

from __future__ import annotations

from ..errors import InternalError, LoweringError
from ..ir.expr import Expr, FloatImm, IntImm, Load, binary, cast, logical_and
from ..ir.simplify import simplify
from ..ir.stmt import BLOCK_TAGS, THREAD_TAGS, Allocate, Barrier, Buffer, For, Stmt, Store, seq
from ..ir.visitor import free_vars, rewrite, substitute
from ..lang.tensor import Reduce, TensorRead
from ..schedule.stage import Stage
from .bounds import StageLayout, region_offset, storage_axes
from .double_buffer import stage_through_registers


class NestBuilder:
    def __init__(self, schedule, layouts: dict, global_buffers: dict):
        self.schedule = schedule
        self.layouts = layouts
        self.global_buffers = global_buffers  # tensor -> global Buffer
        self.attached_at: dict = {}  # (stage, leaf var) -> [stages computed there]
        self.reverse_at: dict = {}
        for st in schedule.stages:
            key = (st.attach.stage, st.attach.axis)
            if st.attach.kind == "at":
                self.attached_at.setdefault(key, []).append(st)
            elif st.attach.kind == "reverse_at":
                self.reverse_at.setdefault(key, []).append(st)

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
        preds = list(_dedupe(layout.predicates))
        if isinstance(body, Reduce):
            source = self.lower_expr(body.source, layout.values)
            current = Load(buf, index)
            update_value = _combine(body.combiner, current, source)
            innermost = Store(buf, index, update_value, logical_and(*preds))
            reduce_set = set(reduce_leaves) | {ax for ax in stage.reduce_axes}
            init_preds = [p for p in preds if not (free_vars(p) & reduce_set)]
            init = Store(buf, index, _identity(body.combiner, body.dtype), logical_and(*init_preds))
        else:
            innermost = Store(buf, index, self.lower_expr(body, layout.values), logical_and(*preds))
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
                        init_nest = For(v, layout.extents[v], _loop_kind(stage, v), init_nest)
                stmt = seq(init_nest, stmt)
        return stmt

    def _loop(self, stage: Stage, layout: StageLayout, var, inner: Stmt) -> Stmt:
        extent = layout.extents[var]
        kind = _loop_kind(stage, var)
        fills, allocs, shared_fills, staged = [], [], False, []
        for p in self.attached_at.get((stage, var), []):
            pl = self.layouts[p]
            if pl.scope != "global":  # a global buffer is a kernel argument, shared by all
                allocs.append(pl.buffer)
            fill = self.stage_stmt(p)
            if p.double_buffered and extent > 1:
                _check_double_buffer(p, pl, stage, var, kind)
                staged.append(stage_through_registers(fill, var, extent, p.name))
                continue
            fills.append(fill)
            if pl.scope == "shared":
                fills.append(Barrier())
                shared_fills = True
        post = [self.stage_stmt(c) for c in self.reverse_at.get((stage, var), [])]
        inner_loops = stage.leaf_vars[stage.leaf_vars.index(var) + 1:]
        if post and any(stage.bindings.get(v, "").startswith("threadIdx") for v in inner_loops):
            # the epilogue reads what other threads of the block just wrote
            post = [Barrier()] + post
        if staged:
            # one barrier before the commit protects the tile that the last iteration read
            fills = [f for f in fills if not isinstance(f, Barrier)]
            body = seq(Barrier(), *[st.commit for st in staged], *fills, Barrier(),
                       *[st.prefetch for st in staged], inner, *post)
        else:
            # before the next fill overwrites the tile: the next iteration of this loop, or of
            # any loop around it that runs this one again
            trailing = [Barrier()] if shared_fills and (extent > 1 or runs_again(stage, var, self.layouts)) else []
            body = seq(*fills, inner, *post, *trailing)
        for b in reversed(allocs):
            body = Allocate(b, body)
        loop: Stmt = For(var, extent, kind, body)
        if staged:
            loop = seq(*[st.prologue for st in staged], loop)
            for st in reversed(staged):
                loop = Allocate(st.registers, loop)
        return loop



def _check_double_buffer(producer: Stage, layout: StageLayout, consumer: Stage, var, kind: str) -> None:
    if layout.scope != "shared":
        raise LoweringError(f"double_buffer of {producer.name}: only a shared-memory tile can be double "
                            f"buffered, and {producer.name} is {layout.scope}")
    if kind != "serial":
        raise LoweringError(f"double_buffer of {producer.name}: it is computed at loop {var.name} of "
                            f"{consumer.name}, which is {kind}; the loop it is computed at must be serial")


def runs_again(stage: Stage, var, layouts: dict) -> bool:
    """Whether a loop that iterates sequentially (not bound to blocks or threads) encloses
    loop ``var`` of ``stage``, so that the body of ``var`` runs more than once per thread."""
    while True:
        outer = stage.leaf_vars[:stage.leaf_vars.index(var)]
        if any(_loop_kind(stage, v) not in BLOCK_TAGS + THREAD_TAGS and layouts[stage].extents[v] > 1
               for v in outer):
            return True
        if stage.attach.kind not in ("at", "reverse_at"):
            return False
        stage, var = stage.attach.stage, stage.attach.axis
        if _loop_kind(stage, var) not in BLOCK_TAGS + THREAD_TAGS and layouts[stage].extents[var] > 1:
            return True


def _dedupe(preds):
    seen = set()
    for p in preds:
        key = str(p)
        if key not in seen:
            seen.add(key)
            yield p


def _loop_kind(stage: Stage, var) -> str:
    return stage.bindings.get(var) or stage.annotations.get(var) or "serial"


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


def _identity(combiner: str, dtype: str) -> Expr:
    from ..dtypes import INT_RANGE, is_float

    if combiner == "sum":
        return cast(IntImm(0), dtype) if not is_float(dtype) else FloatImm(0.0, dtype)
    if is_float(dtype):
        return FloatImm(float("-inf") if combiner == "max" else float("inf"), dtype)
    lo, hi = INT_RANGE[dtype]
    return IntImm(lo if combiner == "max" else hi, dtype)


def _combine(combiner: str, acc: Expr, value: Expr) -> Expr:
    if combiner == "sum":
        return binary("+", acc, value)
    if combiner in ("max", "min"):
        return binary(combiner, acc, value)
    raise LoweringError(f"unknown reduction {combiner}")


__all__ = ["NestBuilder", "flat_index", "Buffer"]
