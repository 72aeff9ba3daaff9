"""The cost model's worked examples (docs/references.md), from schedules written in tcomp
(tests/cost/chapter.py) and ``tc.estimate``; the occupancy of the SGEMM ladder's kernel 3
on the RTX A6000.

Every figure here is read off the estimate of a schedule: the byte counts come from
the loads and stores of the lowered loop nest, the shared memory from its
allocations, the residency from the target's limits."""

import pytest

import chapter as ch
import tcomp as tc

MiB = 1024 * 1024
KiB = 1024


# ---------------------------------------------------------------------------- output tiles in shared memory


@pytest.mark.parametrize("tile, local_kib, traffic_mib, intensity, mfu", [
    (32, 8, 6168, 15.9, 0.05),
    (64, 24, 3096, 31.7, 0.11),
    (128, 80, 1560, 63.0, 0.21),
])
def test_section_5_2_2_output_tile(tile, local_kib, traffic_mib, intensity, mfu):
    est = tc.estimate(ch.section_5_2_2(tile), target="h100")
    assert est.kernel_launches == 1
    (k,) = est.kernels
    # A tile 2mk + W tile 2kn + fp32 accumulator 4mn, all in shared memory
    assert k.smem_bytes_per_block == local_kib * KiB
    assert est.dram_bytes == traffic_mib * MiB
    assert k.dram_bytes == traffic_mib * MiB
    assert k.flops == 2 * ch.M * ch.K * ch.N  # about 103 GFLOP
    # NOTE: the worked example divides the rounded "103 GFLOPs" (103e9 / 3096 MiB = 31.73 -> 31.7);
    # the exact 2MKN = 103.08e9 gives 31.75 for the 64 x 64 tile
    assert round(103e9 / k.dram_bytes, 1) == intensity
    assert k.arithmetic_intensity == pytest.approx(intensity, abs=0.06)
    # "matrix unit MFU ceilings of only 5%, 11%, and 21%" (H100: 989.4 TFLOP/s over 3.35 TB/s)
    assert k.matrix_flops == k.flops
    assert round(k.roofline_ceiling, 2) == mfu


def test_section_5_2_2_reads_by_tensor():
    """64 x 64: the 192 column tiles each read the 8 MiB A, the 16 row tiles each read the
    96 MiB W, and the 24 MiB output is written once (bf16: 2 bytes an element)."""
    (k,) = tc.estimate(ch.section_5_2_2(64), target="h100").kernels
    assert k.reads_by_tensor == {"A": 1536 * MiB, "W": 1536 * MiB, "Cb": 0}
    assert k.writes_by_tensor["Cb"] == 24 * MiB
    assert k.bytes_by_tensor == {"A": 1536 * MiB, "W": 1536 * MiB, "Cb": 24 * MiB}
    assert k.grid == (192, 16, 1)


def test_section_5_2_2_is_memory_bound_at_every_tile():
    """All three intensities sit far below the H100's ridge of about 295 FLOP/byte."""
    for tile in (32, 64, 128):
        (k,) = tc.estimate(ch.section_5_2_2(tile), target="h100").kernels
        assert k.arithmetic_intensity < tc.cost.H100.ridge_bf16
        assert round(tc.cost.H100.ridge_bf16) == 295


def test_section_5_4_5_resident_blocks_on_the_rtx_pro_6000():
    """24 KiB and 80 KiB working sets: 4 and 1 blocks per SM in 100 KB of shared memory
    with 1 KiB reserved per block (docs/hardware.md)."""
    for tile, blocks in ((64, 4), (128, 1)):
        (k,) = tc.estimate(ch.section_5_2_2(tile), target="rtx_pro_6000").kernels
        assert k.blocks_per_sm_by["shared_memory"] == blocks


def test_section_5_4_5_double_buffered_working_sets():
    """Doubling the input buffers: 32 KiB and 96 KiB, 3 and 1 blocks per SM.
    NOTE: tcomp's double_buffer() stages the next tile in registers, not in a second
    shared buffer, so this is the residency rule applied to the worked example's working sets."""
    for smem, blocks in ((32 * KiB, 3), (96 * KiB, 1)):
        by, _, _ = tc.cost.residency(tc.cost.RTX_PRO_6000, threads=256, regs=32, smem=smem)
        assert by["shared_memory"] == blocks


# ---------------------------------------------------------------------------- unfused elementwise kernels


@pytest.mark.parametrize("fused_steps, launches, total_mib", [(0, 2, 120), (2, 1, 72)])
def test_example_5_4_silu_and_multiply(fused_steps, launches, total_mib):
    est = tc.estimate(ch.example_5_4(fused_steps, quantize=False))
    assert est.kernel_launches == launches
    assert est.dram_bytes == total_mib * MiB


def test_example_5_4_saving_is_one_write_and_one_read_of_t():
    separate = tc.estimate(ch.example_5_4(0, quantize=False))
    fused = tc.estimate(ch.example_5_4(2, quantize=False))
    assert separate.bytes_by_tensor["T"] == 48 * MiB
    assert "T" not in fused.bytes_by_tensor
    assert separate.dram_bytes - fused.dram_bytes == 48 * MiB
    assert [k.dram_bytes for k in separate.kernels] == [48 * MiB, 72 * MiB]


@pytest.mark.parametrize("fused_steps, launches, total_mib", [(0, 3, 156), (2, 2, 108), (3, 1, 60)])
def test_figure_5_15_fixed_scale_quantization(fused_steps, launches, total_mib):
    est = tc.estimate(ch.example_5_4(fused_steps, quantize=True))
    assert est.kernel_launches == launches
    assert est.dram_bytes == total_mib * MiB
    # the quantized result takes 1 byte an element: 12 MiB written
    assert est.bytes_by_tensor["Q"] == 12 * MiB


def test_figure_5_15_all_fused_is_inputs_and_output_only():
    est = tc.estimate(ch.example_5_4(3, quantize=True))
    assert est.bytes_by_tensor == {"G": 24 * MiB, "U": 24 * MiB, "Q": 12 * MiB}


# ---------------------------------------------------------------------------- a quantized matmul


def _without_row_scale(est):
    # the worked example's 444 and 620 MiB count A, W and the output only; the row
    # scale's own reads and writes are left out
    return est.dram_bytes - est.bytes_by_tensor["R"]


def test_example_5_8_quantization_separate():
    est = tc.estimate(ch.example_5_8(fused=False))
    assert est.kernel_launches == 2
    assert _without_row_scale(est) == 444 * MiB
    quant, matmul = est.kernels
    # the quantization kernel reads A once (32 MiB) and writes the fp8 result (16 MiB)
    assert quant.reads_by_tensor["A"] == 32 * MiB
    assert quant.writes_by_tensor["Aq"] == 16 * MiB
    assert quant.smem_bytes_per_block == 8 * KiB  # one fp16 row of 4096
    # each of the 12 column blocks reads the fp8 input once; 32 row blocks read W
    assert matmul.reads_by_tensor["Aq"] == 192 * MiB
    assert matmul.reads_by_tensor["W"] == 192 * MiB
    assert matmul.writes_by_tensor["Out"] == 12 * MiB
    assert matmul.grid == (12, 32, 1)
    assert est.bytes_by_tensor["R"] < 1 * MiB


def test_example_5_8_quantization_fused():
    est = tc.estimate(ch.example_5_8(fused=True))
    assert est.kernel_launches == 2
    assert _without_row_scale(est) == 620 * MiB
    rowmax, matmul = est.kernels
    assert rowmax.reads_by_tensor["A"] == 32 * MiB  # the row scale first reads A once
    assert matmul.reads_by_tensor["A"] == 12 * 32 * MiB  # then each column block reads fp16 A
    assert "Aq" not in est.bytes_by_tensor  # the fp8 input is never written out
    assert est.bytes_by_tensor["R"] < 1 * MiB


def test_example_5_8_fusion_adds_about_40_percent():
    separate = _without_row_scale(tc.estimate(ch.example_5_8(fused=False)))
    fused = _without_row_scale(tc.estimate(ch.example_5_8(fused=True)))
    assert round(fused / separate - 1, 2) == 0.40


# ---------------------------------------------------------------------------- residency and latency hiding on the H100


def test_section_5_1_5_residency_on_the_h100():
    est = tc.estimate(ch.section_5_1_5(), target="h100", regs_per_thread=128)
    (k,) = est.kernels
    assert k.threads_per_block == 256 and k.warps_per_block == 8
    assert k.smem_bytes_per_block == 96 * KiB  # 16 + 16 KiB bf16 tiles, 64 KiB fp32 accumulator
    assert k.regs_per_thread == 128 and k.regs_source == "given"
    assert k.blocks_per_sm_by == {"threads": 8, "registers": 2, "shared_memory": 2, "block_limit": 32}
    assert k.blocks_per_sm == 2
    assert set(k.limited_by) == {"registers", "shared_memory"}
    assert k.resident_warps_per_sm == 16
    assert k.occupancy == 0.25


def test_section_5_1_5_bytes_in_flight():
    """B_need = 3.35 TB/s x 600 ns / 132 = 15.2 KB per SM; B_have = 16 warps x 4 loads x
    512 bytes = 32 KiB, 2.15 times the need."""
    (k,) = tc.estimate(ch.section_5_1_5(), target="h100", regs_per_thread=128).kernels
    assert k.bytes_per_warp_load == 512  # 16 bytes a thread: the fill moves 8 bf16 per load
    assert k.loads_in_flight_per_warp == 4
    assert round(k.inflight_bytes_needed_per_sm / 1000, 1) == 15.2
    assert k.inflight_bytes_per_sm == 32 * KiB
    assert round(k.latency_coverage, 2) == 2.15


def test_section_5_1_5_flip_condition():
    """1000 ns and 2 loads per warp: 25.4 KB needed, 16 KiB available, coverage 0.65."""
    target = tc.cost.H100.replace(mem_latency_ns=1000, outstanding_loads_per_warp=2)
    (k,) = tc.estimate(ch.section_5_1_5(), target=target, regs_per_thread=128).kernels
    assert round(k.inflight_bytes_needed_per_sm / 1000, 1) == 25.4
    assert k.inflight_bytes_per_sm == 16 * KiB
    assert round(k.latency_coverage, 2) == 0.65
    assert k.effective_bandwidth < tc.cost.H100.dram_bw_datasheet


def test_section_5_1_5_accumulator_in_registers_moves_the_limit():
    """Without the 64 KiB accumulator in shared memory a block needs 32 KiB: 6 fit, and
    registers alone allow 2."""
    by, blocks, limited = tc.cost.residency(tc.cost.H100, threads=256, regs=128, smem=32 * KiB)
    assert by["shared_memory"] == 6
    assert blocks == 2 and limited == ("registers",)


# ---------------------------------------------------------------------------- the SGEMM ladder's kernel 3


def test_worklog_kernel_3_occupancy_on_the_rtx_a6000():
    import sgemm_ladder

    C = sgemm_ladder.algorithm(4092, 4092, 4092)
    s = tc.create_schedule(C)
    sgemm_ladder.schedule_shared(s, C)
    (k,) = tc.estimate(s, target="rtx_a6000", regs_per_thread=37).kernels
    assert k.threads_per_block == 1024
    assert k.smem_bytes_per_block == 8192  # two 32 x 32 float tiles
    assert k.blocks_per_sm_by["shared_memory"] == 11  # (8192 + 1024) into 102400
    assert k.blocks_per_sm_by["threads"] == 1  # 1024 into 1536
    assert k.blocks_per_sm_by["registers"] == 1  # 37 x 32 -> 1280 a warp, x 32 warps = 40960
    assert k.blocks_per_sm == 1
    assert round(k.occupancy, 2) == 0.67  # 32 of 48 warps
