"""storage_pad(axis, elements): a cached tile's buffer gets unused elements after each
run of one of its axes, so that rows read down a column spread over the shared-memory
banks. The loop nest changes (a larger buffer, a larger stride); what is computed does
not; the cost model sees the bank conflicts go."""

import pytest

import tcomp as tc
from tcomp.cost.analysis import analyze_kernel
from test_double_buffer import _refused_by_check_and_build
from workloads import matmul, matmul_tol, run_and_compare, tiled_matmul


def _padded(M, N, K, pad, bk=8, vector=2, tile="A"):
    w, s, caches = tiled_matmul(M, N, K, bk=bk, vector=vector)
    cache = caches[tile]
    s[cache].storage_pad(s[cache].axis[1], pad)
    return w, s, caches


def test_the_buffer_grows_and_its_rows_take_the_padded_stride():
    w, s, _ = _padded(8, 8, 16, pad=4)
    text = str(tc.lower(s))
    assert "A_shared = alloc shared float32[4x12]" in text
    assert "A_shared[i_i * 12 + k_i]" in text


@pytest.mark.parametrize("pad", [1, 2, 4])
def test_padded_tiles_compute_the_same(rng, pad):
    w, s, _ = _padded(7, 9, 19, pad=pad)
    run_and_compare(s, w, rng, **matmul_tol(19))


def test_a_pad_that_keeps_the_lanes_aligned_keeps_the_vector_stores():
    w, s, _ = _padded(8, 8, 16, pad=2, vector=2)
    assert "_store2(A_shared, " in tc.build(s).source
    w, s, _ = _padded(8, 8, 16, pad=1, vector=2)  # rows start on odd elements: one lane at a time
    assert "_store2(A_shared, " not in tc.build(s).source


def test_a_padded_ring_of_tiles(rng):
    w, s, caches = _padded(8, 8, 24, pad=4, vector=1)
    s[caches["A"]].pipeline(3)
    assert "A_shared = alloc shared float32[144]" in str(tc.lower(s))  # 3 tiles of 4 x 12
    run_and_compare(s, w, rng, **matmul_tol(24))


def _column_reads(pad: int):
    """A 32x32 tile of A in shared memory, each thread (32 of them, one warp) reading its
    row down the k loop: without padding, every row starts in bank 0."""
    w = matmul(32, 4, 32)
    C = w["C"]
    s = w.schedule()
    AS = s.cache_read("A", "shared", [C])
    i, j = s[C].axis
    s[C].bind(i, "threadIdx.x")
    s[AS].compute_at(s[C], j)
    s[AS].bind(s[AS].axis[0], "threadIdx.x")
    s[AS].storage_pad(s[AS].axis[1], pad)
    return s


def test_the_cost_model_sees_the_bank_conflicts_go():
    conflicted = analyze_kernel(tc.lower(_column_reads(0)).kernels[0]).l1_wavefronts
    padded = analyze_kernel(tc.lower(_column_reads(1)).kernels[0]).l1_wavefronts
    assert padded < conflicted / 2  # the global loads of the fill count too, unchanged


def test_the_trace_replays_storage_pad():
    w, s, _ = _padded(8, 8, 16, pad=4)
    text = s.trace_source(with_sites=False)
    assert "s['A_shared'].storage_pad(A_shared_j, 4)" in text
    replayed = tc.create_schedule(w.out)
    exec(compile(text, "<trace>", "exec"), {"tc": tc}, scope := {})
    scope["schedule"](replayed, w.out)
    assert str(tc.lower(replayed)) == str(tc.lower(s))


def test_pad_takes_an_axis_of_the_stage_and_a_count():
    w, s, caches = tiled_matmul(8, 8, 16)
    AS = caches["A"]
    with pytest.raises(tc.ScheduleError, match=r"storage_pad pads a dimension of A_shared's buffer"):
        s[AS].storage_pad(s[caches["W"]].axis[0], 4)
    for bad in (-1, 2.5, True):
        with pytest.raises(tc.ScheduleError, match=r"elements must be a non-negative integer"):
            s[AS].storage_pad(s[AS].axis[1], bad)


def test_a_tensor_in_device_memory_keeps_its_layout():
    X = tc.placeholder((4, 8), "float32", name="X")
    Y = tc.compute((4, 8), lambda i, j: X[i, j] * 2.0, name="Y")
    Z = tc.compute((4, 8), lambda i, j: Y[i, j] + 1.0, name="Z")
    s = tc.create_schedule(Z)
    for T in (Y, Z):
        i, j = s[T].axis
        s[T].bind(i, "blockIdx.x")
        s[T].bind(j, "threadIdx.x")
    s[Y].storage_pad(s[Y].axis[1], 1)  # Y stays at root: a global intermediate
    _refused_by_check_and_build(s, "storage_pad of Y: Y is in device memory, where its layout is the tensor's own")
