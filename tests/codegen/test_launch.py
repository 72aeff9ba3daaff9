"""The driver launch path (tcomp/codegen/launch.py) on a GPU: torch tensors take the fast
path when they pass every check, and anything else gets the full check's error; no
NumbaPerformanceWarning reaches the user; launches follow PyTorch's current stream."""

import warnings

import numpy as np
import pytest

import tcomp as tc
from workloads import elementwise_chain

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def chain():
    w = elementwise_chain(5, 7)
    return w, tc.build(w.schedule())


def _tensors(torch, gen):
    x = torch.randn(5, 7, device="cuda", generator=gen)
    z = torch.randn(5, 7, device="cuda", generator=gen)
    return x, z, torch.full((5, 7), float("nan"), device="cuda")


def _reference(w, x, z):
    return w.reference([x.cpu().numpy(), z.cpu().numpy()])


def test_a_one_block_launch_warns_nothing(chain):
    import torch

    w, mod = chain
    x, z, o = _tensors(torch, torch.Generator(device="cuda").manual_seed(0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod(x, z, o)
        torch.cuda.synchronize()
    assert not [c for c in caught if "Performance" in type(c.message).__name__], [str(c.message) for c in caught]
    np.testing.assert_allclose(o.cpu().numpy(), _reference(w, x, z), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("problem, needles", [
    ("dtype", ("argument X", "dtype", "torch.float32", "torch.float64")),
    ("shape", ("argument X", "shape", "(5, 7)", "(7, 5)")),
    ("cpu", ("argument X", "cpu")),
    ("strided", ("argument X", "not contiguous")),
    ("alias", ("output O", "argument X", "alias")),
])
def test_bad_torch_tensors_get_the_full_checks_message(chain, problem, needles):
    import torch

    w, mod = chain
    x, z, o = _tensors(torch, torch.Generator(device="cuda").manual_seed(1))
    bad = {"dtype": x.double(), "shape": x.t().contiguous(), "cpu": x.cpu(),
           "strided": torch.randn(5, 14, device="cuda")[:, ::2], "alias": x}[problem]
    args = (bad, z, o) if problem != "alias" else (x, z, bad)
    with pytest.raises(tc.ArgumentError) as info:
        mod(*args)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_launches_follow_the_current_torch_stream(chain):
    import torch

    w, mod = chain
    x, z, o = _tensors(torch, torch.Generator(device="cuda").manual_seed(2))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        o2 = torch.full((5, 7), float("nan"), device="cuda")
        mod(x, z, o2)
    side.synchronize()
    np.testing.assert_allclose(o2.cpu().numpy(), _reference(w, x, z), rtol=1e-5, atol=1e-6)


def test_a_tensor_subclass_takes_the_checked_path(chain):
    """torch.nn.Parameter is a Tensor subclass: not the fast path's exact type, so the call
    goes through the full check and still launches."""
    import torch

    w, mod = chain
    x, z, o = _tensors(torch, torch.Generator(device="cuda").manual_seed(3))
    mod(torch.nn.Parameter(x, requires_grad=False), z, o)
    torch.cuda.synchronize()
    np.testing.assert_allclose(o.cpu().numpy(), _reference(w, x, z), rtol=1e-5, atol=1e-6)
