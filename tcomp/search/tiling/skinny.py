"""A product with few rows (a decode step: M = 1 .. 16), whose time is streaming its weights
once: the schedule helper :func:`stream_rows` (also used by the examples) and the rule
:class:`SkinnyProduct` that offers it to the search.

Every thread holds ``vector`` consecutive columns of every row of the output and reads the
weights' ``vector`` columns of each k as one 16-byte load straight into registers (no
shared tile: each weight is read once), ``unroll`` k at a time so that several loads are in
flight. The k axis is cut into ``parts`` slices (``s.rfactor``) on ``blockIdx.y`` so that
the blocks cover the GPU; a second kernel adds the slices in a fixed order (the same bits
every run) and runs the stages after the product (bf16 rounding, SiLU, quantization) on
the whole sum."""

from __future__ import annotations

from ...dtypes import itemsize
from ...errors import ScheduleError
from .base import Rule
from .products import aligned_lanes, product_stage

#: rows up to which a product counts as skinny
SKINNY_ROWS = 16
#: the slices of an output that the adding thread loads together
SLICES_IN_FLIGHT = 8


def stream_rows(s, out, product: str, a: str, b: str, parts: int = 16, threads: int = 128, vector: int = 8,
                unroll: int = 4, combine_threads: int = 256) -> None:
    """``product`` (``C[i, j] = sum_k a[i, k] * b[k, j]``, M small) in ``parts`` slices of k
    (:mod:`the module docstring <tcomp.search.tiling.skinny>`), each thread computing
    ``vector`` columns of every row from ``unroll`` 16-byte loads of ``b`` a step (and
    each row's ``unroll`` values of ``a`` in one load, the same for every thread); then
    ``out`` (the product or an elementwise stage after it, the stages between inlined by
    the caller) one element per thread of blocks of ``combine_threads``, the product's
    slices added there."""
    M, N = s[product].op.output.shape
    K = s[product].op.reduce_axis[0].extent
    if M > SKINNY_ROWS:
        raise ScheduleError(f"stream_rows keeps a thread's columns of every row in registers: at most "
                            f"{SKINNY_ROWS} rows; {product} has {M}")
    if K % (parts * unroll):
        raise ScheduleError(f"stream_rows cuts k ({K}) into {parts} slices of whole steps of {unroll}: "
                            f"{parts} x {unroll} must divide it")
    if N % vector:
        raise ScheduleError(f"stream_rows gives each thread {vector} consecutive columns; N = {N} is not a "
                            f"multiple of {vector}")
    partial = s.rfactor(product, parts)
    acc = s.cache_write(partial, "local")
    part, i, j = s[partial].axis
    columns, lanes = s[partial].split(j, vector)
    block, thread = s[partial].split(columns, threads)
    s[partial].reorder(part, block, thread, i, lanes)
    s[partial].bind(part, "blockIdx.y")
    s[partial].bind(block, "blockIdx.x")
    s[partial].bind(thread, "threadIdx.x")
    s[partial].unroll(i)
    s[partial].vectorize(lanes)
    s[acc].compute_at(s[partial], thread)
    (k,) = s[acc].reduce_axis
    k_step, k_unrolled = s[acc].split(k, unroll)
    slice_axis, rows, cols = s[acc].axis
    s[acc].reorder(k_step, k_unrolled, slice_axis, rows, cols)
    for axis in (k_unrolled, rows, cols):
        s[acc].unroll(axis)
    weights = s.cache_read(b, "local", [acc])
    s[weights].compute_at(s[acc], k_unrolled)
    s[weights].vectorize(s[weights].axis[-1])
    rows_of_a = s.cache_read(a, "local", [acc])  # each row's ``unroll`` values of k in one load
    s[rows_of_a].compute_at(s[acc], k_step)
    s[rows_of_a].unroll(s[rows_of_a].axis[0])
    s[rows_of_a].vectorize(s[rows_of_a].axis[-1])
    consumer = s[out]
    flat = consumer.fuse(*consumer.axis)
    blocks, lane = consumer.split(flat, combine_threads)
    consumer.bind(blocks, "blockIdx.x")
    consumer.bind(lane, "threadIdx.x")
    if out.name != product:
        s[product].compute_at(consumer, lane)
    # NOTE: the slices' loads are independent: eight of them in flight at a time
    (slices,) = s[product].reduce_axis
    if parts > SLICES_IN_FLIGHT:
        slices, in_flight = s[product].split(slices, SLICES_IN_FLIGHT)
        s[product].unroll(in_flight)


class SkinnyProduct(Rule):
    """A matrix product of at most 16 rows (a decode step) and the elementwise stages after
    it: the weights streamed once in 16-byte loads into registers, k cut into slices on
    blocks of their own, the slices added in a fixed order with the epilogue
    (:func:`stream_rows`). A reassociation, which ``tc.check`` reports."""

    name = "skinny_product"

    def applies(self, group, space):
        product = product_stage(group)
        return product is not None and space.stages[product[0]].shape[0] <= SKINNY_ROWS

    def choices(self, group, space):
        return {"parts": [16, 32, 64, 128, 256], "threads": [64, 128, 256], "unroll": [2, 4, 8]}

    def valid(self, group, space, p):
        product, _, b = product_stage(group)
        op = space.stages[product].op
        N = op.output.shape[1]
        K = op.reduce_axis[0].extent
        vector = _lanes(op, b)
        blocks = -(-N // (vector * p["threads"]))
        return (not group.staged and vector > 1 and K % (p["parts"] * p["unroll"]) == 0
                and K // p["parts"] >= 4 * p["unroll"] and blocks * p["parts"] <= 16 * space.target.sms
                and p["threads"] * vector <= 2 * N)

    def apply(self, s, group, p):
        product, a, b = product_stage(group)
        stream_rows(s, s[group.anchor].op.output, product, a, b, parts=p["parts"], threads=p["threads"],
                    vector=_lanes(s[product].op, b), unroll=p["unroll"])


def _lanes(op, name: str) -> int:
    """Columns of the weights tensor ``name`` (read by ``op``) that one 16-byte load moves."""
    (weights,) = (t for t in op.input_tensors() if t.name == name)
    return aligned_lanes(weights, 16 // itemsize(weights.dtype))


__all__ = ["SKINNY_ROWS", "SkinnyProduct", "stream_rows"]
