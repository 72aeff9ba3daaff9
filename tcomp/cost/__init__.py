"""Analytical cost model and target descriptions.

``tc.estimate(s, target="h200")`` counts what each kernel of a schedule does (flops,
bytes at the device-memory interface, shared memory, registers, instructions,
shared-memory wavefronts, latency rounds) and turns it into residency, occupancy and
a predicted time on a target GPU; ``tcomp explain FILE`` prints it.

    analysis.py   the counts of one block, from the loop-nest IR (no hardware figures)
    targets.py    H200, H100, RTX A6000, RTX PRO 6000, each figure with its source
    model.py      residency, roofline, latency hiding, wave quantization -> time
    report.py     the text tables of ``tcomp explain``
"""

from .analysis import KernelCounts, analyze_kernel
from .model import Estimate, KernelEstimate, estimate, residency
from ..target import H100, H200, RTX_A6000, RTX_PRO_6000, TARGETS, Target, get_target

__all__ = ["Estimate", "KernelEstimate", "KernelCounts", "Target", "TARGETS", "H100", "H200", "RTX_A6000",
           "RTX_PRO_6000", "analyze_kernel", "estimate", "get_target", "residency"]
