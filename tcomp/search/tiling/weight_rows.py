"""A product of few rows whose weights are stored ``[N, K]`` (``torch.nn.Linear``'s layout:
``C[i, j] = sum_k a[i, k] * w[j, k]``), a decode step's projections: the schedule helper
:func:`stream_weight_rows` and the rule :class:`WeightRows` that offers it to the search.

Both operands run along k in memory, so each output column is a dot product of a row of
``w`` with each row of ``a``. A block takes ``columns`` columns, one on each
``threadIdx.y``; the ``threads`` threads of a column read its row of ``w`` in 16-byte
vectors, consecutive threads on consecutive vectors (a warp reads 512 contiguous bytes a
load), ``unroll`` vectors in flight, and multiply each by the same k of every row of ``a``
(read a vector a row, from the L1: every block reads all of ``a``). Each thread adds its
vectors' lanes, stores its slice in shared memory, and the column's threads add the slices
in a tree of warp shuffles (``reduce_across_threads``: the same bits every run); thread
``i`` then writes row ``i`` of the column, through the stages after the product. Each byte
of ``w`` is read once, and no partial sum leaves the block."""

from __future__ import annotations

from ...errors import ScheduleError
from ...lower.thread_reduction import WARP
from ..stages import factor_indices
from .base import Rule
from .products import product_stage
from .skinny import SKINNY_ROWS, streamed_lanes

#: a thread's accumulators (rows x lanes of a vector) beyond which the rule is not offered:
#: 16 rows of bf16 took 242 registers and ran at 0.30 of W's copy floor (8 rows, 128)
MAX_ROW_LANES = 64
#: (threads, columns, unroll) the rule's seed tries in turn (:meth:`WeightRows.seeds`)
SEED_SIZES = [(128, 1, 4), (128, 1, 2), (64, 1, 4), (64, 1, 2), (32, 4, 4), (32, 4, 2), (32, 4, 1)]


def stream_weight_rows(s, out, product: str, a: str, w: str, threads: int = 128, columns: int = 1,
                       vector: int = 8, unroll: int = 4) -> None:
    """``product`` (``C[i, j] = sum_k a[i, k] * w[j, k]``, at most 16 rows) with ``out``
    (the product or an elementwise stage after it, the stages between inlined by the
    caller) as :mod:`the module docstring <tcomp.search.tiling.weight_rows>` says:
    ``columns`` columns a block, ``threads`` threads a column reading ``vector`` values of
    k a load, ``unroll`` loads in flight (by default the rule's seed,
    :meth:`WeightRows.seeds`)."""
    _check_shape(s, product, threads, columns, vector, unroll)
    lanes = s.rfactor(product, threads * vector, interleaved=True)
    slices = s.rfactor(product, threads)
    total = s.cache_write(product, "local") if out.name == product else s[product].op.output
    consumer = s[out]
    i, j = consumer.axis
    consumer.reorder(j, i)
    block, column = consumer.split(j, columns)
    consumer.bind(block, "blockIdx.x")
    consumer.bind(column, "threadIdx.y")
    consumer.bind(i, "threadIdx.x")  # thread i writes row i of its column
    s[total].set_scope("local")
    s[total].compute_at(consumer, column)
    _slices_on_threads(s, slices, lanes, consumer, column, w, unroll)
    (across,) = s[total].reduce_axis
    s[total].reduce_across_threads(across)


def _slices_on_threads(s, slices, lanes, consumer, column, w: str, unroll: int) -> None:
    """Each thread's slice of every row of the column (``slices``: a shared value per
    thread and row) accumulated in registers: ``lanes`` (a register per lane of a vector
    and row) over k, ``unroll`` vectors of ``w`` a step, each read once into registers for
    all the rows, then the lanes added into the slice."""
    s[slices].set_scope("shared")
    accumulator = s.cache_write(slices, "local")
    s[slices].compute_at(consumer, column)
    thread, rows, in_column = s[slices].axis
    s[slices].reorder(thread, in_column, rows)
    s[slices].bind(thread, "threadIdx.x")
    s[slices].bind(in_column, "threadIdx.y")
    s[accumulator].compute_at(s[slices], in_column)
    s[lanes].set_scope("local")
    s[lanes].compute_at(s[slices], in_column)
    lane, *rows_of_lanes = s[lanes].axis
    (k,) = s[lanes].reduce_axis
    k_step, k_unrolled = s[lanes].split(k, unroll)
    s[lanes].reorder(k_step, k_unrolled, *rows_of_lanes, lane)
    s[lanes].unroll(k_unrolled)
    for axis in rows_of_lanes:
        s[lanes].unroll(axis)
    s[lanes].vectorize(lane)
    weights = s.cache_read(w, "local", [lanes])
    s[weights].compute_at(s[lanes], k_unrolled)
    s[weights].vectorize(s[weights].axis[-1])


def _check_shape(s, product: str, threads: int, columns: int, vector: int, unroll: int) -> None:
    shape = s[product].op.output.shape
    K = s[product].op.reduce_axis[0].extent
    if len(shape) != 2 or shape[0] > SKINNY_ROWS:
        raise ScheduleError(f"stream_weight_rows keeps every row's sums of a thread in registers: at most "
                            f"{SKINNY_ROWS} rows of a 2-D product; {product} is {' x '.join(map(str, shape))}")
    if not (threads in (1, 2, 4, 8, 16, 32) or threads % WARP == 0):
        raise ScheduleError(f"stream_weight_rows adds a column's slices across its threads: threads must be a "
                            f"power of two up to 32 or a multiple of 32, got {threads}")
    if K % (threads * vector * unroll):
        raise ScheduleError(f"stream_weight_rows reads k ({K}) in steps of {threads} threads x {vector} values x "
                            f"{unroll} loads; that must divide it")
    if shape[1] % columns:
        raise ScheduleError(f"stream_weight_rows puts {columns} columns in a block; N = {shape[1]} is not a "
                            f"multiple of it")


class WeightRows(Rule):
    """A matrix product of at most 16 rows whose weights are stored ``[N, K]``, and the
    elementwise stages after it (:func:`stream_weight_rows`): ``threads`` threads on each
    output column's row of weights, ``columns`` columns a block, ``unroll`` 16-byte loads in
    flight a thread. A reassociation (the lanes, the slices, the tree), which ``tc.check``
    reports."""

    name = "weight_rows"

    def applies(self, group, space):
        found = weight_rows_product(group)
        return found is not None and space.stages[found[0]].shape[0] <= SKINNY_ROWS

    def choices(self, group, space):
        return {"threads": [32, 64, 128, 256], "columns": [1, 2, 4, 8], "unroll": [1, 2, 4, 8]}

    def seeds(self, group, space):
        """Four warps on each column's row of weights, a column a block, four loads in
        flight: within 3% of the fastest of eleven sizes at one row and 0.97 of W's copy
        floor (1 x 4096 x 12288 and 1 x 12288 x 4096), the fastest at four rows (0.74 of
        the floor; H100, ``benchmarks/linear_rows.py``, 2026-12-07). A warp a column went
        at 0.83 to 0.91: a column's row is then read by fewer, longer-lived threads. Where
        k's length does not allow that size, the nearest that it does."""
        for threads, columns, unroll in SEED_SIZES:
            seed = dict(threads=threads, columns=columns, unroll=unroll)
            if self.valid(group, space, seed):
                return [seed]
        return []

    def valid(self, group, space, p):
        product, _, w = weight_rows_product(group)
        op = space.stages[product].op
        M, N = op.output.shape
        K = op.reduce_axis[0].extent
        vector = streamed_lanes(op, w)
        return (not group.staged and vector > 1 and K % (p["threads"] * vector * p["unroll"]) == 0
                and N % p["columns"] == 0 and p["threads"] * p["columns"] <= space.target.max_threads_per_block
                and M * vector <= MAX_ROW_LANES)

    def apply(self, s, group, p):
        product, a, w = weight_rows_product(group)
        out = s[group.anchor].op.output
        stream_weight_rows(s, out, product, a, w, threads=p["threads"], columns=p["columns"],
                           vector=streamed_lanes(s[product].op, w), unroll=p["unroll"])


def weight_rows_product(group) -> tuple | None:
    """``(product, a, w)`` of the group's matrix product where :func:`stream_weight_rows`
    can stream it: ``a[i, k]`` and ``w[j, k]``, a 2-D output; else None."""
    found = product_stage(group, any_layout=True)
    if found is None:
        return None
    product, a, w = found
    op = group.stages[product].op
    if len(op.axis) != 2:
        return None
    i, j = op.axis
    (k,) = op.body.axes
    indices = factor_indices(op)
    if indices.get(a) != (i, k) or indices.get(w) != (j, k):
        return None
    return found


__all__ = ["WeightRows", "stream_weight_rows", "weight_rows_product"]
