"""The cost model's parts: targets, what the IR analysis counts (bytes by dtype, coalescing,
bank conflicts, hoisted loads, registers), residency, waves and the time terms."""

import dataclasses
import math

import pytest

import chapter as ch
import sgemm_ladder
import tcomp as tc
from tcomp.cost import H100, H200, RTX_A6000, RTX_PRO_6000, get_target
from tcomp.target import target_of_device

MiB = 1024 * 1024


def ladder(name, n=4096, **kw):
    C = sgemm_ladder.algorithm(n, n, n)
    s = tc.create_schedule(C)
    sgemm_ladder.SCHEDULES[name](s, C, **kw)
    return s


def blocktile(n=2048, **params):
    C = sgemm_ladder.algorithm(n, n, n)
    s = tc.create_schedule(C)
    CL = s.cache_write(C, "local")
    sgemm_ladder.blocktile_2d(s, C, CL, "A", "B", **params)
    return s


def copy(dtype_in, dtype_out, n=1024):
    """out[i, j] = cast(x[i, j]), one thread per element."""
    X = tc.placeholder((n, n), dtype_in, name="X")
    Y = tc.compute((n, n), lambda i, j: tc.cast(X[i, j], dtype_out), name="Y")
    s = tc.create_schedule(Y)
    ch.elementwise(s, Y)
    return s


# ---------------------------------------------------------------------------- targets


def test_targets_by_name():
    assert get_target("h200") is H200
    assert get_target("H100") is H100
    assert get_target("a6000") is RTX_A6000
    assert get_target("rtx_pro_6000") is RTX_PRO_6000
    assert get_target(H100) is H100
    with pytest.raises(tc.TcompError, match="h200, h100, rtx_a6000, rtx_pro_6000"):
        get_target("mi300")


def test_a_device_is_ranked_by_its_own_record():
    """CUDA's names of the cards give their records (the benchmarks rank with the cost model
    of the card that measures); an unknown GPU gives none, not a wrong one."""
    assert target_of_device("NVIDIA H100 80GB HBM3") is H100
    assert target_of_device("NVIDIA H200") is H200
    assert target_of_device("NVIDIA RTX PRO 6000 Blackwell Workstation Edition") is RTX_PRO_6000
    assert target_of_device("Tesla T4") is None


def test_h200_figures():
    t = H200
    assert (t.sms, t.max_threads_per_sm, t.regs_per_sm) == (132, 2048, 65536)
    assert t.smem_per_sm == 228 * 1024 and t.smem_per_block == 227 * 1024
    assert t.dram_bw_datasheet == 4.8e12 and t.dram_bw_measured == 4.2e12
    assert t.fp32_flops == 67e12 and t.matrix_flops_bf16 == 989e12
    assert t.l2_bytes == 60 * MiB  # the device reports 60 MiB (benchmarks/l2_bandwidth.py)
    assert round(t.ridge_bf16) == 206  # 989 TFLOP/s over 4.8 TB/s (docs/hardware.md)


def test_target_replace():
    t = H100.replace(mem_latency_ns=1000)
    assert t.mem_latency_ns == 1000 and H100.mem_latency_ns == 600
    with pytest.raises(tc.TcompError, match="no figure"):
        H100.replace(latency=1)


# ---------------------------------------------------------------------------- bytes


@pytest.mark.parametrize("dtype_in, dtype_out, bytes_per_element", [
    ("float32", "float32", 8), ("bfloat16", "bfloat16", 4), ("bfloat16", "float32", 6),
    ("float32", "int8", 5), ("float16", "float8_e4m3", 3),
])
def test_dtypes_decide_bytes(dtype_in, dtype_out, bytes_per_element):
    est = tc.estimate(copy(dtype_in, dtype_out))
    assert est.dram_bytes == bytes_per_element * 1024 * 1024


def test_estimate_takes_a_lowered_program():
    s = copy("float32", "float32")
    assert tc.estimate(tc.lower(s)).dram_bytes == tc.estimate(s).dram_bytes


def test_estimate_is_a_frozen_record():
    est = tc.estimate(copy("float32", "float32"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.dram_bytes = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.kernels[0].occupancy = 1.0


def test_uncached_loads_count_each_warp_instruction():
    """The SGEMM ladder's naive kernel: every thread streams its row of A and column of B from
    device memory; a warp's 32 lanes share B[k, col] (one broadcast element)."""
    n = 1024
    (k,) = tc.estimate(ladder("naive", n)).kernels
    warps = n * n // 32
    assert k.reads_by_tensor["A"] == warps * n * 32 * 4  # 32 rows a warp instruction
    assert k.reads_by_tensor["B"] == warps * n * 4  # one element, broadcast
    assert k.writes_by_tensor["C"] == n * n * 4


def test_shared_tiles_are_read_once_per_k_step():
    """A tile filled inside k_o is read once per k_o iteration, not once per k_i."""
    n = 2048
    (k,) = tc.estimate(blocktile(n, BM=128, BN=128, BK=8, TM=8, TN=8)).kernels
    assert k.reads_by_tensor["A"] == n * n * 4 * (n // 128)  # N / BN column tiles each read A
    assert k.reads_by_tensor["B"] == n * n * 4 * (n // 128)
    assert k.writes_by_tensor["C"] == n * n * 4


def test_the_l2_serves_the_tiles_that_the_blocks_of_one_wave_share():
    """The same kernel: blocks start in order of their linear index (blockIdx.x, the
    column block, fastest), SMs x blocks-per-SM at a time. Blocks of one wave in one block
    row share their A tile, and in one block column their B tile: the device reads each
    once per wave, and the L2 serves the rest. The count without the L2 is kept beside it."""
    n = 2048
    (k,) = tc.estimate(blocktile(n, BM=128, BN=128, BK=8, TM=8, TN=8)).kernels
    wave = H200.sms * k.blocks_per_sm
    columns = n // 128
    blocks = [(b // wave, b // columns, b % columns) for b in range(k.blocks)]  # (wave, row, column)
    a_tiles = len({(w, row) for w, row, _ in blocks})
    b_tiles = len({(w, column) for w, _, column in blocks})
    per_block = n * 128 * 4  # one block's rows of A (or columns of B), all of K
    assert k.l2_read_bytes == per_block * ((k.blocks - a_tiles) + (k.blocks - b_tiles))
    assert k.reads_by_tensor["A"] == n * n * 4 * (n // 128)
    # A's tiles are 32-byte runs of its rows (BK = 8 floats): device memory serves them slower
    assert k.short_run_bytes > 0
    assert k.t_dram == pytest.approx((k.dram_bytes - k.l2_read_bytes + k.short_run_bytes) / k.effective_bandwidth)
    # a wave whose reads do not fit the L2 gets no credit
    (small_l2,) = tc.estimate(blocktile(n, BM=128, BN=128, BK=8, TM=8, TN=8),
                              target=H200.replace(l2_bytes=1 * MiB)).kernels
    assert small_l2.l2_read_bytes == 0 and small_l2.dram_bytes == k.dram_bytes


def test_a_ring_streams_its_tiles_so_the_l2_needs_a_few_of_its_k_steps():
    """The 8192^3 bf16 GEMM in 128 x 256 wgmma blocks: a wave's whole tiles (about 140 MB)
    exceed the L2, but the blocks stream them through their rings 64 columns of k at a
    time, so the L2 needs only ``L2_WINDOW_ROUNDS`` of the 128 k steps and serves the
    re-reads: the estimate is the tensor cores' time, not device memory's for every
    block's tiles. A smaller L2 that cannot hold even those steps gets no credit."""
    import sys
    from pathlib import Path

    from tcomp.cost.model import L2_WINDOW_ROUNDS
    from tcomp.search.tiling import wgmma_tiles

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import gemm_bf16

    n = 8192
    out = gemm_bf16.algorithm(n, n, n)
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "C", "A", "W", BM=128, BN=256, BK=64, stages=4, rows_fastest=True)
    (k,) = tc.estimate(s).kernels
    assert k.l2_read_bytes > 0.75 * k.dram_bytes
    assert not k.limiter.startswith("dram") and k.t_dram < 0.5 * k.predicted_seconds
    assert L2_WINDOW_ROUNDS < n // 64
    (small_l2,) = tc.estimate(s, target=H200.replace(l2_bytes=8 * MiB)).kernels
    assert small_l2.l2_read_bytes == 0


def test_tiles_read_per_wave():
    from tcomp.cost.model import _tiles_read

    assert _tiles_read((4, 2, 1), 4, {0}) == (8, 4)  # each wave is one row of blocks
    assert _tiles_read((4, 2, 1), 4, {1}) == (2, 1)
    assert _tiles_read((4, 2, 1), 3, {1}) == (4, 1)  # the second wave spans both rows
    assert _tiles_read((4, 2, 1), 8, set()) == (1, 1)
    assert _tiles_read((4, 2, 1), 4, {0, 1}) == (8, 4)


# ---------------------------------------------------------------------------- the L1 / shared pipe


def test_uncoalesced_loads_cost_a_wavefront_per_line():
    """Kernel 1 reads 32 rows of A per warp instruction (32 lines), kernel 2 one broadcast
    element: the same bytes, 17 times the L1 wavefronts (33 against 2 a k step)."""
    naive = tc.estimate(ladder("naive")).kernels[0]
    coalesced = tc.estimate(ladder("coalesced")).kernels[0]
    assert naive.dram_bytes == coalesced.dram_bytes
    assert naive.t_l1 / coalesced.t_l1 == pytest.approx(33 / 2, rel=0.02)
    assert naive.limiter == "shared/L1"
    assert naive.predicted_seconds > 3 * coalesced.predicted_seconds


def test_bank_conflicts_of_the_a_fragment():
    """8 x 8 thread tiles of 16 x 16 threads: a warp spans two thread rows, whose A
    fragments sit 64 words apart in the same bank (2-way conflict) unless the A tile is
    stored transposed (storage_order), which makes them 8 words apart."""
    plain = tc.estimate(blocktile(BM=128, BN=128, BK=8, TM=8, TN=8)).kernels[0]
    transposed = tc.estimate(blocktile(BM=128, BN=128, BK=8, TM=8, TN=8, transpose_a=True)).kernels[0]
    assert transposed.t_l1 < plain.t_l1
    assert transposed.dram_bytes == plain.dram_bytes


# ---------------------------------------------------------------------------- registers, residency


def test_register_estimate_from_local_buffers():
    s = blocktile(BM=128, BN=128, BK=8, TM=8, TN=8)
    (k,) = tc.estimate(s).kernels
    # 64 accumulators + 8 + 8 fragment registers + 4 loaded values in flight + 14
    assert k.regs_per_thread == 98  # ptxas -v reports 93 for this kernel
    assert k.regs_source.startswith("estimate: 80 in local buffers + 4 for loaded values in flight")
    assert k.blocks_per_sm == 2 and k.limited_by == ("registers",)


def test_register_override_per_kernel():
    s = ch.example_5_4(0, quantize=True)
    est = tc.estimate(s, regs_per_thread={"k_Z": 200})
    regs = {k.name: k.regs_per_thread for k in est.kernels}
    assert regs["k_Z"] == 200
    assert est.kernels[0].regs_source.startswith("estimate")
    with pytest.raises(tc.TcompError, match="regs_per_thread"):
        tc.estimate(s, regs_per_thread="many")


def test_a_block_that_does_not_fit():
    by, blocks, limited = tc.cost.residency(RTX_PRO_6000, threads=256, regs=64, smem=100 * 1024)
    assert blocks == 0 and limited == ("shared_memory",)  # more than the 99 KB a block may have
    (k,) = tc.estimate(ch.section_5_1_5(), target="rtx_pro_6000", regs_per_thread=64).kernels
    assert k.fits and k.blocks_per_sm == 1  # 96 KiB fits once in 100 KB


def test_too_many_registers_is_noted():
    (k,) = tc.estimate(blocktile(BM=64, BN=64, BK=8, TM=8, TN=8), regs_per_thread=300).kernels
    assert k.blocks_per_sm == 0 and not k.fits
    assert math.isinf(k.predicted_seconds)
    assert any("spill" in n for n in k.notes)


# ---------------------------------------------------------------------------- time


def test_wave_quantization():
    """One block more than the SMs can hold at once costs a whole second wave."""
    def one_block_per_sm(blocks):
        n = 1024
        X = tc.placeholder((blocks, n), "float32", name="X")
        Y = tc.compute((blocks, n), lambda i, j: X[i, j] * 2.0, name="Y")
        s = tc.create_schedule(Y)
        i, j = s[Y].axis
        s[Y].bind(i, "blockIdx.x")
        s[Y].bind(j, "threadIdx.x")
        return tc.estimate(s, regs_per_thread=64).kernels[0]  # 1024 x 64 registers: one block an SM

    full, over = one_block_per_sm(132), one_block_per_sm(133)
    assert full.blocks_per_sm == 1 and full.waves == 1.0
    assert over.waves == pytest.approx(133 / 132) and over.blocks_on_busiest_sm == 2
    assert over.t_sm == pytest.approx(2 * full.t_sm)


def test_latency_bound_with_one_thread_per_block():
    """The row max of the quantized matmul (example_5_8) as one thread a row: 4096 loads in sequence per thread."""
    rowmax = tc.estimate(ch.example_5_8(fused=True)).kernels[0]
    assert rowmax.threads_per_block == 1
    assert rowmax.bound == "latency"
    assert rowmax.t_latency > 10 * rowmax.t_dram


def test_totals_add_up():
    est = tc.estimate(ch.example_5_4(0, quantize=True))
    assert est.kernel_launches == 3
    assert est.predicted_seconds == pytest.approx(sum(k.predicted_seconds for k in est.kernels))
    assert est.dram_bytes == sum(k.dram_bytes for k in est.kernels)
    for k in est.kernels:
        assert k.predicted_seconds == pytest.approx(max(k.t_sm, k.t_dram, k.t_compute_roofline) + k.t_launch)
        assert k.t_launch == H200.launch_overhead_s
        assert k.bound in ("compute", "memory", "latency")


def test_elementwise_chain_is_memory_bound():
    for k in tc.estimate(ch.example_5_4(3, quantize=True)).kernels:
        assert k.bound == "memory" and k.limiter == "dram"
        assert k.t_dram == pytest.approx(k.dram_bytes / H200.dram_bw_measured)


# measured on the H200 (BENCHMARKS.md, SGEMM ladder at 4096^3, ms)
LADDER_MS = {"naive": 276.302, "coalesced": 65.086, "shared": 18.095, "blocktile_1d": 11.818,
             "blocktile_2d": 6.261}


def test_ladder_predictions_follow_the_measured_order():
    predicted = {name: tc.estimate(ladder(name)).predicted_seconds * 1e3 for name in LADDER_MS}
    order = sorted(LADDER_MS, key=LADDER_MS.get)
    assert sorted(predicted, key=predicted.get) == order
    for name, ms in LADDER_MS.items():
        assert predicted[name] == pytest.approx(ms, rel=0.25), name


def test_print_shows_the_tables():
    text = str(tc.estimate(ch.section_5_1_5(), target="h100", regs_per_thread=128))
    for needle in ("target h100", "kernel k_Cb", "blocks per SM     2, limited by registers and shared memory",
                   "occupancy         25.0% (16 of 64 warps)", "in flight per SM", "predicted", "total: 1 kernel launch"):
        assert needle in text, needle


# ---------------------------------------------------------------------------- rings of cp.async copies


def wgmma_gemm(stages, in_flight, M=256, N=256, K=1024, BM=128, BN=256):
    import gemm_bf16
    from tcomp.search.tiling import wgmma_tiles

    out = gemm_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "C", "A", "W", BM=BM, BN=BN, BK=64, stages=stages, in_flight=in_flight)
    return s


@pytest.mark.parametrize("stages, in_flight, ahead, drains", [(4, 1, 2, 0), (4, 0, 3, 16), (3, 1, 1, 0),
                                                             (2, 0, 1, 16)])
def test_a_ring_counts_its_steps_ahead_and_its_drained_chains(stages, in_flight, ahead, drains):
    """A ring of ``stages`` tiles whose readers lag ``in_flight`` k steps issues its copies
    ``stages - 1 - in_flight`` steps ahead; with no chain left in flight every k step (16
    of 64 at K = 1024) waits for its whole chain of wgmma instructions (4 a step: BK 64 / 16)."""
    from tcomp.cost.analysis import analyze_kernel

    (kernel,) = tc.lower(wgmma_gemm(stages, in_flight)).kernels
    counts = analyze_kernel(kernel)
    assert counts.async_ahead == ahead
    assert counts.chain_drains == drains
    assert counts.warpgroup_instructions == 1024 // 16
    assert counts.async_rounds == 16 + 1  # one round a k step, and the prologue's
    assert counts.prefetch_rounds == 0


def test_exposed_latency_is_what_the_steps_ahead_do_not_cover():
    from tcomp.cost.model import exposed_latency

    assert exposed_latency(0, 1, 1000.0, 0.0) == 0.0
    assert exposed_latency(10, 1, 1000.0, 6000.0) == 10 * (1000 - 600)  # one step of 600 cycles ahead
    assert exposed_latency(10, 2, 1000.0, 6000.0) == 0.0  # two steps cover it


def test_ring_depth_and_chains_in_flight_follow_the_measured_order():
    """The order the H200 measured for 128 x 256 wgmma blocks (benchmarks/ring_depth.py,
    4096^3: 0.269 ms with 4 stages and a chain in flight, 0.311 with 3, 0.319-0.336 with
    none): two k steps of copies ahead cover the loaded latency of a cp.async and one does
    not; a k step that waits for its whole chain idles the tensor cores."""
    predicted = {(stages, in_flight): tc.estimate(wgmma_gemm(stages, in_flight)).kernels[0]
                 for stages, in_flight in ((4, 1), (3, 1), (3, 0), (4, 0), (2, 0))}
    best, one_ahead = predicted[4, 1], predicted[3, 1]
    assert best.predicted_seconds < one_ahead.predicted_seconds
    assert one_ahead.predicted_seconds < min(predicted[k].predicted_seconds for k in ((3, 0), (4, 0), (2, 0)))
    # one step ahead: each of the 17 rounds of copies (16 k steps and the prologue) waits
    # for what one step of the block's own work, shared/L1-bound here, does not cover
    assert best.limiter == "shared/L1" and best.blocks_on_busiest_sm == 1
    exposed = H200.async_copy_latency_s - best.t_l1 / 17
    assert exposed > 0
    assert one_ahead.t_latency == pytest.approx(best.t_latency + 17 * exposed)
    assert one_ahead.t_copy_wait == pytest.approx(17 * exposed) and best.t_copy_wait == 0
    assert predicted[3, 0].t_chain_drain > 0 and best.t_chain_drain == 0
    # a target whose copies land at once does not care how deep the ring is
    instant = H200.replace(async_copy_latency_ns=1.0)
    assert tc.estimate(wgmma_gemm(3, 1), target=instant).predicted_seconds == pytest.approx(best.predicted_seconds)


def _decode_row(N: int, K: int, parts: int, threads_x: int, unroll: int):
    """One decode row of the FFN projection in one kernel (``stream_rows_in_blocks``)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import ffn_bf16

    from tcomp.search.tiling.skinny import stream_rows_in_blocks

    Q = ffn_bf16.algorithm(1, N, K)
    s = tc.create_schedule(Q)
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    stream_rows_in_blocks(s, Q, "C", "A", "W", parts=parts, threads_x=threads_x, unroll=unroll)
    return s


def test_a_grid_smaller_than_the_sms_hold_keeps_one_block_in_flight_per_sm():
    """64 blocks of 256 threads for 132 SMs (the down projection 4096 x 12288 in blocks of
    64 columns): each busy SM holds one block, not the four its resources allow, so the
    bytes in flight are one block's, and the weights stream slower than with 128 blocks of
    512 threads. Measured on the H100 (benchmarks/results/decode_rows_h100_3.log): 101 us
    against 47 us."""
    few = tc.estimate(_decode_row(4096, 12288, parts=32, threads_x=8, unroll=8), target="h100").kernels[0]
    more = tc.estimate(_decode_row(4096, 12288, parts=128, threads_x=4, unroll=2), target="h100").kernels[0]
    assert few.blocks == 64 and few.blocks_per_sm > 1
    assert few.inflight_bytes_per_sm == few.warps_per_block * few.loads_in_flight_per_warp * few.bytes_per_warp_load
    assert few.limiter == "dram (latency-limited)"
    assert few.predicted_seconds > 1.3 * more.predicted_seconds


def test_a_second_kernel_reads_small_partial_sums_from_the_l2():
    """A decode step in two kernels (``stream_rows``): the second reads the 3 MB of partial
    sums the first just wrote, which the L2 holds; its reads are the L2's and its rounds
    wait for the L2's latency, not device memory's. The first kernel gets no such credit."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import ffn_bf16

    from tcomp.cost.model import L2_RESIDENT_SHARE
    from tcomp.search.tiling.skinny import stream_rows

    def two_kernels(target):
        Q = ffn_bf16.algorithm(1, 12288, 4096)
        s = tc.create_schedule(Q)
        s["Cb"].compute_inline()
        s["Y"].compute_inline()
        stream_rows(s, Q, "C", "A", "W", parts=64, threads=256, unroll=2)
        return tc.estimate(s, target=target).kernels

    slices, adding = two_kernels(H100)
    partial = 64 * 12288 * 4
    assert slices.writes_by_tensor["C_rf"] == partial <= H100.l2_bytes / L2_RESIDENT_SHARE
    assert adding.l2_read_bytes == adding.reads_by_tensor["C_rf"] == partial
    assert slices.l2_read_bytes < slices.reads_by_tensor["W"]
    # the same program on a GPU whose L2 is too small for the partial sums: device memory
    _, from_memory = two_kernels(H100.replace(l2_bytes=partial))
    assert from_memory.l2_read_bytes == 0
    assert from_memory.predicted_seconds > adding.predicted_seconds


def test_a_bias_broadcast_down_the_rows_is_read_from_device_memory_once():
    """examples/gelu_chain.py reads B[j] in every row: the blocks read 8192 x 8192 x 2
    bytes of it, but B is 16 KB, so the L2 serves all but 16 KB of those reads and the
    time on device memory is that of X, R and Y alone."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import gelu_chain

    Y = gelu_chain.algorithm(8192, 8192)
    s = tc.create_schedule(Y)
    gelu_chain.schedule(s, Y)
    (k,) = tc.estimate(s, "h200").kernels
    assert k.reads_by_tensor["B"] == pytest.approx(8192 * 8192 * 2)
    assert k.dram_bytes - k.l2_read_bytes == pytest.approx(3 * 8192 * 8192 * 2 + 8192 * 2)


def test_reads_in_short_runs_cost_device_memory_more_than_their_bytes():
    """A run of 128 contiguous bytes or more streams at the full bandwidth, shorter ones at
    less (0.85 at 64 bytes); a block's warps on neighbouring bytes make one run."""
    from tcomp.cost.analysis import run_efficiency, short_run_bytes

    assert run_efficiency(128) == run_efficiency(4096) == 1.0
    assert run_efficiency(64) == pytest.approx(0.85)
    assert short_run_bytes(set(range(64)), 2) == 0.0  # 128 bytes of bf16
    assert short_run_bytes(set(range(32)), 2) == pytest.approx(64 * (1 / 0.85 - 1))
    # two runs of 64 bytes, 4 KB apart
    assert short_run_bytes(set(range(32)) | set(range(2048, 2080)), 2) == pytest.approx(2 * 64 * (1 / 0.85 - 1))


def test_the_down_projection_ranks_its_split_above_64_byte_runs_as_measured():
    """One decode row of the down projection (W 12288 x 4096): one kernel of 128 blocks of
    32 columns reads W in 64-byte runs of its rows and took 44.0 us on the H100; k over 16
    blocks as well, 512-byte runs and a second kernel, 39.4 us. The model ranks them so."""
    import ffn_bf16
    from tcomp.search.tiling.skinny import stream_rows_in_blocks

    def predicted(**sizes):
        out = ffn_bf16.algorithm(1, 4096, 12288)
        s = tc.create_schedule(out)
        s["Cb"].compute_inline()
        s["Y"].compute_inline()
        stream_rows_in_blocks(s, out, "C", "A", "W", **sizes)
        estimate = tc.estimate(s, target="h100")
        return estimate.predicted_seconds, sum(k.short_run_bytes for k in estimate.kernels)

    one_kernel, one_kernel_short = predicted(parts=256, threads_x=4, unroll=2)
    split, split_short = predicted(block_parts=16, parts=8, threads_x=32, unroll=8)
    assert split < one_kernel
    assert one_kernel_short > 0.1 * 12288 * 4096 * 2 and split_short < 0.001 * 12288 * 4096 * 2


def test_loaded_16_bit_values_in_flight_take_half_a_register_each():
    """16 bytes loaded by each thread and unrolled four times hold 16 registers in flight,
    whether they are 16 float32 or 32 bfloat16 values (a vector load of 8 bfloat16 fills
    4 registers)."""
    def in_flight(dtype, lanes):
        X = tc.placeholder((4096,), dtype, name="X")
        Y = tc.compute((4096,), lambda i: tc.cast(tc.cast(X[i], "float32") * 2.0, dtype), name="Y")
        s = tc.create_schedule(Y)
        block, rest = s[Y].split(Y.op.axis[0], 128 * 4 * lanes)
        copies, rest = s[Y].split(rest, 128 * lanes)
        thread, vector = s[Y].split(rest, lanes)
        s[Y].reorder(block, thread, copies, vector)
        s[Y].bind(block, "blockIdx.x")
        s[Y].bind(thread, "threadIdx.x")
        s[Y].unroll(copies)
        s[Y].vectorize(vector)
        (k,) = tc.estimate(s).kernels
        return int(k.regs_source.split(" + ")[1].split()[0])

    assert in_flight("float32", 4) == in_flight("bfloat16", 8) == 16


def test_the_l2_term_counts_the_tiles_a_grouped_wave_reads():
    """4096^3 in 128 x 256 blocks, 132 a wave. A column first: the first wave reads all
    32 row tiles of A and 5 column tiles of W. In groups of 16 block rows, where
    blockIdx.x carries both the row within the group and the column, it reads 16 of A and
    9 of W: the blocks' origins (their reads' indices with the threads' and loops'
    variables at zero) tell, where the grid dimensions alone would count 132 of each."""
    import gemm_bf16
    from tcomp.cost.analysis import analyze_kernel
    from tcomp.cost.model import _tiles_read
    from tcomp.search.tiling import wgmma_tiles

    def first_wave(**order):
        out = gemm_bf16.algorithm(4096, 4096, 4096)
        s = tc.create_schedule(out)
        wgmma_tiles(s, out, "C", "A", "W", BM=128, BN=256, BK=64, stages=4, **order)
        kernel = tc.lower(s).kernels[0]
        traffic = analyze_kernel(kernel).traffic
        return {n: _tiles_read(kernel.grid, 132, traffic[n].read_block_dims, traffic[n].read_origins)[1]
                for n in ("A", "W")}

    assert first_wave(rows_fastest=True) == {"A": 32, "W": 5}
    assert first_wave(group_rows=16) == {"A": 16, "W": 9}
