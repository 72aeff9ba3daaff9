"""The schedule fuzzer: random schedules, held to the reference.

For one of a few small workloads (matmul, matmul + SiLU + quantize, SwiGLU + quantize,
row max + quantize, an elementwise chain, a bfloat16 FFN) at tiny shapes, a
`hypothesis <https://hypothesis.readthedocs.io>`_ strategy draws a schedule over the
primitives of DESIGN.md: caches, inlines, splits (divisible or not), tiles, reorders,
fuses, bindings, placements (``compute_at`` / ``reverse_compute_at`` at random loops),
unrolls, vectorizes, scopes, storage orders, double buffers. Then
:func:`evaluate_schedule` holds the checker and the code generator to ``tc.evaluate``:

- ``tc.check`` says legal: the built module must compute ``tc.evaluate``'s result
  (float tolerance; int8 exactly unless the check reports a reassociation);
- ``tc.check`` raises ``tc.IllegalScheduleError``: built with ``check=False``, the
  module must compute something else on at least one of a few random inputs, unless
  the error says that a later recomputation hides the violation
  (:func:`is_hidden_by_recomputation`; counted apart). An illegal schedule whose result
  never differs is a checker false positive;
- anything raised that is not a ``tc.TcompError`` is a bug; a ``tc.TcompError`` from a
  primitive, the check or the build is a clean rejection.

A failure raises :class:`FuzzFailure` (or lets the unexpected exception through) with
the schedule as replayable Python (:func:`repro_source`); hypothesis shrinks it to a
minimal one. The test target is ``tests/fuzz`` (``pytest tests/fuzz --fuzz-examples
5000`` for a longer run); :data:`STATS` counts what the run drew.

In Numba's CUDA simulator the runs are instrumented (:func:`simulator_chaos`): blocks
run and threads start in a shuffled order, uninitialized local and shared memory
holds NaN (or a sentinel), shared memory is fresh for every block, the global
intermediates are poisoned before every call, blocks and threads can be isolated
(each block sees global memory as it was at the launch, each thread global and shared
memory as it was at the last barrier, as if all ran at once) and threads can be made to
switch every microsecond, so that a schedule that reads a value before it is written,
or races between blocks or threads, computes a visibly wrong result.

Bugs found and not fixed yet are listed in :data:`KNOWN_ISSUES`: the fuzzer counts a
case it recognizes apart ("known") instead of failing, and each has an
``xfail(strict=True)`` test in ``tests/test_fuzz_regressions.py``.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from hypothesis import strategies as st

import tcomp as tc
from tcomp.dtypes import host_dtype
from tcomp.errors import TcompError

#: launches larger than this many threads (grid x block, summed over kernels) are not
#: run in the simulator (about 4,000 threads a second); counted as skipped
MAX_SIMULATED_THREADS = 4096

#: how many random inputs an illegal schedule gets to show a wrong result
ILLEGAL_RUNS = 3


# ---------------------------------------------------------------------- workloads


@dataclass
class FuzzWorkload:
    """An algorithm at one tiny shape, with a way to draw its inputs."""

    name: str
    shape: dict
    out: tc.Tensor
    inputs: list  # placeholders, in the module's argument order
    make_inputs: Callable  # numpy Generator -> list of arrays, in argument order
    reduction_length: int = 1  # the longest reduction (float tolerance grows with it)

    def feeds(self, arrays) -> dict:
        return dict(zip(self.inputs, arrays))

    def expression(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.shape.items())
        return f"WORKLOADS[{self.name!r}]({args})"


def _normal(rng, shape, dtype="float32"):
    return rng.standard_normal(shape).astype(np.float32).astype(host_dtype(dtype))


def matmul(M=6, N=5, K=7) -> FuzzWorkload:
    """C[i, j] = sum_k A[i, k] * W[k, j]."""
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    return FuzzWorkload("matmul", dict(M=M, N=N, K=K), C, [A, W],
                        lambda rng: [_normal(rng, (M, K)), _normal(rng, (K, N))], K)


def matmul_silu_quant(M=6, N=5, K=7, scale=0.1) -> FuzzWorkload:
    """Q = quantize(silu(A @ W), scale, int8); C and Y are stages of their own."""
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    Y = tc.compute((M, N), lambda i, j: tc.silu(C[i, j]), name="Y")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(Y[i, j], scale, "int8"), name="Q")
    return FuzzWorkload("matmul_silu_quant", dict(M=M, N=N, K=K), Q, [A, W],
                        lambda rng: [_normal(rng, (M, K)), _normal(rng, (K, N))], K)


def swiglu_quant(M=6, N=5, K=7, scale=0.05) -> FuzzWorkload:
    """G = A @ Wg;  U = A @ Wu;  H = silu(G) * U;  Q = quantize(H, scale, int8)."""
    A = tc.placeholder((M, K), "float32", name="A")
    Wg = tc.placeholder((K, N), "float32", name="Wg")
    Wu = tc.placeholder((K, N), "float32", name="Wu")
    kg = tc.reduce_axis(K, name="kg")
    ku = tc.reduce_axis(K, name="ku")
    G = tc.compute((M, N), lambda i, j: tc.sum(A[i, kg] * Wg[kg, j], axis=kg), name="G")
    U = tc.compute((M, N), lambda i, j: tc.sum(A[i, ku] * Wu[ku, j], axis=ku), name="U")
    H = tc.compute((M, N), lambda i, j: tc.silu(G[i, j]) * U[i, j], name="H")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(H[i, j], scale, "int8"), name="Q")
    return FuzzWorkload("swiglu_quant", dict(M=M, N=N, K=K), Q, [A, Wg, Wu],
                        lambda rng: [_normal(rng, (M, K)), _normal(rng, (K, N)), _normal(rng, (K, N))], K)


def rowmax_quant(M=6, N=7) -> FuzzWorkload:
    """R[i] = max_k |X[i, k]|;  Q[i, j] = quantize(X[i, j], R[i] / 127.0, int8)."""
    X = tc.placeholder((M, N), "float32", name="X")
    k = tc.reduce_axis(N, name="k")
    R = tc.compute((M,), lambda i: tc.max(tc.abs(X[i, k]), axis=k), name="R")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(X[i, j], R[i] / 127.0, "int8"), name="Q")
    return FuzzWorkload("rowmax_quant", dict(M=M, N=N), Q, [X], lambda rng: [_normal(rng, (M, N))], N)


def elementwise_chain(M=6, N=7) -> FuzzWorkload:
    """B = X * 2 + Z;  S = silu(B);  O = S * 0.5 - Z."""
    X = tc.placeholder((M, N), "float32", name="X")
    Z = tc.placeholder((M, N), "float32", name="Z")
    B = tc.compute((M, N), lambda i, j: X[i, j] * 2.0 + Z[i, j], name="B")
    S = tc.compute((M, N), lambda i, j: tc.silu(B[i, j]), name="S")
    O = tc.compute((M, N), lambda i, j: S[i, j] * 0.5 - Z[i, j], name="O")
    return FuzzWorkload("elementwise_chain", dict(M=M, N=N), O, [X, Z],
                        lambda rng: [_normal(rng, (M, N)), _normal(rng, (M, N))], 1)


def ffn_bf16(M=6, N=5, K=7, scale=0.1) -> FuzzWorkload:
    """bfloat16 inputs, a float32 sum, a bfloat16 rounding point, SiLU, int8 quantize."""
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[k, j], "float32"),
                                               axis=k), name="C")
    Cb = tc.compute((M, N), lambda i, j: tc.cast(C[i, j], "bfloat16"), name="Cb")
    Y = tc.compute((M, N), lambda i, j: tc.silu(Cb[i, j]), name="Y")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(Y[i, j], scale, "int8"), name="Q")
    return FuzzWorkload("ffn_bf16", dict(M=M, N=N, K=K), Q, [A, W],
                        lambda rng: [_normal(rng, (M, K), "bfloat16"), _normal(rng, (K, N), "bfloat16")], K)


#: name -> builder taking shape keywords
WORKLOADS: dict = {
    "matmul": matmul,
    "matmul_silu_quant": matmul_silu_quant,
    "swiglu_quant": swiglu_quant,
    "rowmax_quant": rowmax_quant,
    "elementwise_chain": elementwise_chain,
    "ffn_bf16": ffn_bf16,
}

_DIM = st.integers(4, 9)
_RED = st.integers(4, 12)


def workloads(name: str):
    """A strategy for workload ``name`` at a random tiny shape (M, N in 4..9, K in 4..12)."""
    build = WORKLOADS[name]
    if name in ("rowmax_quant", "elementwise_chain"):
        n = _RED if name == "rowmax_quant" else _DIM
        return st.builds(build, M=_DIM, N=n)
    return st.builds(build, M=_DIM, N=_DIM, K=_RED)


# ---------------------------------------------------------------------- drawing schedules

_SCOPES = ("local", "shared")
_BLOCK = ("blockIdx.x", "blockIdx.y")
_THREAD = ("threadIdx.x", "threadIdx.y")
_TAGS = _THREAD + _BLOCK + ("threadIdx.z", "blockIdx.z")

#: the kinds of step a "loop" phase draws from, the most common first
_LOOP_STEPS = ("split", "tile", "reorder", "fuse")
_ANY_STEPS = ("split", "tile", "reorder", "fuse", "bind", "unroll", "vectorize", "compute_at",
              "reverse_compute_at", "compute_inline", "compute_root", "set_scope", "storage_order",
              "double_buffer", "cache_read", "cache_write")


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

    def step_double_buffer(self, stage=None):
        shared = [x for x in self.producers() if x.attach.kind == "at" and x.scope == "shared"]
        stage = stage or self.pick(shared, self.stages(), "stage")
        if stage is not None:
            self.call(stage, "double_buffer")

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

    def step_any(self, kind: str, *args) -> None:
        """Step ``kind``; one time in eight, a wild step of any kind instead."""
        if self.chance(8, "wild?"):
            self.step(self.draw(st.sampled_from(_ANY_STEPS), "wild kind"), wild=True)
        else:
            self.step(kind, False, *args)

    # -------------------------------------------------------------- the phases

    def run(self) -> None:
        for _ in range(self.draw(st.sampled_from([0, 0, 1, 1, 2]), "caches")):
            self.step_any(self.draw(st.sampled_from(("cache_read", "cache_write", "cache_read")), "cache"))
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
                                                     "double_buffer", "compute_root")), "annotation"))


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


# ---------------------------------------------------------------------- reproducers


def pending_call_source(s, pending) -> str:
    """The call in progress, in the notation of ``s.trace_source()``."""
    from tcomp.schedule.trace import CallSite, TraceEntry, TracePrinter

    printer = TracePrinter(s)
    printer.source(s.trace, with_sites=False)
    printer.lines = []
    target, method, args = pending
    printer.entry(TraceEntry(target, method, tuple(args), (), CallSite("<fuzz>", 0)), with_sites=False)
    return "\n".join(printer.lines)


def repro_source(wl: FuzzWorkload, s, pending=None, seed: int | None = None) -> str:
    """A runnable reproducer: the workload, the schedule as Python, the check."""
    body = s.trace_source(with_sites=False)
    if pending is not None:
        body = body.replace("    pass\n", "")
        body += pending_call_source(s, pending) + "  # <- raises\n"
    lines = ["import tcomp as tc",
             "from tcomp.testing.fuzz import WORKLOADS, evaluate_schedule",
             "",
             body.rstrip("\n"),
             "",
             f"wl = {wl.expression()}",
             "s = tc.create_schedule(wl.out)",
             "schedule(s, wl.out)"]
    if pending is None:
        lines.append(f"print(evaluate_schedule(wl, s, seed={seed if seed is not None else 0}))")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- the simulator


@contextlib.contextmanager
def simulator_chaos(seed: int | None = None, interleave: bool = False, isolate_blocks: bool = False,
                    isolate_threads: bool = False):
    """Instrument Numba's CUDA simulator for the duration (a no-op on a real GPU).

    - with a ``seed``: blocks run, and the threads of a block start, in a shuffled order
      (the simulator runs them in index order);
    - uninitialized ``cuda.local.array`` / ``cuda.shared.array`` storage holds NaN (an
      integer sentinel for integer arrays), and every block gets fresh shared memory
      (the simulator keeps one per launch);
    - ``isolate_blocks``: every block of a launch sees global memory as it was when the
      launch began (plus its own writes), and the writes of all blocks are merged at the
      end, as if all blocks ran at once;
    - ``isolate_threads``: likewise for the threads of a block between two barriers:
      each thread sees global and shared memory as it was at the last barrier (plus its
      own writes); the writes are merged at the next barrier (the last writer in the
      shuffled order wins a location written by several);
    - ``interleave``: the Python threads that emulate a block switch every microsecond.

    A race-free kernel computes the same under all of these. One whose threads or
    blocks read what others write without a barrier in between (which the simulator's
    one-at-a-time order otherwise hides, or shows only by chance) does not; the
    isolation shows it deterministically.
    """
    from tcomp.codegen import simulator_enabled

    if not simulator_enabled():
        yield
        return
    import functools
    import threading

    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi as sim_api
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray, FakeWithinKernelCUDAArray

    rng = np.random.default_rng(seed) if seed is not None else None

    class _Numpy:
        """numpy, with a shuffled ``ndindex`` and a poisoned ``empty``."""

        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def ndindex(*shape):
            points = list(np.ndindex(*shape))
            if rng is not None:
                rng.shuffle(points)
            return iter(points)

        @staticmethod
        def empty(shape, dtype=float, *args, **kwargs):
            return np.full(shape, poison_value(np.dtype(dtype)), dtype=dtype)

    orig_run = sim_kernel.BlockManager.run
    orig_shared_array = sim_api.FakeCUDAShared.array  # NOTE: restored on exit; never called through
    launch: dict = {}

    def run_threads_isolated(manager, grid_point, args, arrays):
        """BlockManager.run, with every thread on its own copy of memory between barriers."""
        memory = _ThreadMemory()
        globals_ = {n: memory.add(a) for n, a in enumerate(arrays) if a is not None}
        threads = []
        for block_point in sim_kernel.np.ndindex(*manager._block_dim):
            slot = len(threads)
            targs = list(args)
            for n, index in globals_.items():
                targs[n] = FakeWithinKernelCUDAArray(FakeCUDAArray(memory.copy_for(slot, index)))
            t = sim_kernel.BlockThread(functools.partial(manager._f, *targs), manager, grid_point,
                                       block_point, manager._debug)
            t.tcomp_memory, t.tcomp_slot = memory, slot
            threads.append(t)
        for t in threads:
            t.start()
        live, blocked = set(threads), set()
        while live:
            for t in live:
                if t.syncthreads_blocked:
                    blocked.add(t)
                elif t.exception:
                    for other in threads:
                        other.abort = True
                        other.syncthreads_blocked = False
                        other.syncthreads_event.set()
                    raise t.exception[0].with_traceback(t.exception[1])
            if live == blocked:  # every live thread waits at the barrier: the interval ends
                memory.merge()
                for t in blocked:
                    t.syncthreads_blocked = False
                    t.syncthreads_event.set()
                blocked = set()
            live = {t for t in live if t.is_alive()}
        for t in threads:
            if t.exception:
                raise t.exception[0].with_traceback(t.exception[1])
        memory.merge()

    def shared_array(self, shape, dtype, alignment=None):
        thread = threading.current_thread()
        memory = getattr(thread, "tcomp_memory", None)
        if memory is None or shape == 0:
            raise NotImplementedError("simulator_chaos(isolate_threads=True) isolates static shared arrays "
                                      "allocated by the threads of a simulated block only")
        from numba.cuda import types
        from numba.cuda.np import numpy_support

        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)  # as the simulator tells allocations apart
        if key not in memory.shared:
            memory.shared[key] = memory.add(np.full(shape, poison_value(np.dtype(dtype)), dtype=dtype))
        return memory.copy_for(thread.tcomp_slot, memory.shared[key])

    def run_block(self, grid_point, *args):
        fake = self._f.__globals__.get("cuda")
        allocations = getattr(getattr(fake, "shared", None), "_allocations", None)
        if isinstance(allocations, dict):
            allocations.clear()
        if not (isolate_blocks or isolate_threads):
            return orig_run(self, grid_point, *args)
        arrays = [_simulated_array(a) for a in args]
        if isolate_blocks:
            if launch.get("context") is not sim_kernel._kernel_context:  # the first block of a launch
                launch["context"] = sim_kernel._kernel_context
                launch["initial"] = [None if a is None else a.copy() for a in arrays]
            merged = [None if a is None else a.copy() for a in arrays]
            for a, first in zip(arrays, launch["initial"]):
                if a is not None:
                    a[...] = first
        try:
            if isolate_threads:
                return run_threads_isolated(self, grid_point, args, arrays)
            return orig_run(self, grid_point, *args)
        finally:
            if isolate_blocks:
                for a, first, m in zip(arrays, launch["initial"], merged):
                    if a is not None:
                        written = _bits(a) != _bits(first)
                        m[written] = a[written]
                        a[...] = m

    old_np = (sim_kernel.np, sim_api.np)
    old_switch = sys.getswitchinterval()
    sim_kernel.np = sim_api.np = _Numpy()
    sim_kernel.BlockManager.run = run_block
    if isolate_threads:
        # NOTE: only then: the simulator tells shared allocations apart by the line of
        # their caller, which a wrapper would make the same for all of them
        sim_api.FakeCUDAShared.array = shared_array
    if interleave:
        sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sim_kernel.np, sim_api.np = old_np
        sim_kernel.BlockManager.run = orig_run
        sim_api.FakeCUDAShared.array = orig_shared_array
        sys.setswitchinterval(old_switch)


class _ThreadMemory:
    """The memory of one simulated block under ``isolate_threads``: each array (a global
    argument or a shared allocation) as of the last barrier, and each thread's copy."""

    def __init__(self):
        self.bases: list = []  # the block's arrays
        self.start: list = []  # their values at the last barrier
        self.copies: dict = {}  # thread slot -> {array index: the thread's copy}
        self.shared: dict = {}  # allocation site -> array index

    def add(self, base: np.ndarray) -> int:
        self.bases.append(base)
        self.start.append(base.copy())
        return len(self.bases) - 1

    def copy_for(self, slot: int, index: int) -> np.ndarray:
        mine = self.copies.setdefault(slot, {})
        if index not in mine:
            mine[index] = self.start[index].copy()
        return mine[index]

    def merge(self) -> None:
        """The barrier: every thread's writes since the last one, into every copy."""
        for index, base in enumerate(self.bases):
            start = self.start[index]
            merged = start.copy()
            for slot in sorted(self.copies):
                mine = self.copies[slot].get(index)
                if mine is not None:
                    written = _bits(mine) != _bits(start)
                    merged[written] = mine[written]
            base[...] = merged
            self.start[index] = merged
            for mine in self.copies.values():
                if index in mine:
                    mine[index][...] = merged


def _simulated_array(arg):
    """The numpy array behind a kernel argument in the simulator, or None."""
    item = getattr(arg, "__dict__", {}).get("_item", arg)
    ary = getattr(item, "_ary", None)
    return ary if isinstance(ary, np.ndarray) else None


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else a


def poison_value(dtype: np.dtype):
    """What uninitialized storage of ``dtype`` holds under :func:`simulator_chaos`."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.nan
    if dtype == np.uint16:  # a bfloat16 / float16 on the device: a NaN of either
        return 0x7FC1
    if dtype == np.uint8:  # float8_e4m3: NaN
        return 0x7F
    if dtype.kind in "iu":
        return np.iinfo(dtype).min + 7 if dtype.kind == "i" else np.iinfo(dtype).max - 7
    return 0


# ---------------------------------------------------------------------- running and comparing


def launch_threads(program) -> int:
    """Threads the program launches in all (grid x block, summed over its kernels)."""
    return sum(int(np.prod(k.grid)) * int(np.prod(k.block)) for k in program.kernels)


def _output_array(tensor, avoid) -> np.ndarray:
    host = host_dtype(tensor.dtype)
    if tensor.dtype in ("int8", "int32"):
        present = set(np.unique(avoid).tolist())
        sentinel = next(v for v in [-77] + list(range(-128, 128)) if v not in present)
        return np.full(tensor.shape, sentinel, dtype=host)
    return np.full(tensor.shape, np.nan, dtype=np.float32).astype(host)


def run_module(mod, wl: FuzzWorkload, arrays, want) -> np.ndarray:
    """Call ``mod`` on ``arrays`` with a poisoned output and poisoned intermediates."""
    for arr in mod._intermediate_arrays().values():
        arr.copy_to_device(np.full(arr.shape, poison_value(arr.dtype), dtype=arr.dtype))
    out = _output_array(wl.out, want)
    mod(*arrays, out)
    return out


def matches(got, want, dtype: str, loose: bool, reduction_length: int = 1) -> bool:
    """``got`` is ``tc.evaluate``'s ``want``: exactly for integers (off by one in a few
    elements when ``loose``: a reassociated sum may round across a .5 boundary), within
    a float tolerance otherwise (wider when ``loose``)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if dtype in ("int8", "int32"):
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        if not loose:
            return not diff.any()
        return diff.max(initial=0) <= 1 and np.count_nonzero(diff) <= max(2, diff.size // 16)
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.isfinite(g[np.isfinite(w)]).all():
        return False
    rtol, atol = (1e-4, 1e-5 * reduction_length) if loose else (1e-5, 1e-5)
    if dtype in ("bfloat16", "float16", "float8_e4m3"):
        rtol, atol = 1e-2, 1e-2
    return bool(np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True))


def is_hidden_by_recomputation(err) -> bool:
    """Does this ``tc.IllegalScheduleError`` say that a later recomputation hides the
    violation (an epilogue placed inside a reduction loop: every wrong value is
    computed again, right, before anything reads it)?

    The polyhedral checker (``tcomp.poly.legality``) attaches the violation, whose
    ``hidden`` text is non-empty for this kind, and its message says "the final result
    happens to match"; older checkers only have the message.
    """
    violation = getattr(err, "violation", None)
    if violation is not None and hasattr(violation, "hidden"):
        return bool(violation.hidden)
    text = str(err).lower()
    return "happens to match" in text or "recomput" in text


class FuzzFailure(AssertionError):
    """A schedule that the checker or the code generator gets wrong."""


@dataclass(frozen=True)
class Outcome:
    """What one schedule did: ``category`` is legal, illegal, hidden (illegal, hidden by
    a later recomputation), rejected (a ``tc.TcompError`` from a primitive, the check
    or the build) or skipped (too many threads for the simulator)."""

    category: str
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.category}: {self.reason}" if self.reason else self.category


def evaluate_schedule(wl: FuzzWorkload, s, seed: int = 0, repro: str = "", known: bool = True) -> Outcome:
    """Check ``s``, build it, run it and compare with ``tc.evaluate``; return the
    :class:`Outcome` or raise :class:`FuzzFailure` (an exception that is not a
    ``tc.TcompError`` passes through). With ``known=False`` a case of a known bug
    (:data:`KNOWN_ISSUES`) fails too instead of counting as "known"."""
    rng = np.random.default_rng(seed)
    suffix = f"\n\nreproducer:\n{repro}" if repro else ""
    try:
        report = tc.check(s)
    except tc.IllegalScheduleError as err:
        return _illegal(wl, s, err, rng, seed, suffix, known)
    except TcompError as err:
        return Outcome("rejected", f"{type(err).__name__} from tc.check")
    try:
        mod = tc.build(s, check=False)
    except TcompError as err:
        return Outcome("rejected", f"{type(err).__name__} from tc.build (legal schedule)")
    if launch_threads(mod.program) > MAX_SIMULATED_THREADS and mod.simulator:
        return Outcome("skipped", "too many threads for the simulator")
    reassociated = bool(getattr(report, "reassociations", ()))
    arrays = wl.make_inputs(rng)
    want = tc.evaluate(wl.out, wl.feeds(arrays))
    with simulator_chaos(seed, isolate_blocks=True, isolate_threads=True):
        got = run_module(mod, wl, arrays, want)
    if not matches(got, want, wl.out.dtype, reassociated, wl.reduction_length):
        issue = known_issue("wrong result", wl, s, report, mod) if known else ""
        if issue:
            return Outcome("known", issue)
        raise FuzzFailure(
            f"{wl.name} {wl.shape}: tc.check says legal{' (reassociating)' if reassociated else ''}, "
            f"but the result differs from tc.evaluate\n{_diff(got, want)}\n\ncheck report:\n{report}"
            f"\n\ngenerated source: {mod.source_path}{suffix}")
    return Outcome("legal", "reassociates" if reassociated else "")


def _illegal(wl, s, err, rng, seed, suffix, known=True) -> Outcome:
    hidden = is_hidden_by_recomputation(err)
    kind = getattr(getattr(err, "violation", None), "kind", "illegal")
    try:
        mod = tc.build(s, check=False)
    except TcompError as build_err:
        return Outcome("hidden" if hidden else "illegal",
                       f"{kind}; lowering refuses it too ({type(build_err).__name__})")
    if launch_threads(mod.program) > MAX_SIMULATED_THREADS and mod.simulator:
        return Outcome("skipped", "too many threads for the simulator")
    differs, how = False, ""
    for attempt in range(ILLEGAL_RUNS):
        arrays = wl.make_inputs(rng)
        want = tc.evaluate(wl.out, wl.feeds(arrays))
        try:
            # the simulator's own order; then blocks and threads isolated; then blocks
            # isolated and threads interleaved
            with simulator_chaos(seed * 1000 + attempt, interleave=attempt == 2, isolate_blocks=attempt > 0,
                                 isolate_threads=attempt == 1):
                got = run_module(mod, wl, arrays, want)
        except TcompError:
            raise
        except Exception as run_err:  # noqa: BLE001 - the simulator's bounds check, for one
            differs, how = True, f"crashed when run ({type(run_err).__name__})"
            break
        if not matches(got, want, wl.out.dtype, True, wl.reduction_length):
            differs, how = True, "computes something else"
            break
    if not differs:
        issue = known_issue("false positive", wl, s, err, mod) if known else ""
        if issue:
            return Outcome("known", issue)
    if hidden:
        if differs:
            raise FuzzFailure(f"{wl.name} {wl.shape}: tc.check says the violation is hidden by a later "
                              f"recomputation, but built with check=False the result {how}\n\n{err}{suffix}")
        return Outcome("hidden", kind)
    if not differs:
        raise FuzzFailure(f"{wl.name} {wl.shape}: checker false positive: tc.check rejects the schedule, "
                          f"but built with check=False it matches tc.evaluate on {ILLEGAL_RUNS} random "
                          f"inputs (blocks and threads shuffled; blocks and threads isolated; threads interleaved)"
                          f"\n\n{err}{suffix}")
    return Outcome("illegal", f"{kind}; {how}")


# ---------------------------------------------------------------------- known bugs

#: Bugs the fuzzer found that are not fixed yet, each with an ``xfail(strict=True)`` test
#: in tests/test_fuzz_regressions.py. ``(name, situation, predicate)``: ``situation`` is
#: "false positive" (an illegal schedule whose result matched) or "wrong result" (a legal
#: one whose result differs); ``predicate(wl, s, err_or_report, mod)`` recognizes the
#: bug. The fuzzer counts a recognized case apart ("known") instead of failing; delete
#: the entry together with the xfail mark once the bug is fixed.
KNOWN_ISSUES: list = []


def known_issue(situation: str, wl, s, err_or_report, mod) -> str:
    """The name of the known bug that explains this outcome, or ''."""
    for name, where, predicate in KNOWN_ISSUES:
        if where != situation:
            continue
        try:
            if predicate(wl, s, err_or_report, mod):
                return name
        except Exception:  # noqa: BLE001 - a predicate that does not apply
            continue
    return ""


def _race_kernels(err, mod, among: str) -> list:
    """The kernels that write the tensor of a race violation between ``among`` ("thread"
    or "block"), [] when the violation is something else."""
    from tcomp.ir.stmt import Store
    from tcomp.ir.visitor import walk

    violation = getattr(err, "violation", None)
    tag = {"thread": "threadIdx", "block": "blockIdx"}[among]
    if violation is None or violation.kind != "race" or f"bound to {tag}" not in violation.dependence:
        return []
    return [k for k in mod.program.kernels
            if any(isinstance(n, Store) and n.buffer.name == violation.tensor for n in walk(k.body))]


def _race_without_a_second_thread(wl, s, err, mod) -> bool:
    threads = _race_kernels(err, mod, "thread")
    blocks = _race_kernels(err, mod, "block")
    return (bool(threads) and all(int(np.prod(k.block)) == 1 for k in threads)) or \
        (bool(blocks) and all(int(np.prod(k.grid)) == 1 for k in blocks))


def _race_on_identical_redundant_writes(wl, s, err, mod) -> bool:
    if not (_race_kernels(err, mod, "thread") or _race_kernels(err, mod, "block")):
        return False
    text = err.violation.counterexample
    return any(words in text for words in ("the same in every thread", "(every threadIdx", "(every blockIdx"))


def reduction_loops_reordered(stage) -> bool:
    """Are the reduction loops of ``stage`` nested in another order than the one their
    splits give (outer before inner): a reassociation?"""
    from tcomp.schedule.stage import Split

    roots = list(stage.root_axes) + list(stage.reduce_axes)

    def key(var):
        path = []
        while var not in roots:
            rel = next(r for r in stage.relations
                       if (var in (r.outer, r.inner) if isinstance(r, Split) else var is r.fused))
            if isinstance(rel, Split):
                path.append(0 if var is rel.outer else 1)
                var = rel.parent
            else:
                var = rel.outer
        return (roots.index(var), tuple(reversed(path)))

    loops = [v for v in stage.leaf_vars if v.kind == "reduce"]
    return [key(v) for v in loops] != sorted(key(v) for v in loops)


def _reassociated_reduction_read(wl, s, err, mod) -> bool:
    violation = getattr(err, "violation", None)
    if violation is None or violation.kind != "flow" or "reduction's result" not in violation.dependence:
        return False
    return reduction_loops_reordered(s[violation.producer])


KNOWN_ISSUES += [
    ("checker: a read of a reassociated reduction is refused (the last update executed is not the "
     "one of the largest k)", "false positive", _reassociated_reduction_read),
    ("checker: race between threads (blocks) reported in a kernel of one thread per block (one block)",
     "false positive", _race_without_a_second_thread),
    ("checker: race reported where every thread (block) writes the same value before reading it",
     "false positive", _race_on_identical_redundant_writes),
]


def _diff(got, want) -> str:
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind in "iu":
        bad = got.astype(np.int64) != want.astype(np.int64)
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~np.isclose(g, w, rtol=1e-5, atol=1e-5, equal_nan=True)
    n = int(np.count_nonzero(bad))
    if not n:
        return "(no element differs by more than 1e-5)"
    first = tuple(int(x) for x in np.argwhere(bad)[0])
    return (f"{n} of {bad.size} elements differ; first at {first}: got {got[first]!r}, "
            f"want {want[first]!r}")


# ---------------------------------------------------------------------- the property


@dataclass
class FuzzStats:
    """Counts of what the fuzzer drew, by category and reason."""

    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, outcome: Outcome) -> None:
        self.counts[(outcome.category, outcome.reason)] += 1

    def total(self, category: str | None = None) -> int:
        return sum(n for (c, _), n in self.counts.items() if category is None or c == category)

    def lines(self) -> list:
        if not self.counts:
            return []
        head = (f"schedule fuzzer: {self.total()} schedules in {self.seconds:.0f} s: "
                f"{self.total('legal')} legal, {self.total('illegal')} illegal, "
                f"{self.total('hidden')} illegal but hidden by a later recomputation, "
                f"{self.total('rejected')} cleanly rejected, {self.total('skipped')} skipped, "
                f"{self.total('known')} known bugs")
        out = [head]
        for category in ("legal", "illegal", "hidden", "rejected", "skipped", "known", "failed"):
            reasons = sorted(((r, n) for (c, r), n in self.counts.items() if c == category),
                             key=lambda rn: -rn[1])
            for reason, n in reasons:
                out.append(f"  {category:9s} {n:5d}  {reason or '-'}")
        return out


#: what the fuzzer drew in this process (``tests/fuzz/conftest.py`` prints it)
STATS = FuzzStats()


def fuzz_one(data, name: str, stats: FuzzStats | None = None) -> Outcome:
    """The property: draw a workload and a schedule, evaluate it, count the outcome.

    On any failure the reproducer (the schedule as Python) is attached with
    ``hypothesis.note`` and to the exception, so the shrunk example prints it.
    """
    import time

    from hypothesis import note

    stats = STATS if stats is None else stats
    t0 = time.perf_counter()
    wl = data.draw(workloads(name), label="workload")
    seed = data.draw(st.integers(0, 2**16), label="input seed")
    try:
        s, drawer, error = draw_schedule(data, wl)
    except Exception as err:
        if hasattr(err, "fuzz_repro"):
            note(err.fuzz_repro)
            stats.add(Outcome("failed", f"{type(err).__name__} from a primitive (not a tc.TcompError)"))
        stats.seconds += time.perf_counter() - t0
        raise
    try:
        if error is not None:
            outcome = Outcome("rejected", f"{type(error).__name__} from a primitive")
        else:
            repro = repro_source(wl, s, seed=seed)
            try:
                outcome = evaluate_schedule(wl, s, seed, repro)
            except FuzzFailure:  # its message holds the reproducer
                stats.add(Outcome("failed", "wrong result or checker false positive"))
                raise
            except Exception as err:  # not a TcompError: a bug
                note(repro)
                err.add_note(f"reproducer:\n{repro}")
                stats.add(Outcome("failed", f"{type(err).__name__} (not a tc.TcompError)"))
                raise
        stats.add(outcome)
        return outcome
    finally:
        stats.seconds += time.perf_counter() - t0


__all__ = ["FuzzFailure", "FuzzStats", "FuzzWorkload", "Outcome", "STATS", "ScheduleDrawer", "WORKLOADS",
           "draw_schedule", "evaluate_schedule", "fuzz_one", "is_hidden_by_recomputation", "matches",
           "repro_source", "simulator_chaos", "workloads"]
