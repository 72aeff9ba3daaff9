"""Calling a built module: mod(*inputs, *outputs), numpy arrays, checked before launch.
Every wrong call raises a tc.TcompError subclass that names the argument."""

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from workloads import elementwise_chain, poisoned


@pytest.fixture(scope="module")
def chain():
    w = elementwise_chain(5, 7)
    return w, tc.build(w.schedule())


@pytest.fixture
def args(chain, rng):
    w, mod = chain
    x, z = w.make_inputs(rng)
    return x, z, poisoned((5, 7), "float32")


def _raises(mod, call_args, *needles):
    with pytest.raises(tc.TcompError) as info:
        mod(*call_args)
    assert isinstance(info.value, tc.ArgumentError)
    for needle in needles:
        assert needle in str(info.value), str(info.value)
    return str(info.value)


def test_module_signature(chain):
    w, mod = chain
    assert [b.name for b in mod.arg_buffers] == ["X", "Z", "O"]
    assert "X, Z, O" in repr(mod)


def test_correct_call_writes_the_output(chain, args):
    w, mod = chain
    x, z, o = args
    mod(x, z, o)
    np.testing.assert_allclose(o, w.reference([x, z]), rtol=1e-5, atol=1e-6)


def test_too_few_arguments(chain, args):
    w, mod = chain
    _raises(mod, args[:2], "3 arguments", "X, Z, O", "got 2")


def test_too_many_arguments(chain, args):
    w, mod = chain
    _raises(mod, args + (args[2].copy(),), "3 arguments", "got 4")


@pytest.mark.parametrize("which, name", [(0, "X"), (1, "Z"), (2, "O")])
def test_wrong_shape(chain, args, which, name):
    w, mod = chain
    bad = list(args)
    bad[which] = np.zeros((7, 5), bad[which].dtype)
    _raises(mod, bad, f"argument {name}", "shape", "(5, 7)", "(7, 5)")


@pytest.mark.parametrize("which, name", [(0, "X"), (2, "O")])
@pytest.mark.parametrize("dtype", [np.float64, np.float16, ml_dtypes.bfloat16, np.int32])
def test_wrong_dtype(chain, args, which, name, dtype):
    w, mod = chain
    bad = list(args)
    bad[which] = np.zeros(bad[which].shape, dtype)
    _raises(mod, bad, f"argument {name}", "dtype", "float32")


@pytest.mark.parametrize("which, name", [(1, "Z"), (2, "O")])
def test_non_contiguous(chain, args, which, name):
    w, mod = chain
    bad = list(args)
    strided = np.zeros((5, 14), np.float32)[:, ::2]
    strided[...] = bad[which]
    bad[which] = strided
    _raises(mod, bad, f"argument {name}", "contiguous")


def test_fortran_order(chain, args):
    w, mod = chain
    x, z, o = args
    _raises(mod, (np.asfortranarray(x), z, o), "argument X", "contiguous")


def test_not_an_array(chain, args):
    w, mod = chain
    x, z, o = args
    _raises(mod, (x.tolist(), z, o), "argument X", "list")
    _raises(mod, (x, z, 3.0), "argument O", "float")


@pytest.mark.parametrize("alias", ["same", "view", "overlap"])
def test_output_aliasing_an_input(chain, args, alias):
    w, mod = chain
    x, z, o = args
    if alias == "same":
        out = x
    elif alias == "view":
        out = x.reshape(5, 7)[:]
    else:
        base = np.zeros(40, np.float32)
        x = base[:35].reshape(5, 7)
        out = base[5:40].reshape(5, 7)
    before = x.copy()
    _raises(mod, (x, z, out), "output O", "argument X")
    np.testing.assert_array_equal(x, before)  # checked before anything ran


def test_inputs_may_alias_each_other(chain, args):
    w, mod = chain
    x, z, o = args
    mod(x, x, o)
    np.testing.assert_allclose(o, w.reference([x, x]), rtol=1e-5, atol=1e-6)


def test_two_outputs_in_order_and_not_aliased(rng):
    X = tc.placeholder((4,), "float32", name="X")
    P = tc.compute((4,), lambda i: X[i] + 1.0, name="P")
    Q = tc.compute((4,), lambda i: P[i] * 2.0, name="Q")
    mod = tc.build(tc.create_schedule([P, Q]))
    assert [b.name for b in mod.arg_buffers] == ["X", "P", "Q"]
    x = rng.standard_normal(4).astype(np.float32)
    p, q = poisoned((4,), "float32"), poisoned((4,), "float32")
    mod(x, p, q)
    np.testing.assert_array_equal(p, x + np.float32(1))
    np.testing.assert_array_equal(q, (x + np.float32(1)) * np.float32(2))
    _raises(mod, (x, p, p), "output P", "argument Q")


def test_argument_order_is_placeholder_creation_order(rng):
    """Inputs come in the order the placeholders were created, not the order of use."""
    B = tc.placeholder((3,), "float32", name="B")
    A = tc.placeholder((3,), "float32", name="A")
    O = tc.compute((3,), lambda i: A[i] - B[i], name="O")
    mod = tc.build(tc.create_schedule(O))
    assert [b.name for b in mod.arg_buffers] == ["B", "A", "O"]
    b, a = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    o = poisoned((3,), "float32")
    mod(b, a, o)
    np.testing.assert_array_equal(o, a - b)


def test_bfloat16_and_int8_arguments(rng):
    X = tc.placeholder((8,), "bfloat16", name="X")
    Q = tc.compute((8,), lambda i: tc.quantize(X[i], 0.125, "int8"), name="Q")
    mod = tc.build(tc.create_schedule(Q))
    x = (rng.standard_normal(8) * 4).astype(ml_dtypes.bfloat16)
    q = poisoned((8,), "int8", tc.evaluate(Q, {X: x}))
    mod(x, q)
    np.testing.assert_array_equal(q, tc.evaluate(Q, {X: x}))
    _raises(mod, (x.astype(np.float32), q), "argument X", "bfloat16")
    _raises(mod, (x, q.astype(np.uint8)), "argument Q", "int8")


def test_device_arrays_in_the_simulator(chain, args):
    from numba import cuda

    w, mod = chain
    x, z, o = args
    dx, dz, do = cuda.to_device(x), cuda.to_device(z), cuda.to_device(o)
    mod(dx, dz, do)
    np.testing.assert_allclose(do.copy_to_host(), w.reference([x, z]), rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
def test_device_arrays_on_the_gpu(chain, args):
    from numba import cuda

    w, mod = chain
    x, z, o = args
    dx, dz, do = cuda.to_device(x), cuda.to_device(z), cuda.device_array((5, 7), np.float32)
    mod(dx, dz, do)
    np.testing.assert_allclose(do.copy_to_host(), w.reference([x, z]), rtol=1e-5, atol=1e-6)
    with pytest.raises(tc.ArgumentError, match="host"):
        mod(dx, z, do)
