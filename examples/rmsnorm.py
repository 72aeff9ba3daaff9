"""RMSNorm of an LLM layer in bfloat16 (the chapter's section 5.2.4: 1024 rows of 4096 with
a gamma): Y = bf16(X * rsqrt(mean(X^2) + eps) * gamma), the sum of squares in float32.

The schedule is one kernel, with a block of 256 threads per row:
1. The row is copied once into shared memory, 16 bytes per thread and load.
2. Each thread adds the squares of its interleaved slice of the row, 8 elements (16
   bytes) at a time, in registers and stores its sum into shared memory.
3. After a barrier, the threads add the slices together in a tree: each warp's 32
   through shuffles, then the 8 warps' totals, after another barrier, the same way;
   every thread ends with the row's sum. A row's statistic is complete before anything
   reads it, which ``tc.check`` holds.
4. The normalized row is written 8 elements (16 bytes) per thread and store, read from
   shared memory.

    tcomp check examples/rmsnorm.py
    tcomp bench examples/rmsnorm.py          # on a GPU
"""

import tcomp as tc
from tcomp.search.tiling import rows_in_blocks, rows_over_blocks

EPS = 1e-6


def algorithm(M=1024, N=4096):
    """Y = bf16(X * rsqrt(sum_k X[i, k]^2 / N + 1e-6) * gamma) with X, gamma in bfloat16."""
    X = tc.placeholder((M, N), "bfloat16", name="X")
    gamma = tc.placeholder((N,), "bfloat16", name="gamma")
    k = tc.reduce_axis(N, name="k")
    SS = tc.compute((M,), lambda i: tc.sum(tc.cast(X[i, k], "float32") * tc.cast(X[i, k], "float32"), axis=k),
                    name="SS")
    return tc.compute((M, N), lambda i, j: tc.cast(tc.cast(X[i, j], "float32") * tc.rsqrt(SS[i] / float(N) + EPS)
                                                   * tc.cast(gamma[j], "float32"), "bfloat16"), name="Y")


def schedule(s, out, threads=None, vector=8, combine="tree", slices=None, stage_row=True, rows=1,
             vector_slices=None):
    """One kernel, a block of ``threads`` per row (``rows_in_blocks``; by default
    ``staged_row_threads``, 256 at 4096): the row staged in shared memory, its sum of
    squares in interleaved slices, each thread reading its slice ``vector`` elements at a
    time (``vector_slices``; by default where ``threads * vector`` fit in a row) and the
    threads adding the slices together in a tree (``combine``), the normalized row
    written ``vector`` elements per thread and store.
    ``rows`` > 1: that many rows a block, a row on each ``threadIdx.y`` (a warp a row for
    short rows). The defaults measured 43.4 us at 7239 x 4096 against 49.6 us at 64
    threads with one thread adding scalar slices (H100, ``benchmarks/row_operators.py``)."""
    rows_in_blocks(s, out, "X", readers=["SS", out.name], statistics=["SS"], threads=threads, vector=vector,
                   combine=combine, slices=slices, stage_row=stage_row, rows=rows,
                   vector_slices=vector_slices)


def split(s, out, segments=8, threads=64, vector=8):
    """Fewer rows than SMs (the chapter's Figure 5-11): the sum of squares in ``segments``
    segments of the row on blocks of their own, merged in a fixed order by every block of
    the output; two launches, the row read twice."""
    rows_over_blocks(s, out, ["SS"], segments=segments, threads=threads, vector=vector)


SCHEDULES = {"schedule": schedule, "split": split}
#: the shapes at which a schedule that does not take the default one is compiled and checked
SCHEDULE_SHAPES = {"split": dict(M=1)}
