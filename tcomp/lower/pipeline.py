"""A ring of shared tiles filled by asynchronous copies (``s[S].pipeline(stages)``).

A shared tile filled at every iteration of a serial loop ``ko`` (``extent`` iterations)::

    for ko:
        S[...] = G[f(ko)]
        sync
        compute(S)
        sync

becomes, with ``n = stages`` tiles in a ring ``R`` (``n`` times the tile)::

    for t in 0 .. n-2:                         # prologue (unrolled): one commit group per tile
        cp.async R[t][...] = G[f(t)]           (if t < extent)
        commit
    for ko:
        sync                                   # every thread is done with tile ko - 1
        wait_group(n - 2)                      # this thread's copies of tile ko landed
        sync                                   # ... and every other thread's
        if ko + n - 1 < extent: cp.async R[(ko + n - 1) % n][...] = G[f(ko + n - 1)]
        commit                                 # (empty past the end: the count stays)
        compute(R[ko % n])

so ``n - 1`` tiles are in flight while one is computed on. The barriers are those of
a double-buffered tile (``tcomp.lower.loop_body``), which the polyhedral model checks
with the tile written where it lands; the ring keeps the copies in flight out of the
slots that are read: at iteration ko the copies go to slot (ko - 1) % n, which compute
read at iteration ko - 1, before the first barrier, and they land before the second
barrier of iteration ko + n - 1, the first that reads that slot.

At iteration ko the thread has committed ``n - 1 + ko`` groups, and tile ko's is the
``ko + 1``-th: waiting until at most ``n - 2`` are in flight completes it.

With a reader lag of ``d`` (asynchronous readers, wgmma chains of which ``d`` are still
running at the first barrier of the next iteration) every distance shrinks by ``d``: the
copies are issued ``n - 1 - d`` iterations ahead into slot ``(ko - 1 - d) % n``, whose
readers were retired before that barrier, and the wait leaves ``n - 2 - d`` in flight.

The fill must be a copy: one loop nest around a store of a global tensor's element,
unchanged and of the same storage type (cp.async moves bytes): 4-byte elements, or 2-byte
ones (bfloat16, float16: their bits in both places) moved by a vectorized fill of 2, 4 or
8 lanes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import itemsize
from ..errors import InternalError, LoweringError
from ..ir.expr import Load, Var, binary, compare, logical_and
from ..ir.stmt import AsyncCommit, Buffer, For, Stmt, Store, TileCopy, seq
from ..ir.visitor import rewrite, substitute
from .double_buffer import renest, unnest_fill

#: cp.async copies 4, 8 or 16 bytes: one 4-byte element, or the lanes of a vectorized fill
COPY_BYTES = (4, 8, 16)


@dataclass(frozen=True)
class RingFill:
    """A pipelined tile: its ring, the prologue's copies, the loop's copy."""

    tile: Buffer  # the tile as bound inference made it
    ring: Buffer  # ``stages`` tiles
    stages: int
    prologue: Stmt  # the copies of tile ``prologue_tile`` into slot ``prologue_tile``, guarded past the loop's end
    prologue_tile: Var
    issue: Stmt  # in iteration ko: the copies of tile ko + stages - 1, guarded
    copy: str = "cp.async"  # or "tma" (tcomp.lower.tensor_copies)
    #: (TMA) the copies of tile ``prologue_tile`` into slot ``prologue_tile % stages``,
    #: unguarded: the body of a warp-specialized producer's loop
    producer: Stmt | None = None

    def reading_slot(self, body: Stmt, loop: Var) -> Stmt:
        """``body`` (compute, at iteration ``loop``) reading the ring's slot ``loop % stages``."""
        slot = binary("*", binary("%", loop, self.stages), _size(self.tile))

        def move(n):
            if isinstance(n, Load) and n.buffer is self.tile:
                return Load(self.ring, binary("+", slot, n.index))
            return None

        return rewrite(body, move)


def stage_through_ring(fill: Stmt, tile: Buffer, loop: Var, extent: int, stages: int, stage_name: str,
                       reader_lag: int = 0) -> RingFill:
    """Split the fill of ``tile`` computed at ``loop`` into the prologue's copies and the
    copy issued ``stages - 1 - reader_lag`` iterations ahead (module docstring)."""
    loops, store = unnest_fill(fill, stage_name, "pipeline")
    source = store.value
    if not (isinstance(source, Load) and source.buffer.scope == "global"):
        raise LoweringError(f"pipeline of {stage_name}: its fill computes {source} instead of copying an element "
                            "of a tensor in device memory; cp.async only copies (compute the rest where the tile "
                            "is read, or use double_buffer)")
    size = itemsize(source.buffer.dtype)
    if source.buffer.dtype != tile.dtype or size not in (2, 4):
        raise LoweringError(f"pipeline of {stage_name}: cp.async copies bytes, and {source.buffer.name} holds "
                            f"{source.buffer.dtype} in device memory against {tile.dtype} in the shared tile; it "
                            f"copies elements of one type of 4 or 2 bytes only (use double_buffer)")
    lanes = loops[-1].extent if loops and loops[-1].kind == "vectorize" else 1
    if lanes * size not in COPY_BYTES:
        raise LoweringError(f"pipeline of {stage_name}: cp.async copies 4, 8 or 16 bytes; its fill copies "
                            f"{lanes * size} bytes at once ({lanes} {tile.dtype} lane{'s' if lanes > 1 else ''}): "
                            f"vectorize the fill's innermost split (8 lanes of a 2-byte type copy 16 bytes)")
    ring = ring_of(tile, stages, reader_lag)

    def copy_of(iteration, slot, guard=None) -> Stmt:
        shift = {loop: iteration}
        predicate = None if store.predicate is None else substitute(store.predicate, shift)
        index = binary("+", binary("*", slot, _size(tile)), substitute(store.index, shift))
        in_bounds = None if store.in_bounds is None else substitute(store.in_bounds, shift)
        return renest(loops, Store(ring, index, substitute(source, shift), logical_and(guard, predicate),
                                    asynchronous=True, in_bounds=in_bounds))

    distance = distance_ahead(stages, reader_lag)
    ahead = binary("+", loop, distance)
    tile_var = Var(f"{loop.name}_ahead", loop.dtype)
    prologue = copy_of(tile_var, tile_var, compare("<", tile_var, extent) if distance > extent else None)
    issue = copy_of(ahead, binary("%", ahead, stages), compare("<", ahead, extent))
    return RingFill(tile, ring, stages, prologue, tile_var, issue)


def ring_of(tile: Buffer, stages: int, reader_lag: int) -> Buffer:
    """The ring of ``stages`` copies of ``tile``, slot after slot."""
    # NOTE: a ring of blocked tiles keeps the tile's dimensions (a descriptor's strides
    # follow its rows), the others are flat
    shape = (stages, *tile.shape) if tile.blocks else (stages * _size(tile),)
    return Buffer(tile.name, tile.dtype, shape, "shared", tile.blocks, tile.swizzle, reader_lag)


def distance_ahead(stages: int, reader_lag: int) -> int:
    """Iterations ahead of the one computing that a ring's copies are issued."""
    return stages - 1 - reader_lag


def prologue_of(rings: list) -> Stmt:
    """Before the loop, an unrolled loop over the tiles issued ahead: every ring's copies
    of the tile (TMA: in one copy), then (cp.async) one commit group (a group also for a
    tile past the loop's end, so that the waits count the same)."""
    distance = distance_ahead(rings[0].stages, rings[0].ring.reader_lag)
    tile = rings[0].prologue_tile
    copies = [substitute(r.prologue, {r.prologue_tile: tile}) for r in rings]
    if rings[0].copy == "tma":
        return For(tile, distance, "unroll", one_copy_a_slot(copies))
    return For(tile, distance, "unroll", seq(*copies, AsyncCommit()))


def one_copy_a_slot(copies: list) -> Stmt:
    """The TMA copies of several rings' tiles into one slot (the same slot, under the same
    guard) as one TileCopy: the first thread announces all their bytes at once and arrives
    once on the slot's barrier, which then expects one arrival a phase."""
    first = copies[0]
    for c in copies[1:]:
        if str(c.slot) != str(first.slot) or str(c.predicate) != str(first.predicate):
            raise InternalError(f"the rings at one loop copy into different slots: {first.slot} and {c.slot}")
    return TileCopy(first.barriers, first.slot, sum(c.nbytes for c in copies),
                    tuple(box for c in copies for box in c.boxes), first.predicate)


def _size(buf: Buffer) -> int:
    size = 1
    for d in buf.shape:
        size *= d
    return size


__all__ = ["RingFill", "distance_ahead", "one_copy_a_slot", "prologue_of", "ring_of", "stage_through_ring"]
