"""cache_write(tensor, scope): compute into a local or shared buffer first, then copy
out; the new stage takes over the expression and the reduction."""

import numpy as np
import pytest

import tcomp as tc
from workloads import (assert_ir, elementwise_chain, matmul, matmul_silu_quant, matmul_tol,
                       run_and_compare)


def test_cache_write_moves_the_reduction():
    w = matmul(4, 4, 4)
    C = w["C"]
    s = w.schedule()
    CL = s.cache_write(C, "local")
    assert CL.name == "C_local" and CL.shape == C.shape and CL.dtype == C.dtype
    assert s[C].reduce_axis == () and len(s[CL].reduce_axis) == 1
    assert s[CL].scope == "local" and s[CL].is_cache
    assert s[C].op.input_tensors() == [CL]
    names = [st.name for st in s.stages]
    assert names.index("C_local") < names.index("C")


def test_cache_write_golden_register_accumulator():
    w = matmul(4, 4, 4)
    C = w["C"]
    s = w.schedule()
    CL = s.cache_write(C, "local")
    i, j = s[C].axis
    s[C].bind(j, "threadIdx.x")
    s[CL].compute_at(s[C], j)
    assert_ir(s, """
        kernel k_C(A, W, C)  # grid=(1, 1, 1) block=(4, 1, 1)
          for i in range(4):
            for j in range(4):  # threadIdx.x
              C_local = alloc local float32[1x1]
              for i_2 in range(1):
                for j_2 in range(1):
                  C_local[i_2 + j_2] = 0.0
                  for k in range(4):
                    C_local[i_2 + j_2] = C_local[i_2 + j_2] + A[i * 4 + i_2 * 4 + k] * W[k * 4 + j + j_2]
              C[i * 4 + j] = C_local[0]
    """)


def test_cache_write_local_per_thread_with_tails(rng):
    """The SGEMM ladder's kernel 2 (docs/references.md) on 13 x 11 in 8 x 8 tiles."""
    w = matmul(13, 11, 9)
    C = w["C"]
    s = w.schedule()
    CL = s.cache_write(C, "local")
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 8)
    s[C].bind(io, "blockIdx.y")
    s[C].bind(jo, "blockIdx.x")
    s[C].bind(ii, "threadIdx.y")
    s[C].bind(ji, "threadIdx.x")
    s[CL].compute_at(s[C], ji)
    ko, ki = s[CL].split(s[CL].reduce_axis[0], 4)
    s[CL].unroll(ki)
    run_and_compare(s, w, rng, **matmul_tol(9))


def test_cache_write_local_register_tile(rng):
    """Each thread accumulates a 2 x 2 block of C in registers (the SGEMM ladder's kernel 5)."""
    w = matmul(12, 10, 6)
    C = w["C"]
    s = w.schedule()
    CL = s.cache_write(C, "local")
    i, j = s[C].axis
    ty, ry = s[C].split(i, 2)
    tx, rx = s[C].split(j, 2)
    s[C].reorder(ty, tx, ry, rx)
    s[C].bind(ty, "threadIdx.y")
    s[C].bind(tx, "threadIdx.x")
    s[CL].compute_at(s[C], tx)
    ci, cj = s[CL].axis
    (k,) = s[CL].reduce_axis
    s[CL].reorder(k, ci, cj)
    s[CL].unroll(ci)
    s[CL].unroll(cj)
    from tcomp.ir.stmt import Allocate
    from tcomp.ir.visitor import walk

    (buf,) = [n.buffer for n in walk(tc.lower(s).kernels[0].body) if isinstance(n, Allocate)]
    assert buf.shape == (2, 2) and buf.scope == "local"
    run_and_compare(s, w, rng, **matmul_tol(6))


def _shared_accumulator(w):
    C = w["C"]
    s = w.schedule()
    CS = s.cache_write(C, "shared")
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 8)
    s[C].bind(io, "blockIdx.y")
    s[C].bind(jo, "blockIdx.x")
    s[C].bind(ii, "threadIdx.y")
    s[C].bind(ji, "threadIdx.x")
    s[CS].compute_at(s[C], jo)
    a, b = s[CS].axis
    s[CS].bind(b, "threadIdx.x")
    return s


def test_cache_write_shared(rng):
    w = matmul(11, 13, 7)
    run_and_compare(_shared_accumulator(w), w, rng, **matmul_tol(7))


def test_cache_write_shared_is_race_free(rng, preempted_threads):
    w = matmul(11, 13, 7)
    s = _shared_accumulator(w)
    mod = tc.build(s)
    xs = w.make_inputs(rng)
    for _ in range(5):
        out = np.full((11, 13), np.nan, np.float32)
        mod(*xs, out)
        np.testing.assert_allclose(out, w.reference(xs), **matmul_tol(7))


def test_cache_write_of_an_elementwise_stage(rng):
    w = elementwise_chain(5, 12)
    O = w["O"]
    s = w.schedule()
    OL = s.cache_write(O, "local")
    i, j = s[O].axis
    jo, ji = s[O].split(j, 4)
    s[O].bind(jo, "threadIdx.x")
    s[OL].compute_at(s[O], jo)
    run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)


def test_cache_write_of_an_intermediate_in_a_fused_pipeline(rng):
    w = matmul_silu_quant(9, 10, 11)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    CL = s.cache_write(C, "local")
    i, j = s[Q].axis
    jo, ji = s[Q].split(j, 4)
    s[Y].compute_inline()
    s[C].compute_at(s[Q], jo)
    s[CL].compute_at(s[C], s[C].axis[1])
    s[Q].bind(i, "threadIdx.y")
    s[Q].bind(ji, "threadIdx.x")
    run_and_compare(s, w, rng)
