"""The matrix instructions ``tensorize`` maps loop nests onto, and their shapes.

Two families, named as a schedule names them in ``s[T].tensorize(axis, name)``:

- ``"mma_m16n8k16"``: one warp's ``mma.sync.m16n8k16`` (16 x 8 outputs, k 16; every GPU
  from compute capability 8.0 on);
- ``"wgmma_m64n{N}k16"``: one warpgroup's (128 threads) ``wgmma.mma_async.m64nNk16`` for
  N a multiple of 8 from 8 to 256 (Hopper, compute capability 9.0a). Its operand and
  accumulator layouts are in :mod:`tcomp.target.wgmma_layout`.

A target lists the families it has (``Target.matrix_instructions``).
"""

from __future__ import annotations

from .wgmma_layout import WARPGROUP, WGMMA_WIDTHS

#: rows, columns and k of one ``mma.sync.m16n8k16``
MMA_SHAPE = (16, 8, 16)
MMA_M, MMA_N, MMA_K = MMA_SHAPE
#: the warp-wide instructions ``tensorize`` knows by their full name
WARP_INSTRUCTIONS = ("mma_m16n8k16",)
#: rows and k of one ``wgmma.mma_async.m64nNk16``; its widths N are ``WGMMA_WIDTHS``
WGMMA_M, WGMMA_K = 64, 16
#: the input dtypes of both families (accumulating in float32)
MATRIX_OPERAND_DTYPES = ("bfloat16", "float16")


def wgmma_width(intrinsic: str) -> int | None:
    """N of an intrinsic named ``"wgmma_m64n{N}k16"`` (N one of ``WGMMA_WIDTHS``), or None."""
    head, tail = f"wgmma_m{WGMMA_M}n", f"k{WGMMA_K}"
    if not (isinstance(intrinsic, str) and intrinsic.startswith(head) and intrinsic.endswith(tail)):
        return None
    digits = intrinsic[len(head):-len(tail)]
    if not digits.isdigit() or int(digits) not in WGMMA_WIDTHS:
        return None
    return int(digits)


def instruction_family(intrinsic: str) -> str | None:
    """``"mma_m16n8k16"`` or ``"wgmma"`` for a name ``tensorize`` accepts, else None."""
    if intrinsic in WARP_INSTRUCTIONS:
        return intrinsic
    return "wgmma" if wgmma_width(intrinsic) is not None else None


__all__ = ["MATRIX_OPERAND_DTYPES", "MMA_K", "MMA_M", "MMA_N", "MMA_SHAPE", "WARPGROUP", "WARP_INSTRUCTIONS",
           "WGMMA_K", "WGMMA_M", "WGMMA_WIDTHS", "instruction_family", "wgmma_width"]
