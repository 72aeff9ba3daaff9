"""compute_root(): a stage in a kernel of its own, into a global intermediate buffer
(the default placement; also undoes compute_at and compute_inline)."""

import numpy as np

import tcomp as tc
from workloads import assert_ir, elementwise_chain, matmul_silu_quant, run_and_compare


def test_default_is_root_golden():
    w = elementwise_chain(2, 3)
    s = w.schedule()
    assert all(st.attach.kind == "root" for st in s.stages)
    assert_ir(s, """
        B = alloc global float32[2x3]
        S = alloc global float32[2x3]
        kernel k_B(X, Z, B)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            for j in range(3):
              B[i * 3 + j] = X[i * 3 + j] * 2.0 + Z[i * 3 + j]
        kernel k_S(S, B)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            for j in range(3):
              S[i * 3 + j] = silu(B[i * 3 + j])
        kernel k_O(Z, O, S)  # grid=(1, 1, 1) block=(1, 1, 1)
          for i in range(2):
            for j in range(3):
              O[i * 3 + j] = S[i * 3 + j] * 0.5 - Z[i * 3 + j]
    """)


def test_compute_root_undoes_compute_at():
    w = matmul_silu_quant(4, 6, 3)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    s[C].compute_at(s[Q], s[Q].axis[0])
    s[C].compute_root()
    s2 = w.schedule()
    assert str(tc.lower(s)) == str(tc.lower(s2))
    assert s[C].attach.kind == "root"


def test_compute_root_undoes_compute_inline():
    w = elementwise_chain(2, 3)
    s = w.schedule()
    s[w["S"]].compute_inline()
    s[w["S"]].compute_root()
    assert [k.name for k in tc.lower(s).kernels] == ["k_B", "k_S", "k_O"]


def test_root_stages_each_with_their_own_binding(rng):
    w = elementwise_chain(13, 11)
    B, S, O = w["B"], w["S"], w["O"]
    s = w.schedule()
    s[B].bind(s[B].axis[1], "threadIdx.x")
    s[S].bind(s[S].axis[0], "threadIdx.x")
    i, j = s[O].axis
    s[O].bind(i, "blockIdx.x")
    s[O].bind(j, "threadIdx.x")
    p = tc.lower(s)
    assert [(k.grid, k.block) for k in p.kernels] == [((1, 1, 1), (11, 1, 1)), ((1, 1, 1), (13, 1, 1)),
                                                     ((13, 1, 1), (11, 1, 1))]
    assert sorted(b.name for b in p.intermediates) == ["B", "S"]
    run_and_compare(s, w, rng, rtol=1e-5, atol=1e-6)


def test_root_reduction_feeding_a_fused_epilogue(rng):
    """C at root in its own kernel; Y inlined into Q."""
    w = matmul_silu_quant(7, 9, 13)
    C, Y, Q = w["C"], w["Y"], w["Q"]
    s = w.schedule()
    s[C].compute_at(s[Q], s[Q].axis[0])
    s[C].compute_root()
    s[Y].compute_inline()
    s[C].bind(s[C].axis[1], "threadIdx.x")
    s[Q].bind(s[Q].axis[1], "threadIdx.x")
    assert [k.name for k in tc.lower(s).kernels] == ["k_C", "k_Q"]
    run_and_compare(s, w, rng)


def test_module_runs_twice_with_fresh_intermediates(rng):
    """The global intermediates are reused between calls; the second call must not see
    the first call's values (each kernel overwrites all of its buffer)."""
    w = elementwise_chain(5, 6)
    s = w.schedule()
    mod = tc.build(s)
    for _ in range(2):
        xs = w.make_inputs(rng)
        out = np.full((5, 6), np.nan, np.float32)
        mod(*xs, out)
        np.testing.assert_allclose(out, w.reference(xs), rtol=1e-5, atol=1e-6)
