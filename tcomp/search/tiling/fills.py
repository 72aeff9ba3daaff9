"""How a block's threads fill a shared-memory tile: the fill's loop spread over the
threads, coalesced and in vectors, or in the 8 x 8 blocks the warpgroup instructions read."""

from __future__ import annotations


def over_the_threads(s, cache, flat, threads_y: int, threads_x: int) -> None:
    """The fill's loop ``flat`` spread over the block's threads (``threadIdx.y`` x
    ``threadIdx.x``), what is left of it unrolled in each thread."""
    rest, thread = s[cache].split(flat, threads_y * threads_x)
    ty, tx = s[cache].split(thread, threads_x)
    s[cache].bind(ty, "threadIdx.y")
    s[cache].bind(tx, "threadIdx.x")
    s[cache].unroll(rest)


def cooperative_fill(s, cache, threads_y: int, threads_x: int, vector: int) -> None:
    """Spread a shared tile's fill over the block's threads: consecutive threads on
    consecutive elements of a row (coalesced), ``vector`` elements per thread and load."""
    first, *rest = s[cache].axis
    flat = first
    for axis in rest:
        flat = s[cache].fuse(flat, axis)
    if vector > 1:
        flat, lanes = s[cache].split(flat, vector)
        s[cache].vectorize(lanes)
    over_the_threads(s, cache, flat, threads_y, threads_x)


def blocked_fill(s, cache, threads_y: int, threads_x: int, lanes: int = 8) -> None:
    """Spread the fill of a shared tile stored in 8 x 8 blocks over the block's threads,
    16 bytes (8 values of a block row) per thread and copy (``lanes`` of them at a time
    where the tensor's rows are not aligned to 16 bytes): eight consecutive threads
    fill the eight rows of one block (its 128 contiguous bytes, every bank once), the
    next eight the block to its right, so that a warp reads 64 contiguous bytes of each
    of eight rows of the operand."""
    *lead, rows, cols = s[cache].axis
    row_block, row = s[cache].split(rows, 8)
    col_block, vector = s[cache].split(cols, 8)
    s[cache].reorder(*lead, row_block, col_block, row, vector)
    if lanes < 8:
        pieces, vector = s[cache].split(vector, lanes)
        s[cache].unroll(pieces)
    flat, *rest = (*lead, row_block, col_block, row)
    for axis in rest:
        flat = s[cache].fuse(flat, axis)
    s[cache].vectorize(vector)
    over_the_threads(s, cache, flat, threads_y, threads_x)


__all__ = ["blocked_fill", "cooperative_fill", "over_the_threads"]
