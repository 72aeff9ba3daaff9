"""A warp-specialized kernel split into its producer's and its consumers' parts
(``s[S].pipeline(stages, copy="tma", specialized=True)``).

Lowering builds such a kernel as any other, with the producer's loop over the ring's
tiles (a :class:`~tcomp.ir.stmt.ProducerLoop`: wait until a slot is released, copy the
next tile into it) where the ring's prologue would be, and the consumers' k loop without
copies: each iteration each consumer warp releases the slot read ``reader_lag + 1``
iterations before (``BarrierArrive`` on the slot's "released" barrier) and waits for
its own slot's tile on the "landed" one. This pass gives the block one more warpgroup
(``threadIdx.y`` one further) and splits the kernel::

    init the landed barriers (one arrival a ring) and the released ones (one a consumer warp)
    syncthreads                                   # every thread, before the roles part
    if threadIdx.y == consumer warpgroups:        # the producer warpgroup
        first thread: the loops around the ring (blocks' and serial ones), and in them the
                      producer's loop
    else:
        the kernel without the producer's loop, its block barriers named barriers of the
        consumer threads only (the producer never reaches them)

A slot is refilled only once every consumer warp has released it, which each does only
after the wgmma chains that read it have retired (``tcomp.lower.warpgroup`` retires all
but ``reader_lag`` chains at the end of each iteration); a slot is read only once its
tile's bytes have landed on its barrier. The producer runs ahead by as many tiles as the
slots allow, so the loop's tiles are in flight as in the block-barrier ring, without a
block barrier per iteration.

Only loops bound to blocks or threads, and serial ones, may enclose the ring's loop: the
producer runs the serial ones too, the threads' loops are left out (a box's origin does not
depend on the thread).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import LoweringError
from ..ir.stmt import (BLOCK_TAGS, THREAD_TAGS, Allocate, Barrier, BarrierInit, For, Kernel, ProducerLoop, Seq,
                       Specialized, Stmt, seq)
from ..ir.visitor import free_vars, rewrite, walk
from ..target.instructions import WARPGROUP
from .warp_shuffle import WARP


def split_warp_roles(kernel: Kernel) -> Kernel:
    """``kernel`` with a producer warpgroup of its own, where it has a producer's loop
    (see the module docstring); other kernels unchanged."""
    if not any(isinstance(n, ProducerLoop) for n in walk(kernel.body)):
        return kernel
    threads_x, groups, threads_z = kernel.block
    if threads_x != WARPGROUP or threads_z != 1:
        raise LoweringError(f"a warp-specialized ring needs blocks of warpgroups: {WARPGROUP} threads on threadIdx.x "
                            f"and the warpgroups on threadIdx.y; kernel {kernel.name} has blocks of {kernel.block}")
    consumers = groups * WARPGROUP
    inits = [replace(n, count=n.count or consumers // WARP) for n in walk(kernel.body) if isinstance(n, BarrierInit)]
    producer = _producer_part(kernel.body)
    consumer = rewrite(rewrite(kernel.body, lambda n: _consumer_node(n, consumers)), _without_empty_sequences)
    body = seq(*inits, Barrier(), Specialized(producer, consumer, groups))
    return replace(kernel, body=body, block=(threads_x, groups + 1, threads_z))


def _consumer_node(node, consumers: int):
    """The consumers' part: no producer's loop nor barrier init, named barriers."""
    if isinstance(node, (ProducerLoop, BarrierInit)):
        return Seq(())
    if isinstance(node, Barrier) and node.threads is None:
        return Barrier(consumers)
    return None


def _without_empty_sequences(node):
    if isinstance(node, Seq) and any(isinstance(x, Seq) and not x.stmts for x in node.stmts):
        return Seq(tuple(x for x in node.stmts if not (isinstance(x, Seq) and not x.stmts)))
    return None


def _producer_part(stmt: Stmt, thread_vars: frozenset = frozenset()) -> Stmt | None:
    """The loops around the producer's loops (threads' loops and allocations left out),
    and those loops; None where ``stmt`` holds none. ``thread_vars``: the variables of
    the threads' loops around ``stmt``, which the producer's copies must not use."""
    if isinstance(stmt, ProducerLoop):
        if free_vars(stmt.body) & thread_vars:
            raise LoweringError("a warp-specialized ring's copies depend on the thread; its tiles must be boxes "
                                "whose origin only the blocks and the loops around give")
        return For(stmt.var, stmt.extent, "serial", stmt.body)
    if isinstance(stmt, Seq):
        parts = [p for p in (_producer_part(x, thread_vars) for x in stmt.stmts) if p is not None]
        return seq(*parts) if parts else None
    if isinstance(stmt, Allocate):
        return _producer_part(stmt.body, thread_vars)
    if isinstance(stmt, For):
        if stmt.kind in THREAD_TAGS:
            return _producer_part(stmt.body, thread_vars | {stmt.var})
        inner = _producer_part(stmt.body, thread_vars)
        if inner is None:
            return None
        if stmt.kind not in BLOCK_TAGS + ("serial",):
            raise LoweringError(f"a warp-specialized ring's loop is inside loop {stmt.var.name}, which is "
                                f"{stmt.kind}; only loops bound to blocks or threads, or serial ones, may enclose it")
        return replace(stmt, body=inner)
    return None


__all__ = ["split_warp_roles"]
