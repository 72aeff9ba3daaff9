"""Register-staged double buffering of a shared tile (``s[S].double_buffer()``).

A shared tile filled at every iteration of a serial loop ``ko``::

    for ko:
        S[...] = G[f(ko)]          # each thread: a few elements
        sync
        compute(S)
        sync

is rewritten so that each thread loads the next iteration's elements into
registers while the block computes on the current tile::

    R[...] = G[f(0)]               # prologue
    for ko:
        sync                       # every thread is done reading S
        S[...] = R[...]            # commit the staged tile
        sync
        if ko + 1 < n: R[...] = G[f(ko + 1)]   # in flight during compute(S)
        compute(S)

The fill's loops must all be bound to threads, unrolled or vectorized, so that a
thread's share of the tile has a constant size: that share is the register
buffer ``R``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LoweringError
from ..ir.expr import IntImm, Load, Var, binary, compare, logical_and
from ..ir.simplify import simplify
from ..ir.stmt import THREAD_TAGS, Buffer, For, Seq, Stmt, Store
from ..ir.visitor import substitute


@dataclass(frozen=True)
class StagedFill:
    """The three pieces of a register-staged fill, and the registers they share."""

    registers: Buffer
    prologue: Stmt  # before the loop: stage iteration 0
    commit: Stmt  # registers -> shared, between two barriers
    prefetch: Stmt  # global -> registers for the next iteration


def stage_through_registers(fill: Stmt, loop: Var, extent: int, stage_name: str) -> StagedFill:
    """Split the fill of a shared tile computed at ``loop`` into prologue, commit and prefetch."""
    loops, store = unnest_fill(fill, stage_name)
    per_thread = [f for f in loops if f.kind not in THREAD_TAGS]
    for f in per_thread:
        if f.kind not in ("unroll", "vectorize"):
            raise LoweringError(
                f"double_buffer of {stage_name} needs every loop of its fill bound to threads, unrolled "
                f"or vectorized, so that each thread's share of the tile fits in registers; loop "
                f"{f.var.name} ({f.extent} iterations) is {f.kind}: unroll it or bind it to threads")
    size = 1
    register_index = IntImm(0)
    for f in per_thread:
        register_index = binary("+", binary("*", register_index, f.extent), f.var)
        size *= f.extent
    register_index = simplify(register_index)
    registers = Buffer(f"{stage_name}_next", store.buffer.dtype, (size,), "local")

    def at(iteration, guard=None) -> Stmt:
        shift = {loop: iteration}
        predicate = None if store.predicate is None else substitute(store.predicate, shift)
        in_bounds = None if store.in_bounds is None else substitute(store.in_bounds, shift)
        staged = Store(registers, register_index, substitute(store.value, shift), logical_and(guard, predicate),
                       in_bounds=in_bounds)
        return renest(loops, staged)

    next_iteration = binary("+", loop, 1)
    commit = renest(loops, Store(store.buffer, store.index, Load(registers, register_index), store.predicate))
    return StagedFill(registers=registers,
                      prologue=at(IntImm(0)),
                      commit=commit,
                      prefetch=at(next_iteration, compare("<", next_iteration, extent)))


def unnest_fill(fill: Stmt, stage_name: str, primitive: str = "double_buffer"):
    """The loops around the one store of a tile's fill, outermost first, and the store
    (a LoweringError naming ``primitive`` when the fill is anything else)."""
    loops = []
    node = fill
    while True:
        if isinstance(node, Seq) and len(node.stmts) == 1:
            node = node.stmts[0]
        elif isinstance(node, For):
            loops.append(node)
            node = node.body
        else:
            break
    if not isinstance(node, Store):
        raise LoweringError(f"{primitive} of {stage_name}: its fill is not a single loop nest around one "
                            "store (is something else computed at its loops?)")
    return loops, node


def renest(loops, body: Stmt) -> Stmt:
    """``body`` inside copies of ``loops`` (as :func:`unnest_fill` gave them)."""
    for f in reversed(loops):
        body = For(f.var, f.extent, f.kind, body)
    return body


__all__ = ["StagedFill", "renest", "stage_through_registers", "unnest_fill"]
