"""A pipeline's ring filled by TMA copies (``s[S].pipeline(stages, copy="tma")``).

The ring is the cp.async ring of ``tcomp.lower.pipeline`` (same slots, same distances,
same block barriers), filled another way. Instead of every thread copying its share of
a tile, the block's first thread copies the whole tile with a few TMA instructions, each
moving a *box* of the global tensor, and the slot's tile lands on an mbarrier: the first
thread announces the tile's bytes on the slot's barrier, and the barrier's phase
completes when they have all landed. Every thread waits for that phase where a cp.async
ring waits for its own copies::

    init barriers[0 .. n-1]                        # first thread; then a block barrier
    for t in 0 .. n-2-d:                           # prologue (unrolled)
        first thread: expect(barriers[t], bytes); box copies of tile t into slot t   (if t < extent)
    for ko:
        sync
        wait(barriers[ko % n], parity (ko // n) % 2)  # tile ko landed
        sync
        first thread, if ko + n-1-d < extent: expect(...); box copies of tile ko + n-1-d
        compute(R[ko % n])

Slot s in its u-th use completes its barrier's phase u, of parity ``u % 2``; slot
``ko % n`` is in use ``ko // n`` at iteration ``ko``. The block barriers are those of the
cp.async ring, so the polyhedral model checks both alike (the tile written where it
lands), and the copies issued at iteration ko go into the slot whose readers the block
retired before the barrier. Several rings at one loop share the barriers and one copy a
slot (``pipeline.one_copy_a_slot``): the first thread announces every ring's bytes of the tile at
once, and a slot's barrier expects that one arrival.

TMA takes a tile that is a region of a 2-D or 3-D tensor in device memory copied
unchanged: the tile's expression reads the tensor at the tile's own axes, in the same
order, and its region is a plain range along each. A box is a range of rows by a range of
columns at one index of the tensor's other dimensions (SwiGLU's stacked weights: one
box per projection). The box lands row after row of 128 bytes in the 128-byte swizzle,
so the tile must be stored that way with each 128-byte column contiguous
(``storage_swizzle(panels=True)``, or a tile one column of 128 bytes wide): the tile is
then one box per 128-byte column and index of its leading dimensions. Elements of a box past the tensor's edge
land as zeros (the padding of ``tcomp.lower.padding``, with nothing read).
The tensor's rows must start 16 bytes apart (a TMA pitch), and a box has at most 256
rows.
"""

from __future__ import annotations

from itertools import product

from ..dtypes import itemsize
from ..errors import LoweringError
from ..ir.expr import TensorRead, Var, binary, compare
from ..ir.stmt import Buffer, BoxCopy, Stmt, TensorMap, TileCopy
from ..ir.visitor import substitute
from .intervals import StridedInterval
from .pipeline import RingFill, distance_ahead, ring_of

#: TMA's largest box along each dimension
BOX_LIMIT = 256
#: the most dimensions of a tensor whose boxes the kernels copy (``tma_load_2d``, ``tma_load_3d``)
MAX_TENSOR_RANK = 3
#: bytes of one row of a box in the 128-byte swizzle
SWIZZLE_BYTES = 128


def stage_through_boxes(stage, layout, tensor: Buffer, loop: Var, extent: int, stages: int, reader_lag: int,
                        barriers: Buffer, tensor_map, start=0) -> RingFill:
    """The ring of ``stage``'s tile (``layout``: its bound inference) computed at ``loop``,
    filled by TMA copies of boxes of ``tensor`` (the global buffer its expression reads)
    that complete on ``barriers``; ``tensor_map(tensor, box_rows, box_cols)`` gives the
    kernel's TensorMap of those boxes. ``start``: the tiles the ring took in the runs of
    ``loop`` before this one, where a warp-specialized producer fills it across them
    (its tile t of this run goes into slot ``(start + t) % stages``). A LoweringError says
    why a tile is not a box."""
    tile = layout.buffer
    origin = _box_origin(stage, layout, tensor)
    *lead, rows, cols = tile.shape
    panel = SWIZZLE_BYTES // itemsize(tile.dtype)
    tmap = tensor_map(tensor, rows, panel)
    ring = ring_of(tile, stages, reader_lag)
    nbytes = tile.size * itemsize(tile.dtype)

    def copy_of(iteration, slot, guard=None) -> Stmt:
        *outer, row, col = (substitute(o, {loop: iteration}) for o in origin)
        boxes = []
        for plane, at in enumerate(product(*(range(n) for n in lead))):
            # NOTE: coordinates innermost first: column, row, then the leading indices inwards out
            lead_coords = tuple(binary("+", o, i) for o, i in zip(outer, at))[::-1]
            boxes += [BoxCopy(ring, binary("+", binary("*", slot, tile.size), (plane * cols + p * panel) * rows), tmap,
                              (binary("+", col, p * panel), row, *lead_coords))
                      for p in range(cols // panel)]
        return TileCopy(barriers, slot, nbytes, tuple(boxes), guard)

    distance = distance_ahead(stages, reader_lag)
    ahead = binary("+", loop, distance)
    tile_var = Var(f"{loop.name}_ahead", loop.dtype)
    prologue = copy_of(tile_var, tile_var, compare("<", tile_var, extent) if distance > extent else None)
    issue = copy_of(ahead, binary("%", ahead, stages), compare("<", ahead, extent))
    producer = copy_of(tile_var, binary("%", binary("+", start, tile_var), stages))
    return RingFill(tile, ring, stages, prologue, tile_var, issue, copy="tma", producer=producer)


def _box_origin(stage, layout, tensor: Buffer) -> tuple:
    """Where the tile starts in ``tensor``, an expression of the loops around the tile per
    dimension; a LoweringError where the tile is not made of boxes TMA lands as it is stored."""
    name = f"pipeline(copy=\"tma\") of {stage.name}"
    body = layout.body
    axes = stage.root_axes
    if not (isinstance(body, TensorRead) and len(body.indices) == len(axes)
            and all(index is axis for index, axis in zip(body.indices, axes))):
        raise LoweringError(f"{name}: its tile must copy a tensor unchanged, element [{', '.join(a.name for a in axes)}] "
                            f"from the same index of the tensor; it computes {body} (use cp.async, or compute the "
                            "rest where the tile is read)")
    if tensor.scope != "global" or not 2 <= len(tensor.shape) <= MAX_TENSOR_RANK:
        raise LoweringError(f"{name}: TMA copies boxes of a 2-D or 3-D tensor in device memory; {tensor.name} is a "
                            f"{len(tensor.shape)}-D {tensor.scope} buffer")
    tile = layout.buffer
    if tile.dtype != tensor.dtype:
        raise LoweringError(f"{name}: TMA copies bytes, and {tensor.name} holds {tensor.dtype} against "
                            f"{tile.dtype} in the tile")
    if stage.storage_axes is not None and tuple(stage.storage_axes) != tuple(axes):
        raise LoweringError(f"{name}: a box lands in the tensor's own order; the tile stores its axes in another "
                            "(storage_order), which only cp.async can fill")
    ranges = [layout.ranges[ax] for ax in axes]
    if any(isinstance(r, StridedInterval) for r in ranges) or tuple(r.extent for r in ranges) != tuple(tile.shape):
        raise LoweringError(f"{name}: the tile must be made of boxes of {tensor.name}, a range of rows by a range of "
                            f"columns (at a range of its other indices) stored without padding; it is {tile.shape} "
                            f"for a region of {[r.extent for r in ranges]}")
    *_, rows, cols = tile.shape
    item = itemsize(tile.dtype)
    panel = SWIZZLE_BYTES // item
    blocks = tuple(tile.blocks)
    if not tile.swizzle or cols % panel or not (blocks == (rows, panel) or cols == panel):
        raise LoweringError(f"{name}: a TMA box lands in the 128-byte swizzle, 128 bytes a row, each 128-byte "
                            f"column of the tile after the other; store the {rows} x {cols} tile with "
                            "storage_swizzle(panels=True)")
    if rows > BOX_LIMIT:
        raise LoweringError(f"{name}: a TMA box has at most {BOX_LIMIT} rows; the tile has {rows}")
    if tensor.shape[-1] * item % 16:
        raise LoweringError(f"{name}: TMA needs the rows of {tensor.name} 16 bytes apart (a multiple of 16); "
                            f"they are {tensor.shape[-1] * item} bytes long (use cp.async, which copies narrower pieces)")
    return tuple(r.min for r in ranges)


def tensor_map_table():
    """A function ``(tensor, box_rows, box_cols) -> TensorMap`` giving one TensorMap per
    tensor and box, named after the tensor (the maps of one kernel)."""
    maps: dict = {}

    def tensor_map(tensor: Buffer, box_rows: int, box_cols: int) -> TensorMap:
        key = (tensor, box_rows, box_cols)
        if key not in maps:
            suffix = "" if not any(k[0] is tensor for k in maps) else f"_{box_rows}x{box_cols}"
            maps[key] = TensorMap(f"{tensor.name}_map{suffix}", tensor, box_rows, box_cols)
        return maps[key]

    return tensor_map


__all__ = ["BOX_LIMIT", "stage_through_boxes", "tensor_map_table"]
