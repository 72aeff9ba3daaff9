"""The schedule drawer: random schedules of a workload, one primitive call at a time.

:class:`ScheduleDrawer` draws its calls (hypothesis draws) from the schedule's current
state, in phases that mirror how schedules are written; :func:`draw_schedule` runs it
on a fresh schedule of a workload and tells a primitive's clean refusal from a bug.
"""

from __future__ import annotations

from hypothesis import strategies as st

import tcomp as tc
from tcomp.errors import TcompError
from tcomp.testing.fuzz_workloads import FuzzWorkload
from tcomp.testing.reproducer import repro_source


_SCOPES = ("local", "shared")
_BLOCK = ("blockIdx.x", "blockIdx.y")
_THREAD = ("threadIdx.x", "threadIdx.y")
_TAGS = _THREAD + _BLOCK + ("threadIdx.z", "blockIdx.z")

#: the kinds of step a "loop" phase draws from, the most common first
_LOOP_STEPS = ("split", "tile", "reorder", "fuse")
_ANY_STEPS = ("split", "tile", "reorder", "fuse", "bind", "unroll", "vectorize", "compute_at",
              "reverse_compute_at", "compute_inline", "compute_root", "set_scope", "storage_order", "storage_pad",
              "storage_layout", "double_buffer", "pipeline", "tensorize", "cache_read", "cache_write", "rfactor",
              "reduce_across_threads")


class ScheduleDrawer:
    """Draws primitive calls one at a time from the schedule's current state.

    The calls come in phases that mirror how schedules are written (caches, inlines,
    loop transformations, bindings, placements of the producers, more loop work,
    annotations); every phase may be empty. Arguments are drawn mostly among those
    that make sense (a loop not bound yet, a thread index the stage has not used, a
    consumer that is not inlined, ...); one step in eight is a "wild" step of any kind
    with arguments drawn from everything, so that odd orders and misuse are covered too
    (those mostly end in a clean ``tc.TcompError``). ``pending`` is the call in
    progress, for a reproducer when it raises.
    """

    def __init__(self, data, s, wl: FuzzWorkload):
        self.data = data
        self.s = s
        self.wl = wl
        self.wild = False  # the current step draws its arguments from everything
        self.pending = None  # (target, method, args) of the call in progress

    # -------------------------------------------------------------- draws

    def draw(self, strategy, label=None):
        return self.data.draw(strategy, label=label)

    def chance(self, one_in: int, label=None) -> bool:
        """True about once in ``one_in`` draws (False when shrinking)."""
        return self.draw(st.sampled_from([False] * (one_in - 1) + [True]), label)

    def count(self, most: int, label=None) -> int:
        """How many steps a phase takes (0 when shrinking)."""
        return self.draw(st.integers(0, most), label)

    def pick(self, sensible, everything=None, label=None):
        """One of ``sensible`` (one of ``everything`` in a wild step); None when there is
        nothing to choose from."""
        sensible = list(sensible)
        everything = list(everything) if everything is not None else sensible
        items = everything if self.wild else sensible
        if not items:
            return None
        return self.draw(st.sampled_from(items), label)

    def stages(self):
        return list(self.s.stages)

    def placed(self):
        """Stages that have loops (not inlined)."""
        return [x for x in self.s.stages if x.attach.kind != "inline"]

    def producers(self):
        """Stages that may be placed: not outputs, not inlined."""
        outs = set(self.s.outputs)
        return [x for x in self.s.stages if x.tensor not in outs and x.attach.kind != "inline"]

    @property
    def output_stage(self):
        return self.s[self.s.outputs[0]]

    def stage(self, prefer_output=True):
        """A stage with loops, the output about half of the time."""
        if prefer_output and not self.wild and self.draw(st.booleans(), "output stage?"):
            return self.output_stage
        return self.pick(self.placed(), self.stages(), "stage") or self.output_stage

    def free_loops(self, stage):
        """Loops of ``stage`` that are neither bound nor annotated."""
        return [v for v in stage.leaf_vars if v not in stage.bindings and v not in stage.annotations]

    def attach_points(self):
        return {x.attach.axis for x in self.s.stages if x.attach.kind in ("at", "reverse_at")}

    def reshapable(self, stage):
        """Loops of ``stage`` that a split or fuse may replace: free, and no other stage
        is placed at them."""
        taken = self.attach_points()
        return [v for v in self.free_loops(stage) if v not in taken]

    def readers(self, tensor):
        """Stages with loops that read ``tensor``, looking through inlined readers."""
        out, todo, seen = [], list(self.s.consumers(tensor)), set()
        while todo:
            st_ = todo.pop(0)
            if st_ in seen:
                continue
            seen.add(st_)
            if st_.attach.kind == "inline":
                todo += self.s.consumers(st_.tensor)
            else:
                out.append(st_)
        return out

    @staticmethod
    def inside(a, b) -> bool:
        """Is stage ``a`` (transitively) placed inside stage ``b``?"""
        seen = set()
        while a.attach.kind in ("at", "reverse_at") and a not in seen:
            seen.add(a)
            a = a.attach.stage
            if a is b:
                return True
        return False

    def factor(self, extent: int) -> int:
        return self.draw(st.one_of(st.sampled_from([2, 3, 4]), st.integers(1, max(1, extent) + 1)), "factor")

    def call(self, target, method: str, *args):
        self.pending = (target, method, args)
        result = getattr(target, method)(*args)
        self.pending = None
        return result

    # -------------------------------------------------------------- steps

    def step(self, kind: str, wild: bool = False, *args) -> None:
        self.wild = wild
        try:
            getattr(self, f"step_{kind}")(*args)
        finally:
            self.wild = False

    def step_split(self, stage=None):
        stage = stage or self.stage()
        ax = self.pick(self.reshapable(stage), stage.leaf_vars, "axis")
        if ax is not None:
            self.call(stage, "split", ax, self.factor(ax.extent))

    def step_tile(self, stage=None):
        stage = stage or self.stage()
        loops = self.reshapable(stage)
        pairs = [(a, b) for a, b in zip(loops, loops[1:])
                 if stage.leaf_vars.index(b) == stage.leaf_vars.index(a) + 1]
        if self.wild or not pairs:
            if len(stage.leaf_vars) < 2:
                return
            x, y = self.draw(st.permutations(stage.leaf_vars), "tile loops")[:2]
        else:
            x, y = self.draw(st.sampled_from(pairs), "tile loops")
        self.call(stage, "tile", x, y, self.factor(x.extent), self.factor(y.extent))

    def step_reorder(self, stage=None):
        stage = stage or self.stage()
        loops = [v for v in stage.leaf_vars if v not in self.attach_points()] if not self.wild else stage.leaf_vars
        if len(loops) < 2:
            return
        order = self.draw(st.permutations(loops), "order")
        n = self.draw(st.integers(2, len(order)), "how many")
        self.call(stage, "reorder", *order[:n])

    def step_fuse(self, stage=None):
        stage = stage or self.stage()
        loops = self.reshapable(stage)
        pairs = [(a, b) for a, b in zip(stage.leaf_vars, stage.leaf_vars[1:])
                 if a in loops and b in loops and a.kind == b.kind]
        everything = list(zip(stage.leaf_vars, stage.leaf_vars[1:]))
        pair = self.pick(pairs, everything, "fuse loops")
        if pair is not None:
            self.call(stage, "fuse", *pair)

    def step_bind(self, stage=None):
        stage = stage or self.stage()
        ax = self.pick(self.free_loops(stage), stage.leaf_vars, "axis")
        if ax is None:
            return
        used = set(stage.bindings.values())
        sensible = [t for t in (_BLOCK + _THREAD if stage.attach.kind == "root" else _THREAD) if t not in used]
        if self.chance(6, "z?"):
            sensible += [t for t in ("threadIdx.z", "blockIdx.z") if t not in used]
        tag = self.pick(sensible, _TAGS, "tag")
        if tag is not None:
            self.call(stage, "bind", ax, tag)

    def step_unroll(self, stage=None):
        stage = stage or self.stage(prefer_output=False)
        ax = self.pick(self.free_loops(stage), stage.leaf_vars, "axis")
        if ax is not None:
            self.call(stage, "unroll", ax)

    def step_reduce_across_threads(self, stage=None):
        stage = stage or self.stage(prefer_output=False)
        reductions = [v for v in self.free_loops(stage) if v.kind == "reduce"]
        ax = self.pick(reductions, stage.leaf_vars, "axis")
        if ax is not None:
            self.call(stage, "reduce_across_threads", ax)

    def step_vectorize(self, stage=None):
        stage = stage or self.stage(prefer_output=False)
        free = self.free_loops(stage)
        inner = [free[-1]] if free and free[-1] is stage.leaf_vars[-1] else []
        ax = self.pick(inner, stage.leaf_vars, "axis")
        if ax is not None:
            self.call(stage, "vectorize", ax)

    def step_compute_at(self, producer=None):
        producer = producer or self.pick(self.producers(), self.stages(), "producer")
        if producer is None:
            return
        readers = [c for c in self.readers(producer.tensor) if c is not producer and not self.inside(c, producer)]
        others = [c for c in self.stages() if c is not producer]
        if self.chance(8, "any consumer?"):
            readers = [c for c in others if c.attach.kind != "inline"]
        consumer = self.pick(readers, others, "consumer")
        if consumer is None:
            return
        ax = self.pick(consumer.leaf_vars, None, "at loop")
        if ax is not None:
            self.call(producer, "compute_at", self.s[consumer], ax)

    def step_reverse_compute_at(self, consumer=None):
        consumer = consumer or self.pick(self.placed(), self.stages(), "consumer")
        if consumer is None:
            return
        sources = [p for p in (self.s.stage_of(t) for t in consumer.op.input_tensors())
                   if p is not None and p is not consumer and p.attach.kind != "inline"
                   and not self.inside(p, consumer)]
        others = [p for p in self.stages() if p is not consumer]
        if self.chance(8, "any producer?"):
            sources = [p for p in others if p.attach.kind != "inline"]
        producer = self.pick(sources, others, "producer")
        if producer is None:
            return
        ax = self.pick(producer.leaf_vars, None, "at loop")
        if ax is not None:
            self.call(consumer, "reverse_compute_at", self.s[producer], ax)

    def step_compute_inline(self, stage=None):
        outs = set(self.s.outputs)
        sensible = [x for x in self.producers() if x.op.reduction is None and x.tensor not in outs]
        stage = stage or self.pick(sensible, self.stages(), "inline")
        if stage is not None:
            self.call(stage, "compute_inline")

    def step_compute_root(self, stage=None):
        stage = stage or self.pick(self.producers(), self.stages(), "root")
        if stage is not None:
            self.call(stage, "compute_root")

    def step_set_scope(self, stage=None):
        placed_at = [x for x in self.producers() if x.attach.kind == "at"]
        stage = stage or self.pick(placed_at, self.stages(), "stage")
        if stage is None:
            return
        self.call(stage, "set_scope", self.pick(("local", "shared"), ("local", "shared", "global"), "scope"))

    def step_storage_order(self, stage=None):
        placed_at = [x for x in self.producers() if x.attach.kind == "at"]
        stage = stage or self.pick(placed_at, self.stages(), "stage")
        if stage is None:
            return
        self.call(stage, "storage_order", *self.draw(st.permutations(stage.root_axes), "storage order"))

    def step_storage_pad(self, stage=None):
        placed_at = [x for x in self.producers() if x.attach.kind == "at"]
        stage = stage or self.pick(placed_at, self.stages(), "stage")
        if stage is None:
            return
        axis = self.pick(stage.root_axes, stage.root_axes + tuple(stage.leaf_vars), "padded axis")
        if axis is not None:
            self.call(stage, "storage_pad", axis, self.pick((1, 4), (0, 1, 3, 4, -1), "padding"))

    def step_storage_layout(self, stage=None):
        """``storage_blocks`` or ``storage_swizzle``: layouts that change no value."""
        placed_at = [x for x in self.producers() if x.attach.kind == "at"]
        stage = stage or self.pick(placed_at, self.stages(), "stage")
        if stage is None:
            return
        if self.chance(2, "swizzle?"):
            self.call(stage, "storage_swizzle")
        else:
            self.call(stage, "storage_blocks", *self.pick(((8, 8), (1, 4), (2, 2)), ((8, 8), (0, 4), (3, -1)),
                                                         "block"))

    def step_double_buffer(self, stage=None):
        shared = [x for x in self.producers() if x.attach.kind == "at" and x.scope == "shared"]
        stage = stage or self.pick(shared, self.stages(), "stage")
        if stage is not None:
            self.call(stage, "double_buffer")

    def step_pipeline(self, stage=None):
        shared = [x for x in self.producers() if x.attach.kind == "at" and x.scope == "shared"]
        stage = stage or self.pick(shared, self.stages(), "stage")
        if stage is not None:
            stages = self.pick((2, 3, 4), (1, 2, 3, 4, 8, 9), "stages")
            if self.chance(3, "reader lag?"):
                self.call(stage, "pipeline", stages, self.pick((0, 1), (0, 1, 2, -1), "reader lag"))
            else:
                self.call(stage, "pipeline", stages)

    def step_tensorize(self, stage=None):
        """``tensorize`` of a reduction loop: lowering refuses almost every drawn nest
        (the warp's layout is exact), so this mostly checks that it refuses cleanly."""
        stage = stage or self.pick([x for x in self.stages() if x.op.reduction is not None], self.stages(), "stage")
        if stage is None:
            return
        reduce_loops = [v for v in self.free_loops(stage) if v.kind == "reduce"]
        ax = self.pick(reduce_loops, stage.leaf_vars, "axis")
        if ax is not None:
            self.call(stage, "tensorize", ax, self.pick(("mma_m16n8k16", "wgmma_m64n64k16", "wgmma_m64n8k16"),
                                                        ("mma_m16n8k16", "wmma", "wgmma_m64n129k16"), "intrinsic"))

    def step_cache_read(self):
        outs = set(self.s.outputs)
        tensors = list(self.s.placeholders) + [x.tensor for x in self.s.stages if x.tensor not in outs]
        tensor = self.pick(tensors, None, "cache_read of")
        if tensor is None:
            return
        readers = [c for c in self.s.consumers(tensor)]
        if not readers:
            return
        n = self.draw(st.integers(1, len(readers)), "how many readers")
        scope = self.draw(st.sampled_from(_SCOPES), "scope")
        self.call(self.s, "cache_read", tensor, scope, [self.s[c] for c in readers[:n]])

    def step_cache_write(self):
        fresh = [x for x in self.s.stages if not x.relations and not x.bindings and not x.annotations
                 and x.attach.kind == "root"]
        reductions = [x for x in fresh if x.op.reduction is not None]
        stage = self.pick(reductions or fresh, self.stages(), "cache_write of")
        if stage is None:
            return
        scope = self.draw(st.sampled_from(("local", "local", "shared")), "scope")
        self.call(self.s, "cache_write", stage.tensor, scope)

    def step_rfactor(self):
        fresh = [x for x in self.s.stages if not x.relations and not x.bindings and not x.annotations
                 and x.attach.kind == "root" and x.op.reduction is not None]
        stage = self.pick(fresh, self.stages(), "rfactor of")
        if stage is None:
            return
        extent = stage.reduce_axes[0].extent if stage.reduce_axes else 4  # NOTE: wild: rfactor refuses it
        divisors = [d for d in range(2, extent + 1) if extent % d == 0]
        parts = self.pick(divisors, list(range(1, extent + 2)), "parts")
        if parts is None:
            return
        self.call(self.s, "rfactor", stage.tensor, parts, self.draw(st.booleans(), "interleaved"))

    def step_any(self, kind: str, *args) -> None:
        """Step ``kind``; one time in eight, a wild step of any kind instead."""
        if self.chance(8, "wild?"):
            self.step(self.draw(st.sampled_from(_ANY_STEPS), "wild kind"), wild=True)
        else:
            self.step(kind, False, *args)

    # -------------------------------------------------------------- the phases

    def run(self) -> None:
        for _ in range(self.draw(st.sampled_from([0, 0, 1, 1, 2]), "caches")):
            self.step_any(self.draw(st.sampled_from(("cache_read", "cache_write", "cache_read", "rfactor")), "cache"))
        outs = set(self.s.outputs)
        for stage in list(self.s.stages):
            if stage.tensor not in outs and stage.op.reduction is None and not stage.is_cache:
                if self.draw(st.booleans(), f"inline {stage.name}?"):
                    self.call(stage, "compute_inline")
        for _ in range(self.count(3, "loop steps")):
            self.step_any(self.draw(st.sampled_from(_LOOP_STEPS), "loop step"))
        for _ in range(self.count(4, "bindings")):
            self.step_any("bind", self.output_stage)
        for stage in reversed(self.producers()):
            choices = ["compute_at", "compute_at", "compute_at"]
            if stage.scope not in ("local", "shared"):  # a cache must go inside a kernel
                choices += ["reverse", "root", "stay", "stay"]
            where = self.draw(st.sampled_from(choices), f"place {stage.name}")
            if where == "compute_at":
                self.step_compute_at(stage)
                if stage.attach.kind == "at" and self.chance(3, "scope?"):
                    self.step_set_scope(stage)
            elif where == "reverse":
                # a reader of the stage, placed in one of its loops (epilogue fusion)
                readers = [r for r in self.readers(stage.tensor) if r.attach.kind == "root"]
                reader = self.pick(readers, None, "epilogue")
                ax = self.pick(stage.leaf_vars, None, "at loop")
                if reader is not None and ax is not None:
                    self.call(reader, "reverse_compute_at", stage, ax)
            elif where == "root":
                self.call(stage, "compute_root")
        if self.chance(4, "epilogue of the output?"):
            self.step_reverse_compute_at(self.output_stage)
        for _ in range(self.count(4, "inner steps")):
            self.step_any(self.draw(st.sampled_from(_LOOP_STEPS + ("bind", "bind")), "inner step"))
        for _ in range(self.count(2, "annotations")):
            self.step_any(self.draw(st.sampled_from(("unroll", "vectorize", "set_scope", "storage_order",
                                                     "storage_pad", "storage_layout", "double_buffer", "pipeline",
                                                     "tensorize", "reduce_across_threads",
                                                     "compute_root")),
                                    "annotation"))


def draw_schedule(data, wl: FuzzWorkload):
    """Draw a schedule of ``wl``; return ``(s, drawer, error)`` where ``error`` is the
    ``tc.TcompError`` that a primitive raised (drawing stops there), or None."""
    s = tc.create_schedule(wl.out)
    drawer = ScheduleDrawer(data, s, wl)
    try:
        drawer.run()
    except TcompError as err:
        return s, drawer, err
    except Exception as err:  # not a TcompError: a bug; say which call raised it
        err.fuzz_repro = repro_source(wl, s, drawer.pending)
        err.add_note(f"reproducer:\n{err.fuzz_repro}")
        raise
    return s, drawer, None
