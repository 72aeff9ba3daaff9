"""tc.graph and mod.graph: tcomp launches captured once and replayed on the captured buffers.

In the simulator a graph is a recording of the launches; on a GPU (the gpu-marked test) a
CUDA graph. Both must read the captured buffers at replay time, not copies made at
capture.
"""

import numpy as np
import pytest

import tcomp as tc
from workloads import elementwise_chain, poisoned


def _chain_modules():
    """The unfused matmul -> SiLU -> int8 chain: three modules, one kernel each."""
    M, N, K = 4, 8, 6
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    C_in = tc.placeholder((M, N), "float32", name="C_in")
    Y = tc.compute((M, N), lambda i, j: tc.silu(C_in[i, j]), name="Y")
    Y_in = tc.placeholder((M, N), "float32", name="Y_in")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(Y_in[i, j], 0.05, "int8"), name="Q")
    mods = []
    for out in (C, Y, Q):
        s = tc.create_schedule(out)
        i, j = s[out].axis
        s[out].bind(i, "blockIdx.x")
        s[out].bind(j, "threadIdx.x")
        mods.append(tc.build(s))
    return (M, N, K), (A, W, C, Y, Q), mods


def _reference(a, w):
    c = a.astype(np.float64) @ w.astype(np.float64)
    y = c / (1 + np.exp(-c))
    return np.clip(np.rint(y / 0.05), -128, 127).astype(np.int8)


def test_module_graph_replays_on_the_captured_buffers(rng):
    from numba import cuda

    w = elementwise_chain(5, 7)
    mod = tc.build(w.schedule())
    x, z = w.make_inputs(rng)
    dx, dz, do = cuda.to_device(x), cuda.to_device(z), cuda.to_device(poisoned((5, 7), "float32"))
    g = mod.graph(dx, dz, do)
    assert g.launches == 1
    assert np.isnan(do.copy_to_host()).all()  # a capture records the launches, it does not run them
    g.replay()
    np.testing.assert_allclose(do.copy_to_host(), w.reference([x, z]), rtol=1e-5, atol=1e-6)
    x2, z2 = w.make_inputs(rng)
    dx.copy_to_device(x2)
    dz.copy_to_device(z2)
    do.copy_to_device(poisoned((5, 7), "float32"))
    g.replay()
    np.testing.assert_allclose(do.copy_to_host(), w.reference([x2, z2]), rtol=1e-5, atol=1e-6)


def test_a_chain_of_three_modules_in_one_graph(rng):
    from numba import cuda

    (M, N, K), _, (mm, silu, quant) = _chain_modules()
    a = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((K, N)).astype(np.float32)
    da, dw = cuda.to_device(a), cuda.to_device(w)
    dc, dy = cuda.to_device(poisoned((M, N), "float32")), cuda.to_device(poisoned((M, N), "float32"))
    dq = cuda.to_device(np.full((M, N), -77, np.int8))

    def forward():
        mm(da, dw, dc)
        silu(dc, dy)
        quant(dy, dq)

    g = tc.graph(forward)
    assert g.launches == 3
    a2 = rng.standard_normal((M, K)).astype(np.float32)
    da.copy_to_device(a2)
    dq.copy_to_device(np.full((M, N), -77, np.int8))
    g.replay()
    q = dq.copy_to_host()
    ref = _reference(a2, w)
    assert (np.abs(q.astype(int) - ref) <= 1).all() and (q == ref).mean() > 0.9


def test_numpy_arguments_cannot_be_captured(rng):
    w = elementwise_chain(5, 7)
    mod = tc.build(w.schedule())
    x, z = w.make_inputs(rng)
    with pytest.raises(tc.ArgumentError, match="graph capture needs device arguments"):
        mod.graph(x, z, poisoned((5, 7), "float32"))


def test_a_capture_that_launches_nothing_is_refused():
    with pytest.raises(tc.ArgumentError, match="called no tcomp module"):
        tc.graph(lambda: None)


def test_captures_do_not_nest(rng):
    from numba import cuda

    w = elementwise_chain(5, 7)
    mod = tc.build(w.schedule())
    args = [cuda.to_device(a) for a in w.make_inputs(rng)] + [cuda.to_device(poisoned((5, 7), "float32"))]
    with pytest.raises(tc.CodegenError, match="do not nest"):
        tc.graph(lambda: mod.graph(*args))
    g = mod.graph(*args)  # the failed capture left no capture running
    assert g.launches == 1


def test_a_bad_argument_inside_a_capture_is_the_usual_error(rng):
    from numba import cuda

    w = elementwise_chain(5, 7)
    mod = tc.build(w.schedule())
    dx, dz = (cuda.to_device(a) for a in w.make_inputs(rng))
    with pytest.raises(tc.ArgumentError, match="argument O: expected shape"):
        mod.graph(dx, dz, cuda.to_device(np.zeros((7, 5), np.float32)))


@pytest.mark.gpu
def test_graph_replay_on_the_gpu_with_torch_tensors():
    import torch

    (M, N, K), _, (mm, silu, quant) = _chain_modules()
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(M, K, device="cuda", generator=gen)
    w = torch.randn(K, N, device="cuda", generator=gen)
    c = torch.full((M, N), float("nan"), device="cuda")
    y = torch.full((M, N), float("nan"), device="cuda")
    q = torch.full((M, N), -77, dtype=torch.int8, device="cuda")
    g = tc.graph(lambda: (mm(a, w, c), silu(c, y), quant(y, q)))
    a.copy_(torch.randn(M, K, device="cuda", generator=gen))
    q.fill_(-77)
    g.replay()
    torch.cuda.synchronize()
    ref = _reference(a.cpu().numpy(), w.cpu().numpy())
    got = q.cpu().numpy()
    assert (np.abs(got.astype(int) - ref) <= 1).all() and (got == ref).mean() > 0.9
