"""Index width: a buffer with more elements than a uint32 can count gets 64-bit index
arithmetic (only it: small kernels keep 32-bit indices and their speed), and what the GPU
cannot hold or count is refused at build with the figures."""

import numpy as np
import pytest

import tcomp as tc

ROWS, COLS = 65536, 65537  # 4,295,032,832 int8 elements: past 2**32


def _row_plus_column(rows=ROWS, cols=COLS, factor=256):
    """Y[i, j] = R[i] + X[j] in int8 (wrapping), so every row differs from its neighbours."""
    R = tc.placeholder((rows,), "int8", name="R")
    X = tc.placeholder((cols,), "int8", name="X")
    Y = tc.compute((rows, cols), lambda i, j: R[i] + X[j], name="Y")
    s = tc.create_schedule(Y)
    i, j = s[Y].axis
    jo, ji = s[Y].split(j, factor)
    s[Y].reorder(i, ji, jo)
    s[Y].bind(i, "blockIdx.x")
    s[Y].bind(ji, "threadIdx.x")
    return s, R, X, Y


def test_a_buffer_past_two_to_the_32_elements_is_indexed_in_64_bits():
    s, *_ = _row_plus_column()
    source = tc.build(s).source
    store = next(line for line in source.splitlines() if line.strip().startswith("Y["))
    assert "uint64(" in store, store
    # the small input vectors keep 32-bit indices
    loads = [line for line in source.splitlines() if "R[" in line or "X[" in line]
    assert loads and all("R[uint64" not in line and "X[uint64" not in line for line in loads), loads


def test_small_kernels_keep_32_bit_indices():
    s, *_ = _row_plus_column(64, 65)
    assert "uint64(" not in "\n".join(line for line in tc.build(s).source.splitlines() if "[" in line)


@pytest.mark.filterwarnings("ignore:overflow encountered")  # int8 addition wraps, as on the GPU
def test_64_bit_indices_compute_the_same_in_the_simulator(rng, monkeypatch):
    """The wide code path at a shape the simulator runs: 3 x 40 with the threshold lowered
    so that Y (120 elements) gets 64-bit indices."""
    from tcomp.codegen import cuda_source
    from workloads import poisoned

    monkeypatch.setattr(cuda_source, "UINT32_ELEMENTS", 100)
    s, R, X, Y = _row_plus_column(3, 40, factor=16)
    mod = tc.build(s)
    assert "Y[(((uint64(i) * _u64_40)" in mod.source
    r = rng.integers(-128, 128, 3, dtype=np.int8)
    x = rng.integers(-128, 128, 40, dtype=np.int8)
    want = tc.evaluate(Y, {R: r, X: x})
    y = poisoned((3, 40), "int8", want)
    mod(r, x, y)
    np.testing.assert_array_equal(y, want)


def test_a_tensor_larger_than_device_memory_is_refused_at_build():
    A = tc.placeholder((400_000, 400_000), "float32", name="A")
    B = tc.compute((400_000, 400_000), lambda i, j: A[i, j] * 2.0, name="B")
    with pytest.raises(tc.ScheduleError) as info:
        tc.build(tc.create_schedule(B))
    msg = str(info.value)
    assert "tensor A (400000, 400000) of float32 needs 640,000,000,000 bytes" in msg, msg
    assert "141,000,000,000 bytes of device memory" in msg, msg


def test_a_loop_longer_than_a_32_bit_counter_is_refused_at_build():
    n = 2**32 + 8
    X = tc.placeholder((n,), "int8", name="X")
    Y = tc.compute((n,), lambda i: X[i], name="Y")
    with pytest.raises(tc.ScheduleError) as info:
        tc.build(tc.create_schedule(Y))
    msg = str(info.value)
    assert "loop i runs 4,294,967,304 iterations" in msg and "32-bit" in msg and "split it" in msg, msg


@pytest.mark.gpu
def test_a_65536_by_65537_int8_tensor_is_written_whole_on_the_gpu():
    import torch

    s, *_ = _row_plus_column()
    mod = tc.build(s)
    gen = torch.Generator(device="cuda").manual_seed(0)
    r = torch.randint(-128, 128, (ROWS,), dtype=torch.int8, device="cuda", generator=gen)
    x = torch.randint(-128, 128, (COLS,), dtype=torch.int8, device="cuda", generator=gen)
    y = torch.empty((ROWS, COLS), dtype=torch.int8, device="cuda")
    y.fill_(-77)
    mod(r, x, y)
    torch.cuda.synchronize()
    for rows in (slice(0, 2), slice(ROWS - 3, ROWS)):  # a 32-bit wrap would write the last rows over the first
        got = y[rows].cpu().numpy().astype(np.int16)
        want = (r[rows].cpu().numpy().astype(np.int16)[:, None] + x.cpu().numpy().astype(np.int16)[None, :])
        want = ((want + 128) % 256 - 128)
        np.testing.assert_array_equal(got, want)
    del y
    torch.cuda.empty_cache()
