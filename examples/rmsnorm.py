"""RMSNorm of an LLM layer in bfloat16 (the chapter's section 5.2.4: 1024 rows of 4096 with
a gamma): Y = bf16(X * rsqrt(mean(X^2) + eps) * gamma), the sum of squares in float32.

The schedule is one kernel, with a block per row:
1. The row is copied once into shared memory, 16 bytes per thread and load.
2. Each thread adds the squares of its interleaved slice of the row into shared memory.
3. After a barrier, every thread adds the slices in the same fixed order into its own
   register. A row's statistic is complete before anything reads it, which ``tc.check``
   holds.
4. The normalized row is written 8 elements (16 bytes) per thread and store, read from
   shared memory.

    tcomp check examples/rmsnorm.py
    tcomp bench examples/rmsnorm.py          # on a GPU
"""

import tcomp as tc

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


def schedule(s, out, threads=256, vector=8):
    """A block of ``threads`` per row. The row is staged in shared memory (``vector``
    elements per copy). The sum of squares is cut into ``threads`` interleaved slices
    (``s.rfactor``) in shared memory, and each thread adds the slices. The output is
    written ``vector`` elements per thread and store. ``threads`` must divide the row's
    length, and ``vector`` too."""
    row_cache = s.cache_read("X", "shared", ["SS", out.name])
    i, j = s[out].axis
    s[out].bind(i, "blockIdx.x")
    j, lanes = s[out].split(j, vector)
    steps, thread = s[out].split(j, threads)
    s[out].reorder(thread, steps, lanes)
    s[out].bind(thread, "threadIdx.x")
    s[out].vectorize(lanes)
    slices = s.rfactor("SS", threads, interleaved=True)
    s["SS"].compute_at(s[out], i)
    s[slices].set_scope("shared")
    s[slices].compute_at(s[out], i)
    s[slices].bind(s[slices].axis[0], "threadIdx.x")
    s[row_cache].compute_at(s[out], i)
    _, columns = s[row_cache].axis
    columns, copy_lanes = s[row_cache].split(columns, vector)
    s[row_cache].vectorize(copy_lanes)
    _, copier = s[row_cache].split(columns, threads)
    s[row_cache].bind(copier, "threadIdx.x")
