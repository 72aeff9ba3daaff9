"""The layouts of Hopper's ``wgmma.mma_async.m64nNk16`` (pure Python, no numba: lowering
checks schedules against them, ``tcomp.codegen.warpgroup_mma`` builds on them).

Shared operands are 8 x 8 blocks of 16-bit values (128 contiguous bytes; layout mode 0)
or blocks of 8 rows of 128 bytes in the 128-byte swizzle (mode 1), reached from a
descriptor's start through two byte strides, ``leading`` (LBO) and ``stride`` (SBO). In
the swizzle, A (k contiguous) advances ``stride`` bytes per 8 rows; B with n contiguous
advances ``leading`` bytes per 64 columns and ``stride`` per 8 rows of k (CUTLASS's
canonical GMMA layouts). Accumulator register i of warpgroup thread t holds one element of
the 64 x N tile.
"""

from __future__ import annotations

#: threads of a warpgroup
WARPGROUP = 128
#: instruction widths N of m64nNk16
WGMMA_WIDTHS = tuple(range(8, 257, 8))


def accumulator_element(thread: int, reg: int) -> tuple:
    """(row, col) of the 64 x N accumulator in register ``reg`` of warpgroup thread ``thread``."""
    warp, lane = divmod(thread, 32)
    return 16 * warp + lane // 4 + 8 * ((reg // 2) % 2), 8 * (reg // 4) + 2 * (lane % 4) + reg % 2


def a_offset(row: int, k: int, leading: int, stride: int) -> int:
    """Bytes from an A descriptor's start to element (row, k)."""
    return (row // 8) * stride + (k // 8) * leading + (row % 8) * 16 + (k % 8) * 2


def b_offset(k: int, n: int, leading: int, stride: int, trans_b: bool) -> int:
    """Bytes from a B descriptor's start to element (k, n): n contiguous with ``trans_b``
    (a row-major K x N tile), else k contiguous (a row-major N x K tile)."""
    if trans_b:
        return (n // 8) * stride + (k // 8) * leading + (k % 8) * 16 + (n % 8) * 2
    return a_offset(n, k, leading, stride)


def swizzle128(address):
    """The 128-byte swizzle of a shared-memory byte address (from a 1024-byte aligned
    base): its 16-byte chunk within a 128-byte row XORed with the row within 1024 bytes."""
    return address ^ (((address >> 7) & 7) << 4)


def a_address(start: int, row, k, leading: int, stride: int, mode: int):
    """Byte address of A's (row, k) (k contiguous) for a descriptor of ``start`` (bytes),
    strides and layout mode (0: 8 x 8 blocks, 1: 128-byte swizzle)."""
    if mode == 0:
        return start + a_offset(row, k, leading, stride)
    return swizzle128(start + (row // 8) * stride + (row % 8) * 128 + (k // 8) * 16 + (k % 8) * 2)


def b_address(start: int, k, n, leading: int, stride: int, trans_b: bool, mode: int):
    """Byte address of B's (k, n): n contiguous with ``trans_b``, else as A's (n, k)."""
    if not trans_b:
        return a_address(start, n, k, leading, stride, mode)
    if mode == 0:
        return start + b_offset(k, n, leading, stride, True)
    return swizzle128(start + (n // 64) * leading + (k // 8) * stride + (k % 8) * 128 + ((n % 64) // 8) * 16
                      + (n % 8) * 2)


__all__ = ["WARPGROUP", "WGMMA_WIDTHS", "a_address", "a_offset", "accumulator_element", "b_address", "b_offset",
           "swizzle128"]
