"""Text tables of an estimate (what ``print(tc.estimate(s))`` and ``tcomp explain`` show)."""

from __future__ import annotations

import math

_RESOURCE_NAMES = {"threads": "thread slots", "registers": "registers", "shared_memory": "shared memory",
                   "block_limit": "block limit"}


def fmt_bytes(n: float) -> str:
    """Binary units (MiB = 2**20 bytes)."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_time(t: float) -> str:
    if t is None or math.isinf(t):
        return "inf"
    if t >= 1:
        return f"{t:.3f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3f} ms"
    return f"{t * 1e6:.1f} us"


def fmt_count(x: float) -> str:
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.2f} {unit}"
    return f"{x:.0f} "


def fmt_rate(x: float, unit: str) -> str:
    for prefix, size in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if abs(x) >= size:
            return f"{x / size:.2f} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _table(rows) -> list:
    width = max(len(k) for k, _ in rows)
    return [f"  {k.ljust(width)}  {v}" for k, v in rows]


def format_kernel(k, target) -> str:
    grid = "x".join(str(g) for g in k.grid)
    block = "x".join(str(b) for b in k.block)
    head = (f"kernel {k.name}: grid {grid} = {k.blocks} blocks, block {block} = {k.threads_per_block} threads "
            f"({k.warps_per_block} warps)")
    traffic = []
    for name in k.bytes_by_tensor:
        r, w = k.reads_by_tensor.get(name, 0.0), k.writes_by_tensor.get(name, 0.0)
        parts = []
        if r:
            parts.append(f"{fmt_bytes(r)} read")
        if w:
            parts.append(f"{fmt_bytes(w)} written")
        traffic.append(f"{name} {' + '.join(parts) or '0'}")
    by = ", ".join(f"{_RESOURCE_NAMES[r]} {n}" for r, n in k.blocks_per_sm_by.items())
    limited = " and ".join(_RESOURCE_NAMES[r] for r in k.limited_by)
    matrix = f" ({fmt_count(k.matrix_flops)}FLOP on matrix units)" if k.matrix_flops else ""
    intensity = "-" if math.isinf(k.arithmetic_intensity) else f"{k.arithmetic_intensity:.1f} FLOP/byte"
    rows = [
        ("flops", f"{fmt_count(k.flops)}FLOP{matrix}"),
        ("device memory", f"{fmt_bytes(k.dram_bytes)} ({fmt_bytes(k.dram_read_bytes)} read, "
                          f"{fmt_bytes(k.dram_write_bytes)} written)"),
        ("  by tensor", "; ".join(traffic) or "-"),
        ("intensity", f"{intensity} (ridge: {k.peak_flops / target.dram_bw_datasheet:.0f} at "
                      f"{fmt_rate(k.peak_flops, 'FLOP/s')} and {fmt_rate(target.dram_bw_datasheet, 'B/s')})"),
        ("shared memory", f"{fmt_bytes(k.smem_bytes_per_block)} per block (+ {fmt_bytes(target.smem_reserved_per_block)}"
                          f" reserved)"),
        ("registers", f"{k.regs_per_thread} per thread ({k.regs_source})"),
        ("blocks per SM", f"{k.blocks_per_sm}, limited by {limited} ({by})"),
        ("occupancy", f"{k.occupancy * 100:.1f}% ({k.resident_warps_per_sm} of {target.max_warps_per_sm} warps)"),
        ("waves", f"{k.waves:.2f} ({k.blocks} blocks over {target.sms} SMs x {k.blocks_per_sm}; the busiest SM "
                  f"runs {k.blocks_on_busiest_sm}, {k.wave_efficiency * 100:.0f}% of the last wave used)"),
        ("roofline", f"compute {fmt_time(k.t_compute_roofline)}, memory {fmt_time(k.t_memory_roofline)}: "
                     f"at most {k.roofline_ceiling * 100:.0f}% of peak"),
        ("in flight per SM", f"need {fmt_bytes(k.inflight_bytes_needed_per_sm)} (bandwidth x "
                             f"{k.mem_latency_s * 1e9:.0f} ns / {target.sms} SMs), have "
                             f"{fmt_bytes(k.inflight_bytes_per_sm)} ({k.resident_warps_per_sm} warps x "
                             f"{k.loads_in_flight_per_warp:.0f} loads x {k.bytes_per_warp_load:.0f} B): "
                             f"{k.latency_coverage:.2f}x"),
        ("SM time", f"issue {fmt_time(k.t_issue)} | shared/L1 {fmt_time(k.t_l1)} | matrix {fmt_time(k.t_matrix)} "
                    f"| latency {fmt_time(k.t_latency)} -> {fmt_time(k.t_sm)}"),
        ("one block's path", f"waits {fmt_time(k.t_copy_wait)} on copies"
                             + (f" ({k.copies_ahead} k steps ahead)" if k.copies_ahead > 1 else "")
                             + (f", {fmt_time(k.t_chain_drain)} on wgmma chains drained every k step"
                                if k.t_chain_drain else "")),
        ("L2", f"serves {fmt_bytes(k.l2_read_bytes)} of the reads (tiles the blocks of one wave share)"
               if k.l2_read_bytes else "serves none of the reads"),
        ("memory time", f"{fmt_time(k.t_dram)}: {fmt_bytes(k.dram_bytes - k.l2_read_bytes)} at "
                        f"{fmt_rate(k.effective_bandwidth, 'B/s')}"
                        + (f", and {fmt_bytes(k.short_run_bytes)} more for reads in runs under 128 bytes"
                           if k.short_run_bytes else "")),
        ("launch", fmt_time(k.t_launch)),
        ("predicted", f"{fmt_time(k.predicted_seconds)}: {k.bound}-bound ({k.limiter})"),
    ]
    lines = [head] + _table(rows)
    lines += [f"  note: {n}" for n in k.notes]
    return "\n".join(lines)


def format_estimate(est) -> str:
    t = est.target
    lines = [f"target {t.name}: {t.description}; {t.sms} SMs, {fmt_rate(t.dram_bw_datasheet, 'B/s')} "
             f"({fmt_rate(t.dram_bw_measured, 'B/s')} achievable), {fmt_rate(t.fp32_flops, 'FLOP/s')} fp32, "
             f"{fmt_rate(t.matrix_flops_bf16, 'FLOP/s')} bf16 matrix"]
    for k in est.kernels:
        lines.append("")
        lines.append(format_kernel(k, t))
    lines.append("")
    by = "; ".join(f"{n} {fmt_bytes(b)}" for n, b in est.bytes_by_tensor.items())
    lines.append(f"total: {est.kernel_launches} kernel launch{'es' if est.kernel_launches != 1 else ''}, "
                 f"{fmt_count(est.flops)}FLOP, {fmt_bytes(est.dram_bytes)} of device memory traffic ({by}), "
                 f"predicted {fmt_time(est.predicted_seconds)}")
    return "\n".join(lines)


__all__ = ["format_estimate", "format_kernel", "fmt_bytes", "fmt_time"]
