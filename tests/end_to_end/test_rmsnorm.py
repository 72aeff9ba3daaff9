"""examples/rmsnorm.py (issue 32): RMSNorm in one kernel. The row is staged in shared
memory and the row's sum of squares is complete before the normalized row is written.
Simulator against float64, ``tc.check``, and the kernel assembled for the H200."""

import shutil
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from workloads import json_from_a_process_without_the_simulator, run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import rmsnorm  # noqa: E402


def _inputs(M, N, rng):
    x = (rng.standard_normal((M, N)) * 3.0).astype(ml_dtypes.bfloat16)
    gamma = rng.uniform(0.5, 1.5, N).astype(ml_dtypes.bfloat16)
    return x, gamma


@pytest.mark.parametrize("M, N, threads", [(3, 256, 32), (2, 640, 32), (2, 256, 64)])
def test_one_kernel_matches_float64(M, N, threads, rng):
    """N = 640 is no multiple of the 256 elements a pass of the block covers: the last
    pass is guarded. At 256 x 64 threads the sum of squares has 16 slices (the divisor
    nearest the square root of 256), on the first 16 threads. The output is bf16 and lies within one bf16 rounding (2^-8 relative)
    of the float64 RMSNorm, and matches ``tc.evaluate`` bit for bit."""
    Y = rmsnorm.algorithm(M, N)
    s = tc.create_schedule(Y)
    rmsnorm.schedule(s, Y, threads=threads)
    program = tc.lower(s)
    assert len(program.kernels) == 1
    assert tc.check(s).legal
    X, gamma = tc.inputs(Y)
    x, g = _inputs(M, N, rng)
    got = run(s, [x, g]).astype(np.float64)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + rmsnorm.EPS) * g64
    assert np.all(np.abs(got - want) <= 2.0 ** -8 * np.abs(want) + 1e-6)
    np.testing.assert_array_equal(got, tc.evaluate(Y, {X: x, gamma: g}).astype(np.float64))


def test_the_statistic_is_read_only_when_complete():
    """Writing the normalized row inside the slices' loop (a partial sum of squares) is
    refused, naming the stage."""
    Y = rmsnorm.algorithm(2, 64)
    s = tc.create_schedule(Y)
    s[Y].reverse_compute_at(s["SS"], s["SS"].reduce_axis[0])
    with pytest.raises(tc.IllegalScheduleError, match="Y reads SS before SS has finished computing it"):
        tc.check(s)


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "examples")
import rmsnorm, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
out = rmsnorm.algorithm()
s = tc.create_schedule(out)
rmsnorm.schedule(s, out)
(r,) = ptx_report(lower(s))
print(json.dumps(dict(spills=r.spill_stores + r.spill_loads, registers=r.registers,
                      wide_loads=r.ptx.count("ld.global.v4"), wide_stores=r.ptx.count("st.global.v4"))))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_kernel_assembles_with_16_byte_accesses():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    assert report["spills"] == 0 and report["registers"] <= 64
    assert report["wide_loads"] >= 1 and report["wide_stores"] >= 1


def test_the_slices_balance_a_slice_against_adding_them():
    from tcomp.search.tiling.rows import row_slices

    assert row_slices(4096, 256) == 64  # 64 values a slice, then 64 slices added
    assert row_slices(256, 64) == 16
    assert row_slices(640, 32) == 32  # 20 and 32 tie (20 + 32 values either way): the larger
    assert row_slices(7, 256) == 4  # 2 + 4 against 7 + 1: 4 slices of 2, the last one padded
    assert row_slices(89, 64) == 10  # a prime: 10 slices of 9, the last one 8 values and a pad
    assert row_slices(151936, 1024) == 402  # 128 x 1187: 128 slices would be 1187 values each
