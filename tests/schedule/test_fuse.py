"""fuse(outer, inner): two adjacent loops become one of the product extent."""

import numpy as np

import tcomp as tc
from workloads import (assert_ir, check_float, elementwise_chain, matmul, matmul_tol, run, run_and_compare,
                       vector_op)


def _sum2(shape=(3, 5, 7)):
    """S[i] = sum over two reduction axes; Mx[i] = max over the same."""
    X = tc.placeholder(shape, "float32", name="X")
    k1 = tc.reduce_axis(shape[1], "k1")
    k2 = tc.reduce_axis(shape[2], "k2")
    S = tc.compute(shape[:1], lambda i: tc.sum(X[i, k1, k2], axis=[k1, k2]), name="S")
    Mx = tc.compute(shape[:1], lambda i: tc.max(X[i, k1, k2], axis=[k1, k2]), name="Mx")
    return X, S, Mx


def test_fuse_handle():
    w = matmul(4, 6, 2)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    f = s[C].fuse(i, j)
    assert (f.name, f.extent, f.kind) == ("i_j_f", 24, "spatial")
    assert s[C].leaf_vars == [f, s[C].reduce_axis[0]]


def test_fuse_golden():
    w = elementwise_chain(2, 3)
    s = w.schedule()
    O = w["O"]
    s[w["B"]].compute_inline()
    s[w["S"]].compute_inline()
    i, j = s[O].axis
    s[O].fuse(i, j)
    assert_ir(s, """
        kernel k_O(X, Z, O)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i_j_f in range(6):
            O[i_j_f] = silu(X[i_j_f] * 2.0 + Z[i_j_f]) * 0.5 - Z[i_j_f]
    """)


def test_fuse_then_split_onto_blocks_and_threads(rng):
    """11 x 13 = 143 elements fused and split by 64: two full blocks and a tail."""
    w = matmul(11, 13, 5)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    f = s[C].fuse(i, j)
    fo, fi = s[C].split(f, 64)
    s[C].bind(fo, "blockIdx.x")
    s[C].bind(fi, "threadIdx.x")
    assert tc.lower(s).kernels[0].grid == (3, 1, 1)
    run_and_compare(s, w, rng, **matmul_tol(5))


def test_fuse_inner_tile_loops_onto_threads(rng):
    w = matmul(9, 13, 5)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 4, 8)
    t = s[C].fuse(ii, ji)
    s[C].bind(t, "threadIdx.x")
    assert tc.lower(s).kernels[0].block == (32, 1, 1)
    run_and_compare(s, w, rng, **matmul_tol(5))


def test_fuse_of_split_loops_restores_the_axis(rng):
    """fuse(split(i)) traverses i in order again; the tail guard remains correct."""
    X, O = vector_op(37)
    s = tc.create_schedule(O)
    io, ii = s[O].split(s[O].axis[0], 8)
    f = s[O].fuse(io, ii)
    assert f.extent == 40
    x = rng.standard_normal(37).astype(np.float32)
    got = run(s, [x])
    check_float(got, x.astype(np.float64) * 2 + 1, rtol=1e-6, atol=1e-6)


def test_fuse_two_reduction_axes(rng):
    X, S, Mx = _sum2()
    x = (rng.standard_normal((3, 5, 7)) - 5).astype(np.float32)  # all negative: max's identity matters
    for T, want in ((S, x.astype(np.float64).sum(axis=(1, 2))), (Mx, x.max(axis=(1, 2)))):
        s = tc.create_schedule(T)
        k1, k2 = s[T].reduce_axis
        f = s[T].fuse(k1, k2)
        assert (f.kind, f.extent) == ("reduce", 35)
        fo, fi = s[T].split(f, 4)
        s[T].bind(s[T].axis[0], "threadIdx.x")
        got = run(s, [x])
        check_float(got, want, rtol=1e-5, atol=1e-5)
        check_float(got, tc.evaluate(T, {X: x}), rtol=1e-6, atol=1e-6)


def test_fuse_three_loops(rng):
    X = tc.placeholder((2, 3, 5), "float32", name="X")
    O = tc.compute((2, 3, 5), lambda a, b, c: X[a, b, c] * 3.0, name="O")
    s = tc.create_schedule(O)
    a, b, c = s[O].axis
    f = s[O].fuse(s[O].fuse(a, b), c)
    assert f.extent == 30
    s[O].bind(f, "threadIdx.x")
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    got = run(s, [x])
    np.testing.assert_array_equal(got, x * np.float32(3.0))


def test_fused_loops_of_two_stages_with_one_name_stay_apart():
    """``(a // 4) * 4 + a % 4`` folds to ``a``; with two different loops that happen to
    share a name (``i_j_f`` of a consumer and of a producer computed inside it) it must
    not. The simplifier compared the operands by their printed text, and a row max
    computed at a fused loop read the wrong row (found by the schedule fuzzer)."""
    from tcomp.ir.expr import IntImm, Var, binary
    from tcomp.ir.simplify import simplify

    outer, inner = Var("i_j_f", "int32"), Var("i_j_f", "int32")
    four = IntImm(4)
    same = binary("+", binary("*", binary("//", outer, four), four), binary("%", outer, four))
    apart = binary("+", binary("*", binary("//", outer, four), four), binary("%", inner, four))
    assert simplify(same) is outer
    assert simplify(apart).a is not outer and "%" in str(simplify(apart))


def test_a_producer_at_a_fused_loop_reads_its_own_row(rng):
    """The fuzzer's schedule: R (a row max) computed at Q's fused loop, X cached twice
    into registers, the inner cache fused too."""
    from workloads import rowmax_quant

    w = rowmax_quant(4, 4)
    X, Q = w["X"], w["Q"]
    s = w.schedule()
    XL = s.cache_read(X, "local", [s["R"]])
    XL2 = s.cache_read(X, "local", [s[XL]])
    f = s[Q].fuse(*s[Q].axis)
    s[XL2].fuse(*s[XL2].axis)
    s["R"].compute_at(s[Q], f)
    s[XL].compute_at(s["R"], s["R"].axis[0])
    s[XL2].compute_at(s[XL], s[XL].axis[0])
    run_and_compare(s, w, rng)
