"""How values are stored on a GPU: element types and sizes, vector widths, and the one
count of a block's shared memory.

16/8-bit floats are float32 in registers and their bit patterns (uint16, uint8) in
global and shared memory, so that copies between the two move bits and arithmetic runs
in float32 (docs/hardware.md). Shared buffers start on 16-byte boundaries; a swizzled
one on a 1024-byte boundary (the swizzle permutes by address bits), and a block with
one is given 1024 bytes more so that its first boundary can be found at run time.
``shared_layout`` is the count that both ``check_resources`` and the code generator
use, so that a schedule ``tc.check`` accepts never fails at launch for want of shared
memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.stmt import Allocate
from ..ir.visitor import walk

#: Numba scalar type used for values of each dtype in registers ("uint64": the words of
#: shared-memory barriers, ``tcomp.lower.tensor_copies``; no tensor has that dtype)
REGISTER_TYPE = {"float32": "float32", "bfloat16": "float32", "float16": "float32",
                 "float8_e4m3": "float32", "int8": "int8", "int32": "int32", "uint64": "uint64"}
#: Numba type of the elements of a global or shared buffer of each dtype
STORAGE_TYPE = {"float32": "float32", "bfloat16": "uint16", "float16": "uint16",
                "float8_e4m3": "uint8", "int8": "int8", "int32": "int32", "uint64": "uint64"}
#: the floats narrower than 32 bits, stored as bits in memory
NARROW_FLOATS = ("bfloat16", "float16", "float8_e4m3")
#: bytes of one element in global and shared memory, and in registers
_MEMORY_BYTES = {"float32": 4, "int32": 4, "bfloat16": 2, "float16": 2, "float8_e4m3": 1, "int8": 1, "uint64": 8}
_REGISTER_BYTES = {"float32": 4, "int32": 4, "bfloat16": 4, "float16": 4, "float8_e4m3": 4, "int8": 1, "uint64": 8}
#: the numbers of lanes one vector access may have, and the most bytes it may move
#: (128-bit loads and stores)
VECTOR_WIDTHS = (2, 4, 8, 16)
VECTOR_BYTES = 16
#: where each shared buffer starts, and where a swizzled one starts (its pattern
#: repeats every 1024 bytes)
SHARED_ALIGNMENT = 16
SWIZZLE_ALIGNMENT = 1024


def stored_as_bits(buf) -> bool:
    """Does ``buf`` hold a 16/8-bit float as its bit pattern (global and shared memory),
    rather than as a float32 (registers)?"""
    return buf.dtype in NARROW_FLOATS and buf.scope in ("global", "shared")


def storage_type(buf) -> str:
    """The Numba type of ``buf``'s elements where it lives."""
    return STORAGE_TYPE[buf.dtype] if stored_as_bits(buf) else REGISTER_TYPE[buf.dtype]


def element_bytes(buf) -> int:
    """Bytes of one element of ``buf`` where it lives."""
    return (_MEMORY_BYTES if buf.scope == "global" or stored_as_bits(buf) else _REGISTER_BYTES)[buf.dtype]


def allocated_buffers(kernel) -> list:
    """The buffers a kernel allocates, each once, in the order of their first ``Allocate``
    (a partitioned loop holds its buffers' Allocate once per part)."""
    declared = []
    for node in walk(kernel.body):
        if isinstance(node, Allocate) and node.buffer not in declared:
            declared.append(node.buffer)
    return declared


@dataclass(frozen=True)
class SharedLayout:
    """Where each shared buffer of a block starts, and what the block needs in all."""

    offsets: tuple  # bytes from the (aligned) base to each buffer, in the buffers' order
    total_bytes: int  # what a launch must give the block, alignment slack included
    swizzled: bool  # some buffer is swizzled: the base is the first 1024-byte boundary


def shared_layout(buffers, reuse=()) -> SharedLayout:
    """The layout of ``buffers`` (in declaration order) in a block's shared memory: one
    after another, except that a buffer of ``reuse`` (``Kernel.shared_reuse``: pairs of a
    buffer and the buffers dead before its first use) starts at the lowest offset (the
    start of a dead buffer or the end of any) where it overlaps only buffers dead before
    it."""
    buffers = list(buffers)
    dead = {b: set(before) for b, before in reuse}
    swizzled = any(b.swizzle for b in buffers)
    placed = {}  # buffer -> (start, end)
    end = 0
    for b in [b for b in buffers if b not in dead] + [b for b in buffers if b in dead]:
        alignment = SWIZZLE_ALIGNMENT if b.swizzle else SHARED_ALIGNMENT
        size = -(-b.size * element_bytes(b) // SHARED_ALIGNMENT) * SHARED_ALIGNMENT
        starts = sorted({span[0] for other, span in placed.items() if other in dead.get(b, ())}
                        | {span[1] for span in placed.values()}) + [end] if b in dead else [end]
        for start in starts:
            start = -(-start // alignment) * alignment
            if all(other in dead.get(b, ()) or start >= stop or start + size <= begin
                   for other, (begin, stop) in placed.items()):
                break
        placed[b] = (start, start + size)
        end = max(end, start + size)
    offsets = tuple(placed[b][0] for b in buffers)
    return SharedLayout(offsets, end + (SWIZZLE_ALIGNMENT if swizzled else 0), swizzled)


def kernel_shared_bytes(kernel) -> int:
    """Bytes of shared memory one block of ``kernel`` needs (``shared_layout``'s count)."""
    shared = (b for b in allocated_buffers(kernel) if b.scope == "shared")
    return shared_layout(shared, kernel.shared_reuse).total_bytes


__all__ = ["NARROW_FLOATS", "REGISTER_TYPE", "SHARED_ALIGNMENT", "STORAGE_TYPE", "SWIZZLE_ALIGNMENT", "SharedLayout",
           "VECTOR_BYTES", "VECTOR_WIDTHS", "allocated_buffers", "element_bytes", "kernel_shared_bytes",
           "shared_layout", "stored_as_bits", "storage_type"]
