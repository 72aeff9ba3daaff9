"""cache_read(tensor, scope, readers): a shared or local copy of a tensor that the
readers read instead, placed with compute_at and filled cooperatively."""

import pytest

import tcomp as tc
from workloads import assert_ir, elementwise_chain, matmul, matmul_tol, rowmax_quant, run_and_compare


def test_cache_read_returns_a_stage_that_readers_read():
    w = matmul(4, 4, 4)
    A, C = w["A"], w["C"]
    s = w.schedule()
    AS = s.cache_read(A, "shared", [s[C]])
    assert AS.name == "A_shared" and AS.shape == A.shape and AS.dtype == A.dtype
    assert s[AS].scope == "shared" and s[AS].is_cache
    assert AS in s[C].op.input_tensors() and A not in s[C].op.input_tensors()
    # a stage for it, before its reader
    names = [st.name for st in s.stages]
    assert names.index("A_shared") < names.index("C")
    # a second copy gets a fresh name
    AL = s.cache_read(AS, "local", [s[C]])
    assert AL.name == "A_shared_local"
    AS2 = s.cache_read(w["W"], "shared", [s[C]])
    assert AS2.name == "W_shared"


def test_cache_read_golden_cooperative_fill():
    w = matmul(4, 4, 4)
    C = w["C"]
    s = w.schedule()
    AS = s.cache_read(w["A"], "shared", [s[C]])
    i, j = s[C].axis
    s[C].bind(i, "blockIdx.x")
    s[C].bind(j, "threadIdx.x")
    ko, ki = s[C].split(s[C].reduce_axis[0], 2)
    s[AS].compute_at(s[C], ko)
    s[AS].bind(s[AS].axis[1], "threadIdx.x")
    assert_ir(s, """
        kernel k_C(A, W, C)  # grid=(4, 1, 1) block=(4, 1, 1)
          for i in range(4):  # blockIdx.x
            for j in range(4):  # threadIdx.x
              C[i * 4 + j] = 0.0
              for k_o in range(2):
                A_shared = alloc shared float32[1x2]
                for i_2 in range(1):
                  for j_2 in range(2):  # threadIdx.x
                    if j_2 < 2:
                      A_shared[i_2 * 2 + j_2] = A[i * 4 + i_2 * 4 + k_o * 2 + j_2]
                syncthreads()
                for k_i in range(2):
                  C[i * 4 + j] = C[i * 4 + j] + A_shared[k_i] * W[k_o * 8 + k_i * 4 + j]
                syncthreads()
    """)


def _shared_matmul(s, w, tile=8, bk=4):
    """The SGEMM ladder's kernel 3 (docs/references.md): shared tiles of A and W, each filled by the whole block."""
    C = w["C"]
    CL = s.cache_write(C, "local")
    AS = s.cache_read(w["A"], "shared", [s[CL]])
    WS = s.cache_read(w["W"], "shared", [s[CL]])
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, tile, tile)
    s[C].bind(io, "blockIdx.y")
    s[C].bind(jo, "blockIdx.x")
    s[C].bind(ii, "threadIdx.y")
    s[C].bind(ji, "threadIdx.x")
    s[CL].compute_at(s[C], ji)
    ko, ki = s[CL].split(s[CL].reduce_axis[0], bk)
    for cache in (AS, WS):
        s[cache].compute_at(s[CL], ko)
        f = s[cache].fuse(*s[cache].axis)
        rest, tid = s[cache].split(f, tile * tile)
        ty, tx = s[cache].split(tid, tile)
        s[cache].bind(ty, "threadIdx.y")
        s[cache].bind(tx, "threadIdx.x")
    return AS, WS


@pytest.mark.parametrize("shape", [(16, 16, 8), (13, 11, 9)])
def test_cache_read_shared_tiles_of_a_matmul(rng, shape):
    M, N, K = shape
    w = matmul(M, N, K)
    s = w.schedule()
    AS, WS = _shared_matmul(s, w)
    from tcomp.ir.stmt import Allocate, Barrier
    from tcomp.ir.visitor import walk

    body = tc.lower(s).kernels[0].body
    shared = {n.buffer.name: n.buffer.shape for n in walk(body)
              if isinstance(n, Allocate) and n.buffer.scope == "shared"}
    assert shared == {"A_shared": (8, 4), "W_shared": (4, 8)}
    assert sum(isinstance(n, Barrier) for n in walk(body)) >= 2
    run_and_compare(s, w, rng, **matmul_tol(K))


def test_cache_read_local_copy_per_reduction_step(rng):
    w = matmul(5, 13, 7)
    C = w["C"]
    s = w.schedule()
    AL = s.cache_read(w["A"], "local", [s[C]])
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    jo, ji = s[C].split(j, 4)
    s[C].reorder(i, jo, k, ji)
    s[AL].compute_at(s[C], k)
    s[C].bind(ji, "threadIdx.x")
    run_and_compare(s, w, rng, **matmul_tol(7))


def test_cache_read_with_two_readers(rng):
    """Z is read by B and by O; one shared copy serves both after inlining B."""
    w = elementwise_chain(3, 29)
    B, S, O = w["B"], w["S"], w["O"]
    s = w.schedule()
    ZS = s.cache_read(w["Z"], "shared", [s[B], s[O]])
    s[S].compute_inline()
    s[B].compute_inline()
    i, j = s[O].axis
    s[O].bind(i, "blockIdx.x")
    s[O].bind(j, "threadIdx.x")
    s[ZS].compute_at(s[O], i)
    s[ZS].bind(s[ZS].axis[1], "threadIdx.x")
    run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)


def test_cache_read_of_a_computed_tensor(rng):
    """The per-row scales R, staged in shared memory for a block of 4 rows."""
    w = rowmax_quant(7, 9)
    R, Q = w["R"], w["Q"]
    s = w.schedule()
    RS = s.cache_read(R, "shared", [s[Q]])
    i, j = s[Q].axis
    io, ii = s[Q].split(i, 4)
    s[Q].bind(io, "blockIdx.x")
    s[Q].bind(ii, "threadIdx.y")
    s[Q].bind(j, "threadIdx.x")
    s[RS].compute_at(s[Q], io)
    s[RS].bind(s[RS].axis[0], "threadIdx.x")
    run_and_compare(s, w, rng, max_off=0)


def test_cache_read_left_at_root_in_shared_memory_is_an_error():
    w = matmul(4, 4, 4)
    s = w.schedule()
    s.cache_read(w["A"], "shared", [s[w["C"]]])
    with pytest.raises(tc.ScheduleError) as info:
        tc.lower(s)
    assert "A_shared" in str(info.value) and "compute_at" in str(info.value)


def test_cache_read_by_name(rng):
    w = matmul(5, 6, 7)
    s = w.schedule()
    AL = s.cache_read("A", "local", ["C"])
    assert AL.name == "A_local"
    s[AL].compute_at(s["C"], s["C"].reduce_axis[0])
    run_and_compare(s, w, rng, **matmul_tol(7))
