"""Row reductions that are not matrix products, a block per row, its threads on
interleaved slices of the row, the slices combined through shared memory:

- :class:`RowKernel` (``row_kernel``): a row operator in one kernel, its statistics and
  their consumers (softmax, RMSNorm, LayerNorm, a per-row quantization scale), through
  :func:`rows_in_blocks`, which hand schedules call too;
- :class:`RowReduction` (``row_reduction``): a row reduction alone, in a kernel of its own.
"""

from __future__ import annotations

from ...dtypes import itemsize
from ...errors import TcompError
from ...target import DEFAULT_TARGET
from ..fusion.row import row_shape
from ..kernels import INLINE, ROW
from .base import Rule
from .products import product_stage


def rows_in_blocks(s, out, source: str, readers: list, statistics: list, inline: tuple = (),
                   threads: int | None = 64, vector: int = 8, slices: int | None = None,
                   combine: str = "one_thread", stage_row: bool = True, shared_stages: tuple = (),
                   rows: int = 1, vector_slices: bool | None = False) -> None:
    """``out`` (rows x N) in one kernel, a block of ``threads`` per row (64 by default: a
    block's phases run one after another, and the other rows an SM holds hide them, so
    small blocks are faster; 1.6x over 256 threads for RMSNorm at 7239 x 4096 on an H100);
    ``threads=None`` takes :func:`staged_row_threads` (what measured fastest for
    ``combine``) where the row is staged, 64 where it is not, halved down to 32 while a
    row holds fewer than ``threads * vector`` elements (then, for a tree, ``vector``
    halved until a warp's lanes each get elements).
    With ``rows`` > 1 a block takes that many rows, ``threads`` threads each (``threadIdx.y``
    the row): a warp per row for short rows, without 32-thread blocks' limit of half the
    SM's threads.

    1. The row of ``source`` (the tensor the row operator reads) is copied once into
       shared memory, ``vector`` elements per thread and copy, for the stages ``readers``
       that read it. With ``stage_row=False`` they read it from device memory instead,
       each pass after the first finding the row in the L2 (no shared row: more rows
       in flight per SM, and a row longer than shared memory).
    2. Then ``inline`` stages are inlined into their consumers (an elementwise stage
       between statistics, softmax's ``exp(x - max)``); ``shared_stages`` are computed
       once into a row of shared memory instead, after the statistics they read (each
       exponential computed once, not by the sum and again by the output).
    3. Each of ``statistics`` (reductions along the row, in the order they depend on each
       other: softmax's max, then its sum) is cut into ``slices`` interleaved slices in
       shared memory (``s.rfactor``), one per thread of the first ``slices``, each
       accumulated in a register and stored once (``s.cache_write``). After a barrier,
       the slices are added in a fixed order: with ``combine="one_thread"`` by the first
       thread, in a register, the total stored in shared memory for the others to read
       after another barrier; with ``combine="every_thread"`` by every thread into its own
       register (no second barrier, but ``threads`` times the additions); with
       ``combine="tree"`` by the threads together (``reduce_across_threads``: each thread
       its own slices, then warp shuffles and the warps' totals, log steps; every thread
       gets the total). A statistic's
       path is a slice and then all the slices, so the default is the divisor of the
       row's length nearest its square root, at most ``threads`` (:func:`row_slices`: 64
       for 4096). With ``vector_slices`` there is a slice a thread, read ``vector``
       elements at a time (``threads * vector`` interleaved lanes, each summed in a
       register; the thread adds its lanes into its slice, then the slices are added as
       above): an eighth of the shared-memory loads for 16-byte vectors of bf16
       (``vector_slices=None``: where ``threads * vector`` fit in a row). Unless
       they go in a tree, more than ``GROUPED_SLICES`` slices (a long row on many
       threads) are added in two
       steps: ``SLICE_GROUPS`` threads each add an interleaved group of them, then the
       groups are added as above.
    4. ``out``'s elements are written ``vector`` per thread and store.

    A row whose length ``threads * vector`` does not divide ends in a guarded pass; a row
    whose length has no divisor near its square root (a prime) is cut into slices whose
    last ones are padded with the reduction's identity.
    ``tc.check`` holds that no statistic is read before its last slice is added."""
    if combine not in COMBINES:
        raise TcompError(f"rows_in_blocks: combine must be one of {', '.join(map(repr, COMBINES))}, got {combine!r}")
    if isinstance(out, str):
        out = s[out].tensor
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1 or out.shape[0] % rows:
        raise TcompError(f"rows_in_blocks: rows (a block's rows) must be a positive integer that divides the "
                         f"{out.shape[0]} rows of {out.name}, got {rows!r}: every thread of a block reaches "
                         f"its barriers")
    if threads is None:
        (row_source,) = {t for r in readers for t in s[r].op.input_tensors() if t.name == source}
        threads = staged_row_threads(out.shape[-1] * itemsize(row_source.dtype), DEFAULT_TARGET, combine) \
            if stage_row else 64
        while threads > 32 and threads * vector > out.shape[-1]:  # a short row: whole warps that it fills
            threads //= 2
    while combine == "tree" and vector > 1 and threads * vector > out.shape[-1]:
        vector //= 2  # the tree's shuffles need a whole warp of lanes: narrower vectors for a short row
    if vector_slices is None:
        vector_slices = threads * vector <= out.shape[-1]
    if slices is None:
        slices = row_slices(out.shape[-1], threads)
    row_cache = s.cache_read(source, "shared", list(readers)) if stage_row else None
    for name in inline:
        s[name].compute_inline()
    row, j = s[out].axis
    if rows > 1:
        block, row = s[out].split(row, rows)
        s[out].bind(block, "blockIdx.x")
        s[out].bind(row, "threadIdx.y")
    else:
        s[out].bind(row, "blockIdx.x")
    j, lanes = s[out].split(j, vector)
    steps, thread = s[out].split(j, threads)
    s[out].reorder(thread, steps, lanes)
    s[out].bind(thread, "threadIdx.x")
    s[out].vectorize(lanes)
    for name in shared_stages:
        s[name].set_scope("shared")
        s[name].compute_at(s[out], row)
        _fill_row(s, name, threads, vector, rows)
    for name in statistics:
        if vector_slices and vector > 1:
            partial, lanes_partial = slices_in_vectors(s, name, threads, vector)
        else:
            partial = s.rfactor(name, slices, interleaved=True) if slices > 1 else None
            lanes_partial = None
        count = threads if lanes_partial is not None else slices
        groups = s.rfactor(name, SLICE_GROUPS, interleaved=True) \
            if partial is not None and rows == 1 and count > GROUPED_SLICES and combine != "tree" else None
        if combine == "one_thread" or partial is None:
            total = s.cache_write(name, "local")
            s[name].set_scope("shared")
        s[name].compute_at(s[out], row)
        if combine == "one_thread" or partial is None:
            s[total].compute_at(s[name], first_thread_of_each_row(s, name, rows))
        if partial is None:
            continue
        accumulator = slices_on_threads(s, partial, s[out], row, rows)
        if lanes_partial is not None:
            lanes_in_registers(s, lanes_partial, accumulator)
        if combine == "tree":
            (axis,) = s[name].reduce_axis
            s[name].reduce_across_threads(axis)
            continue
        # the slices (or groups) a thread adds, unrolled at any count (NVVM unrolls 32 by
        # itself), so that their shared loads issue together where no guard inside the
        # loop separates them (the code generator tests a loop-invariant guard before it)
        _unroll_sum(s, total if combine == "one_thread" else name)
        if groups is not None:
            _unroll_sum(s, slices_on_threads(s, groups, s[out], row))
    if row_cache is not None:
        s[row_cache].compute_at(s[out], row)
        _fill_row(s, row_cache, threads, vector, rows)


def _unroll_sum(s, stage) -> None:
    """Unroll the loop over ``stage``'s one reduction axis (a statistic's slices or groups,
    added in the same order)."""
    (axis,) = s[stage].reduce_axis
    s[stage].unroll(axis)


def slices_in_vectors(s, name: str, threads: int, vector: int) -> tuple:
    """``(slices, lanes)``: reduction ``name`` cut into a slice a thread (``slices``, its
    first axis the thread) that each thread reads ``vector`` elements at a time: ``lanes``
    holds the ``threads * vector`` interleaved partial values (thread t's lanes are
    ``t * vector .. t * vector + vector - 1``), which the slices add; place the lanes with
    :func:`lanes_in_registers`."""
    lanes = s.rfactor(name, threads * vector, interleaved=True)
    return s.rfactor(name, threads), lanes


def lanes_in_registers(s, lanes, accumulator) -> None:
    """A thread's ``vector`` lanes (:func:`slices_in_vectors`) in registers at its slice's
    ``accumulator``, the reduction loop outside the lanes so that each step reads a vector."""
    s[lanes].set_scope("local")
    s[lanes].compute_at(s[accumulator], s[accumulator].axis[-1])
    lane, *_ = s[lanes].axis
    (k,) = s[lanes].reduce_axis
    s[lanes].reorder(k, lane)
    s[lanes].vectorize(lane)


def slices_on_threads(s, slices, consumer, at, rows: int = 1):
    """The slices of a statistic (``s.rfactor``: the slice its first axis, a row of the
    block its last) in shared memory at ``consumer``'s loop ``at``, a slice a thread
    (``threadIdx.x``; with ``rows`` > 1 the row on ``threadIdx.y``), each accumulated in a
    register; returns that accumulator's stage."""
    s[slices].set_scope("shared")
    accumulator = s.cache_write(slices, "local")
    s[slices].compute_at(consumer, at)
    slice_axis, *_, row_axis = s[slices].axis
    s[slices].bind(slice_axis, "threadIdx.x")
    if rows > 1:
        s[slices].bind(row_axis, "threadIdx.y")
    s[accumulator].compute_at(s[slices], row_axis if rows > 1 else slice_axis)
    return accumulator


def first_thread_of_each_row(s, name: str, rows: int = 1):
    """Statistic ``name`` (shared, one value a row of the block) written by the first
    thread of each row's threads; returns the innermost axis, where its accumulator goes."""
    (axis,) = s[name].axis
    if rows == 1:
        s[name].bind(axis, "threadIdx.x")
        return axis
    row, first = s[name].split(axis, 1)
    s[name].bind(row, "threadIdx.y")
    s[name].bind(first, "threadIdx.x")
    return first


def _fill_row(s, name, threads: int, vector: int, rows: int = 1) -> None:
    """The block's threads compute a row of stage ``name`` together (a shared row):
    ``vector`` consecutive elements per thread and access, ``threads`` such vectors apart;
    with ``rows`` rows a block, each row by its own threads (``threadIdx.y``)."""
    row, columns = s[name].axis
    if rows > 1:
        s[name].bind(row, "threadIdx.y")
    columns, lanes = s[name].split(columns, vector)
    s[name].vectorize(lanes)
    _, thread = s[name].split(columns, threads)
    s[name].bind(thread, "threadIdx.x")


#: how :func:`rows_in_blocks` adds a statistic's slices
COMBINES = ("one_thread", "every_thread", "tree")
#: slices beyond which :func:`rows_in_blocks` adds them in two steps: first in
#: ``SLICE_GROUPS`` interleaved groups, a thread each, then the groups, so that no thread
#: adds more than ``max(slices / SLICE_GROUPS, SLICE_GROUPS)`` values one after another
#: (1024 slices added by one thread took 17 us a statistic: a long row at 1024 threads
#: ran at a fifth of the copy bandwidth, H100)
GROUPED_SLICES = 64
SLICE_GROUPS = 32


def row_slices(length: int, threads: int) -> int:
    """The slices :func:`rows_in_blocks` cuts a row's statistic into by default, balancing
    a slice (``ceil(length / slices)`` values) against adding the ``slices`` partial
    values: of the divisors of ``length`` up to ``threads``, the one whose path is
    shortest; or, where no divisor comes within a quarter of the best path of any count
    (a prime length, 151936 = 128 x 1187), that count, its last slices padded with the
    reduction's identity (``s.rfactor`` with parts that do not divide)."""
    def path(d):
        return -(-length // d) + d

    counts = range(1, min(length, threads) + 1)
    exact = min((d for d in counts if length % d == 0), key=lambda d: (path(d), -d))
    padded = min(counts, key=lambda d: (path(d), -d))
    return padded if 1.25 * path(padded) < path(exact) else exact


def staged_row_threads(row_bytes: int, target, combine: str = "tree") -> int:
    """The threads of a block per row (:func:`rows_in_blocks`) that measured fastest with
    the row staged. Where the staged row leaves an SM room for one block (over half its
    shared memory), the most a block may have, since its phases then run one after another
    with nothing to hide them: softmax at 4096 x 32768 took 392 us at 1024 threads with
    the slices added in a tree, 466 at 512 (436, 451, 576 and 1644 us at 1024, 512, 256
    and 64 threads with every thread adding them). Otherwise 256 threads where the slices
    go in a tree (softmax 4096 x 4096: 48.8 us against 53.1 at 64; RMSNorm 7239 x 4096:
    43.4 against 48.6), and 64 where a thread adds them one after another (a long chain
    at 256). All H100, ``benchmarks/row_operators.py``."""
    if 2 * row_bytes > target.smem_per_sm:
        return target.max_threads_per_block
    return 256 if combine == "tree" else 64


class RowKernel(Rule):
    """A row operator in one kernel (:func:`rows_in_blocks`): a group whose anchor writes
    ``rows x N`` and whose members are the row's statistics and the elementwise stages
    between them (the ``"row"`` fusion rule) or inlined stages, all reading one ``rows x
    N`` tensor (the row staged in shared memory). Its parameters are the threads of a
    block, the elements of one vector access, how a statistic's slices are added
    (``combine``: by the first thread, or by every thread), whether the row is staged
    in shared memory (``stage_row``) or read again from device memory (the L2),
    whether the elementwise stages between statistics are inlined or computed once
    into shared rows (``row_stages``), the rows a block takes (``rows``: a warp or
    two per row, several rows a block, for short rows), and whether a thread reads its
    slice a vector at a time (``vector_slices``)."""

    name = "row_kernel"
    defaults = {"combine": "one_thread", "stage_row": True, "row_stages": "inline", "rows": 1,
                "vector_slices": False}

    def applies(self, group, space):
        return row_operator(group, space) and len(row_sources(group)) == 1

    def choices(self, group, space):
        _, between = statistics_and_between(group)
        return {"threads": [32, 64, 128, 256, 512, 1024], "vector": [1, 2, 4, 8, 16], "combine": list(COMBINES),
                "stage_row": [False, True], "row_stages": ["inline", "shared"] if between else ["inline"],
                "rows": [1, 2, 4, 8], "vector_slices": [False, True]}

    def valid(self, group, space, p):
        rows, length = row_shape(space.stages[group.anchor])
        (source,) = row_sources(group)
        widest = max(itemsize(source.dtype), itemsize(space.stages[group.anchor].op.output.dtype))
        if p["vector"] * widest > 16 or length % p["vector"] or p["threads"] * p["vector"] > length:
            return False
        statistics, between = statistics_and_between(group)
        row_bytes = length * itemsize(source.dtype) if p["stage_row"] else 0
        if p["row_stages"] == "shared":
            row_bytes += sum(length * itemsize(space.stages[n].op.output.dtype) for n in between)
        slices = p["threads"] if p["vector_slices"] else row_slices(length, p["threads"])
        if p["vector_slices"] and (p["vector"] == 1 or p["threads"] * p["vector"] > length):
            return False
        shared = (row_bytes + 4 * slices * len(statistics)) * p["rows"]
        several_rows = p["rows"] == 1 or (p["threads"] <= 64 and rows % p["rows"] == 0)
        return (p["threads"] * p["rows"] <= space.target.max_threads_per_block and several_rows
                and shared <= space.target.smem_per_block)

    def seeds(self, group, space):
        """16-byte vectors, each thread reading its slice a vector at a time, the row
        staged, on :func:`staged_row_threads` threads a row: first with the slices added
        in a tree across the threads (the fastest hand variant of softmax at 4096 x 4096
        and 4096 x 32768 and of RMSNorm at 7239 x 4096, H100), then with every thread
        adding them itself (the fastest before the tree, and softmax's at 8192 x 1024)."""
        (source,) = row_sources(group)
        _, length = row_shape(space.stages[group.anchor])
        widest = max(itemsize(source.dtype), itemsize(space.stages[group.anchor].op.output.dtype))
        row_bytes = length * itemsize(source.dtype)
        return [{**self.defaults, "threads": staged_row_threads(row_bytes, space.target, combine),
                 "vector": 16 // widest, "combine": combine, "vector_slices": True}
                for combine in ("tree", "every_thread")]

    def apply(self, s, group, p):
        (source,) = row_sources(group)
        readers = [name for name in group.names if source.name in group.stages[name].reads]
        statistics, between = statistics_and_between(group)
        inline, shared = (between, ()) if p["row_stages"] == "inline" else ((), between)
        rows_in_blocks(s, group.anchor, source.name, readers=readers, statistics=statistics, inline=inline,
                       threads=p["threads"], vector=p["vector"], combine=p["combine"], stage_row=p["stage_row"],
                       shared_stages=shared, rows=p["rows"], vector_slices=p["vector_slices"])


def row_operator(group, space) -> bool:
    """Is ``group`` a row operator: an elementwise ``rows x N`` anchor with row statistics
    (the ``"row"`` fusion rule) and otherwise only inlined members?"""
    anchor = space.stages[group.anchor]
    if anchor.reduction or row_shape(anchor) is None:
        return False
    if any(how not in (ROW, INLINE) for _, how in group.members):
        return False
    statistics, _ = statistics_and_between(group)
    return bool(statistics)


def statistics_and_between(group) -> tuple:
    """``group``'s row members split in two, each in the order they run: the statistics
    (reductions along the row) and the elementwise stages between them."""
    statistics = tuple(n for n in group.row_members if group.stages[n].reduction)
    return statistics, tuple(n for n in group.row_members if not group.stages[n].reduction)


def row_sources(group) -> list:
    """The ``rows x N`` tensors that ``group``'s stages read from outside the kernel."""
    shape = row_shape(group.stages[group.anchor])
    found = {}
    for name in group.names:
        for t in group.stages[name].op.input_tensors():
            if t.name not in group.names and tuple(t.shape) == shape:
                found.setdefault(t.name, t)
    return list(found.values())


class RowReduction(Rule):
    """A reduction along rows that is not a matrix product (a row's max or sum): one block
    of ``threads`` threads per output element, each thread reducing an interleaved slice
    of the row (consecutive threads on consecutive elements) into shared memory, then one
    thread combining the slices (``s.rfactor(..., interleaved=True)``)."""

    name = "row_reduction"

    def applies(self, group, space):
        stage = space.stages[group.anchor]
        return (stage.reduction and not group.fused and product_stage(group) is None
                and len(stage.op.reduce_axis) == 1)

    def choices(self, group, space):
        return {"threads": [32, 64, 128, 256, 512]}

    def valid(self, group, space, p):
        extent = space.stages[group.anchor].op.reduce_axis[0].extent
        return extent % p["threads"] == 0 and extent >= 2 * p["threads"]

    def apply(self, s, group, p):
        stage = s[group.anchor]
        partial = s.rfactor(stage.op.output, p["threads"], interleaved=True)
        axes = list(stage.axis)
        row = axes[0]
        for ax in axes[1:]:
            row = stage.fuse(row, ax)
        stage.bind(row, "blockIdx.x")
        s[partial].set_scope("shared")
        s[partial].compute_at(stage, row)
        s[partial].bind(s[partial].axis[0], "threadIdx.x")


__all__ = ["RowKernel", "RowReduction", "first_thread_of_each_row", "lanes_in_registers", "row_operator", "row_slices",
           "row_sources", "rows_in_blocks", "slices_in_vectors", "slices_on_threads", "staged_row_threads",
           "statistics_and_between"]
