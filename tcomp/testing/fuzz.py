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
memory as it was at the last barrier, as if all ran at once) and all threads of a
launch can take turns, preempted at random memory accesses, so that a schedule that
reads a value before it is written, or races between blocks or threads, computes a
visibly wrong result (:mod:`tcomp.testing.simulator_chaos`).

Bugs found and not fixed yet are listed in :data:`KNOWN_ISSUES`: the fuzzer counts a
case it recognizes apart ("known") instead of failing, and each has an
``xfail(strict=True)`` test in ``tests/test_fuzz_regressions.py``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from hypothesis import strategies as st

import tcomp as tc
from tcomp.dtypes import host_dtype
from tcomp.errors import TcompError
from tcomp.testing import algorithms
from tcomp.testing.simulator_chaos import poison_value, simulator_chaos

#: launches larger than this many threads (grid x block, summed over kernels) are not
#: run in the simulator (about 4,000 threads a second); counted as skipped
MAX_SIMULATED_THREADS = 4096

#: how many random inputs an illegal schedule gets to show a wrong result: the first run
#: in the simulator's (shuffled) order, the second isolated, the others preempted
ILLEGAL_RUNS = 5


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
    A, W, C, Y, Q = algorithms.matmul_silu_quant(M, N, K, scale)
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
    A, W, C, Cb, Y, Q = algorithms.ffn_bf16(M, N, K, scale)
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
              "reverse_compute_at", "compute_inline", "compute_root", "set_scope", "storage_order", "storage_pad",
              "storage_layout", "double_buffer", "pipeline", "tensorize", "cache_read", "cache_write", "rfactor")


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
                                                     "tensorize",
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
        # NOTE: tc.check lowers and generates code too: a schedule it calls legal must build
        raise FuzzFailure(f"{wl.name} {wl.shape}: tc.check says legal, but tc.build refuses it: "
                          f"{type(err).__name__}: {err}{suffix}") from err
    if launch_threads(mod.program) > MAX_SIMULATED_THREADS and mod.simulator:
        return Outcome("skipped", "too many threads for the simulator")
    reassociated = bool(getattr(report, "reassociations", ()))
    arrays = wl.make_inputs(rng)
    want = tc.evaluate(wl.out, wl.feeds(arrays))
    # isolated (a read of what another thread or block writes), then preempted (a
    # read-modify-write that several repeat)
    for how in ("isolated", "preempted"):
        chaos = {"isolate_blocks": True, "isolate_threads": True} if how == "isolated" else {"preempt": True}
        with simulator_chaos(seed, **chaos):
            got = run_module(mod, wl, arrays, want)
        if matches(got, want, wl.out.dtype, reassociated, wl.reduction_length):
            continue
        issue = known_issue("wrong result", wl, s, report, mod) if known else ""
        if issue:
            return Outcome("known", issue)
        raise FuzzFailure(
            f"{wl.name} {wl.shape}: tc.check says legal{' (reassociating)' if reassociated else ''}, "
            f"but the result differs from tc.evaluate (blocks and threads {how})\n{_diff(got, want)}"
            f"\n\ncheck report:\n{report}\n\ngenerated source: {mod.source_path}{suffix}")
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
            # the simulator's own order (shuffled); then blocks and threads isolated; then
            # every thread of the launch preempted at random memory accesses (a lost update
            # may change a quantized result by one only: more than one interleaving)
            with simulator_chaos(seed * 1000 + attempt, isolate_blocks=attempt == 1,
                                 isolate_threads=attempt == 1, preempt=attempt >= 2):
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
                          f"inputs (blocks and threads shuffled; blocks and threads isolated; threads "
                          f"preempted, {ILLEGAL_RUNS - 2} times)"
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


def _race_in_a_kernel_with_barriers(wl, s, err, mod) -> bool:
    """A race reported on a tensor in device memory, between stages of a kernel that has
    barriers: the race check does not count a barrier that lowering placed for another
    buffer (a shared tile's fill) even where it orders the two accesses
    (tests/test_fuzz_regressions.py, the xfail test of this issue)."""
    from ..ir.stmt import Barrier
    from ..ir.visitor import walk

    violation = getattr(err, "violation", None)
    if violation is None or violation.kind != "race":
        return False
    for kernel in mod.program.kernels:
        names = {b.name for b in kernel.params} | {b.name for b in mod.program.intermediates}
        if violation.tensor in names and any(isinstance(n, Barrier) for n in walk(kernel.body)):
            return True
    return False


KNOWN_ISSUES.append(("race check blind to another buffer's barrier", "false positive",
                     _race_in_a_kernel_with_barriers))


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
