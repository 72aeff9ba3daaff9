"""compute_at(consumer, axis): a producer computed inside a consumer's loop, over the
region that one iteration of that loop reads, into storage local to the loop."""

import numpy as np
import pytest

import tcomp as tc
from tcomp.ir.stmt import Allocate
from tcomp.ir.visitor import walk
from workloads import assert_ir, check_float, matmul_silu_quant, rowmax_quant, run, run_and_compare


def test_compute_at_golden_tile_region():
    """C at Q.j_o: one 1 x 4 strip of C per iteration, guarded at the tail column."""
    w = matmul_silu_quant(4, 6, 3)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    jo, ji = s[Q].split(j, 4)
    s[Y].compute_inline()
    s[C].compute_at(s[Q], jo)
    assert_ir(s, """
        kernel k_Q(A, W, Q)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(4):
            for j_o in range(1):
              C = alloc local float32[1x4]
              for i_2 in range(1):
                for j in range(4):
                  C[i_2 * 4 + j] = 0.0
                  for k in range(3):
                    C[i_2 * 4 + j] = C[i_2 * 4 + j] + A[i * 3 + i_2 * 3 + k] * W[k * 6 + j_o * 4 + j]
              for j_i in range(4):
                Q[i * 6 + j_o * 4 + j_i] = int8(min(max(round(silu(C[j_i]) / 0.05), -128.0), 127.0))
            C = alloc local float32[1x4]
            for i_2 in range(1):
              for j in range(4):
                if j + 4 < 6:
                  C[i_2 * 4 + j] = 0.0
                for k in range(3):
                  if j + 4 < 6:
                    C[i_2 * 4 + j] = C[i_2 * 4 + j] + A[i * 3 + i_2 * 3 + k] * W[k * 6 + j + 4]
            for j_i in range(4):
              if j_i + 4 < 6:
                Q[i * 6 + j_i + 4] = int8(min(max(round(silu(C[j_i]) / 0.05), -128.0), 127.0))
    """)


def test_compute_at_golden_row_statistic():
    """The row max is computed once per row, before the row is quantized."""
    w = rowmax_quant(2, 5)
    R, Q = w["R"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    s[R].compute_at(s[Q], i)
    assert_ir(s, """
        kernel k_Q(X, Q)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            R = alloc local float32[1]
            for i_2 in range(1):
              R[i_2] = -inf
              for k in range(5):
                R[i_2] = max(R[i_2], abs(X[i * 5 + i_2 * 5 + k]))
            for j in range(5):
              Q[i * 5 + j] = int8(min(max(round(X[i * 5 + j] / (R[0] / 127.0)), -128.0), 127.0))
    """)


def test_compute_at_golden_shared_scope_has_barriers():
    """A reduction into shared memory that no thread loop covers: one thread accumulates
    (the others would race on the read-modify-write), then a barrier before the readers."""
    w = rowmax_quant(2, 5)
    R, Q = w["R"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(j, "threadIdx.x")
    s[R].compute_at(s[Q], i)
    s[R].set_scope("shared")
    assert_ir(s, """
        kernel k_Q(X, Q)  # grid=(2, 1, 1) block=(5, 1, 1)
          for i in range(2):  # blockIdx.x
            R = alloc shared float32[1]
            for i_2 in range(1):
              for threadIdx_x in range(5):  # threadIdx.x
                if threadIdx_x == 0:
                  R[i_2] = -inf
              for k in range(5):
                for threadIdx_x in range(5):  # threadIdx.x
                  if threadIdx_x == 0:
                    R[i_2] = max(R[i_2], abs(X[i * 5 + i_2 * 5 + k]))
            syncthreads()
            for j in range(5):  # threadIdx.x
              Q[i * 5 + j] = int8(min(max(round(X[i * 5 + j] / (R[0] / 127.0)), -128.0), 127.0))
            syncthreads()
    """)


def test_compute_at_records_the_placement():
    w = matmul_silu_quant(4, 6, 3)
    s = w.schedule()
    i, j = s[w["Q"]].axis
    s[w["C"]].compute_at(s[w["Q"]], j)
    att = s[w["C"]].attach
    assert (att.kind, att.stage, att.axis) == ("at", s[w["Q"]], j)


def test_compute_at_tile_with_tails(rng):
    """C per 8 x 8 tile of Q on 13 x 17 (no tile divides), SiLU inlined."""
    w = matmul_silu_quant(13, 17, 19)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    io, jo, ii, ji = s[Q].tile(i, j, 8, 8)
    s[Y].compute_inline()
    s[C].compute_at(s[Q], jo)
    s[Q].bind(io, "blockIdx.y")
    s[Q].bind(jo, "blockIdx.x")
    s[Q].bind(ji, "threadIdx.x")
    (buf,) = [b for b in _allocs(s) if b.name == "C"]
    assert buf.shape == (8, 8) and buf.scope == "local"
    run_and_compare(s, w, rng)


def test_compute_at_innermost_per_element_chain(rng):
    """Y at Q.j_i and C at Y.j: one element of each per thread."""
    w = matmul_silu_quant(13, 17, 19)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    io, jo, ii, ji = s[Q].tile(i, j, 8, 8)
    s[Y].compute_at(s[Q], ji)
    s[C].compute_at(s[Y], s[Y].axis[1])
    s[Q].bind(ii, "threadIdx.y")
    s[Q].bind(ji, "threadIdx.x")
    assert {b.name: b.shape for b in _allocs(s)} == {"Y": (1, 1), "C": (1, 1)}
    run_and_compare(s, w, rng)


@pytest.mark.parametrize("at", ["i", "j"])
def test_compute_at_row_max_recomputed_or_not(rng, at):
    """At Q.i the row max is computed once per row; at Q.j once per element. Both are
    the algorithm: the whole row is read before any element is quantized."""
    w = rowmax_quant(7, 29)
    R, Q = w["R"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    s[R].compute_at(s[Q], i if at == "i" else j)
    if at == "i":
        jo, ji = s[Q].split(j, 8)
        s[Q].bind(ji, "threadIdx.x")
    run_and_compare(s, w, rng, max_off=0)


def test_compute_at_shared_row_max_filled_once_per_block(rng):
    w = rowmax_quant(3, 29)
    R, Q = w["R"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    jo, ji = s[Q].split(j, 16)
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(ji, "threadIdx.x")
    s[R].compute_at(s[Q], i)
    s[R].set_scope("shared")
    (k,) = s[R].reduce_axis
    ko, ki = s[R].split(k, 8)
    run_and_compare(s, w, rng, max_off=0)


def test_compute_at_a_reduction_loop_of_the_consumer(rng):
    """An elementwise producer of A computed inside the consumer's k loop: a point per k."""
    M, N, K = 5, 6, 7
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    A2 = tc.compute((M, K), lambda i, k: A[i, k] * 2.0, name="A2")
    k = tc.reduce_axis(K, "k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A2[i, k] * W[k, j], axis=k), name="C")
    s = tc.create_schedule(C)
    (kk,) = s[C].reduce_axis
    s[A2].compute_at(s[C], kk)
    assert [b.shape for b in _allocs(s)] == [(1, 1)]
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    got = run(s, [a, b])
    check_float(got, (2.0 * a.astype(np.float64)) @ b, rtol=1e-5, atol=1e-5)
    check_float(got, tc.evaluate(C, {A: a, W: b}), rtol=1e-6, atol=1e-6)


def test_compute_at_two_producers_at_different_depths(rng):
    """P at V.i feeds both U (placed at V.j) and V itself."""
    X = tc.placeholder((5, 7), "float32", name="X")
    P = tc.compute((5, 7), lambda i, j: X[i, j] * 2.0, name="P")
    U = tc.compute((5, 7), lambda i, j: P[i, j] + 1.0, name="U")
    V = tc.compute((5, 7), lambda i, j: P[i, j] * U[i, j], name="V")
    s = tc.create_schedule(V)
    s[P].compute_at(s[V], s[V].axis[0])
    s[U].compute_at(s[V], s[V].axis[1])
    x = rng.standard_normal((5, 7)).astype(np.float32)
    got = run(s, [x])
    x64 = x.astype(np.float64)
    check_float(got, 2 * x64 * (2 * x64 + 1), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("factor", [2, 4, 9])
def test_compute_at_stencil_region_overlaps(rng, factor):
    """D[i] = P[i] + P[i + 1]: each tile of D needs factor + 1 values of P."""
    X = tc.placeholder((10,), "float32", name="X")
    P = tc.compute((10,), lambda i: X[i] * X[i], name="P")
    D = tc.compute((9,), lambda i: P[i] + P[i + 1], name="D")
    s = tc.create_schedule(D)
    io, ii = s[D].split(s[D].axis[0], factor)
    s[P].compute_at(s[D], io)
    s[D].bind(ii, "threadIdx.x")
    assert [b.shape for b in _allocs(s)] == [(factor + 1,)]
    x = rng.standard_normal(10).astype(np.float32)
    got = run(s, [x])
    sq = x * x
    np.testing.assert_array_equal(got, sq[:-1] + sq[1:])


def test_compute_at_2d_stencil_tile(rng):
    X = tc.placeholder((9, 9), "float32", name="X")
    P = tc.compute((9, 9), lambda i, j: X[i, j] * 2.0, name="P")
    D = tc.compute((8, 8), lambda i, j: P[i, j] + P[i + 1, j + 1] + P[i, j + 1], name="D")
    s = tc.create_schedule(D)
    i, j = s[D].axis
    io, jo, ii, ji = s[D].tile(i, j, 3, 3)
    s[P].compute_at(s[D], jo)
    s[D].bind(ji, "threadIdx.x")
    assert [b.shape for b in _allocs(s)] == [(4, 4)]
    x = rng.standard_normal((9, 9)).astype(np.float32)
    got = run(s, [x])
    np.testing.assert_array_equal(got, tc.evaluate(D, {X: x}))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # uint32 index wrap, see below
def test_compute_at_a_fused_loop(rng):
    """C at a split of the fused (i, j) loop: the region is over-approximated through
    // and %, and still right. NOTE: the lowered index of C keeps a term and its negation
    (the simplifier does not cancel equal non-affine atoms), which wraps in uint32."""
    w = matmul_silu_quant(5, 6, 3)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    fo, fi = s[Q].split(s[Q].fuse(i, j), 4)
    s[Y].compute_inline()
    s[C].compute_at(s[Q], fo)
    s[Q].bind(fi, "threadIdx.x")
    run_and_compare(s, w, rng)


def test_compute_at_with_another_reader_outside_is_an_error():
    X = tc.placeholder((5, 7), "float32", name="X")
    P = tc.compute((5, 7), lambda i, j: X[i, j] * 2.0, name="P")
    U = tc.compute((5, 7), lambda i, j: P[i, j] + 1.0, name="U")
    V = tc.compute((5, 7), lambda i, j: P[i, j] * U[i, j], name="V")
    s = tc.create_schedule(V)
    s[P].compute_at(s[U], s[U].axis[0])
    with pytest.raises(tc.ScheduleError) as info:
        tc.lower(s)
    msg = str(info.value)
    assert "P" in msg and "U" in msg and "V" in msg and "cache_read" in msg


def test_compute_at_inside_an_inlined_stage_is_an_error():
    w = matmul_silu_quant(4, 6, 3)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    s[C].compute_at(s[Y], s[Y].axis[0])
    s[Y].compute_inline()
    with pytest.raises(tc.ScheduleError, match="inlined"):
        tc.lower(s)


def _allocs(s):
    from tcomp.ir.stmt import Allocate
    from tcomp.ir.visitor import walk

    # NOTE: dict keys, not a list: a partitioned loop holds its buffers' Allocate once per part
    return list({n.buffer: None for k in tc.lower(s).kernels for n in walk(k.body) if isinstance(n, Allocate)})


def test_compute_at_shared_reduction_is_race_free(rng, preempted_threads):
    M, N, K = 8, 8, 16
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, "k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    D = tc.compute((M, N), lambda i, j: C[i, j] * 2.0, name="D")
    s = tc.create_schedule(D)
    i, j = s[D].axis
    io, ii = s[D].split(i, 4)
    s[D].bind(io, "blockIdx.x")
    s[D].bind(ii, "threadIdx.y")
    s[D].bind(j, "threadIdx.x")
    s[C].compute_at(s[D], io)
    s[C].set_scope("shared")
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    mod = tc.build(s)
    for _ in range(5):
        out = np.full((M, N), np.nan, np.float32)
        mod(a, b, out)
        check_float(out, 2.0 * (a.astype(np.float64) @ b), rtol=1e-5, atol=1e-5)


def test_global_scope_at_a_loop_stores_and_loads_absolute_indices(rng):
    """set_scope("global") on a stage computed at a consumer's loop: the buffer is the
    whole tensor in device memory, written and read at the tensor's own indices."""
    X = tc.placeholder((8,), "float32", name="X")
    P = tc.compute((8,), lambda i: X[i] * 2.0, name="P")
    O = tc.compute((8,), lambda i: P[i] + 1.0, name="O")
    s = tc.create_schedule(O)
    io, ii = s[O].split(s[O].axis[0], 4)
    s[P].compute_at(s[O], io)
    s[P].set_scope("global")
    x = rng.standard_normal(8).astype(np.float32)
    check_float(run(s, [x]), x.astype(np.float64) * 2 + 1, rtol=1e-6, atol=1e-6)
    # the kernel's argument P itself, not a per-thread array of the whole tensor that
    # shadows it (which an earlier version allocated, so that P was never in device memory)
    program = tc.lower(s)
    assert [b.name for b in program.intermediates] == ["P"]
    assert not any(isinstance(n, Allocate) for n in walk(program.kernels[0].body))
    assert "cuda.local.array" not in tc.build(s).source


def test_placement_at_a_loop_split_afterwards_is_a_schedule_error():
    w = matmul_silu_quant(4, 8, 4)
    C, Q = w["C"], w["Q"]
    s = w.schedule()
    s["Y"].compute_inline()
    i, j = s[Q].axis
    s[C].compute_at(s[Q], j)
    s[Q].split(j, 4)
    with pytest.raises(tc.ScheduleError, match=r"C is placed at Q\.j \(compute_at at .*test_compute_at.py:\d+\), "
                                               r"which is no longer a loop of Q.*loops are now i, j_o, j_i"):
        tc.lower(s)


def test_shared_reduction_inside_a_thread_loop_it_does_not_use_has_one_writer(rng, preempted_threads):
    """R (a row max in shared memory) computed at Q's column loop, which is bound to
    threadIdx.x: R's updates do not depend on the column, so only column 0 writes them."""
    w = rowmax_quant(3, 6)
    R, Q = w["R"], w["Q"]
    s = w.schedule()
    i, j = s[Q].axis
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(j, "threadIdx.x")
    s[R].compute_at(s[Q], j)
    s[R].set_scope("shared")
    text = str(tc.lower(s))
    assert "if j == 0:" in text
    for _ in range(3):
        run_and_compare(s, w, rng, max_off=0)
