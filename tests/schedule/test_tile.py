"""tile(x, y, fx, fy): split both loops and order them x_o, y_o, x_i, y_i."""

import numpy as np

import tcomp as tc
from workloads import assert_ir, elementwise_chain, matmul, matmul_tol, run_and_compare


def test_tile_loop_order_and_extents():
    w = matmul(37, 29, 5)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 4)
    (k,) = s[C].reduce_axis
    assert s[C].leaf_vars == [io, jo, ii, ji, k]
    assert [v.extent for v in (io, jo, ii, ji)] == [5, 8, 8, 4]


def test_tile_records_one_trace_entry():
    w = matmul(8, 8, 2)
    s = w.schedule()
    i, j = s[w.out].axis
    s[w.out].tile(i, j, 4, 4)
    assert [e.method for e in s.trace] == ["tile"]


def test_tile_golden():
    w = elementwise_chain(5, 6)
    B, S, O = w["B"], w["S"], w["O"]
    s = w.schedule()
    s[B].compute_inline()
    s[S].compute_inline()
    i, j = s[O].axis
    s[O].tile(i, j, 4, 4)
    assert_ir(s, """
        kernel k_O(X, Z, O)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i_o in range(1):
            for j_o in range(1):
              for i_i in range(4):
                for j_i in range(4):
                  O[i_o * 24 + i_i * 6 + j_o * 4 + j_i] = silu(X[i_o * 24 + i_i * 6 + j_o * 4 + j_i] * 2.0 + Z[i_o * 24 + i_i * 6 + j_o * 4 + j_i]) * 0.5 - Z[i_o * 24 + i_i * 6 + j_o * 4 + j_i]
            for i_i in range(4):
              for j_i in range(4):
                if j_i + 4 < 6:
                  O[i_o * 24 + i_i * 6 + j_i + 4] = silu(X[i_o * 24 + i_i * 6 + j_i + 4] * 2.0 + Z[i_o * 24 + i_i * 6 + j_i + 4]) * 0.5 - Z[i_o * 24 + i_i * 6 + j_i + 4]
          for j_o in range(1):
            for i_i in range(4):
              for j_i in range(4):
                if i_i + 4 < 5:
                  O[i_i * 6 + j_o * 4 + j_i + 24] = silu(X[i_i * 6 + j_o * 4 + j_i + 24] * 2.0 + Z[i_i * 6 + j_o * 4 + j_i + 24]) * 0.5 - Z[i_i * 6 + j_o * 4 + j_i + 24]
          for i_i in range(4):
            for j_i in range(4):
              if i_i + 4 < 5 and j_i + 4 < 6:
                O[i_i * 6 + j_i + 28] = silu(X[i_i * 6 + j_i + 28] * 2.0 + Z[i_i * 6 + j_i + 28]) * 0.5 - Z[i_i * 6 + j_i + 28]
    """)


def test_tile_no_factor_divides_37x29(rng):
    """The classic tail case: 37 x 29 in 8 x 8 tiles, threads on the inner tile."""
    w = matmul(37, 29, 7)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 8)
    s[C].bind(ii, "threadIdx.y")
    s[C].bind(ji, "threadIdx.x")
    run_and_compare(s, w, rng, **matmul_tol(7))


def test_tile_bound_to_grid_with_tails(rng):
    w = matmul(13, 11, 5)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 8)
    for ax, tag in ((io, "blockIdx.y"), (jo, "blockIdx.x"), (ii, "threadIdx.y"), (ji, "threadIdx.x")):
        s[C].bind(ax, tag)
    k = tc.lower(s).kernels[0]
    assert (k.grid, k.block) == ((2, 2, 1), (8, 8, 1))
    run_and_compare(s, w, rng, **matmul_tol(5))


def test_tile_of_a_spatial_and_a_reduction_loop(rng):
    """tile(i, k) interleaves the reduction with spatial loops: i_o, k_o, j, i_i, k_i
    (j keeps its position). The initialization must still happen once per element,
    before k_o."""
    w = matmul(10, 6, 11)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    io, ko, ii, ki = s[C].tile(i, k, 4, 4)
    assert s[C].leaf_vars == [io, ko, j, ii, ki]
    run_and_compare(s, w, rng, **matmul_tol(11))


def test_tile_factors_larger_than_extents(rng):
    w = elementwise_chain(3, 5)
    O = w["O"]
    s = w.schedule()
    i, j = s[O].axis
    io, jo, ii, ji = s[O].tile(i, j, 16, 16)
    assert (io.extent, jo.extent, ii.extent, ji.extent) == (1, 1, 3, 5)
    run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)


def test_tile_then_fuse_outer_tiles_into_one_block_index(rng):
    w = matmul(13, 11, 4)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 8)
    b = s[C].fuse(io, jo)
    s[C].bind(b, "blockIdx.x")
    s[C].bind(ji, "threadIdx.x")
    assert tc.lower(s).kernels[0].grid == (4, 1, 1)
    got = run_and_compare(s, w, rng, **matmul_tol(4))
    assert np.isfinite(got).all()
