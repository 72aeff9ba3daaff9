"""A row softmax in float32 (4096 rows of 4096, the issue's measured case): Y = exp(X -
max_k X) / sum_k exp(X - max_k X), each row on its own.

As written it is four operators: the max, the exponentials, their sum and the division.
The hand schedule runs them in one kernel, with a block per row (``rows_in_blocks``):
1. The row is copied once into shared memory, 16 bytes per thread and copy.
2. The row's max is taken over interleaved slices (64 for a row of 4096), each thread
   reading its slice 16 bytes at a time; every thread adds the slices.
3. The sum of the exponentials is taken the same way, computed from the row in shared
   memory; the exponentials are never written.
4. The row is written 4 elements per thread and store; each output computes its
   exponential again.

    tcomp check examples/softmax.py
    tcomp bench examples/softmax.py          # on a GPU
"""

import tcomp as tc
from tcomp.search.tiling import rows_in_blocks, rows_over_blocks


def algorithm(M=4096, N=4096):
    """Y[i, j] = exp(X[i, j] - Mx[i]) / S[i] with Mx the row's max and S the row's sum of
    the exponentials, all in float32."""
    X = tc.placeholder((M, N), "float32", name="X")
    k = tc.reduce_axis(N, name="k")
    Mx = tc.compute((M,), lambda i: tc.max(X[i, k], axis=k), name="Mx")
    E = tc.compute((M, N), lambda i, j: tc.exp(X[i, j] - Mx[i]), name="E")
    k2 = tc.reduce_axis(N, name="k2")
    S = tc.compute((M,), lambda i: tc.sum(E[i, k2], axis=k2), name="S")
    return tc.compute((M, N), lambda i, j: E[i, j] / S[i], name="Y")


def schedule(s, out, threads=None, vector=4, combine="tree", slices=None, stage_row=True,
             row_stages="inline", rows=1, vector_slices=None):
    """One kernel, a block of ``threads`` per row (``rows_in_blocks``; by default
    ``staged_row_threads``: 256, or 1024 where the staged row leaves an SM one block): the
    row staged in shared memory; its max, then its sum of exponentials, in interleaved
    slices; the exponentials inlined into the sum and the output (``row_stages="shared"``:
    computed once into a shared row that both read). ``rows`` > 1: that many rows a
    block, a row on each ``threadIdx.y`` (a warp a row for short rows). ``vector_slices``:
    each thread reads its slice ``vector`` elements at a time (by default where ``threads *
    vector`` fit in a row); ``combine``: the threads add
    the slices together in a tree (warp shuffles, then the warps' totals). The defaults
    measured 49.6 us at 4096 x 4096 (53.0 us with 64 threads each adding every slice, 60.7
    with one thread adding scalar slices) and 391.5 us at 4096 x 32768 (411.1 with every
    thread adding the slices' groups) on an H100 (``benchmarks/row_operators.py``)."""
    between = ("E",)
    rows_in_blocks(s, out, "X", readers=["Mx", "E"], statistics=["Mx", "S"], threads=threads, vector=vector,
                   inline=between if row_stages == "inline" else (),
                   shared_stages=between if row_stages == "shared" else (),
                   combine=combine, slices=slices, stage_row=stage_row, rows=rows,
                   vector_slices=vector_slices)


def split(s, out, segments=64, threads=256, vector=4):
    """Few long rows (a decode step's vocabulary softmax, 1 x 151936): each statistic in
    ``segments`` segments of the row on blocks of their own (``rows_over_blocks``, the
    chapter's Figure 5-11), the max's segments merged by a small kernel, the sum's by
    every block of the output; four launches, the row read three times, every SM busy."""
    rows_over_blocks(s, out, ["Mx", "S"], inline=("E",), segments=segments, threads=threads, vector=vector)


def warps(s, out, rows=4, vector=2, stage_row=True):
    """Short rows (8192 x 1024): a warp a row, ``rows`` rows a block, each lane reading its
    slice of the staged row ``vector`` elements at a time; every lane adds the 32 slices,
    read from the other lanes' registers through warp shuffles
    (``tcomp.lower.warp_shuffle``). The search's choice at 8192 x 1024: 28.2 us on an H100
    against 37.1 us with the row read again from the L2 (``stage_row=False``, which leaves
    the kernel no shared memory and no barrier)."""
    schedule(s, out, threads=32, vector=vector, combine="every_thread", stage_row=stage_row, rows=rows,
             vector_slices=True)


SCHEDULES = {"schedule": schedule, "split": split, "warps": warps}
#: the shapes at which a schedule that does not take the default one is compiled and checked
SCHEDULE_SHAPES = {"split": dict(M=1, N=151936), "warps": dict(M=8192, N=1024)}
