"""The GPUs tcomp knows: one frozen record per GPU, read by every layer.

Lowering asks a record which matrix instructions exist, ``check_resources`` holds a
lowered program to its launch limits, the code generator to its static shared-memory
limit, the cost model divides by its rates and the search sizes its tiles by its
register file and shared memory. A second GPU is a second record, not a second set of
constants.

Every figure carries its source, and docs/hardware.md tabulates them: "CUDA guide" is
the CUDA C++ Programming Guide's table of compute capabilities, "whitepaper" NVIDIA's H100
architecture whitepaper, "datasheet" the product's, "measured" a figure measured on the
H200 with the benchmark named (BENCHMARKS.md), and "assumption" a modelling choice, not a
property of the chip (docs/hardware.md, "Modelling assumptions").

A target is a frozen record: ``H100.replace(mem_latency_ns=1000)`` gives a variant
(to find the latency at which a kernel's limiter flips, say).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..errors import TcompError

KiB = 1024


@dataclass(frozen=True)
class Target:
    """One GPU, as the cost model sees it. Rates are per second, sizes in bytes."""

    name: str
    description: str
    sms: int
    clock_hz: float  # SM clock used to turn cycles into seconds
    # residency limits per SM
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    reg_alloc_unit: int  # registers are given to a warp in multiples of this
    max_regs_per_thread: int
    smem_per_sm: int
    smem_per_block: int  # largest shared memory one block may have (opt-in)
    smem_reserved_per_block: int  # the runtime keeps this much per resident block
    max_threads_per_block: int
    # throughput
    dram_bw_datasheet: float  # bytes/s, the vendor's figure (roofline, Little's law)
    dram_bw_measured: float  # bytes/s a copy achieves (what time predictions use)
    fp32_flops: float  # CUDA-core fp32 peak, FLOP/s (an FMA is 2)
    matrix_flops_bf16: float  # dense 16-bit matrix (tensor core) peak, FLOP/s
    l2_bytes: int
    issue_per_sm_per_clock: int  # warp instructions an SM issues per cycle (one per scheduler)
    l1_wavefronts_per_clock: int  # shared memory / L1 data-stage wavefronts per SM per cycle
    # latency hiding (docs/hardware.md, "Modelling assumptions")
    mem_latency_ns: float
    outstanding_loads_per_warp: int
    launch_overhead_s: float  # per kernel of a program
    warp_size: int = 32
    # the rate of warp-level mma.sync where it is below the matrix peak (on Hopper only
    # wgmma reaches the peak); None: the matrix peak
    mma_sync_flops_bf16: float | None = None
    # how long a cp.async copy takes to land while the memory system streams matrix tiles
    # at full rate (what a ring's copies issued k steps ahead must cover); None: mem_latency_ns
    async_copy_latency_ns: float | None = None
    # how long a load that hits the L2 takes; None: mem_latency_ns
    l2_latency_ns: float | None = None
    # launch limits (CUDA guide: the same for compute capabilities 8.6 to 12.0)
    max_block_dims: tuple = (1024, 1024, 64)  # blockDim.x, .y, .z
    max_grid_dims: tuple = (2**31 - 1, 65535, 65535)  # gridDim.x, .y, .z
    max_local_bytes_per_thread: int = 512 * KiB
    # above this a kernel's shared buffers are declared as dynamic shared memory, which a
    # launch must ask for (CUDA guide: 48 KB of static shared memory per block)
    max_static_shared_bytes: int = 48 * KiB
    device_memory_bytes: int = 80 * 10**9  # no buffer can be larger
    # the families of matrix instructions ``tensorize`` may use (tcomp.target.instructions)
    matrix_instructions: tuple = ("mma_m16n8k16",)

    def replace(self, **changes) -> "Target":
        """A copy of this target with some figures changed."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TcompError(f"target {self.name} has no figure {', '.join(unknown)}; "
                             f"it has {', '.join(sorted(known))}")
        return replace(self, **changes)

    @property
    def async_copy_latency_s(self) -> float:
        """Seconds a cp.async copy takes to land under load (see ``async_copy_latency_ns``)."""
        return (self.async_copy_latency_ns or self.mem_latency_ns) * 1e-9

    @property
    def l2_latency_s(self) -> float:
        """Seconds a load served by the L2 takes (see ``l2_latency_ns``)."""
        return (self.l2_latency_ns or self.mem_latency_ns) * 1e-9

    @property
    def mma_sync_rate(self) -> float:
        """FLOP/s of mma.sync matrix work (16-bit inputs)."""
        return self.mma_sync_flops_bf16 or self.matrix_flops_bf16

    @property
    def ridge_bf16(self) -> float:
        """FLOP per byte where 16-bit matrix work stops being memory-bound (datasheet figures)."""
        return self.matrix_flops_bf16 / self.dram_bw_datasheet

    @property
    def ridge_fp32(self) -> float:
        return self.fp32_flops / self.dram_bw_datasheet


H100 = Target(
    name="h100",
    description="NVIDIA H100 SXM (compute capability 9.0)",
    sms=132,  # whitepaper
    clock_hz=1.98e9,  # H100 SXM boost clock (whitepaper); fp32 peak 66.9 TFLOP/s = 132 x 256 x 1.98 GHz
    max_threads_per_sm=2048,  # CUDA guide, compute capability 9.0
    max_warps_per_sm=64,  # CUDA guide, cc 9.0
    max_blocks_per_sm=32,  # CUDA guide, cc 9.0
    regs_per_sm=65536,  # CUDA guide, cc 9.0: 64K 32-bit registers
    reg_alloc_unit=256,  # CUDA occupancy calculator, cc 9.0: per warp, in multiples of 256
    max_regs_per_thread=255,  # CUDA guide, cc 9.0
    smem_per_sm=233472,  # CUDA guide, cc 9.0: 228 KiB
    smem_per_block=232448,  # CUDA guide, cc 9.0: 227 KB per block
    smem_reserved_per_block=1 * KiB,  # CUDA guide: 1 KiB reserved per resident block
    max_threads_per_block=1024,  # CUDA guide
    dram_bw_datasheet=3.35e12,  # H100 SXM datasheet
    dram_bw_measured=3.35e12 * 0.875,  # not measured: the H200's measured/datasheet ratio
    fp32_flops=66.9e12,  # H100 whitepaper (SXM5)
    matrix_flops_bf16=989.4e12,  # whitepaper, dense bf16
    l2_bytes=50 * 1024 * KiB,  # H100 whitepaper: 50 MB L2
    issue_per_sm_per_clock=4,  # four warp schedulers per SM (Hopper tuning guide)
    l1_wavefronts_per_clock=1,  # 128 bytes per clock per SM from shared memory / L1 (CUDA guide)
    mem_latency_ns=600.0,  # assumption
    outstanding_loads_per_warp=4,  # assumption
    # a kernel's fixed cost as the search times it (CUDA graph replays, no host launch
    # between calls): a one-row RMSNorm, whose work is a few hundred ns, took 1.6-1.9 us
    # a call (H100, 20th session); 5 us (the assumption before) ranked a decode row's
    # split k (two kernels) behind one kernel that measured 12% slower
    launch_overhead_s=2e-6,
    # measured on the H200 (issue 13: registers-only mma.sync chains from Numba reached
    # 330-390 TFLOP/s; the same SM as the H100's)
    mma_sync_flops_bf16=390e12,
    # NOTE: fitted on the H200, whose SM and L2 are the H100's (benchmarks/ring_depth.py,
    # 2026-12-03): a wgmma GEMM whose ring keeps one k step of copies ahead takes 0.086-0.165
    # us a step longer than with two ahead, which this model reproduces with 920-930 ns for
    # 128x256 and 256x128 blocks at 4096^3 and 1024x12288x4096 alike (BENCHMARKS.md). A
    # latency under load, far above an idle load's (the H200's mem_latency_ns). A lead on the H100.
    async_copy_latency_ns=930.0,
    # NOTE: fitted on the H100 (benchmarks/results/decode_rows_h100_3.log, 2026-12-05): the
    # second kernel of a decode step reads partial sums the first just wrote; every value from
    # 100 to 300 ns gives the same ranks of the measured variants (Kendall tau of the down
    # projection's ten 0.31, against 0.22 at mem_latency_ns). Not measured directly.
    l2_latency_ns=200.0,
    device_memory_bytes=80 * 10**9,  # H100 SXM: 80 GB of HBM3
    matrix_instructions=("mma_m16n8k16", "wgmma"),  # wgmma: compute capability 9.0a
)

H200 = H100.replace(
    name="h200",
    description="NVIDIA H200 SXM (compute capability 9.0)",
    # the same SM and limits as the H100 (the same Hopper processor; H200 datasheet)
    dram_bw_datasheet=4.8e12,  # H200 datasheet: 4.8 TB/s HBM3e
    dram_bw_measured=4.2e12,  # measured: 4 GiB device copy, bytes read + written (docs/hardware.md)
    fp32_flops=67e12,  # H200 datasheet
    matrix_flops_bf16=989e12,  # H200 datasheet, dense bf16
    l2_bytes=60 * 1024 * KiB,  # what the device reports (L2_cache_size, benchmarks/l2_bandwidth.py, nvidia-h200)
    # NOTE: no datasheet gives a latency for the H200. 500 cycles at 1.98 GHz (about 250 ns) is the
    # order of published Hopper microbenchmarks for a load that misses L1, and it is what makes
    # this model reproduce the SGEMM ladder's coalesced rung measured on this machine (BENCHMARKS.md).
    mem_latency_ns=250.0,
    device_memory_bytes=141 * 10**9,  # H200 datasheet: 141 GB of HBM3e
)

RTX_A6000 = Target(
    name="rtx_a6000",
    description="NVIDIA RTX A6000 (compute capability 8.6)",
    sms=84,  # A6000 datasheet
    clock_hz=1.80e9,  # A6000 datasheet boost clock, 1800 MHz
    max_threads_per_sm=1536,  # CUDA guide, compute capability 8.6
    max_warps_per_sm=48,  # CUDA guide, cc 8.6
    max_blocks_per_sm=16,  # CUDA guide, compute capability 8.6
    regs_per_sm=65536,  # CUDA guide, cc 8.6
    reg_alloc_unit=256,  # CUDA occupancy calculator
    max_regs_per_thread=255,  # CUDA guide
    smem_per_sm=102400,  # CUDA guide, cc 8.6: 100 KiB
    smem_per_block=101376,  # CUDA guide, cc 8.6: 99 KB per block
    smem_reserved_per_block=1024,  # CUDA guide: 1 KiB reserved per resident block
    max_threads_per_block=1024,  # CUDA guide
    dram_bw_datasheet=768e9,  # A6000 datasheet
    dram_bw_measured=768e9 * 0.875,  # not measured: the H200's measured/datasheet ratio
    fp32_flops=38.7e12,  # A6000 datasheet
    matrix_flops_bf16=154.8e12,  # A6000 datasheet, dense bf16 tensor (309.7 with sparsity)
    l2_bytes=6 * 1024 * KiB,  # A6000 (GA102) datasheet: 6 MB L2
    issue_per_sm_per_clock=4,  # four warp schedulers per SM (Ampere tuning guide)
    l1_wavefronts_per_clock=1,  # 128 bytes per clock per SM (CUDA guide)
    mem_latency_ns=600.0,  # assumption
    outstanding_loads_per_warp=4,  # assumption
    launch_overhead_s=5e-6,  # assumption
    device_memory_bytes=48 * 10**9,  # A6000 datasheet: 48 GB of GDDR6
)

RTX_PRO_6000 = Target(
    name="rtx_pro_6000",
    description="NVIDIA RTX PRO 6000 Blackwell Workstation Edition (compute capability 12.0)",
    sms=188,  # RTX PRO 6000 Blackwell datasheet
    clock_hz=2.617e9,  # datasheet boost clock
    max_threads_per_sm=1536,  # CUDA guide, compute capability 12.0
    max_warps_per_sm=48,  # CUDA guide, compute capability 12.0
    max_blocks_per_sm=24,  # CUDA guide, compute capability 12.0
    regs_per_sm=65536,  # CUDA guide, compute capability 12.0
    reg_alloc_unit=256,  # CUDA occupancy calculator
    max_regs_per_thread=255,  # CUDA guide
    smem_per_sm=102400,  # CUDA guide, cc 12.0: 100 KiB
    smem_per_block=101376,  # CUDA guide, cc 12.0: 99 KiB per block
    smem_reserved_per_block=1024,  # CUDA guide: 1 KiB reserved per resident block
    max_threads_per_block=1024,  # CUDA guide
    dram_bw_datasheet=1792e9,  # RTX PRO 6000 Blackwell datasheet
    dram_bw_measured=1792e9 * 0.875,  # not measured: the H200's measured/datasheet ratio
    fp32_flops=126e12,  # RTX PRO 6000 Blackwell datasheet (about 126 TFLOP/s)
    matrix_flops_bf16=503.8e12,  # datasheet, dense bf16
    l2_bytes=128 * 1024 * KiB,  # datasheet: 128 MB L2
    issue_per_sm_per_clock=4,  # four warp schedulers per SM
    l1_wavefronts_per_clock=1,  # 128 bytes per clock per SM
    mem_latency_ns=600.0,  # assumption
    outstanding_loads_per_warp=4,  # assumption
    launch_overhead_s=5e-6,  # assumption
    device_memory_bytes=96 * 10**9,  # datasheet: 96 GB of GDDR7
)

TARGETS = {t.name: t for t in (H200, H100, RTX_A6000, RTX_PRO_6000)}
_ALIASES = {"a6000": "rtx_a6000", "rtx-a6000": "rtx_a6000", "rtxa6000": "rtx_a6000",
            "rtx-pro-6000": "rtx_pro_6000", "pro6000": "rtx_pro_6000", "rtx_pro6000": "rtx_pro_6000"}


#: the GPU tcomp generates code for unless told otherwise (the one this project measures on)
DEFAULT_TARGET = H200


def target_names() -> tuple:
    """The names every command and function accepts for ``target=``, the default first."""
    return tuple(TARGETS)


#: words of a device's name (as CUDA reports it, "NVIDIA H100 80GB HBM3") -> the target it is
DEVICE_NAMES = (("H100", "h100"), ("H200", "h200"), ("RTX A6000", "rtx_a6000"), ("RTX PRO 6000", "rtx_pro_6000"))


def target_of_device(device_name: str) -> Target | None:
    """The target whose GPU CUDA names ``device_name`` ("NVIDIA H100 80GB HBM3" is the
    H100), or None for a GPU tcomp has no record of: rank for the card that measures."""
    for words, name in DEVICE_NAMES:
        if words in device_name:
            return TARGETS[name]
    return None


def get_target(target=None) -> Target:
    """A Target from a Target, a name (one of :func:`target_names`, any case; ``"a6000"``
    for ``"rtx_a6000"``), or None / ``"cuda"`` for :data:`DEFAULT_TARGET`."""
    if target is None:
        return DEFAULT_TARGET
    if isinstance(target, Target):
        return target
    if isinstance(target, str):
        key = target.strip().lower()
        if key == "cuda":
            return DEFAULT_TARGET
        key = _ALIASES.get(key, key)
        if key in TARGETS:
            return TARGETS[key]
    raise TcompError(f"unknown target {target!r}; tcomp knows {', '.join(target_names())} "
                     f"(and 'cuda' for {DEFAULT_TARGET.name})")


__all__ = ["DEFAULT_TARGET", "Target", "TARGETS", "H200", "H100", "RTX_A6000", "RTX_PRO_6000", "get_target",
           "target_names", "target_of_device"]
