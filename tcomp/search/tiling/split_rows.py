"""Rows split over blocks (the chapter's Figure 5-11): a row operator whose rows are too
few, or too long, for a block each, its statistics reduced in segments on blocks of their
own, the segments' partial values then merged in a fixed order.

One block a row (:func:`tcomp.search.tiling.rows.rows_in_blocks`) leaves most SMs idle
when there are fewer rows than SMs: a decode step's one row, the vocabulary softmax of a
few tokens. :func:`rows_over_blocks` cuts each of the row's statistics into ``segments``
contiguous segments (``s.rfactor``), a block per (row, segment), so ``rows x segments``
blocks share the work; each block's threads reduce their segment in interleaved slices
accumulated in registers, and its first thread adds the slices and writes the segment's
value to device memory. The statistic is then the segments' values added in their order
(the same bits every run):

- the last statistic (RMSNorm's sum of squares, softmax's sum) by the first thread of
  each block of the output's kernel, into shared memory, before the block writes its
  part of the row;
- an earlier one (softmax's max, LayerNorm's mean), which both a later statistic and the
  output read, by a small kernel of its own, a thread per row.

The price, which the chapter counts for RMSNorm: each statistic reads the row again, and
each of its segment kernels is one more launch. The rule :class:`SplitRows`
(``split_rows``) offers it to the search where the rows alone leave SMs idle.
"""

from __future__ import annotations

from ...dtypes import itemsize
from ...errors import TcompError
from ..fusion.row import row_shape
from .base import Rule
from .rows import (first_thread_of_each_row, lanes_in_registers, row_operator, row_sources, slices_in_vectors,
                   slices_on_threads, statistics_and_between)

#: the loads of a slice each thread issues together (its reduction loop unrolled by this)
LOADS_IN_FLIGHT = 4
#: threads of the kernel that merges an earlier statistic's segments, a row each
MERGE_THREADS = 128


def rows_over_blocks(s, out, statistics: list, inline: tuple = (), segments: int = 8, threads: int = 256,
                     vector: int = 4) -> None:
    """``out`` (rows x N, elementwise) and its row ``statistics`` (reductions along the
    row, in the order they depend on each other), split over blocks as the
    :mod:`module docstring <tcomp.search.tiling.split_rows>` describes: each statistic in
    ``segments`` contiguous segments of the row, a block of ``threads`` per (row,
    segment) reading ``vector`` elements at a time, then merged in a fixed order; ``out``
    over blocks of ``threads`` threads that each write ``vector`` consecutive elements, a
    block inside one row. The stages
    ``inline`` (elementwise stages between statistics, softmax's ``exp(x - max)``) are
    inlined into their readers. ``tc.check`` holds that every segment is merged before
    the statistic is read."""
    if isinstance(out, str):
        out = s[out].tensor
    length = out.shape[-1]
    if not isinstance(segments, int) or isinstance(segments, bool) or not 2 <= segments <= length:
        raise TcompError(f"rows_over_blocks: segments must be an integer from 2 to the row's length {length}, "
                         f"got {segments!r}")
    for name in inline:
        s[name].compute_inline()
    block = _output_over_blocks(s, out, threads, vector)
    *earlier, last = statistics
    for name in statistics:
        _segments_on_blocks(s, name, segments, threads, vector)
    for name in earlier:
        _merged_by_a_kernel(s, name)
    _merged_by_first_thread(s, last, s[out], block)


def _output_over_blocks(s, out, threads: int, vector: int):
    """``out`` over blocks of ``threads`` threads, ``vector`` consecutive elements each, a
    block within one row; returns the block axis."""
    stage = s[out]
    row, j = stage.axis
    j, lanes = stage.split(j, vector)
    columns, thread = stage.split(j, threads)
    block = stage.fuse(row, columns)
    stage.bind(block, "blockIdx.x")
    stage.bind(thread, "threadIdx.x")
    stage.vectorize(lanes)
    return block


def _segments_on_blocks(s, name: str, segments: int, threads: int, vector: int) -> None:
    """Statistic ``name`` in ``segments`` contiguous segments of the row, a block per
    (row, segment) whose threads reduce interleaved slices of the segment in registers
    (``vector`` elements a read where the segment holds ``threads * vector`` of them), the
    first thread adding them into the segment's value."""
    partial = s.rfactor(name, segments)
    length = s[partial].op.reduce_axis[0].extent
    lanes = None
    if vector > 1 and length >= threads * vector:
        in_block, lanes = slices_in_vectors(s, partial, threads, vector)
    else:
        slices = min(threads, length)
        in_block = s.rfactor(partial, slices, interleaved=True) if slices > 1 else None
    total = s.cache_write(partial, "local")
    segment, row = s[partial].axis
    s[partial].reorder(row, segment)
    block = s[partial].fuse(row, segment)
    block, first = s[partial].split(block, 1)
    s[partial].bind(block, "blockIdx.x")
    s[partial].bind(first, "threadIdx.x")
    s[total].compute_at(s[partial], first)
    if in_block is None:
        return
    accumulator = slices_on_threads(s, in_block, s[partial], block)
    reader = accumulator
    if lanes is not None:
        lanes_in_registers(s, lanes, accumulator)
        reader = lanes
    (k,) = s[reader].reduce_axis
    if k.extent >= 2 * LOADS_IN_FLIGHT:
        _, ahead = s[reader].split(k, LOADS_IN_FLIGHT)
        s[reader].unroll(ahead)


def _merged_by_a_kernel(s, name: str) -> None:
    """Statistic ``name``'s segments added in a kernel of its own, a thread per row
    accumulating in a register."""
    total = s.cache_write(name, "local")
    (rows,) = s[name].axis
    block, thread = s[name].split(rows, MERGE_THREADS)
    s[name].bind(block, "blockIdx.x")
    s[name].bind(thread, "threadIdx.x")
    s[total].compute_at(s[name], thread)
    s[total].unroll(s[total].reduce_axis[0])  # every segment's load in flight at once


def _merged_by_first_thread(s, name: str, consumer, block) -> None:
    """Statistic ``name``'s segments added by the first thread of each of ``consumer``'s
    blocks (at its loop ``block``) into shared memory, for the block's threads to read
    after a barrier."""
    total = s.cache_write(name, "local")
    s[name].set_scope("shared")
    s[name].compute_at(consumer, block)
    s[total].compute_at(s[name], first_thread_of_each_row(s, name))
    s[total].unroll(s[total].reduce_axis[0])


class SplitRows(Rule):
    """A row operator whose rows alone leave SMs idle (fewer rows than SMs), split over
    blocks (:func:`rows_over_blocks`): each statistic in ``segments`` segments of the row on
    blocks of ``threads``, merged in a fixed order; the output over blocks of ``threads``
    threads writing ``vector`` elements each."""

    name = "split_rows"

    def applies(self, group, space):
        rows, _ = row_shape(space.stages[group.anchor]) or (0, 0)
        return row_operator(group, space) and rows < space.target.sms

    def choices(self, group, space):
        return {"segments": [2, 4, 8, 16, 32, 64, 128], "threads": [64, 128, 256, 512], "vector": [1, 2, 4, 8]}

    def valid(self, group, space, p):
        rows, length = row_shape(space.stages[group.anchor])
        widest = max(itemsize(space.stages[n].op.output.dtype) for n in group.names)
        widest = max([widest] + [itemsize(t.dtype) for t in row_sources(group)])
        return (length % p["segments"] == 0 and length // p["segments"] >= p["threads"]
                and rows * p["segments"] <= 2 * space.target.sms
                and p["vector"] * widest <= 16 and length % p["vector"] == 0
                and p["threads"] * p["vector"] <= length and p["threads"] <= space.target.max_threads_per_block)

    def apply(self, s, group, p):
        statistics, between = statistics_and_between(group)
        rows_over_blocks(s, group.anchor, list(statistics), inline=between, segments=p["segments"],
                         threads=p["threads"], vector=p["vector"])


__all__ = ["LOADS_IN_FLIGHT", "MERGE_THREADS", "SplitRows", "rows_over_blocks"]
