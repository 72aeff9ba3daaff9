"""The Schedule: one Stage per compute tensor of an algorithm, plus cache stages."""

from __future__ import annotations

from ..call_site import user_call_site
from ..errors import ScheduleError, TcompError
from ..ir.expr import TensorRead
from ..ir.visitor import rewrite, walk
from ..lang.tensor import ComputeOp, IterVar, PlaceholderOp, Tensor, compute, tensor_inputs
from .stage import SCOPES, Stage, primitive
from .trace_source import TracePrinter


def create_schedule(out) -> "Schedule":
    """A schedule with one stage for every compute that ``out`` depends on, all at root."""
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    for t in outs:
        if not isinstance(t, Tensor) or not isinstance(t.op, ComputeOp):
            raise ScheduleError(f"create_schedule needs compute tensors, got {t!r}")
    return Schedule(outs)


class Schedule:
    """How to compute an algorithm: ``s[tensor]`` is the stage of that tensor."""

    def __init__(self, outputs: list):
        self.outputs = outputs
        self.trace: list = []
        self._depth = 0
        order: list = []
        for out in outputs:
            for t in tensor_inputs(out):
                if t not in order:
                    order.append(t)
        self.placeholders = [t for t in order if isinstance(t.op, PlaceholderOp)]
        self.stages: list[Stage] = [Stage(self, t) for t in order if isinstance(t.op, ComputeOp)]

    # ------------------------------------------------------------------ lookup

    def __getitem__(self, key) -> Stage:
        """The stage of a tensor (or of the tensor with that name)."""
        try:
            return self._lookup(key)
        except ScheduleError as err:
            if self._depth:  # inside a primitive, which names its own call
                raise
            shown = repr(key) if isinstance(key, str) else getattr(key, "name", repr(key))
            raise ScheduleError(f"s[{shown}] at {user_call_site()}: {err}") from None

    def _lookup(self, key) -> Stage:
        if isinstance(key, Stage):
            return key
        if isinstance(key, str):
            matches = [st for st in self.stages if st.name == key]
            if len(matches) == 1:
                return matches[0]
            if any(p.name == key for p in self.placeholders):
                raise ScheduleError(f"{key} is an input placeholder; it has no stage to schedule")
            if not matches:
                names = ", ".join(st.name for st in self.stages)
                raise ScheduleError(f"no stage named {key!r}; the stages are {names}")
            raise ScheduleError(f"several stages are named {key!r}; index the schedule with the tensor")
        if isinstance(key, Tensor):
            for st in self.stages:
                if st.tensor is key:
                    return st
            if key in self.placeholders:
                raise ScheduleError(f"{key.name} is an input placeholder; it has no stage to schedule")
            raise ScheduleError(f"tensor {key.name} is not part of this schedule")
        raise ScheduleError(f"index a schedule with a tensor or its name, got {key!r}")

    def _stage_arg(self, value, what: str) -> Stage:
        if isinstance(value, Stage):
            if value.schedule is not self:
                raise ScheduleError(f"{what} {value.name} belongs to another schedule")
            return value
        return self[value]

    def _tensor_arg(self, value) -> Tensor:
        if isinstance(value, Tensor):
            return value
        if isinstance(value, Stage):
            return value.tensor
        if isinstance(value, str):
            for p in self.placeholders:
                if p.name == value:
                    return p
            return self[value].tensor
        raise ScheduleError(f"expected a tensor or its name, got {value!r}")

    def stage_of(self, tensor: Tensor) -> Stage | None:
        for st in self.stages:
            if st.tensor is tensor:
                return st
        return None

    def consumers(self, tensor: Tensor) -> list[Stage]:
        """Stages whose expression reads ``tensor``."""
        return [st for st in self.stages if tensor in st.op.input_tensors()]

    def _unique_name(self, base: str) -> str:
        names = {st.name for st in self.stages} | {p.name for p in self.placeholders}
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}{n}"
        return name

    # ------------------------------------------------------------------ cache primitives

    @primitive
    def cache_read(self, tensor, scope: str, readers) -> Tensor:
        """A copy of ``tensor`` in ``scope`` ("shared" or "local") that ``readers`` read instead.

        The new stage starts at root; place it with ``compute_at`` inside a reader's loop
        and bind its loops to threads for a cooperative fill::

            AS = s.cache_read(A, "shared", [C]); s[AS].compute_at(s[C], ko)
        """
        tensor = self._tensor_arg(tensor)
        if scope not in ("shared", "local"):
            raise ScheduleError(f"cache_read scope must be 'shared' or 'local', got {scope!r}")
        if not isinstance(readers, (list, tuple)) or not readers:
            raise ScheduleError("cache_read needs a non-empty list of reader stages")
        reader_stages = [self._stage_arg(r, "reader") for r in readers]
        for r in reader_stages:
            if tensor not in r.op.input_tensors():
                raise ScheduleError(f"stage {r.name} does not read {tensor.name}")
        name = self._unique_name(f"{tensor.name}_{scope}")
        cache = compute(tensor.shape, lambda *idx: tensor[idx], name=name)
        for r in reader_stages:
            r.op = _replace_reads(r.op, tensor, cache)
        stage = Stage(self, cache)
        stage.scope = scope
        stage.is_cache = True
        first = min(self.stages.index(r) for r in reader_stages)
        self.stages.insert(first, stage)
        return cache

    @primitive
    def cache_write(self, tensor, scope: str) -> Tensor:
        """Compute ``tensor`` into a ``scope`` buffer first ("local" or "shared"), then copy it out.

        The new stage takes over the expression (and the reduction axes); the original
        stage becomes the copy. Call it before any other primitive on that stage::

            CL = s.cache_write(C, "local"); s[CL].compute_at(s[C], tx)
        """
        tensor = self._tensor_arg(tensor)
        stage = self[tensor]
        if scope not in ("shared", "local"):
            raise ScheduleError(f"cache_write scope must be 'local' or 'shared', got {scope!r}")
        if stage.relations or stage.bindings or stage.annotations or stage.attach.kind != "root" \
                or stage.leaf_vars != list(stage.root_axes) + list(stage.reduce_axes):
            raise ScheduleError(f"cache_write({tensor.name}) must come before the other primitives "
                                f"on stage {tensor.name}")
        name = self._unique_name(f"{tensor.name}_{scope}")
        old = stage.op
        fresh = tuple(IterVar(a.name, "int32", a.extent, "spatial") for a in old.axis)
        from ..ir.visitor import substitute

        body = substitute(old.body, dict(zip(old.axis, fresh)))
        cache = Tensor(name, tensor.shape, tensor.dtype, None)
        cache.op = ComputeOp(name, fresh, old.reduce_axis, body)
        cache.op.output = cache
        copy_body = TensorRead(cache, tuple(old.axis))
        stage.op = ComputeOp(old.name, old.axis, (), copy_body)
        stage.op.output = tensor
        stage.reduce_axes = ()
        stage.leaf_vars = list(stage.root_axes)
        cache_stage = Stage(self, cache)
        cache_stage.scope = scope
        cache_stage.is_cache = True
        self.stages.insert(self.stages.index(stage), cache_stage)
        return cache

    @primitive
    def rfactor(self, tensor, parts: int, interleaved: bool = False) -> Tensor:
        """Split-K: reduce ``tensor``'s reduction axis in ``parts`` independent slices.

        A new stage ``<name>_rf`` of shape ``(parts, *tensor.shape)`` takes over the
        expression: with ``n = ceil(extent / parts)``, slice ``p`` reduces the reduction
        axis over ``[p * n, (p + 1) * n)`` (with ``interleaved``, over ``p, p + parts,
        p + 2 * parts, ...``: threads that each take a slice then read consecutive
        elements together). Where ``parts`` does not divide the extent, the last slices
        run past its end: there each term is the reduction's identity (0 for a sum, -inf
        for a max), the source read at the last element instead, so nothing is read out
        of bounds and the result is the same. ``tensor`` itself becomes the reduction of those
        partial results over a new axis ``p`` with the same combiner. The slices are
        independent, so ``p`` can be bound to blocks (``blockIdx.z``) when the output
        alone cannot fill the GPU, or to the threads of a block (the partial results in
        shared memory) for a reduction along a row. A sum then adds its terms in another
        order than the algorithm (``tc.check`` reports the reassociation); max and min are
        exact. Call it before any other primitive on that stage::

            CR = s.rfactor(C, 4); s[CR].bind(s[CR].axis[0], "blockIdx.z")
        """
        tensor = self._tensor_arg(tensor)
        stage = self[tensor]
        red = stage.op.reduction
        if red is None:
            raise ScheduleError(f"rfactor needs a reduction; {tensor.name} has no reduction axis")
        if len(red.axes) != 1:
            raise ScheduleError(f"rfactor splits one reduction axis; {tensor.name} reduces over "
                                f"{', '.join(a.name for a in red.axes)}")
        if stage.relations or stage.bindings or stage.annotations or stage.attach.kind != "root" \
                or stage.leaf_vars != list(stage.root_axes) + list(stage.reduce_axes):
            raise ScheduleError(f"rfactor({tensor.name}) must come before the other primitives on stage {tensor.name}")
        k = red.axes[0]
        if not isinstance(parts, int) or isinstance(parts, bool) or not 2 <= parts <= k.extent:
            raise ScheduleError(f"rfactor parts must be an int from 2 to the extent {k.extent} of {k.name}, "
                                f"got {parts!r}")
        from ..ir.expr import IntImm, Reduce, Select, binary, compare, reduction_identity
        from ..ir.visitor import substitute

        name = self._unique_name(f"{tensor.name}_rf")
        old = stage.op
        # a stage rfactored twice (k over blocks, then over a block's threads) keeps its
        # first slice axis: the new one takes a name of its own, which a schedule's
        # source (``trace_source``) can tell apart
        taken = {a.name for a in old.axis}
        part_name = next(n for n in ("p", *(f"p{i}" for i in range(2, len(taken) + 3))) if n not in taken)
        part = IterVar(part_name, "int32", parts, "spatial")
        fresh = tuple(IterVar(a.name, "int32", a.extent, "spatial") for a in old.axis)
        per_part = -(-k.extent // parts)
        inner = IterVar(k.name, "int32", per_part, "reduce")
        whole_k = binary("+", binary("*", inner, IntImm(parts)), part) if interleaved else \
            binary("+", binary("*", part, IntImm(per_part)), inner)
        axes = dict(zip(old.axis, fresh))
        if k.extent % parts:
            last = binary("min", whole_k, IntImm(k.extent - 1))
            source = Select(compare("<", whole_k, IntImm(k.extent)), substitute(red.source, {**axes, k: last}),
                            reduction_identity(red.combiner, red.source.dtype))
        else:
            source = substitute(red.source, {**axes, k: whole_k})
        partial = Tensor(name, (parts,) + tuple(tensor.shape), tensor.dtype, None)
        partial.op = ComputeOp(name, (part,) + fresh, (inner,), Reduce(red.combiner, source, (inner,)))
        partial.op.output = partial
        across = IterVar(part_name, "int32", parts, "reduce")
        stage.op = ComputeOp(old.name, old.axis, (across,),
                             Reduce(red.combiner, TensorRead(partial, (across,) + tuple(old.axis)), (across,)))
        stage.op.output = tensor
        stage.rfactor_parts = parts
        stage.reduce_axes = (across,)
        stage.leaf_vars = list(stage.root_axes) + [across]
        self.stages.insert(self.stages.index(stage), Stage(self, partial))
        return partial

    # ------------------------------------------------------------------ trace

    def trace_source(self, with_sites: bool = True) -> str:
        """The primitive calls so far, as a replayable ``def schedule(s, out):``."""
        return TracePrinter(self).source(self.trace, with_sites)

    def __str__(self) -> str:
        return self.trace_source()


def _replace_reads(op: ComputeOp, old: Tensor, new: Tensor) -> ComputeOp:
    body = rewrite(op.body, lambda n: TensorRead(new, n.indices)
                   if isinstance(n, TensorRead) and n.tensor is old else None)
    new_op = ComputeOp(op.name, op.axis, op.reduce_axis, body)
    new_op.output = op.output
    return new_op


def replay(source: str, out, outputs_of=None) -> Schedule:
    """Run a saved ``def schedule(s, out)`` on a fresh schedule of ``out``."""
    namespace: dict = {}
    try:
        exec(compile(source, "<schedule>", "exec"), namespace)
    except SyntaxError as err:
        raise ScheduleError(f"the schedule does not parse: {err}") from None
    except TcompError:
        raise
    except Exception as err:
        raise ScheduleError(f"the schedule source failed to run{_source_line(err)}: "
                            f"{type(err).__name__}: {err}") from None
    fn = namespace.get("schedule")
    if not callable(fn):
        raise ScheduleError("the schedule source defines no function schedule(s, out)")
    s = create_schedule(out)
    try:
        fn(s, out)
    except TcompError:
        raise
    except Exception as err:  # the schedule does not fit this algorithm (a wrong unpack, a typo)
        raise ScheduleError(f"the schedule failed to replay{_source_line(err)}: "
                            f"{type(err).__name__}: {err}") from None
    return s


def _source_line(err: BaseException) -> str:
    """`` (line N of the schedule)`` for the innermost frame of ``err`` in the replayed source."""
    import traceback

    lines = [f.lineno for f in traceback.extract_tb(err.__traceback__) if f.filename == "<schedule>"]
    return f" (line {lines[-1]} of the schedule)" if lines else ""


def stage_reads(stage: Stage) -> list:
    return [n for n in walk(stage.op.body) if isinstance(n, TensorRead)]


__all__ = ["Schedule", "create_schedule", "replay", "SCOPES"]
