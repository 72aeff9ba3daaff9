"""Offline compilation to PTX and ``ptxas`` statistics, no GPU needed.

``ptx_report(program)`` compiles every kernel of a lowered program for sm_90a with
``numba.cuda.compile_ptx`` and assembles it with ``ptxas -arch=sm_90a -v``, returning
registers, spills and shared memory per kernel. CI uses it to catch compile errors
and spills in generated code.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import CodegenError
from .cuda_source import kernel_signature, launch_bounds, program_source
from .runtime import import_source
from .typing_memo import memoized_typing


@dataclass(frozen=True)
class PtxasReport:
    kernel: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack_frame: int
    shared_bytes: int
    ptx: str
    #: ptxas's reason for running the kernel's wgmma instructions one at a time, each
    #: waiting for the last ("" when it keeps them asynchronous): a kernel with this
    #: loses the overlap that makes wgmma fast
    wgmma_serialized: str = ""

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0


def ptx_report(program, ptxas: str | None = None) -> list:
    """Compile each kernel to PTX for sm_90a and run ``ptxas -v`` on it."""
    from numba import cuda

    ptxas = ptxas or shutil.which("ptxas")
    if ptxas is None:
        raise CodegenError("ptxas is not on the PATH (install the CUDA toolkit)")
    module, _ = import_source(program_source(program, simulator=False))
    reports = []
    for kernel in program.kernels:
        fn = getattr(module, kernel.name).py_func
        with memoized_typing():
            bounds = launch_bounds(kernel)
            ptx, _ = cuda.compile_ptx(fn, kernel_signature(kernel), cc=(9, 0, "a"),
                                      **({"launch_bounds": bounds} if bounds else {}))
        reports.append(assemble(kernel.name, ptx, ptxas))
    return reports


def assemble(name: str, ptx: str, ptxas: str | None = None) -> PtxasReport:
    """Run ``ptxas -arch=sm_90a -v`` on kernel ``name``'s PTX text: its registers and spills."""
    ptxas = ptxas or shutil.which("ptxas")
    if ptxas is None:
        raise CodegenError("ptxas is not on the PATH (install the CUDA toolkit)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.ptx"
        path.write_text(ptx)
        proc = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(path), "-o", str(Path(tmp) / "k.cubin")],
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise CodegenError(f"ptxas rejected kernel {name}:\n{proc.stderr}")
    return _parse(name, proc.stderr, ptx)


def _parse(name: str, text: str, ptx: str) -> PtxasReport:
    def grab(pattern, default=0):
        m = re.search(pattern, text)
        return int(m.group(1)) if m else default

    serialized = re.search(r"wgmma.mma_async instructions are serialized (?:due to )?(.*?)(?: in the function|$)",
                           text, re.MULTILINE)
    return PtxasReport(
        kernel=name,
        registers=grab(r"Used (\d+) registers"),
        spill_stores=grab(r"(\d+) bytes spill stores"),
        spill_loads=grab(r"(\d+) bytes spill loads"),
        stack_frame=grab(r"(\d+) bytes stack frame"),
        shared_bytes=grab(r"(\d+) bytes smem"),
        ptx=ptx,
        wgmma_serialized=serialized.group(1) if serialized else "",
    )
