"""The analytical cost model: ``tc.estimate(s, target="h200")``.

For each kernel of the lowered program, the counts of one block
(``tcomp.cost.analysis``) are turned into time on a target in four steps, each kept
in the record:

1. **Residency** (the limits: docs/hardware.md). Blocks per SM = the least of thread slots,
   registers (per warp, rounded up to the allocation unit), shared memory (plus the
   runtime's reserve per block) and the block cap; occupancy = resident warps over
   the SM's maximum.
2. **Roofline.** ``flops / peak`` and ``dram_bytes / bandwidth``; arithmetic
   intensity and the ceiling it puts on the fraction of peak.
3. **One SM's time.** The busiest SM runs ``ceil(blocks / SMs)`` blocks, ``r`` at a
   time (wave quantization). A round of ``q`` resident blocks takes the longest of:
   their issue slots (4 warp instructions per cycle, fewer when fewer warps), their
   shared-memory / L1 wavefronts, their matrix work (wgmma at the target's matrix
   peak, mma.sync at its own lower rate), and one block's critical path
   (its latency rounds times the memory latency, plus its own work when barriers
   make the block wait for its slowest warp): latency is hidden only when enough
   blocks are resident. Copies issued ahead of their readers wait only for the latency
   that the work in between does not cover: a double buffer's prefetch one k step
   ahead, a cp.async ring's copies ``stages - 1 - reader_lag`` steps ahead against the
   target's latency of a copy under load. A k step that waits for its whole chain of
   wgmma instructions (no chain left in flight) adds the chain's drain.
4. **Device memory.** Bytes over the achievable bandwidth, which Little's law caps
   at the bytes the resident warps keep in flight divided by the latency (docs/hardware.md,
   "Modelling assumptions": ``B_need = bandwidth x latency / SMs`` per SM against ``B_have = warps x
   loads in flight x bytes per load``, the warps of the blocks an SM actually holds: a grid of
   fewer blocks than the SMs could hold puts ``ceil(blocks / SMs)`` on each), with reads in
   runs shorter than 128 contiguous bytes counted at more than their bytes
   (``analysis.run_efficiency``). The bytes are the
   count of ``tcomp.cost.analysis`` less what the L2 serves: blocks start in the order of their linear index (``blockIdx.x`` fastest),
   ``SMs x blocks per SM`` at a time, and two blocks of one such wave that agree in the
   grid dimensions a tensor's reads depend on read the same tile of it, which reaches
   device memory once per wave. That credit is given only when what the first wave
   reads fits the L2: all of it, or for tiles streamed through a ring, the tiles of
   ``L2_WINDOW_ROUNDS`` of its rounds (the blocks of a wave hold only the k steps they
   are at). It is what ranks the block orders and tile shapes of tensor-core
   matrix products, whose tiles are re-read far more often than DRAM could serve.

``predicted_seconds = max(SM time, device-memory time, flops / peak) + launch overhead``; ``bound``
names the term that decided it: "compute" (issue slots or matrix units), "memory"
(device memory, or the shared-memory/L1 pipe) or "latency" (too few resident warps to
hide the memory latency).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..dtypes import itemsize
from ..errors import TcompError
from .analysis import BASE_REGISTERS, KernelCounts, analyze_kernel
from .block_tiles import mixes_coordinates, tiles_of_blocks
from ..target import Target, get_target

MiB = 1024 * 1024


@dataclass(frozen=True)
class KernelEstimate:
    """The cost of one kernel launch on one target. Times in seconds, sizes in bytes."""

    name: str
    grid: tuple
    block: tuple
    blocks: int
    threads_per_block: int
    warps_per_block: int
    # work
    flops: float
    matrix_flops: float  # the part done by 16/8-bit matrix instructions (tensor cores)
    dram_bytes: float  # bytes crossing between device memory and the blocks' local storage
    dram_read_bytes: float
    dram_write_bytes: float
    l2_read_bytes: float  # of dram_read_bytes, the re-reads of tiles that the blocks of one wave share
    short_run_bytes: float  # what device memory loses to reads in short runs, as bytes (analysis.run_efficiency)
    bytes_by_tensor: dict  # tensor name -> bytes read + written
    reads_by_tensor: dict
    writes_by_tensor: dict
    arithmetic_intensity: float  # flops / dram_bytes
    # resources and residency
    smem_bytes_per_block: int
    regs_per_thread: int
    regs_source: str  # "given" or how it was estimated
    blocks_per_sm_by: dict  # resource -> blocks it allows
    blocks_per_sm: int
    limited_by: tuple  # the resources that allow only blocks_per_sm
    resident_warps_per_sm: int
    occupancy: float
    waves: float  # blocks / (SMs x blocks_per_sm)
    wave_efficiency: float  # waves / ceil(waves)
    # roofline
    peak_flops: float  # the peak this kernel's arithmetic runs at
    t_compute_roofline: float  # flops / peak
    t_memory_roofline: float  # dram_bytes / datasheet bandwidth
    roofline_ceiling: float  # the fraction of peak the roofline allows
    # latency hiding (docs/hardware.md, "Modelling assumptions")
    mem_latency_s: float
    loads_in_flight_per_warp: float
    bytes_per_warp_load: float
    inflight_bytes_needed_per_sm: float
    inflight_bytes_per_sm: float
    latency_coverage: float  # have / needed
    effective_bandwidth: float  # bytes/s after Little's law
    # one SM's time, by term (each summed over the busiest SM's rounds)
    blocks_on_busiest_sm: int
    t_issue: float
    t_l1: float  # shared memory and L1 wavefronts
    t_matrix: float
    t_latency: float  # the critical path of the resident blocks
    copies_ahead: int  # k steps between a cp.async ring's copies and their readers
    t_copy_wait: float  # of one block's path: latency its prefetches and rings leave exposed
    t_chain_drain: float  # of one block's path: tensor cores idle while k steps wait for whole wgmma chains
    t_sm: float  # the busiest SM: per round, the longest of the four
    t_dram: float  # (dram_bytes - l2_read_bytes + short_run_bytes) / effective_bandwidth
    t_launch: float
    predicted_seconds: float
    bound: str  # "compute" | "memory" | "latency"
    limiter: str  # the term: issue, matrix, shared/L1, latency, dram, dram (latency-limited), peak flops, launch
    fits: bool
    notes: tuple = ()

    @property
    def dram_mib(self) -> float:
        return self.dram_bytes / MiB


@dataclass(frozen=True)
class Estimate:
    """What ``tc.estimate`` returns: one record per kernel launch, and totals."""

    target: Target
    kernels: tuple
    flops: float
    dram_bytes: float
    kernel_launches: int
    predicted_seconds: float
    bytes_by_tensor: dict = field(default_factory=dict)
    notes: tuple = ()

    @property
    def dram_mib(self) -> float:
        return self.dram_bytes / MiB

    def __str__(self) -> str:
        from .report import format_estimate

        return format_estimate(self)


# ---------------------------------------------------------------------------- residency


def estimate_registers(counts: KernelCounts) -> int:
    """Registers per thread: the local buffers (accumulators, fragments), the values in
    flight between a global load and its store, and a base for indices and pointers."""
    return BASE_REGISTERS + counts.local_registers + counts.regs_in_flight


def residency(target: Target, threads: int, regs: int, smem: int) -> tuple[dict, int, tuple]:
    """(blocks each resource allows, blocks per SM, the limiting resources)."""
    warps = -(-threads // target.warp_size)
    by = {}
    by["threads"] = min(target.max_threads_per_sm // threads, target.max_warps_per_sm // warps) if threads else 0
    if regs > target.max_regs_per_thread:
        by["registers"] = 0
    else:
        per_warp = -(-regs * target.warp_size // target.reg_alloc_unit) * target.reg_alloc_unit
        by["registers"] = target.regs_per_sm // (per_warp * warps) if per_warp else target.max_blocks_per_sm
    if smem > target.smem_per_block:
        by["shared_memory"] = 0
    elif smem > 0:
        by["shared_memory"] = target.smem_per_sm // (smem + target.smem_reserved_per_block)
    else:
        by["shared_memory"] = target.max_blocks_per_sm
    by["block_limit"] = target.max_blocks_per_sm
    blocks = min(by.values())
    limited = tuple(k for k, v in by.items() if v == blocks)
    return by, blocks, limited


# ---------------------------------------------------------------------------- the L2


def _tiles_read(grid: tuple, wave_blocks: int, dims: set, origins: dict | None = None) -> tuple[int, int]:
    """(tiles read in all, tiles the first wave reads) by the blocks of ``grid`` of a
    tensor whose reads depend on the grid dimensions ``dims``: blocks run ``wave_blocks``
    at a time in the order of their linear index, and two blocks of one wave that agree
    in ``dims`` read one tile; where the reads' ``origins`` (``block_tiles``) divide a
    block coordinate or take its remainder, two blocks of one wave whose origins agree."""
    total = grid[0] * grid[1] * grid[2]
    first = min(total, wave_blocks)
    ids = np.arange(total, dtype=np.int64)
    if origins and any(mixes_coordinates(o) for o in origins.values()):
        tile = tiles_of_blocks(origins.values(), grid)
        distinct = np.unique((ids // wave_blocks) * total + tile)
        return len(distinct), int(np.count_nonzero(distinct < total))
    varying = [d for d in range(3) if grid[d] > 1]
    if set(varying) <= dims:
        return total, first
    coordinate = {0: ids % grid[0], 1: (ids // grid[0]) % grid[1], 2: ids // (grid[0] * grid[1])}
    key, tiles_per_wave = ids // wave_blocks, 1
    for d in varying:
        if d in dims:
            key, tiles_per_wave = key * grid[d] + coordinate[d], tiles_per_wave * grid[d]
    distinct = np.unique(key)
    return len(distinct), int(np.count_nonzero(distinct < tiles_per_wave))


#: k steps of asynchronous copies (a ring's rounds) whose tiles the blocks of one wave
#: hold in the L2 at once: the blocks start together and drift apart by a few steps, so a
#: wave that streams its tiles over more rounds needs the L2 for this many of them only
#: (an assumption that the 8192^3 GEMM bears out: 1.5 ms measured on the H100, where
#: device memory alone, serving every block's tiles, would take 3.1 ms)
L2_WINDOW_ROUNDS = 16


def l2_served_reads(counts: KernelCounts, wave_blocks: int, l2_bytes: int) -> dict:
    """Per tensor, the bytes of its reads that the L2 serves (see the module docstring,
    step 4): none when the first wave's reads do not fit the L2, counting only
    :data:`L2_WINDOW_ROUNDS` rounds of the tiles a ring streams."""
    if wave_blocks <= 0:
        return {}
    tiles = {n: _tiles_read(counts.grid, wave_blocks, tr.read_block_dims, tr.read_origins)
             for n, tr in counts.traffic.items() if tr.read > 0}
    first_wave = sum(counts.traffic[n].read * first for n, (_, first) in tiles.items())
    if counts.async_rounds > L2_WINDOW_ROUNDS:
        first_wave *= L2_WINDOW_ROUNDS / counts.async_rounds
    if first_wave > l2_bytes:
        return {}
    return {n: counts.traffic[n].read * (counts.blocks - read) for n, (read, _) in tiles.items()}


# ---------------------------------------------------------------------------- one block's critical path


def exposed_latency(rounds: float, ahead: int, latency_cycles: float, own_cycles: float) -> float:
    """Cycles one block waits on ``rounds`` copies, each issued ``ahead`` steps of its own
    work before it is read (a double buffer's prefetch: one; a ring of ``stages`` tiles
    whose readers lag ``d`` steps: ``stages - 1 - d``): the part of the latency that
    ``ahead`` steps of ``own_cycles / rounds`` do not cover, once per round."""
    if not rounds:
        return 0.0
    return rounds * max(0.0, latency_cycles - ahead * own_cycles / rounds)


def chain_drain_cycles(counts: KernelCounts, matrix_cycles: float, issue_cycles: float) -> float:
    """Cycles the tensor cores of one block idle because each k step waits for its whole
    chain of wgmma instructions (``counts.chain_drains``, ``pipeline(stages, reader_lag=0)``):
    per step the last instruction's latency, taken as its share of the block's matrix
    time, and in all the block's own instructions (barriers, waits, copies), which then
    run while no chain does."""
    if not counts.chain_drains or not counts.warpgroup_instructions:
        return 0.0
    instruction = matrix_cycles / counts.warpgroup_instructions
    return counts.chain_drains * instruction + issue_cycles


# ---------------------------------------------------------------------------- one kernel


def estimate_kernel(counts: KernelCounts, target: Target, regs_per_thread: int | None = None,
                    in_l2: frozenset = frozenset(), small_inputs: dict | None = None) -> KernelEstimate:
    """The estimate of one launch; ``in_l2`` names the tensors an earlier kernel of the
    program wrote that the L2 still holds (``estimate``): their reads are the L2's, at
    its latency. ``small_inputs`` (name -> bytes) are inputs small enough to stay in the
    L2 once read: the device memory gives each of them once, however many blocks read it
    (a bias broadcast down the rows)."""
    t = target
    notes = list(counts.notes)
    clock = t.clock_hz
    threads = counts.threads_per_block
    wpb = counts.warps_per_block
    blocks = counts.blocks

    if regs_per_thread is None:
        regs = estimate_registers(counts)
        regs_source = (f"estimate: {counts.local_registers} in local buffers + {counts.regs_in_flight} for loaded "
                       f"values in flight + {BASE_REGISTERS} for indices and pointers")
    else:
        regs = int(regs_per_thread)
        regs_source = "given"
    if regs > t.max_regs_per_thread:
        notes.append(f"{regs} registers per thread exceed the {t.max_regs_per_thread} a thread may have: "
                     "the local buffers would spill to local memory")
    by, bps, limited = residency(t, threads, regs, counts.smem_bytes)
    fits = bps > 0 and threads <= t.max_threads_per_block
    if threads > t.max_threads_per_block:
        notes.append(f"{threads} threads per block exceed the limit of {t.max_threads_per_block}")
    if counts.smem_bytes > t.smem_per_block:
        notes.append(f"{counts.smem_bytes} bytes of shared memory per block exceed the {t.smem_per_block} "
                     f"a block may have on the {t.name}")
    resident_warps = bps * wpb
    occupancy = resident_warps / t.max_warps_per_sm

    # work and traffic of the whole launch
    flops = counts.flops * blocks
    matrix_flops = counts.matrix_flops * blocks
    reads = {n: tr.read * blocks for n, tr in counts.traffic.items()}
    writes = {n: tr.write * blocks for n, tr in counts.traffic.items()}
    by_tensor = {n: reads[n] + writes[n] for n in counts.traffic}
    dram_read = sum(reads.values())
    dram_write = sum(writes.values())
    dram = dram_read + dram_write
    intensity = flops / dram if dram else math.inf

    # roofline
    scalar_flops = flops - matrix_flops
    mma_sync_flops = counts.mma_sync_flops * blocks
    t_roof_compute = (matrix_flops - mma_sync_flops) / t.matrix_flops_bf16 + mma_sync_flops / t.mma_sync_rate \
        + scalar_flops / t.fp32_flops
    peak = (flops / t_roof_compute) if t_roof_compute > 0 else t.fp32_flops
    t_roof_memory = dram / t.dram_bw_datasheet
    ceiling = min(1.0, intensity * t.dram_bw_datasheet / peak) if dram else 1.0

    # latency hiding: Little's law (docs/hardware.md, "Modelling assumptions")
    latency_s = t.mem_latency_ns * 1e-9
    latency_cycles = latency_s * clock
    # the rounds of loads wait for the L2 where they read what an earlier kernel left there
    from_l2 = sum(reads.get(n, 0.0) for n in in_l2) / dram_read if dram_read else 0.0
    round_cycles = (from_l2 * t.l2_latency_s + (1.0 - from_l2) * latency_s) * clock
    all_rounds = counts.latency_rounds + counts.prefetch_rounds + counts.async_rounds
    loads_per_round = counts.global_load_instructions / wpb / all_rounds if all_rounds and wpb else 0.0
    in_flight = min(float(t.outstanding_loads_per_warp), max(1.0, loads_per_round)) if loads_per_round else 0.0
    bytes_per_warp_load = counts.global_load_bytes_per_lane * t.warp_size
    need = t.dram_bw_datasheet * latency_s / t.sms
    # a grid of fewer blocks than the SMs can hold puts ceil(blocks / SMs) on each busy SM
    warps_streaming = min(bps, -(-blocks // t.sms)) * wpb
    have = warps_streaming * in_flight * bytes_per_warp_load
    coverage = have / need if need else math.inf
    active_sms = min(t.sms, blocks)
    bw_eff = t.dram_bw_measured
    if have > 0:
        bw_eff = min(bw_eff, have * active_sms / latency_s)
    served = l2_served_reads(counts, bps * t.sms, t.l2_bytes)
    served.update({n: reads[n] for n in in_l2 if reads.get(n)})
    for name, size in (small_inputs or {}).items():
        if reads.get(name, 0.0) > size:
            served[name] = max(served.get(name, 0.0), reads[name] - size)
    l2_read = sum(served.values())
    # reads in short runs cost device memory more than their bytes, in the share of them it serves
    short_run = sum(tr.short_run_read * blocks * (1.0 - served.get(n, 0.0) / reads[n])
                    for n, tr in counts.traffic.items() if reads.get(n))
    t_dram = (dram - l2_read + short_run) / bw_eff if dram else 0.0

    # one SM: rounds of resident blocks
    per_block_matrix_cycles = ((counts.matrix_flops - counts.mma_sync_flops) / t.matrix_flops_bf16
                               + counts.mma_sync_flops / t.mma_sync_rate) * t.sms * clock
    busiest = -(-blocks // t.sms)
    if bps > 0:
        issue_alone = counts.warp_instructions / min(t.issue_per_sm_per_clock, wpb)
        work_alone = max(issue_alone, counts.l1_wavefronts / t.l1_wavefronts_per_clock, per_block_matrix_cycles)
        # one block alone: its waits on memory, plus its own work (all of the block's
        # work when barriers make every warp wait for the slowest); a prefetch into
        # registers waits only for what the work in between does not cover
        own = work_alone if counts.has_barrier else counts.thread_instructions
        drain = chain_drain_cycles(counts, per_block_matrix_cycles, issue_alone)
        own += drain
        copy_wait = max(exposed_latency(counts.prefetch_rounds, 1, latency_cycles, own),
                        exposed_latency(counts.async_rounds, counts.async_ahead, t.async_copy_latency_s * clock, own))
        chain = counts.latency_rounds * round_cycles + own + copy_wait

        def round_terms(q):
            return {
                "issue": q * counts.warp_instructions / min(t.issue_per_sm_per_clock, q * wpb),
                "shared/L1": q * counts.l1_wavefronts / t.l1_wavefronts_per_clock,
                "matrix": q * per_block_matrix_cycles,
                "latency": chain,
            }

        sums = {"issue": 0.0, "shared/L1": 0.0, "matrix": 0.0, "latency": 0.0}
        t_sm_cycles = 0.0
        full, rest = divmod(busiest, bps)
        for q, n in ((bps, full), (rest, 1 if rest else 0)):
            if n == 0:
                continue
            terms = round_terms(q)
            for k, v in terms.items():
                sums[k] += n * v
            t_sm_cycles += n * max(terms.values())
        t_sm = t_sm_cycles / clock
        term_s = {k: v / clock for k, v in sums.items()}
        waves = blocks / (t.sms * bps)
        wave_eff = waves / math.ceil(waves)
    else:
        t_sm = math.inf
        term_s = {"issue": math.inf, "shared/L1": math.inf, "matrix": math.inf, "latency": math.inf}
        waves, wave_eff = math.inf, 0.0
        drain = copy_wait = 0.0
        notes.append(f"no block of {counts.name} fits on an SM ({', '.join(limited)})")

    t_launch = t.launch_overhead_s
    predicted = max(t_sm, t_dram, t_roof_compute) + t_launch

    # what decided it
    candidates = dict(term_s)
    candidates["dram"] = t_dram
    candidates["peak flops"] = t_roof_compute
    candidates["launch"] = t_launch
    limiter = max(candidates, key=lambda k: candidates[k])
    if limiter == "dram" and bw_eff < t.dram_bw_measured:
        # fewer bytes in flight than Little's law asks for: the bandwidth is not reached
        limiter = "dram (latency-limited)"
    bound = {"issue": "compute", "matrix": "compute", "peak flops": "compute", "shared/L1": "memory",
             "dram": "memory", "dram (latency-limited)": "latency", "latency": "latency",
             "launch": "latency"}[limiter]

    return KernelEstimate(
        name=counts.name, grid=counts.grid, block=counts.block, blocks=blocks, threads_per_block=threads,
        warps_per_block=wpb, flops=flops, matrix_flops=matrix_flops, dram_bytes=dram, dram_read_bytes=dram_read,
        dram_write_bytes=dram_write, l2_read_bytes=l2_read, short_run_bytes=short_run,
        bytes_by_tensor=by_tensor, reads_by_tensor=reads, writes_by_tensor=writes,
        arithmetic_intensity=intensity, smem_bytes_per_block=counts.smem_bytes, regs_per_thread=regs,
        regs_source=regs_source, blocks_per_sm_by=by, blocks_per_sm=bps, limited_by=limited,
        resident_warps_per_sm=resident_warps, occupancy=occupancy, waves=waves, wave_efficiency=wave_eff,
        peak_flops=peak, t_compute_roofline=t_roof_compute, t_memory_roofline=t_roof_memory,
        roofline_ceiling=ceiling, mem_latency_s=latency_s, loads_in_flight_per_warp=in_flight,
        bytes_per_warp_load=bytes_per_warp_load, inflight_bytes_needed_per_sm=need, inflight_bytes_per_sm=have,
        latency_coverage=coverage, effective_bandwidth=bw_eff, blocks_on_busiest_sm=busiest,
        t_issue=term_s["issue"], t_l1=term_s["shared/L1"], t_matrix=term_s["matrix"], t_latency=term_s["latency"],
        copies_ahead=counts.async_ahead, t_copy_wait=copy_wait / clock, t_chain_drain=drain / clock,
        t_sm=t_sm, t_dram=t_dram, t_launch=t_launch, predicted_seconds=predicted, bound=bound, limiter=limiter,
        fits=fits, notes=tuple(notes),
    )


# ---------------------------------------------------------------------------- the program


#: what earlier kernels of a program wrote counts as read from the L2 up to 1 / this of it
L2_RESIDENT_SHARE = 8


def estimate(s, target="h200", regs_per_thread=None) -> Estimate:
    """The analytical cost of schedule ``s`` (or of an already lowered program) on ``target``.

    ``target`` is a name (``"h200"``, ``"h100"``, ``"rtx_a6000"``, ``"rtx_pro_6000"``) or a
    :class:`~tcomp.target.Target` (``tc.cost.H100.replace(mem_latency_ns=1000)``).
    ``regs_per_thread`` overrides the register estimate (one int for every kernel, or a
    dict from kernel name to int), for when the compiler's figure is known.

    Returns a frozen :class:`Estimate`: ``kernels`` (one :class:`KernelEstimate` per
    launch, with every term of the prediction) and the totals ``dram_bytes``,
    ``kernel_launches`` and ``predicted_seconds``. ``print(est)`` shows it as tables.
    """
    from ..ir.stmt import Program
    from ..lower import lower

    tgt = get_target(target)
    program = s if isinstance(s, Program) else lower(s)
    kernels = []
    written: dict = {}  # tensor name -> bytes the kernels so far wrote
    small_inputs = {b.name: math.prod(b.shape) * itemsize(b.dtype) for b in program.inputs}
    small_inputs = {n: size for n, size in small_inputs.items() if size <= tgt.l2_bytes / L2_RESIDENT_SHARE}
    for k in program.kernels:
        regs = regs_per_thread
        if isinstance(regs_per_thread, dict):
            regs = regs_per_thread.get(k.name)
        elif regs_per_thread is not None and not isinstance(regs_per_thread, int):
            raise TcompError(f"regs_per_thread must be an int or a dict of kernel name to int, "
                             f"got {regs_per_thread!r}")
        # what earlier kernels wrote is taken to be still in the L2 where all of it fits in an
        # eighth of it (a decode step's partial sums, a few MB: the FFN's 25 MB intermediate
        # at 1024 rows ranks wrong with the credit, benchmarks/results/tuning_tensor_cores_7th.jsonl)
        in_l2 = frozenset(written) if sum(written.values()) <= tgt.l2_bytes / L2_RESIDENT_SHARE else frozenset()
        kernels.append(estimate_kernel(analyze_kernel(k), tgt, regs, in_l2=in_l2, small_inputs=small_inputs))
        for name, nbytes in kernels[-1].writes_by_tensor.items():
            if nbytes:
                written[name] = written.get(name, 0.0) + nbytes
    by_tensor: dict = {}
    for ke in kernels:
        for name, b in ke.bytes_by_tensor.items():
            by_tensor[name] = by_tensor.get(name, 0.0) + b
    return Estimate(
        target=tgt,
        kernels=tuple(kernels),
        flops=sum(k.flops for k in kernels),
        dram_bytes=sum(k.dram_bytes for k in kernels),
        kernel_launches=len(kernels),
        predicted_seconds=sum(k.predicted_seconds for k in kernels),
        bytes_by_tensor=by_tensor,
    )


__all__ = ["Estimate", "KernelEstimate", "estimate", "estimate_kernel", "residency", "estimate_registers"]
