"""TMA copies and mbarriers (``tcomp.codegen.bulk_copy``): the simulator's models keep the
instructions' contracts (a box lands in wgmma's 128-byte swizzle with zeros past the
tensor's edge; a phase completes on its arrivals and its bytes, and a wait for the phase
before a fresh barrier's first returns at once), the hand-written warp-specialized GEMM of
``benchmarks/tma_gemm_probe.py`` runs on them and matches float64, and its kernels
assemble for sm_90a without spills."""

import shutil
import sys
import threading
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.codegen import bulk_copy
from tcomp.codegen.tensor_maps import tensor_map
from tcomp.target.wgmma_layout import swizzle128
from workloads import json_from_a_process_without_the_simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import tma_gemm_probe  # noqa: E402


def _barriers(count: int) -> np.ndarray:
    return np.zeros(count, dtype=np.uint64)


def test_a_box_lands_in_the_128_byte_swizzle_with_zeros_past_the_edge(rng):
    rows, cols = 100, 80
    tensor = rng.standard_normal((rows, cols)).astype(ml_dtypes.bfloat16).view(np.uint16)
    tmap = bulk_copy.sim_tensor_map(tensor.reshape(-1), (rows, cols), 64, 64)
    smem = np.full(64 * 64 + 512, 0xFFFF, dtype=np.uint16)
    bars = _barriers(1)
    bulk_copy.sim_mbarrier_init(bars, 0, 1)
    bulk_copy.sim_mbarrier_arrive_expect(bars, 0, 64 * 64 * 2)
    bulk_copy.sim_tma_load_2d(smem, 512, tmap, 32, 60, bars, 0)  # columns 32..95, rows 60..123
    for r, c in [(0, 0), (3, 17), (39, 47), (40, 0), (7, 48), (63, 63)]:
        expected = tensor[60 + r, 32 + c] if 60 + r < rows and 32 + c < cols else 0
        assert smem[512 + swizzle128(r * 128 + c * 2) // 2] == expected, (r, c)
    assert smem[:512].tolist() == [0xFFFF] * 512  # nothing before the box
    bulk_copy.sim_mbarrier_wait(bars, 0, 0)  # its bytes landed: the phase completed


def test_a_box_of_a_3d_tensor_comes_from_one_index_of_its_first_dimension(rng):
    tensor = rng.standard_normal((3, 70, 64)).astype(ml_dtypes.bfloat16).view(np.uint16)
    tmap = bulk_copy.sim_tensor_map(tensor.reshape(-1), tensor.shape, 64, 64)
    smem = np.full(2 * 64 * 64, 0xFFFF, dtype=np.uint16)
    bars = _barriers(1)
    bulk_copy.sim_mbarrier_init(bars, 0, 1)
    bulk_copy.sim_mbarrier_arrive_expect(bars, 0, 2 * 64 * 64 * 2)
    bulk_copy.sim_tma_load_3d(smem, 0, tmap, 0, 32, 1, bars, 0)  # rows 32..95 of tensor[1]
    bulk_copy.sim_tma_load_3d(smem, 64 * 64, tmap, 0, 0, 3, bars, 0)  # past the first dimension: zeros
    for r, c in [(0, 0), (5, 9), (37, 63), (38, 0), (63, 63)]:
        expected = tensor[1, 32 + r, c] if 32 + r < 70 else 0
        assert smem[swizzle128(r * 128 + c * 2) // 2] == expected, (r, c)
    assert not smem[64 * 64:].any()
    bulk_copy.sim_mbarrier_wait(bars, 0, 0)


def test_a_phase_completes_on_its_arrivals_and_its_bytes():
    bars = _barriers(2)
    bulk_copy.sim_mbarrier_init(bars, 1, 2)
    bulk_copy.sim_mbarrier_wait(bars, 1, 1)  # the phase before the first: complete at once
    done = threading.Event()

    def waiter():
        bulk_copy.sim_mbarrier_wait(bars, 1, 0)
        done.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    bulk_copy.sim_mbarrier_arrive_expect(bars, 1, 128)
    bulk_copy.sim_mbarrier_arrive(bars, 1)
    assert not done.wait(0.2)  # both arrivals in, 128 bytes still to land
    barrier = bulk_copy._sim_barrier(bars, 1)
    with bulk_copy._SIM_LOCK:
        barrier.bytes -= 128
        barrier.settle()
    thread.join(5)
    assert done.is_set()
    bulk_copy.sim_mbarrier_arrive(bars, 1)
    bulk_copy.sim_mbarrier_arrive(bars, 1)  # the second phase completes: parity 1 again
    bulk_copy.sim_mbarrier_wait(bars, 1, 1)


def test_a_broken_protocol_is_reported_not_hung(monkeypatch):
    bars = _barriers(1)
    with pytest.raises(RuntimeError, match="before mbarrier_init"):
        bulk_copy.sim_mbarrier_arrive(bars, 0)
    bulk_copy.sim_mbarrier_init(bars, 0, 1)
    bulk_copy.sim_mbarrier_arrive(bars, 0)
    monkeypatch.setattr(bulk_copy, "SIM_WAIT_LIMIT", 0.05)
    with pytest.raises(RuntimeError, match="never completed"):
        bulk_copy.sim_mbarrier_wait(bars, 0, 1)  # one arrival expected, and none came after the first
    bulk_copy.sim_mbarrier_arrive_expect(bars, 0, 64)  # the arrival is in; 64 bytes still to land
    with pytest.raises(RuntimeError, match="more arrivals on an mbarrier than its phase expects"):
        bulk_copy.sim_mbarrier_arrive(bars, 0)


def test_bad_tensor_maps_and_register_counts_are_refused_before_the_driver():
    with pytest.raises(tc.ArgumentError,
                       match=r"tensor maps take \['bfloat16', 'float16', 'float32'\] with swizzle 0 or 128; got int8, 128"):
        tensor_map(0x1000, "int8", (64, 64), 64, 64)
    with pytest.raises(tc.ArgumentError, match="16-byte aligned"):
        tensor_map(0x1008, "bfloat16", (64, 100), 64, 64)  # a row of 200 bytes
    with pytest.raises(tc.ArgumentError, match="wider than the 128-byte swizzle"):
        tensor_map(0x1000, "bfloat16", (64, 128), 64, 128)
    with pytest.raises(tc.ArgumentError, match="2 to 5 dimensions; got the shape"):
        tensor_map(0x1000, "bfloat16", (2,) * 6, 2, 2)
    with pytest.raises(tc.ArgumentError, match="at most 256 x 256"):
        tensor_map(0x1000, "bfloat16", (512, 64), 512, 64)
    with pytest.raises(ValueError, match="multiple of 8 in 24..256"):
        bulk_copy.set_max_registers(100, True)


@pytest.mark.parametrize("variant", ["tma", "ws-persist", "ws-pingpong"])
def test_the_probe_kernels_match_float64_in_the_simulator(variant, capsys):
    """Two row tiles (the second past M's edge) and two columns, three k steps through two
    slots, the persistent kernel's four tiles on one block: every phase of both barriers of
    both slots, with and without a producer warpgroup; the ping-pong kernel's four tiles
    taken in turn by its two consumers, on one block."""
    assert tma_gemm_probe.simulate([variant]) == 0, capsys.readouterr().out


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_probe_kernels_assemble_for_sm90a_without_spills():
    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    for variant, stats in report.items():
        assert stats["spill_bytes"] == 0, variant
        assert stats["registers"] <= 168, variant  # 384 threads of one block on 64K registers
        assert stats["tma"] >= 1 and stats["waits"] >= 1, variant


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "benchmarks")
import tma_gemm_probe as probe
report = {}
for variant in ("tma", "ws-persist", "ws-pingpong"):
    stats = probe.ptx_statistics(variant, 4)
    ptx = stats.pop("ptx")
    stats.update(tma=ptx.count("cp.async.bulk.tensor.2d"), waits=ptx.count("mbarrier.try_wait.parity"))
    report[variant] = stats
print(json.dumps(report))
"""


@pytest.mark.gpu
def test_the_warp_specialized_probe_matches_float64_on_the_gpu():
    """Every variant of the probe against float64: the ragged shape (3 row tiles) for all
    but ``ws-mc``, whose pairs of blocks need an even number of row tiles (2 here)."""
    unpaired = ",".join(v for v in tma_gemm_probe.VARIANTS if v != "ws-mc")
    assert tma_gemm_probe.main(["--shapes", "333,512,320;256,256,64", "--variants", unpaired, "--repeat", "2"]) == 0
    assert tma_gemm_probe.main(["--shapes", "256,512,320", "--variants", "ws-mc", "--repeat", "2"]) == 0
