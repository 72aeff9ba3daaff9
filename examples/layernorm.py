"""LayerNorm of an LLM layer in bfloat16 (1024 rows of 4096, with gamma and beta):
Y = bf16((X - mean) * rsqrt(var + eps) * gamma + beta). The mean and the variance are per
row, in float32, and the variance is taken around the mean (two passes over the row, not
E[x^2] - E[x]^2).

The hand schedule is one kernel, with a block per row (``rows_in_blocks``):
1. The row is copied once into shared memory.
2. The mean is taken over interleaved slices (a thread each, 256 of them), which the
   threads add together in a tree (warp shuffles, then the warps' totals).
3. The variance is taken the same way, once the mean is complete.
4. The normalized row is written 8 elements per thread and store.

    tcomp check examples/layernorm.py
    tcomp bench examples/layernorm.py          # on a GPU
"""

import tcomp as tc
from tcomp.search.tiling import rows_in_blocks

EPS = 1e-5


def algorithm(M=1024, N=4096):
    """Y = bf16((X - mean) * rsqrt(var + 1e-5) * gamma + beta), X, gamma, beta in bfloat16."""
    X = tc.placeholder((M, N), "bfloat16", name="X")
    gamma = tc.placeholder((N,), "bfloat16", name="gamma")
    beta = tc.placeholder((N,), "bfloat16", name="beta")
    k = tc.reduce_axis(N, name="k")
    Sx = tc.compute((M,), lambda i: tc.sum(tc.cast(X[i, k], "float32"), axis=k), name="Sx")
    D = tc.compute((M, N), lambda i, j: tc.cast(X[i, j], "float32") - Sx[i] / float(N), name="D")
    k2 = tc.reduce_axis(N, name="k2")
    Sd = tc.compute((M,), lambda i: tc.sum(D[i, k2] * D[i, k2], axis=k2), name="Sd")
    return tc.compute((M, N), lambda i, j: tc.cast(D[i, j] * tc.rsqrt(Sd[i] / float(N) + EPS)
                                                   * tc.cast(gamma[j], "float32") + tc.cast(beta[j], "float32"),
                                                   "bfloat16"), name="Y")


def schedule(s, out, threads=None, vector=8, combine="tree", slices=None, stage_row=True,
             row_stages="inline", rows=1, vector_slices=None):
    """One kernel, a block of ``threads`` per row (``rows_in_blocks``; by default
    ``staged_row_threads``, 256 at 4096): the row staged in shared memory; the row's sum,
    then its sum of squared deviations, in interleaved slices, each thread reading its
    slice ``vector`` elements at a time (``vector_slices``; by default where ``threads *
    vector`` fit in a row) and the threads adding the slices together in a tree
    (``combine``); the deviations inlined
    (``row_stages="shared"``: computed once into a shared row). ``rows`` > 1: that many
    rows a block, a row on each ``threadIdx.y`` (a warp a row for short rows)."""
    between = ("D",)
    rows_in_blocks(s, out, "X", readers=["Sx", "D"], statistics=["Sx", "Sd"], threads=threads, vector=vector,
                   inline=between if row_stages == "inline" else (),
                   shared_stages=between if row_stages == "shared" else (),
                   combine=combine, slices=slices, stage_row=stage_row, rows=rows,
                   vector_slices=vector_slices)
