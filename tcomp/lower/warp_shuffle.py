"""Slices added through warp shuffles: a shared buffer that each lane of a warp writes one
element of, and that the warp's lanes then all read, becomes one register a thread, read
across the warp with ``shfl.sync`` (``WarpShuffle``) instead of through shared memory.

A row statistic whose slices every thread adds (``rows_in_blocks(combine="every_thread")``)
with a warp per row (``threads=32``) is the case: slice p is written by lane p into
``S_rf[p]``, and after a barrier every lane adds ``S_rf[0]``, ``S_rf[1]``, ... in that
order. Read from lane p's register instead, the same values are added in the same order
(the same bits), and the warp's lanes exchange them without shared memory. Where that
leaves a kernel no shared buffer, and no device-memory buffer that it both writes and
reads, its barriers order nothing any more and are dropped: each warp runs its row alone.

The buffer qualifies when the block is one warp wide (``blockDim.x == 32``), its one store
is made by a loop bound to ``threadIdx.x`` (each lane its own element, the lane's
coefficient ``c`` in the index), and each load reads ``base + c * l`` for the writer's
``base`` in the reader's own row of the block (the same ``threadIdx.y``) and an ``l`` that
no lane index enters (the same for every lane), in a statement no lane skips (no predicate
on a lane): the load then becomes lane ``l``'s register. ``tc.check`` checks the program
with the shared buffer and its barriers, which computes the same values.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.expr import IntImm, Load, WarpShuffle, binary
from ..ir.simplify import linear_form, simplify
from ..ir.stmt import THREAD_TAGS, Allocate, Barrier, Buffer, Kernel, Seq, Store
from ..ir.visitor import free_vars, rewrite, stores_with_loops, substitute, walk

WARP = 32


def shuffle_within_warps(kernel: Kernel) -> Kernel:
    """``kernel`` with its qualifying shared buffers (module docstring) in registers read
    through warp shuffles, and its barriers dropped where nothing needs them any more."""
    if kernel.block[0] != WARP:
        return kernel
    stores = stores_with_loops(kernel.body)
    body = kernel.body
    for buffer in _shared_float32_buffers(kernel):
        rewritten = _through_shuffles(body, buffer, stores)
        if rewritten is not None:
            body = rewritten
            stores = stores_with_loops(body)
    if body is kernel.body:
        return kernel
    if _barriers_order_nothing(body):
        body = rewrite(body, lambda n: Seq(tuple(c for c in n.stmts if not isinstance(c, Barrier)))
                       if isinstance(n, Seq) else None)
    return replace(kernel, body=body)


def _shared_float32_buffers(kernel: Kernel) -> list:
    found = []
    for node in walk(kernel.body):
        if isinstance(node, Allocate) and node.buffer.scope == "shared" and node.buffer.dtype == "float32" \
                and node.buffer not in found:
            found.append(node.buffer)
    return found


def _fixed(index, loops):
    """``index`` with the variables of loops of one iteration set to 0."""
    return simplify(substitute(index, {f.var: IntImm(0, f.var.dtype) for f in loops if f.extent == 1}))


def _through_shuffles(body, buffer: Buffer, stores: list):
    """``body`` with ``buffer`` in a register read through shuffles, or None where it does
    not qualify."""
    writes = [(st, loops) for st, loops in stores if st.buffer is buffer]
    if len(writes) != 1 or writes[0][0].asynchronous:
        return None
    write, loops = writes[0]
    lanes = [f for f in loops if f.kind == "threadIdx.x"]
    if len(lanes) != 1 or lanes[0].extent > WARP:
        return None
    lane = lanes[0].var
    index = _fixed(write.index, loops)
    coefficient = linear_form(index)[0].get(lane, 0)
    if coefficient <= 0:
        return None
    base = simplify(substitute(index, {lane: IntImm(0, lane.dtype)}))
    writer_threads = {f.kind: f.var for f in loops if f.kind in THREAD_TAGS and f.kind != "threadIdx.x"}
    reads = {}
    for store, around in stores:
        loads = [n for n in walk(store) if isinstance(n, Load) and n.buffer is buffer]
        if not loads:
            continue
        if store.buffer is buffer:
            return None  # NOTE: a read-modify-write of the buffer: not one value a lane
        reader_threads = {f.kind: f.var for f in around if f.kind in THREAD_TAGS}
        lane_vars = {f.var for f in around if f.kind == "threadIdx.x"}
        if store.predicate is not None and free_vars(store.predicate) & {f.var for f in around
                                                                          if f.kind in THREAD_TAGS}:
            return None  # some lanes would skip the shuffle
        own_row = {var: reader_threads[kind] for kind, var in writer_threads.items() if kind in reader_threads}
        if len(own_row) != len(writer_threads):
            return None
        reader_base = simplify(substitute(base, own_row))
        for load in loads:
            offset = simplify(binary("-", _fixed(load.index, around), reader_base))
            o_terms, o_const = linear_form(offset)
            if free_vars(offset) & lane_vars or o_const % coefficient \
                    or any(c % coefficient for c in o_terms.values()):
                return None
            reads[load] = simplify(binary("//", offset, IntImm(coefficient))) if coefficient > 1 else offset
    if not reads:
        return None
    register = Buffer(f"{buffer.name}_lane", buffer.dtype, (1,), "local")
    zero = IntImm(0)

    def fn(node):
        if isinstance(node, Load) and node in reads:
            return WarpShuffle(Load(register, zero), reads[node])
        if isinstance(node, Store) and node.buffer is buffer:
            return replace(node, buffer=register, index=zero)
        if isinstance(node, Allocate) and node.buffer is buffer:
            return replace(node, buffer=register)
        return None

    return rewrite(body, fn)


def _barriers_order_nothing(body) -> bool:
    """No shared buffer left, and no device-memory buffer both written and read: a barrier
    orders no access of one thread before another's."""
    written, read = set(), set()
    for node in walk(body):
        if isinstance(node, Allocate) and node.buffer.scope == "shared":
            return False
        if isinstance(node, Store) and node.buffer.scope == "global":
            written.add(node.buffer)
        if isinstance(node, Load) and node.buffer.scope == "global":
            read.add(node.buffer)
    return not written & read


__all__ = ["WARP", "shuffle_within_warps"]
