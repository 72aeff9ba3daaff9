"""``s[T].tensorize(axis, "mma_m16n8k16")``: a warp's loop nest as one mma.sync, run in the
simulator through the instruction's Python model (fragment layouts included), checked
against float64, and refused with a reason where the nest is not the instruction."""

import shutil
import sys
from pathlib import Path

import pytest

import tcomp as tc
from tcomp.cost import H200
from workloads import check_16_bit_product, json_from_a_process_without_the_simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import gemm_bf16  # noqa: E402



def _product(M, N, K, dtype="bfloat16", acc="float32"):
    A = tc.placeholder((M, K), dtype, name="A")
    W = tc.placeholder((K, N), dtype, name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], acc) * tc.cast(W[k, j], acc), axis=k), name="C")
    return C


def _one_warp(M, N, K, dtype="bfloat16", k_step=16, lanes=("g", "t"), tile=(16, 8), tensorize=True,
              lane_tag="threadIdx.x", fill_threads=32, a_tile="rows"):
    """A warp per 16 x 8 tile of C: lane l holds rows 8r + l // 4 and columns 2(l % 4) + c.
    A is read from a shared tile stored row by row (``a_tile="rows"``), stored transposed
    (``"columns"``), or straight from device memory (``"global"``)."""
    C = _product(M, N, K, dtype)
    s = tc.create_schedule(C)
    CL = s.cache_write(C, "local")
    WS = s.cache_read("W", "shared", [CL])
    caches = [WS]
    if a_tile != "global":
        AS = s.cache_read("A", "shared", [CL])
        caches.append(AS)
        if a_tile == "columns":
            s[AS].storage_order(s[AS].axis[1], s[AS].axis[0])
    i, j = s[C].axis
    bi, bj, ii, jj = s[C].tile(i, j, *tile)
    rh, g = s[C].split(ii, 8)
    t, rl = s[C].split(jj, 2)
    named = {"g": g, "t": t}
    s[C].reorder(bi, bj, named[lanes[0]], named[lanes[1]], rh, rl)
    lane = s[C].fuse(named[lanes[0]], named[lanes[1]])
    s[C].bind(bi, "blockIdx.y")
    s[C].bind(bj, "blockIdx.x")
    s[C].bind(lane, lane_tag)
    s[CL].compute_at(s[C], lane)
    ko, ki = s[CL].split(s[CL].reduce_axis[0], k_step)
    ci, cj = s[CL].axis
    s[CL].reorder(ko, ki, ci, cj)
    for cache in caches:
        s[cache].compute_at(s[CL], ko)
        flat = s[cache].fuse(*s[cache].axis)
        _, th = s[cache].split(flat, fill_threads)
        s[cache].bind(th, "threadIdx.x")
    if tensorize:
        s[CL].tensorize(ki, "mma_m16n8k16")
    return s


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_one_warp_per_tile_matches_float64(dtype, rng):
    s = _one_warp(32, 16, 48, dtype)
    check_16_bit_product(s, 32, 16, 48, dtype, rng)


def test_lower_shows_one_instruction_and_check_reports_the_reassociation():
    s = _one_warp(16, 8, 32)
    text = str(tc.lower(s))
    assert text.count("mma_m16n8k16.bfloat16(") == 1 and "for k_i in range(16)" not in text
    report = tc.check(s)
    assert report.legal
    (reassoc,) = report.reassociations
    assert reassoc.stage == "C_local" and "mma.sync" in str(reassoc) and not reassoc.exact


def test_the_trace_replays_tensorize():
    assert "s['C_local'].tensorize(C_local_k_i, 'mma_m16n8k16')" in _one_warp(16, 8, 16).trace_source()


def test_the_examples_warp_tiles_match_float64(rng):
    """Four warps of 32 x 32 (2 x 4 instruction tiles each) per 64 x 64 block, k steps of 32."""
    out = gemm_bf16.algorithm(64, 64, 64)
    s = tc.create_schedule(out)
    gemm_bf16.schedule(s, out, wgmma=0)
    assert tc.check(s).legal
    check_16_bit_product(s, 64, 64, 64, "bfloat16", rng)


def test_refuses_a_float32_product():
    C = _product(16, 8, 16, "float32")
    s = tc.create_schedule(C)
    CL = s.cache_write(C, "local")
    with pytest.raises(tc.ScheduleError, match=r"C_local multiplies float32 and float32 values"):
        s[CL].tensorize(s[CL].reduce_axis[0], "mma_m16n8k16")


def test_refuses_an_unknown_instruction_and_a_spatial_loop():
    s = _one_warp(16, 8, 16, tensorize=False)
    with pytest.raises(tc.ScheduleError, match=r"unknown tensor intrinsic 'wmma'; available: 'mma_m16n8k16'"):
        s["C_local"].tensorize(s["C_local"].axis[0], "wmma")
    with pytest.raises(tc.ScheduleError, match=r"i is a spatial loop of C_local"):
        s["C_local"].tensorize(s["C_local"].axis[0], "mma_m16n8k16")


def test_refuses_a_k_step_that_is_not_16():
    s = _one_warp(16, 8, 32, k_step=8)
    with pytest.raises(tc.ScheduleError, match=r"the nest's loops are 8 x 2 x 2; the instruction needs a "
                                               r"reduction loop of 16"):
        tc.lower(s)


def test_refuses_half_a_warp():
    s = _one_warp(16, 8, 16, tile=(16, 4))  # columns 2(l % 2) + c: 8 x 2 = 16 lanes
    with pytest.raises(tc.ScheduleError, match=r"needs a whole warp, its 32 lanes on threadIdx.x; loop "
                                               r"\w+ on threadIdx.x has 16 iterations"):
        tc.lower(s)


def test_refuses_lanes_that_are_not_on_threadIdx_x():
    s = _one_warp(16, 8, 16, lane_tag="threadIdx.y")
    with pytest.raises(tc.ScheduleError, match=r"needs a whole warp, its 32 lanes on threadIdx.x; no loop around "
                                               r"it is bound to threadIdx.x"):
        tc.lower(s)


def test_refuses_blocks_wider_than_the_warp():
    """The fills' 64 threads along x make the block 64 wide: lanes 32-63 would run a second
    instruction that the nest does not describe."""
    s = _one_warp(16, 8, 16, fill_threads=64)
    with pytest.raises(tc.ScheduleError, match=r"the kernel's blocks have 64 threads along x"):
        tc.lower(s)


def test_the_example_schedule_names_the_shapes_it_needs():
    out = gemm_bf16.algorithm(8, 64, 24)
    with pytest.raises(tc.ScheduleError, match=r"the mma schedule needs an output of at least 16 x 32; the shape "
                                               r"is 8 x 64 x 24 \(`tcomp autoschedule` finds a schedule for "
                                               r"any shape\)"):
        gemm_bf16.schedule(tc.create_schedule(out), out)


def test_mma_warp_tiles_refuses_more_than_one_axis_ahead_of_the_tile():
    A = tc.placeholder((16, 32), "bfloat16", name="A")
    W = tc.placeholder((2, 2, 32, 32), "bfloat16", name="W")
    k = tc.reduce_axis(32, name="k")
    P = tc.compute((2, 2, 16, 32), lambda g, h, i, j: tc.sum(tc.cast(A[i, k], "float32") *
                                                            tc.cast(W[g, h, k, j], "float32"), axis=k), name="P")
    s = tc.create_schedule(P)
    with pytest.raises(tc.ScheduleError, match=r"tiles the last two axes of P and binds one axis ahead of them "
                                               r"to blockIdx.z; P has 4 axes"):
        gemm_bf16.mma_warp_tiles(s, P, "P", "A", "W", BM=16, BN=32, BK=16, WM=16, WN=32)


def test_refuses_a_guarded_nest():
    """K = 24: the second k step is cut at 8. With both operands in shared tiles the step
    is padded with zeros (tests/lower/test_zero_padding.py); with A read from device
    memory nothing can pad it, and the guard stays."""
    s = _one_warp(16, 8, 24, a_tile="global")
    with pytest.raises(tc.ScheduleError, match=r"the multiply-add is guarded"):
        tc.lower(s)


def test_refuses_lanes_in_another_layout():
    """lane = 8t + g instead of 4g + t: the lanes hold the right elements of C, but not the
    ones the instruction gives them."""
    s = _one_warp(16, 8, 16, lanes=("t", "g"))
    with pytest.raises(tc.ScheduleError, match=r"the lanes do not compute the instruction's layout"):
        tc.lower(s)


def test_the_cost_model_counts_matrix_flops():
    s = _one_warp(64, 64, 64)
    (kernel,) = tc.estimate(s).kernels
    assert kernel.matrix_flops == kernel.flops == 2 * 64 * 64 * 64
    # mma.sync at its own rate on Hopper (about 390 TFLOP/s), not at wgmma's peak
    assert kernel.t_compute_roofline == pytest.approx(kernel.flops / H200.mma_sync_flops_bf16)
    assert H200.mma_sync_flops_bf16 < H200.matrix_flops_bf16


def test_the_cost_model_holds_no_registers_for_cp_async_copies():
    """The example at 4096^3: 128 accumulators a lane, 3-stage cp.async rings. Its copies
    go from device memory to shared memory directly, so only the accumulators count (it
    was estimated at 270 registers, no block fitting an SM; ptxas gives it 210)."""
    out = gemm_bf16.algorithm()
    s = tc.create_schedule(out)
    gemm_bf16.schedule(s, out, wgmma=0)
    (kernel,) = tc.estimate(s).kernels
    assert kernel.regs_per_thread < 255 and kernel.blocks_per_sm >= 1
    assert kernel.predicted_seconds < 5e-3


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "examples")
import gemm_bf16, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
out = gemm_bf16.algorithm(256, 256, 256)
s = tc.create_schedule(out)
gemm_bf16.schedule(s, out, wgmma=0)
(r,) = ptx_report(lower(s))
print(json.dumps(dict(spills=r.spill_stores + r.spill_loads, mma=r.ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.bf16"),
                      a=r.ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
                      b=r.ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"))))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_examples_kernel_assembles_for_sm90a_with_its_mma_instructions():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    assert report["spills"] == 0 and report["mma"] >= 8  # 4 x 4 tiles a warp, k steps of 2
    assert report["a"] >= 1 and report["b"] >= 1  # the operands come by ldmatrix (tcomp.lower.fragments)


@pytest.mark.gpu
def test_the_examples_kernel_matches_float64_on_the_gpu(rng):
    out = gemm_bf16.algorithm(512, 384, 256)
    s = tc.create_schedule(out)
    gemm_bf16.schedule(s, out, wgmma=0)
    check_16_bit_product(s, 512, 384, 256, "bfloat16", rng)
