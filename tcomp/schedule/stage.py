"""A stage: the schedule of one compute, and the primitives that change it.

A stage starts with one loop per axis of its compute (spatial axes, then reduce
axes). ``split``, ``tile`` and ``fuse`` replace loops by new ones (recorded as
relations, so every loop variable remains an expression of the original axes);
``reorder`` permutes them; ``compute_at``/``reverse_compute_at``/``compute_inline``/
``compute_root`` decide where the stage is computed; ``bind``, ``unroll`` and
``vectorize`` say how a loop runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..call_site import user_call_site
from ..errors import ScheduleError
from ..ir.stmt import ACROSS_THREADS, BLOCK_TAGS, THREAD_TAGS
from ..lang.tensor import IterVar
from ..target.instructions import WARP_INSTRUCTIONS, instruction_family
from .trace import TraceEntry


def tensorize_kind(intrinsic: str) -> str:
    """The loop kind that marks a tensorized loop: ``tensorize`` for mma.sync,
    ``tensorize.wgmma_m64n{N}k16`` for wgmma."""
    return "tensorize" if intrinsic in WARP_INSTRUCTIONS else f"tensorize.{intrinsic}"


@dataclass(frozen=True)
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int


@dataclass(frozen=True)
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


@dataclass(frozen=True)
class Attach:
    """Where a stage is computed: its own kernel (root), inside another stage's loop
    (at: producer placed in a consumer; reverse_at: consumer placed in a producer),
    or substituted into its consumers (inline)."""

    kind: str  # "root" | "inline" | "at" | "reverse_at"
    stage: "Stage | None" = None
    axis: IterVar | None = None
    site: object = None


SCOPES = ("global", "shared", "local")
#: what may fill a pipeline's ring (``Stage.pipeline``)
PIPELINE_COPIES = ("cp.async", "tma")


def primitive(method):
    """Record a call in the schedule's trace and prefix errors with the call and its site."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        sched = self.schedule if hasattr(self, "schedule") else self
        site = user_call_site()
        sched._depth += 1
        try:
            result = method(self, *args, **kwargs)
        except ScheduleError as err:
            if sched._depth == 1 and not getattr(err, "_located", False):
                where = f"s[{self.name!r}]" if hasattr(self, "schedule") else "s"
                shown = ", ".join([_show(a) for a in args] + [f"{k}={_show(v)}" for k, v in kwargs.items()])
                err = type(err)(f"{where}.{method.__name__}({shown}) at {site}: {err}")
                err._located = True
                raise err from None
            raise
        finally:
            sched._depth -= 1
        if sched._depth == 0:
            unpack = isinstance(result, tuple)
            results = result if unpack else (result,)
            sched.trace.append(TraceEntry(self, method.__name__, args, results, site,
                                          tuple(kwargs.items()), unpack))
        return result

    return wrapper


def _show(value) -> str:
    if isinstance(value, IterVar):
        return value.name
    if hasattr(value, "name") and hasattr(value, "schedule"):
        return f"s[{value.name!r}]"
    if hasattr(value, "name") and hasattr(value, "shape"):
        return value.name
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)


def _not_a_16_bit_product(op) -> str:
    """Why ``op`` is not ``sum(cast(a, float32) * cast(b, float32))`` with ``a`` and ``b``
    of one 16-bit float type and a float32 result; "" when it is."""
    from ..ir.expr import Binary, Cast

    red = op.reduction
    if red is None or red.combiner != "sum":
        return "is not a sum reduction"
    if op.output.dtype != "float32":
        return f"accumulates in {op.output.dtype}, not float32"
    source = red.source
    if not (isinstance(source, Binary) and source.op == "*"):
        return "does not reduce a product"
    dtypes = [f.value.dtype if isinstance(f, Cast) else f.dtype for f in (source.a, source.b)]
    if any(d not in ("bfloat16", "float16") for d in dtypes) or dtypes[0] != dtypes[1]:
        return f"multiplies {' and '.join(dtypes)} values"
    return ""


class Stage:
    """The schedule of one compute tensor. Obtain it as ``s[tensor]``."""

    def __init__(self, schedule, tensor):
        self.schedule = schedule
        self.tensor = tensor
        self.op = tensor.op
        self.root_axes: tuple = tuple(self.op.axis)
        self.reduce_axes: tuple = tuple(self.op.reduce_axis)
        self.relations: list = []
        self.leaf_vars: list = list(self.root_axes) + list(self.reduce_axes)
        self.attach = Attach("root")
        self.scope: str | None = None
        self.bindings: dict = {}
        self.annotations: dict = {}
        self.is_cache = False
        self.storage_axes: tuple | None = None  # dimension order of the stage's buffer
        self.storage_padding: dict = {}  # root axis -> unused elements after its extent
        self.storage_block_shape: tuple = ()  # (rows, cols) blocks of the last two dimensions
        self.storage_swizzled = False  # blocks of 8 rows x 128 bytes, chunks XOR-permuted
        self.double_buffered = False
        self.pipeline_stages: int | None = None  # s.pipeline: tiles in the ring
        self.pipeline_reader_lag = 0  # s.pipeline: iterations a slot's readers may run on
        self.pipeline_copy = "cp.async"  # s.pipeline: what fills the ring's slots
        self.pipeline_specialized = False  # s.pipeline: a producer warpgroup fills them
        self.rfactor_parts: int | None = None  # s.rfactor: the partial results this stage combines

    # ------------------------------------------------------------------ inspection

    @property
    def name(self) -> str:
        return self.tensor.name

    @property
    def axis(self) -> tuple:
        """The spatial loop handles, one per dimension of the tensor."""
        return self.root_axes

    @property
    def reduce_axis(self) -> tuple:
        """The reduction loop handles."""
        return self.reduce_axes

    def all_vars(self) -> list:
        out = list(self.root_axes) + list(self.reduce_axes)
        for rel in self.relations:
            out += [rel.outer, rel.inner] if isinstance(rel, Split) else [rel.fused]
        return out

    def __repr__(self) -> str:
        return f"Stage({self.name})"

    def _leaf(self, axis, what: str = "axis") -> IterVar:
        if not isinstance(axis, IterVar):
            raise ScheduleError(f"{what} must be a loop handle of stage {self.name}, got {axis!r}")
        if axis in self.leaf_vars:
            return axis
        for st in self.schedule.stages:
            if st is not self and axis in st.all_vars():
                raise ScheduleError(f"{axis.name} is a loop of stage {st.name}, not of {self.name}")
        if axis in self.all_vars():
            raise ScheduleError(f"loop {axis.name} of {self.name} was already split or fused; "
                                f"its loops now are {', '.join(v.name for v in self.leaf_vars)}")
        raise ScheduleError(f"{axis.name} is not a loop of stage {self.name}")

    def _check_unmarked(self, axis, what: str) -> None:
        """A loop already bound or annotated would lose that mark to the new loops."""
        mark = self.bindings.get(axis) or self.annotations.get(axis)
        if mark:
            raise ScheduleError(f"loop {axis.name} is already {'bound to ' if axis in self.bindings else ''}{mark}; "
                                f"{what} it before marking it (the new loops would not be {mark})")

    def _fresh_name(self, base: str) -> str:
        taken = {v.name for v in self.all_vars()}
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}{n}"
        return name

    # ------------------------------------------------------------------ loop primitives

    @primitive
    def split(self, axis, factor):
        """Split loop ``axis`` into ``outer`` and ``inner`` with ``inner`` of extent ``factor``.

        Before::   for i in range(N): body(i)
        After::    for i_o in range(ceil(N / factor)):
                       for i_i in range(factor):
                           if i_o * factor + i_i < N: body(i_o * factor + i_i)
        The guard appears only when ``factor`` does not divide the extent.
        """
        axis = self._leaf(axis)
        if not isinstance(factor, int) or isinstance(factor, bool) or factor <= 0:
            raise ScheduleError(f"split factor must be a positive int, got {factor!r}")
        self._check_unmarked(axis, "split")
        outer = IterVar(self._fresh_name(f"{axis.name}_o"), "int32", -(-axis.extent // factor), axis.kind)
        inner = IterVar(self._fresh_name(f"{axis.name}_i"), "int32", min(factor, axis.extent), axis.kind)
        self.relations.append(Split(axis, outer, inner, factor))
        pos = self.leaf_vars.index(axis)
        self.leaf_vars[pos:pos + 1] = [outer, inner]
        return outer, inner

    @primitive
    def tile(self, x, y, x_factor, y_factor):
        """Split ``x`` and ``y`` and order the loops ``x_o, y_o, x_i, y_i``.

        Before::   for i: for j: body
        After::    for i_o: for j_o: for i_i in range(x_factor): for j_i in range(y_factor): body
        """
        x, y = self._leaf(x, "x"), self._leaf(y, "y")
        if x is y:
            raise ScheduleError("tile needs two different loops")
        xo, xi = self.split(x, x_factor)
        yo, yi = self.split(y, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    @primitive
    def reorder(self, *axes):
        """Put the given loops in the given order, in the positions they occupy now.

        Before::   for a: for b: for c: body      (reorder(c, a))
        After::    for c: for b: for a: body
        """
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        leaves = [self._leaf(a) for a in axes]
        if len(set(leaves)) != len(leaves):
            raise ScheduleError("reorder lists a loop more than once")
        positions = sorted(self.leaf_vars.index(a) for a in leaves)
        for pos, var in zip(positions, leaves):
            self.leaf_vars[pos] = var

    @primitive
    def fuse(self, outer, inner):
        """Fuse two adjacent loops into one of extent ``extent(outer) * extent(inner)``.

        Before::   for a in range(A): for b in range(B): body(a, b)
        After::    for ab in range(A * B): body(ab // B, ab % B)
        """
        outer, inner = self._leaf(outer, "outer"), self._leaf(inner, "inner")
        self._check_unmarked(outer, "fuse")
        self._check_unmarked(inner, "fuse")
        po, pi = self.leaf_vars.index(outer), self.leaf_vars.index(inner)
        if pi != po + 1:
            raise ScheduleError(f"fuse needs adjacent loops with {outer.name} directly outside "
                                f"{inner.name}; the loop order is {', '.join(v.name for v in self.leaf_vars)}")
        if outer.kind != inner.kind:
            raise ScheduleError("cannot fuse a spatial loop with a reduction loop")
        fused = IterVar(self._fresh_name(f"{outer.name}_{inner.name}_f"), "int32",
                        outer.extent * inner.extent, outer.kind)
        self.relations.append(Fuse(outer, inner, fused))
        self.leaf_vars[po:pi + 1] = [fused]
        return fused

    @primitive
    def bind(self, axis, thread_tag: str):
        """Map a loop onto the GPU's blocks or threads (``blockIdx.x`` ... ``threadIdx.z``).

        The loop is not executed as a loop any more: its variable is the block or
        thread index, and the launch gets at least its extent of blocks/threads.
        """
        axis = self._leaf(axis)
        if thread_tag not in BLOCK_TAGS + THREAD_TAGS:
            raise ScheduleError(f"unknown thread tag {thread_tag!r}; use one of "
                                f"{', '.join(BLOCK_TAGS + THREAD_TAGS)}")
        if axis in self.bindings:
            raise ScheduleError(f"loop {axis.name} is already bound to {self.bindings[axis]}")
        for other, tag in self.bindings.items():
            if tag == thread_tag:
                raise ScheduleError(f"{thread_tag} is already bound to loop {other.name} of {self.name}")
        if axis in self.annotations:
            raise ScheduleError(f"loop {axis.name} is marked {self.annotations[axis]} and cannot be bound")
        self.bindings[axis] = thread_tag

    def _annotate(self, axis, kind: str):
        axis = self._leaf(axis)
        if axis in self.bindings:
            raise ScheduleError(f"loop {axis.name} is bound to {self.bindings[axis]} and cannot be {kind}ed")
        self.annotations[axis] = kind

    @primitive
    def unroll(self, axis):
        """Unroll loop ``axis`` completely in the generated code (its extent must be a constant)."""
        self._annotate(axis, "unroll")

    @primitive
    def vectorize(self, axis):
        """Mark the innermost loop ``axis`` for vector code: unrolled, with contiguous
        accesses left side by side so the compiler can use 64/128-bit memory operations."""
        self._annotate(axis, "vectorize")

    @primitive
    def reduce_across_threads(self, axis):
        """Run reduction loop ``axis`` by the threads of the block together: thread ``t``
        adds the loop's terms ``t``, ``t + X``, ... (``X`` threads on ``threadIdx.x``),
        then the threads combine what they hold in log steps, through warp shuffles and,
        past one warp, the warps' totals in shared memory after a barrier; every thread
        ends with the whole reduction (``tcomp.lower.thread_reduction``).

        The stage must be ``local`` (each thread's own copy of the total) and placed
        where every thread of the block runs it the same way: inside no loop bound to
        ``threadIdx.x``. Its terms may read what other threads wrote (a shared buffer
        after a barrier): ``tc.check`` checks the schedule as if each thread ran the
        loop alone, which computes the same total. The order is a tree, fixed (the same
        bits every run) but not the algorithm's; ``tc.check`` reports the reassociation.
        A statistic's 1024 slices on 1024 threads take 10 shuffle steps and one barrier
        this way, against a chain of 1024 (or two of 32) shared loads."""
        leaf = self._leaf(axis)
        if leaf.kind != "reduce":
            raise ScheduleError(f"reduce_across_threads takes a reduction loop; {leaf.name} is a spatial loop of "
                                f"{self.name}")
        self._annotate(leaf, ACROSS_THREADS)

    @primitive
    def tensorize(self, axis, intrinsic: str):
        """Compute the loop nest below ``axis`` (``axis`` included) with one warp-wide
        matrix instruction. ``"mma_m16n8k16"``: ``mma.sync.m16n8k16`` with bfloat16 or
        float16 operands and float32 accumulators.

        The stage must be a sum of products of two 16-bit floats (cast to float32) into
        float32. Lowering then checks the nest: ``axis`` is a reduction loop of 16 with
        two loops of 2 inside it (or any order of the three), no guard, and each of the
        32 lanes on ``threadIdx.x`` computing the accumulator elements of its place in
        the instruction's layout, row ``8 * r_row + lane // 4`` and column
        ``2 * (lane % 4) + r_col`` of a 16x8 tile (``r_row``, ``r_col`` the two loops of
        2)::

            rh, g = s[C].split(ii, 8); t, rl = s[C].split(jj, 2)   # a 16 x 8 warp tile
            s[C].reorder(..., g, t, rh, rl); s[C].bind(s[C].fuse(g, t), "threadIdx.x")
            s[CL].compute_at(s[C], lane); ko, ki = s[CL].split(k, 16)
            s[CL].tensorize(ki, "mma_m16n8k16")

        ``"wgmma_m64n<N>k16"`` (Hopper): one ``wgmma.mma_async`` of a warpgroup, 128
        threads on ``threadIdx.x``, multiplies a 64 x 16 tile of A by a 16 x N tile of B,
        both in shared tiles stored in 8 x 8 blocks (``storage_blocks(8, 8)``; A's k and
        B's n contiguous in a block row). Below ``axis`` (k of 16) the nest holds the
        thread's N / 2 accumulators, thread ``t`` the rows ``16 * (t // 32) + (t % 32) // 4
        + 8 * rh`` and columns ``8 * nj + 2 * (t % 4) + c`` (rh, c in 0, 1; nj < N / 8) of a
        64 x N tile; lowering fences the chain of instructions of a k step and waits for it
        (``tcomp.lower.warpgroup``). :func:`tcomp.search.tiling.wgmma_tiles` writes such a
        schedule.

        The instruction adds a k step's 16 products in its own order; ``tc.check``
        reports the reassociation."""
        if instruction_family(intrinsic) is None:
            raise ScheduleError(f"unknown tensor intrinsic {intrinsic!r}; available: "
                                f"{', '.join(map(repr, WARP_INSTRUCTIONS))} and 'wgmma_m64n<N>k16' for N a multiple "
                                f"of 8 from 8 to 256")
        problem = _not_a_16_bit_product(self.op)
        if problem:
            raise ScheduleError(f"{intrinsic} computes a float32 sum of products of two bfloat16 or float16 "
                                f"values; {self.name} {problem}")
        leaf = self._leaf(axis)
        if leaf.kind != "reduce":
            raise ScheduleError(f"tensorize takes the reduction loop of the instruction's k (16); "
                                f"{leaf.name} is a spatial loop of {self.name}")
        self._annotate(leaf, tensorize_kind(intrinsic))

    # ------------------------------------------------------------------ placement primitives

    def _check_placeable(self):
        if self.tensor in self.schedule.outputs:
            raise ScheduleError(f"{self.name} is an output of the schedule; it is always computed at root")

    @primitive
    def compute_at(self, consumer, axis):
        """Compute this stage inside loop ``axis`` of ``consumer``: for each iteration of
        that loop, the region of this tensor that the iteration needs is computed first,
        into storage local to the loop.

        Before::   for i: P[i] = f(i)          for io: for ii: C[..] = g(P[io*4 + ii])
        After::    for io: (for ii: P_local[ii] = f(io*4 + ii)); for ii: C[..] = g(P_local[ii])
        """
        self._check_placeable()
        consumer = self.schedule._stage_arg(consumer, "consumer")
        if consumer is self:
            raise ScheduleError("a stage cannot be computed at one of its own loops")
        axis = consumer._leaf(axis)
        if axis in consumer.reduce_axes or axis.kind == "reduce":
            pass  # legal or not is the legality checker's call; lowering supports it
        self.attach = Attach("at", consumer, axis, user_call_site())

    @primitive
    def reverse_compute_at(self, producer, axis):
        """Compute this (consumer) stage inside loop ``axis`` of ``producer``, right after
        the producer has computed that iteration's part: epilogue fusion.

        Before::   for i: P[i] = f(i)          for i: C[i] = g(P[i])
        After::    for io: (for ii: P[io*4+ii] = f(..)); (for ii: C[io*4+ii] = g(P[io*4+ii]))
        """
        producer = self.schedule._stage_arg(producer, "producer")
        if producer is self:
            raise ScheduleError("a stage cannot be computed at one of its own loops")
        axis = producer._leaf(axis)
        self.attach = Attach("reverse_at", producer, axis, user_call_site())

    @primitive
    def compute_inline(self):
        """Substitute this stage's expression into every use; it gets no storage.
        Casts inside it stay where they are: inlining never removes a rounding point."""
        self._check_placeable()
        if self.op.reduction is not None:
            raise ScheduleError(f"{self.name} is a reduction and cannot be inlined; use compute_at")
        self.attach = Attach("inline", site=user_call_site())

    @primitive
    def compute_root(self):
        """Compute this stage in a kernel of its own, into a global intermediate buffer."""
        self.attach = Attach("root", site=user_call_site())

    @primitive
    def storage_order(self, *axes):
        """Lay out this stage's buffer with its dimensions in the given order of its axes
        (the last varies fastest). ``storage_order(k, i)`` on a cached 128x8 tile of A
        stores it transposed, so that a thread's 8 values of one k are contiguous.

        Before::   A_shared[i * 8 + k]
        After::    A_shared[k * 128 + i]
        """
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        if sorted(id(a) for a in axes) != sorted(id(a) for a in self.root_axes):
            names = ", ".join(a.name for a in self.root_axes)
            raise ScheduleError(f"storage_order needs each of {self.name}'s axes ({names}) exactly once")
        self.storage_axes = tuple(axes)

    @primitive
    def storage_pad(self, axis, elements: int):
        """Give this stage's buffer ``elements`` unused elements after each run of
        ``axis`` (its dimension grows by that many), so that the dimensions outside it get
        a stride that spreads consecutive rows over the shared-memory banks: a 64x32 tile
        read down a column by a warp hits one bank 32 times; padded by 1 (or by 4, to keep
        16-byte vectors aligned) it hits 32 different banks. What is computed is unchanged;
        ``tc.lower`` shows the padded buffer and ``tc.estimate`` its bank conflicts.

        Before::   A_shared = alloc shared float32[64x32];  A_shared[i * 32 + k]
        After::    A_shared = alloc shared float32[64x36];  A_shared[i * 36 + k]   (storage_pad(k, 4))
        """
        if axis not in self.root_axes:
            names = ", ".join(a.name for a in self.root_axes)
            raise ScheduleError(f"storage_pad pads a dimension of {self.name}'s buffer: one of its axes "
                                f"({names}), not {getattr(axis, 'name', axis)!r}")
        if not isinstance(elements, int) or isinstance(elements, bool) or elements < 0:
            raise ScheduleError(f"storage_pad of {self.name}: elements must be a non-negative integer, "
                                f"not {elements!r}")
        self.storage_padding = {**self.storage_padding, axis: elements}

    @primitive
    def storage_blocks(self, rows: int, cols: int):
        """Store this stage's buffer as a row-major grid of ``rows`` x ``cols`` blocks of
        its last two dimensions, each block contiguous and row-major inside. With 8 x 8
        blocks of 16-bit values every block is one of wgmma's core matrices (128 bytes),
        which is how that instruction reads a shared operand; a warp reading such a block
        touches every bank once. What is computed is unchanged; ``tc.lower`` shows the
        blocked buffer. The two dimensions must be multiples of the block's.

        Before::   A_shared = alloc shared bfloat16[128x64];  A_shared[i * 64 + k]
        After::    A_shared = alloc shared bfloat16[128x64] in 8x8 blocks;
                   A_shared[i // 8 * 512 + k // 8 * 64 + i % 8 * 8 + k % 8]   (storage_blocks(8, 8))
        """
        for name, value in (("rows", rows), ("cols", cols)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ScheduleError(f"storage_blocks of {self.name}: {name} must be a positive integer, not {value!r}")
        if len(self.root_axes) < 2:
            raise ScheduleError(f"storage_blocks stores the last two dimensions of a buffer in blocks; {self.name} "
                                f"has {len(self.root_axes)}")
        self.storage_block_shape = (rows, cols)
        self.storage_swizzled = False

    @primitive
    def storage_swizzle(self, panels: bool = False):
        """Store this stage's buffer in the 128-byte swizzle that wgmma (and TMA) read: its
        last two dimensions as a row-major grid of blocks of 8 rows x 128 bytes (1024
        bytes, 64 16-bit values a row), and in each row ``r`` the 16-byte chunk ``c``
        stored at chunk ``c ^ (r % 8)``. Eight threads that store the eight chunks of one
        row, or read one chunk of each of eight rows, then touch every bank once. With
        ``panels`` the blocks are as tall as the buffer: each 128-byte column of it (a
        panel) is contiguous, panel after panel, which is how TMA boxes of 128-byte rows
        land (``pipeline(copy="tma")``). What is computed is unchanged; ``tc.lower``
        shows the swizzled index (``^``). The last dimension must be a multiple of 128
        bytes and the one before of 8.

        Before::   A_shared[i * 64 + k]
        After::    A_shared[i // 8 * 512 + i % 8 * 64 + (k // 8 ^ i % 8) * 8 + k % 8]
        """
        if len(self.root_axes) < 2:
            raise ScheduleError(f"storage_swizzle lays out the last two dimensions of a buffer; {self.name} "
                                f"has {len(self.root_axes)}")
        if not isinstance(panels, bool):
            raise ScheduleError(f"storage_swizzle of {self.name}: panels must be True or False, not {panels!r}")
        from ..dtypes import itemsize

        # NOTE: None rows: the buffer's height, known once bound inference has its extents
        self.storage_block_shape = (None if panels else 8, 128 // itemsize(self.tensor.dtype))
        self.storage_swizzled = True

    @primitive
    def double_buffer(self):
        """Load the next iteration's tile while the current one is computed on. For a
        shared tile computed at a serial loop (the k step of a matmul), each thread
        stages its share of the next tile in registers during the computation and
        commits it to shared memory at the start of the next iteration. The fill's
        loops must be bound to threads, unrolled or vectorized.

        Before::   for ko: S = A[ko]; sync; compute(S); sync
        After::    R = A[0]
                   for ko: sync; S = R; sync; if ko + 1 < n: R = A[ko + 1]; compute(S)
        """
        self._check_placeable()
        self._check_not_overlapped(self.pipeline_stages is not None, "pipelined")
        self.double_buffered = True

    @primitive
    def pipeline(self, stages: int = 3, reader_lag: int = 0, copy: str = "cp.async", specialized: bool = False):
        """Keep ``stages - 1`` tiles in flight: for a shared tile computed at a serial loop
        (the k step of a matmul), a ring of ``stages`` tiles in shared memory, filled by
        asynchronous copies (cp.async) issued ``stages - 1`` iterations ahead, so that the
        loads of later k steps overlap the computation of this one without passing
        through registers. The fill must copy elements of a global tensor unchanged
        (4-byte elements; vectorized fills copy 8 or 16 bytes at once).

        Before::   for ko: S = A[ko]; sync; compute(S); sync
        After::    issue S[0] = A[0] ... S[n-2] = A[n-2]     (n = stages, one group each)
                   for ko: sync; wait(tile ko); sync
                           if ko + n - 1 < extent: issue S[(ko + n - 1) % n] = A[ko + n - 1]
                           compute(S[ko % n])

        ``reader_lag``: the readers of a slot are asynchronous and may still read it
        ``reader_lag`` iterations later (wgmma chains left in flight: lowering then waits
        for all but that many at the end of each iteration, ``tcomp.lower.warpgroup``).
        The copies are then issued ``stages - 1 - reader_lag`` iterations ahead, into the
        slot read ``reader_lag + 1`` iterations before; it needs ``stages >= reader_lag + 2``.

        ``copy``: ``"cp.async"`` (every thread copies its share, 4 to 16 bytes a copy) or
        ``"tma"`` (Hopper's tensor memory accelerator: the block's first thread copies
        the whole tile in boxes of 128-byte rows, and every thread waits for the slot's
        mbarrier instead of its own copies; ``tcomp.lower.tensor_copies`` says which
        tiles it takes: a 2-D tensor's box, copied unchanged into a tile in the 128-byte
        swizzle whose 128-byte columns are contiguous, ``storage_swizzle(panels=True)``).

        ``specialized`` (TMA only): a warpgroup of its own produces the tiles. The block gets
        one more warpgroup, whose first thread copies every tile as soon as its slot is
        free; the others (the consumers) wait for a slot's tile on its "full" mbarrier and
        release it on its "empty" one once their reads of it are retired, with no block
        barrier in the loop (``tcomp.lower.warp_roles``). The tiles' loop must be inside
        loops bound to blocks and threads only, the block's threads warpgroups of 128 on
        ``threadIdx.x`` (the wgmma tilings).
        """
        self._check_placeable()
        if not isinstance(stages, int) or isinstance(stages, bool) or not 2 <= stages <= 8:
            raise ScheduleError(f"pipeline of {self.name}: stages must be an integer from 2 to 8 "
                                f"(tiles in the ring), not {stages!r}")
        if not isinstance(reader_lag, int) or isinstance(reader_lag, bool) or not 0 <= reader_lag <= stages - 2:
            raise ScheduleError(f"pipeline of {self.name}: reader_lag must be an integer from 0 to stages - 2 = "
                                f"{stages - 2} (at least one tile must be in flight), not {reader_lag!r}")
        if copy not in PIPELINE_COPIES:
            raise ScheduleError(f"pipeline of {self.name}: copy must be one of {', '.join(map(repr, PIPELINE_COPIES))}, "
                                f"not {copy!r}")
        if specialized not in (False, True) or (specialized and copy != "tma"):
            raise ScheduleError(f"pipeline of {self.name}: specialized must be True or False, and True only with "
                                f"copy=\"tma\" (a producer warpgroup issues TMA copies); got specialized={specialized!r}, "
                                f"copy={copy!r}")
        self._check_not_overlapped(self.double_buffered, "double buffered")
        self.pipeline_stages = stages
        self.pipeline_reader_lag = reader_lag
        self.pipeline_copy = copy
        self.pipeline_specialized = bool(specialized)

    def _check_not_overlapped(self, already: bool, how: str) -> None:
        if already:
            raise ScheduleError(f"{self.name} is {how} already; double_buffer and pipeline are two ways of "
                                "overlapping its loads, choose one")

    @primitive
    def set_scope(self, scope: str):
        """Storage of this stage's buffer when it is computed at another stage's loop:
        ``"local"`` (registers, per thread) or ``"shared"`` (one copy per block)."""
        if scope not in SCOPES:
            raise ScheduleError(f"unknown storage scope {scope!r}; use one of {', '.join(SCOPES)}")
        self.scope = scope
