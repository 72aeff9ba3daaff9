"""Hardening of the compiled module and the build path (issue 5, item 4): every misuse is
a ``tc.TcompError`` subclass raised before anything runs, naming the argument, the figure
and the limit.

Covered elsewhere, not repeated here:
- wrong number of arguments, wrong shape, wrong dtype, non-contiguous numpy arrays, an
  output aliasing an input (numpy), an argument that is not an array, device arrays in
  the simulator: ``tests/codegen/test_module_args.py``;
- more than 1024 threads per block: ``tests/schedule/test_bind.py``;
- a workload file that does not define ``algorithm``, a schedule file without
  ``schedule`` or one that fails to replay, through the CLI: ``tests/cli/test_cli.py``.

The determinism test at the end needs a GPU (``@pytest.mark.gpu``).
"""

import os

import numpy as np
import pytest

import tcomp as tc
from tcomp.target import H200
from workloads import elementwise_chain, poisoned


@pytest.fixture(scope="module")
def chain():
    w = elementwise_chain(5, 7)
    return w, tc.build(w.schedule())


@pytest.fixture
def host_args(chain, rng):
    w, mod = chain
    x, z = w.make_inputs(rng)
    return x, z, poisoned((5, 7), "float32")


def _refused(mod, args, *needles, **kwargs) -> str:
    with pytest.raises(tc.ArgumentError) as info:
        mod(*args, **kwargs)
    for needle in needles:
        assert needle in str(info.value), str(info.value)
    return str(info.value)


# ---------------------------------------------------------------------- the module's arguments


def test_arguments_by_keyword_are_refused(chain, host_args):
    w, mod = chain
    x, z, o = host_args
    _refused(mod, (x, z), "by position", "X, Z, O", "O", O=o)


def test_read_only_output_is_refused_before_the_launch(chain, host_args):
    w, mod = chain
    x, z, o = host_args
    o.flags.writeable = False
    _refused(mod, (x, z, o), "argument O", "read-only")
    assert np.isnan(o).all()


def test_read_only_inputs_are_fine(chain, host_args):
    w, mod = chain
    x, z, o = host_args
    x.flags.writeable = False
    z.flags.writeable = False
    mod(x, z, o)
    np.testing.assert_allclose(o, w.reference([x, z]), rtol=1e-5, atol=1e-6)


def test_host_array_where_device_memory_is_expected_and_the_reverse(chain, host_args):
    """All arguments numpy (copied for the call) or all on the device: a host array among
    device arrays, or a device array among host arrays, is refused, naming the host ones."""
    from numba import cuda

    w, mod = chain
    x, z, o = host_args
    dx, dz, do = cuda.to_device(x), cuda.to_device(z), cuda.to_device(o)
    _refused(mod, (dx, dz, o), "mix host (numpy) and device memory", "O")      # host output
    _refused(mod, (x, dz, do), "mix host (numpy) and device memory", "X")      # host input
    _refused(mod, (x, z, do), "mix host (numpy) and device memory", "X, Z")    # device output
    assert np.isnan(do.copy_to_host()).all()  # nothing ran


def test_device_output_aliasing_a_device_input(chain, host_args):
    from numba import cuda

    w, mod = chain
    x, z, o = host_args
    dx, dz = cuda.to_device(x), cuda.to_device(z)
    _refused(mod, (dx, dz, dx), "output O", "argument X", "alias")
    np.testing.assert_array_equal(dx.copy_to_host(), x)


@pytest.mark.parametrize("problem", ["shape", "dtype", "strided"])
def test_bad_device_arrays(chain, host_args, problem):
    from numba import cuda

    w, mod = chain
    x, z, o = host_args
    if problem == "shape":
        bad, needles = cuda.to_device(np.ascontiguousarray(x.T)), ("argument X", "shape", "(5, 7)", "(7, 5)")
    elif problem == "dtype":
        bad, needles = cuda.to_device(x.astype(np.float64)), ("argument X", "dtype", "float32", "float64")
    else:
        bad, needles = cuda.to_device(np.zeros((5, 14), np.float32))[:, ::2], ("argument X", "contiguous")
    _refused(mod, (bad, cuda.to_device(z), cuda.to_device(o)), *needles)


# ---------------------------------------------------------------------- resources, at build


def _vector(n, name="O"):
    X = tc.placeholder((n,), "float32", name="X")
    return X, tc.compute((n,), lambda i: X[i] * 2.0, name=name)


def _refused_at_build(s, *needles) -> str:
    with pytest.raises(tc.ScheduleError) as info:
        tc.build(s)
    for needle in needles:
        assert needle in str(info.value), str(info.value)
    return str(info.value)


def _tile_in_shared(n: int):
    """C = A @ W with an n x n float32 tile of A in shared memory (n * n * 4 bytes)."""
    A = tc.placeholder((n, n), "float32", name="A")
    W = tc.placeholder((n, 4), "float32", name="W")
    k = tc.reduce_axis(n, name="k")
    C = tc.compute((n, 4), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    s = tc.create_schedule(C)
    AS = s.cache_read(A, "shared", [s[C]])
    i, j = s[C].axis
    s[C].reorder(j, i)
    s[C].bind(j, "blockIdx.x")
    s[C].bind(i, "threadIdx.x")  # NOTE: one row a thread, not all of them: fast in the simulator
    s[AS].compute_at(s[C], j)
    s[AS].bind(s[AS].axis[1], "threadIdx.x")
    return s, A, W, C


def test_shared_memory_over_the_limit_is_refused_at_build():
    """A 256x256 float32 tile of A in shared memory: 256 KiB, over the 227 KiB a block may
    have."""
    s, *_ = _tile_in_shared(256)
    needles = ("k_C", f"{256 * 256 * 4} bytes of shared memory per block", f"the limit is {H200.smem_per_block} bytes")
    # the dependences hold, only the target's limit is in the way: tc.check refuses it as
    # tc.build does (check = build), with the same message, and not as an illegal schedule
    with pytest.raises(tc.ScheduleError) as info:
        tc.check(s)
    assert not isinstance(info.value, tc.IllegalScheduleError)
    assert str(info.value) == _refused_at_build(s, *needles)


def test_shared_memory_above_the_static_limit_is_dynamic(rng):
    """A 128x128 tile (64 KiB, over the 48 KiB a kernel may declare statically): on the GPU
    its buffer is a slice of dynamic shared memory, which the module asks for at launch."""
    from tcomp.codegen import program_source

    s, A, W, C = _tile_in_shared(128)
    gpu = program_source(tc.lower(s), simulator=False)
    assert "_dynamic_shared_float32 = cuda.shared.array(0, float32)" in gpu
    assert "A_shared = _dynamic_shared_float32[0:16384]" in gpu
    assert f"DYNAMIC_SHARED = {{'k_C': {128 * 128 * 4}}}" in gpu
    a, w = rng.standard_normal((128, 128)).astype(np.float32), rng.standard_normal((128, 4)).astype(np.float32)
    out = np.full((128, 4), np.nan, np.float32)
    tc.build(s)(a, w, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


def test_block_dimension_z_over_its_limit_is_refused_at_build():
    """128 threads in all is fine, but blockDim.z may not exceed 64."""
    X = tc.placeholder((4, 128), "float32", name="X")
    O = tc.compute((4, 128), lambda i, j: X[i, j] * 2.0, name="O")
    s = tc.create_schedule(O)
    s[O].bind(s[O].axis[1], "threadIdx.z")
    _refused_at_build(s, "k_O", "blockDim.z = 128", f"the limit of blockDim.z is {H200.max_block_dims[2]}")


def test_grid_dimension_y_over_its_limit_is_refused_at_build():
    X, O = _vector(70000)
    s = tc.create_schedule(O)
    s[O].bind(s[O].axis[0], "blockIdx.y")
    _refused_at_build(s, "k_O", "gridDim.y = 70000", f"the limit of gridDim.y is {H200.max_grid_dims[1]}")


def test_grid_dimension_x_may_be_large():
    X, O = _vector(70000)
    s = tc.create_schedule(O)
    s[O].bind(s[O].axis[0], "blockIdx.x")
    assert tc.lower(s).kernels[0].grid == (70000, 1, 1)
    from tcomp.target import check_resources

    check_resources(tc.lower(s))


def test_local_memory_over_the_limit_is_refused_at_build():
    """A producer in registers, computed once for all 200,000 elements: 800 KB per thread."""
    X = tc.placeholder((200000,), "float32", name="X")
    P = tc.compute((200000,), lambda i: X[i] * 2.0, name="P")
    O = tc.compute((200000,), lambda i: P[i] + 1.0, name="O")
    s = tc.create_schedule(O)
    io, ii = s[O].split(s[O].axis[0], 200000)
    s[P].compute_at(s[O], io)
    _refused_at_build(s, "k_O", "800000 bytes of local memory per thread",
                      f"the limit is {H200.max_local_bytes_per_thread} bytes")


# ---------------------------------------------------------------------- workload and schedule files


def test_workload_file_without_algorithm_is_a_tcomp_error(tmp_path):
    from tcomp.workload import load_workload

    path = tmp_path / "wl.py"
    path.write_text("import tcomp as tc\n\ndef schedule(s, out):\n    pass\n")
    with pytest.raises(tc.TcompError, match="does not define algorithm") as info:
        load_workload(str(path))
    assert str(path) in str(info.value) and "it defines schedule" in str(info.value)


@pytest.mark.parametrize("source, needles", [
    ("def schedule(s, out):\n    i, j = s[out].axis\n", ("failed to replay", "line 2", "ValueError")),
    ("def schedule(s, out):\n    s[out].split(s[out].axis[0], 2)\n    nope(s)\n",
     ("failed to replay", "line 3", "NameError", "nope")),
    ("raise RuntimeError('boom')\n", ("failed to run", "line 1", "RuntimeError", "boom")),
    ("def schedule(s, out):\n    s['NoSuchStage'].compute_inline()\n", ("NoSuchStage", "<schedule>:2")),
])
def test_a_schedule_that_does_not_replay_is_a_schedule_error(source, needles):
    from tcomp.schedule.schedule import replay

    X, O = _vector(8)
    with pytest.raises(tc.ScheduleError) as info:
        replay(source, O)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_replay_of_a_trace_still_works():
    from tcomp.schedule.schedule import replay

    X, O = _vector(8)
    s = tc.create_schedule(O)
    s[O].split(s[O].axis[0], 4)
    again = replay(s.trace_source(), O)
    assert again.trace_source(with_sites=False) == s.trace_source(with_sites=False)


# ---------------------------------------------------------------------- determinism (GPU)

_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")

#: (workload file, schedule function, shape): the example schedules at moderate shapes
DETERMINISM_CASES = [
    ("matmul_silu_quant.py", "schedule", {"M": 512, "N": 512, "K": 512}),
    ("ffn_bf16.py", "schedule", {"M": 256, "N": 512, "K": 512}),
] + [("sgemm_ladder.py", name, {"M": 512, "N": 512, "K": 512})
     for name in ("schedule_naive", "schedule_coalesced", "schedule_shared", "schedule_blocktile_1d",
                  "schedule_blocktile_2d", "schedule_vectorized", "schedule_double_buffered",
                  "schedule_vectorized_bk16", "schedule_warptiled")]


@pytest.mark.gpu
@pytest.mark.parametrize("file, schedule_name, shape", DETERMINISM_CASES,
                         ids=[f"{f[:-3]}:{n}" for f, n, _ in DETERMINISM_CASES])
def test_same_schedule_same_input_same_bits(file, schedule_name, shape):
    """Issue 5, item 5: the same schedule on the same input gives the same bits on every
    run (device-resident arguments, five launches, compared bit for bit)."""
    from numba import cuda

    from tcomp.dtypes import DEVICE_STORAGE, host_dtype
    from tcomp.workload import apply_schedule, load_schedule, load_workload

    workload = load_workload(os.path.join(_EXAMPLES, file))
    out, _ = workload.build_algorithm(shape)
    fn, where = load_schedule(schedule_name, workload)
    s = tc.create_schedule(out)
    apply_schedule(s, out, fn, where)
    mod = tc.build(s)
    rng = np.random.default_rng(0)
    inputs = [cuda.to_device(rng.standard_normal(p.shape).astype(np.float32).astype(host_dtype(p.dtype))
                             .view(DEVICE_STORAGE.get(p.dtype, host_dtype(p.dtype))))
              for p in sorted(s.placeholders, key=lambda t: t.op.order)]
    storage = DEVICE_STORAGE.get(out.dtype, host_dtype(out.dtype))
    results = []
    for _ in range(5):
        o = cuda.device_array(out.shape, dtype=storage)
        mod(*inputs, o)
        results.append(o.copy_to_host())
    first = results[0].view(np.uint8)
    for n, r in enumerate(results[1:], 2):
        same = r.view(np.uint8) == first
        assert same.all(), f"run {n} differs from run 1 in {np.count_nonzero(~same)} bytes"


def test_a_block_the_compiled_registers_cannot_hold_is_a_capacity_error():
    """CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES at the first launch becomes, at build time, an
    error naming the registers and the thread limit they leave."""
    from types import SimpleNamespace

    from tcomp.codegen.launch import _check_block_fits

    attrs = SimpleNamespace(regs=168, maxthreads=384)  # numba's FuncAttr of a compiled kernel
    _check_block_fits(attrs, (32, 12, 1), "k_C")  # 384 threads: fits
    with pytest.raises(tc.CapacityError, match=r"k_C .*168 registers.*at most 384 threads.*blocks of 512"):
        _check_block_fits(attrs, (32, 16, 1), "k_C")
