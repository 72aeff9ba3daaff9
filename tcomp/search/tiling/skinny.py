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
from ..stages import factor_indices
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
    _check_shape(s, product, parts, unroll, vector)
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
    _slice_in_registers(s, acc, partial, thread, a, b, unroll)
    _slices_added_in_a_second_kernel(s, out, product, parts, combine_threads)


def stream_rows_in_blocks(s, out, product: str, a: str, b: str, parts: int = 64, threads_x: int = 8,
                          vector: int = 8, unroll: int = 2, block_parts: int = 1) -> None:
    """:func:`stream_rows` in one kernel: a block takes ``vector * threads_x`` columns and
    all ``parts`` slices of k, a slice on each ``threadIdx.y``; each thread's partial sums
    go to shared memory, and after a barrier the block adds each output's slices in a
    fixed order and runs ``out``'s stages on the whole sum. No partial sums cross device
    memory and no second kernel is launched.

    With ``block_parts`` > 1, k is first cut into that many slices on ``blockIdx.y`` as
    well (where the columns alone leave SMs idle: the down projection's N = 4096), each
    block writes its slice's partial sums, and a second kernel adds them in a fixed order
    and runs ``out``'s stages, as :func:`stream_rows` does."""
    *_, M, _ = s[product].op.output.shape  # NOTE: a stacked product (SwiGLU's) has an axis ahead
    _check_shape(s, product, parts * block_parts, unroll, vector)
    columns = vector * threads_x
    if threads_x * max(parts, M * vector) > 1024:
        raise ScheduleError(f"stream_rows_in_blocks runs {threads_x} x {max(parts, M * vector)} threads a block "
                            f"(threads_x by the larger of the slices and M x vector); at most 1024")
    if block_parts > 1:
        block_sums = s.rfactor(product, block_parts)
        block_sum = s.cache_write(block_sums, "local")  # a block adds its warps' sums in a register
        _slices_in_block(s, block_sums, block_sum.name, a, b, parts, threads_x, vector, unroll, columns,
                         leading="blockIdx.y")
        _slices_added_in_a_second_kernel(s, out, product, block_parts)
    else:  # NOTE: a stacked product scheduled by itself has its leading axis on blockIdx.y
        stacked_alone = len(s[out].op.output.shape) == 3
        _slices_in_block(s, out, product, a, b, parts, threads_x, vector, unroll, columns,
                         leading="blockIdx.y" if stacked_alone else None)


def _slices_in_block(s, out, product: str, a: str, b: str, parts: int, threads_x: int, vector: int, unroll: int,
                     columns: int, leading: str | None = None) -> None:
    """``out`` (``product`` or a stage after it; with ``leading``, a stage whose first
    axis is bound to that block index) on blocks of ``columns`` columns, ``product``'s k
    in ``parts`` slices on ``threadIdx.y`` added through shared memory."""
    partial = s.rfactor(product, parts)
    acc = s.cache_write(partial, "local")
    consumer = s[out]
    if leading is None:
        i, j = consumer.axis
    else:
        outer, i, j = consumer.axis
        consumer.bind(outer, leading)
    block, in_block = consumer.split(j, columns)
    consumer.reorder(block, i, in_block)
    consumer.bind(block, "blockIdx.x")
    outputs = consumer.fuse(i, in_block)
    rows, lane = consumer.split(outputs, threads_x)
    consumer.bind(rows, "threadIdx.y")
    consumer.bind(lane, "threadIdx.x")
    s[partial].set_scope("shared")
    s[partial].compute_at(consumer, block)
    part, *_, rows_of_partial, pj = s[partial].axis
    thread, lanes = s[partial].split(pj, vector)
    s[partial].reorder(part, thread, rows_of_partial, lanes)
    s[partial].bind(part, "threadIdx.y")
    s[partial].bind(thread, "threadIdx.x")
    s[partial].unroll(rows_of_partial)
    s[partial].vectorize(lanes)
    _slice_in_registers(s, acc, partial, thread, a, b, unroll)
    add_slices(s, out, product, lane, parts)


def _check_shape(s, product: str, parts: int, unroll: int, vector: int) -> None:
    *_, M, N = s[product].op.output.shape
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


def _slice_in_registers(s, acc, partial, thread, a: str, b: str, unroll: int) -> None:
    """Each thread's slice of the product accumulated in registers (``acc`` at ``partial``'s
    loop ``thread``), ``unroll`` values of k a step: ``b``'s columns in one vector load a
    k, each row of ``a``'s ``unroll`` values in one load."""
    s[acc].compute_at(s[partial], thread)
    (k,) = s[acc].reduce_axis
    k_step, k_unrolled = s[acc].split(k, unroll)
    # between: the block's slice of k, if any, and a stacked product's leading axis
    slice_axis, *between, rows, cols = s[acc].axis
    s[acc].reorder(k_step, k_unrolled, slice_axis, *between, rows, cols)
    for axis in (k_unrolled, *between, rows, cols):
        s[acc].unroll(axis)
    weights = s.cache_read(b, "local", [acc])
    s[weights].compute_at(s[acc], k_unrolled)
    s[weights].vectorize(s[weights].axis[-1])
    rows_of_a = s.cache_read(a, "local", [acc])
    s[rows_of_a].compute_at(s[acc], k_step)
    s[rows_of_a].unroll(s[rows_of_a].axis[0])
    s[rows_of_a].vectorize(s[rows_of_a].axis[-1])


def one_kernel_sizes(M: int, N: int, K: int, vector: int = 8, sms: int = 132) -> dict | None:
    """``parts``, ``threads_x``, ``unroll`` and ``block_parts`` of
    :func:`stream_rows_in_blocks` that measured fastest for a decode step
    (``benchmarks/decode_rows.py``, H100 2026-12-05 to 12-07, H200 12-07). One row of a
    wide output (blocks of ``8 * vector`` columns would cover the SMs): 16 x 64 threads,
    eight loads of the weights in flight each, blocks of ``16 * vector`` columns (at 1 x
    12288 x 4096 on the H200 28.8 us, 0.90 of W's copy floor, against 30.2 us for 8 x 64
    threads and two loads; on the H100 37.1 against 37.6 us), or those 8 x 64 threads where
    the wider sizes do not divide the shape. Where those blocks would leave SMs idle (N =
    4096), warps of 32 threads across 256 columns (512 contiguous bytes of a row of W a
    load), 8 of them on slices of k, and k cut over 16 blocks as well, their sums added by
    a second kernel (39.7 us, 0.90 of W's copy floor on the H100, against 44.0 us for 4 x
    256 threads in one kernel). 2 to 8 rows (more arithmetic a load), 4 x 64 threads and
    four loads each. None from 9 rows (every row's accumulators in registers) or where the
    sizes do not divide the shape."""
    if M == 1 and N // (8 * vector) >= sms:
        candidates = [(16, 64, 8, 1), (8, 64, 2, 1)]  # (threads_x, parts, unroll, block_parts), best first
    elif M == 1:
        candidates = [(32, 8, 8, 16)]
    elif 2 <= M <= 8:
        candidates = [(4, 64, 4, 1)]
    else:
        return None
    for threads_x, parts, unroll, block_parts in candidates:
        # whole blocks of columns, whole slices of k in steps of unroll, each slice at least 4 steps
        if not (N % (vector * threads_x) or K % (block_parts * parts * unroll)
                or K // (block_parts * parts) < 4 * unroll):
            return dict(parts=parts, threads_x=threads_x, unroll=unroll, block_parts=block_parts)
    return None


def _slices_added_in_a_second_kernel(s, out, product: str, parts: int, threads: int = 256) -> None:
    """``out`` one element per thread of blocks of ``threads``, ``product``'s ``parts``
    slices (written by the kernel before) added there in a fixed order."""
    consumer = s[out]
    flat = consumer.fuse(*consumer.axis)
    blocks, lane = consumer.split(flat, threads)
    consumer.bind(blocks, "blockIdx.x")
    consumer.bind(lane, "threadIdx.x")
    add_slices(s, out, product, lane, parts)


def add_slices(s, out, product: str, lane, parts: int) -> None:
    """The product's slices added at ``out``'s thread loop ``lane`` (where ``out`` is a
    stage after the product), eight of them loaded at a time: they are independent."""
    if out.name != product:
        s[product].compute_at(s[out], lane)
    (slices,) = s[product].reduce_axis
    if parts > SLICES_IN_FLIGHT:
        slices, in_flight = s[product].split(slices, SLICES_IN_FLIGHT)
        s[product].unroll(in_flight)


class SkinnyProduct(Rule):
    """A matrix product of at most 16 rows (a decode step) and the elementwise stages after
    it: the weights streamed once in 16-byte loads into registers, k cut into slices, the
    slices added in a fixed order with the epilogue: on blocks of their own and then in a
    second kernel (:func:`stream_rows`), or (``one_kernel``) on the threads of one block,
    added through shared memory (:func:`stream_rows_in_blocks`; ``threads`` is then the
    block's, ``threads / parts`` of them along the columns). With ``one_kernel`` and
    ``block_parts`` > 1, k is cut over that many blocks as well and a second kernel adds
    their sums (for outputs too narrow to fill the SMs with column blocks alone). A
    reassociation, which ``tc.check`` reports."""

    name = "skinny_product"

    def applies(self, group, space):
        streamed = streamed_product(group)
        return streamed is not None and space.stages[streamed[0]].shape[-2] <= SKINNY_ROWS

    def choices(self, group, space):
        return {"parts": [4, 8, 16, 32, 64, 128, 256], "threads": [64, 128, 256, 512, 1024], "unroll": [2, 4, 8],
                "one_kernel": [False, True], "block_parts": [1, 8, 16, 32]}

    def seeds(self, group, space):
        """The one-kernel sizes that measured fastest (:func:`one_kernel_sizes`)."""
        product, _, b = streamed_product(group)
        op = space.stages[product].op
        *stacked, M, N = op.output.shape
        sizes = one_kernel_sizes(M, N, op.reduce_axis[0].extent, streamed_lanes(op, b), space.target.sms)
        if sizes is None or (stacked and sizes["block_parts"] > 1):
            return []
        return [dict(parts=sizes["parts"], threads=sizes["parts"] * sizes["threads_x"], unroll=sizes["unroll"],
                     one_kernel=True, block_parts=sizes["block_parts"])]

    def valid(self, group, space, p):
        product, _, b = streamed_product(group)
        op = space.stages[product].op
        *stacked, M, N = op.output.shape
        K = op.reduce_axis[0].extent
        vector = streamed_lanes(op, b)
        block_parts = p.get("block_parts", 1)
        parts = p["parts"] * block_parts
        if group.staged or vector == 1 or K % (parts * p["unroll"]) or K // parts < 4 * p["unroll"]:
            return False
        if stacked and not (p["one_kernel"] and block_parts == 1):
            return False  # NOTE: a stacked product's slices are added in its one kernel only
        if p["one_kernel"]:
            across = p["threads"] // p["parts"]  # threads along the columns
            columns = vector * across
            shared = p["parts"] * (stacked[0] if stacked else 1) * M * columns * 4
            return (across >= 1 and across * p["parts"] == p["threads"] and N % columns == 0
                    and across * max(p["parts"], M * vector) <= space.target.max_threads_per_block
                    and shared <= space.target.smem_per_block // 2
                    and N // columns * block_parts <= 16 * space.target.sms)
        blocks = -(-N // (vector * p["threads"]))
        return block_parts == 1 and p["parts"] >= 16 and blocks * p["parts"] <= 16 * space.target.sms \
            and p["threads"] * vector <= 2 * N

    def apply(self, s, group, p):
        product, a, b = streamed_product(group)
        out, vector = s[group.anchor].op.output, streamed_lanes(s[product].op, b)
        if p["one_kernel"]:
            stream_rows_in_blocks(s, out, product, a, b, parts=p["parts"], threads_x=p["threads"] // p["parts"],
                                  vector=vector, unroll=p["unroll"], block_parts=p.get("block_parts", 1))
        else:
            stream_rows(s, out, product, a, b, parts=p["parts"], threads=p["threads"], vector=vector,
                        unroll=p["unroll"])


def streamed_product(group) -> tuple | None:
    """``(product, a, b)`` of the group's matrix product where :func:`stream_rows` can
    stream it: ``b[k, j]`` (or, stacked, ``b[h, k, j]``: SwiGLU's gate and up weights, one
    product ``P[h, i, j]``) with ``j`` its contiguous axis, and ``a[i, k]``; else None
    (``b`` stored as ``[N, K]``, a batched ``a``)."""
    found = product_stage(group, any_layout=True)
    if found is None:
        return None
    product, a, b = found
    op = group.stages[product].op
    *_, i, j = op.axis
    (k,) = op.body.axes
    indices = factor_indices(op)
    if indices.get(a) != (i, k) or indices.get(b, ())[-2:] != (k, j):
        return None
    return found


def streamed_lanes(op, name: str) -> int:
    """Elements along the last axis of the weights tensor ``name`` (read by ``op``) that
    one aligned 16-byte load moves."""
    (weights,) = (t for t in op.input_tensors() if t.name == name)
    return aligned_lanes(weights, 16 // itemsize(weights.dtype))


__all__ = ["SKINNY_ROWS", "SkinnyProduct", "one_kernel_sizes", "stream_rows", "stream_rows_in_blocks",
           "streamed_lanes", "streamed_product"]
