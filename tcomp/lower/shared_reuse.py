"""Shared memory reused: a shared buffer whose first use comes after another's last one
takes that buffer's bytes (the staged output tile of a tensor-core block in the rings its
k loop no longer reads).

A block's shared buffers are laid out one after another (``tcomp.target.storage``), so a
block that stages its output tile for 16-byte stores needs the tile's bytes beside its
operand rings: a 192 x 192 int8 tile does not fit beside four k steps of bf16 rings. Yet
the rings are dead once the k loop ends. This pass finds such pairs and records them in
``Kernel.shared_reuse``, which the layout, the resource check, the cost model and the
code generator all read. A buffer ``late`` may reuse a buffer ``early`` when

1. some sequence of statements ``S``, around which no serial loop runs (only loops bound
   to blocks and threads, which every thread of a block runs through once, and loops of
   one iteration: a batched product's block holds one product of the batch), holds every
   use of ``early`` in its statements ``S[0 .. b]``; ``late`` is used in ``S[c ..]``
   with ``c > b`` and, outside ``S``, only after it;
2. where ``early`` is read by wgmma, a ``wgmma.wait_group 0`` retires the last such
   instruction before ``S[c]`` (the instructions read shared memory asynchronously);

and the pass then puts, right before ``S[c]``, a ``cp.async.wait_group 0`` where
``early`` was filled by cp.async (no copy into it may land later) and a barrier: every
thread of the block is done with ``early`` before any thread writes ``late``. A reuse that
needs a barrier of its own (none stands right before ``S[c]``) is taken only for a ``late``
of at least ``REUSE_WORTH_A_BARRIER`` bytes: a row kernel's second statistic (a few KB of
slices) would buy its bytes with a wait of every thread on every row. No
statement of the IR is conditional on the thread (guards are store predicates), so every
thread reaches the barrier.

``tc.check``'s polyhedral model sees the schedule's buffers apart, as the schedule wrote
them; the pass only shares bytes where the order above makes the two lifetimes disjoint.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.stmt import (Allocate, AsyncWait, Barrier, Buffer, For, Kernel, Seq, Store, WarpgroupMma,
                       WarpgroupWait)
from ..ir.visitor import walk
from ..target.storage import element_bytes

#: the least bytes of a buffer that reuse another's at the cost of a barrier of their own (the
#: output tiles staged for 16-byte stores, which this pass is for, are 16 KB and more)
REUSE_WORTH_A_BARRIER = 8 * 1024

#: loops that every thread of a block runs through exactly once
_PARALLEL = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


def share_shared_memory(kernel: Kernel) -> Kernel:
    """``kernel`` with ``shared_reuse`` set, and the barriers that make it safe inserted
    (see the module docstring)."""
    order = _Order(kernel)
    reuse: dict = {}
    splits: dict = {}  # the pre-order number of a sequence -> {c: needs a cp.async wait}
    for number, children in order.sequences:
        for late in order.shared:
            c = next((i for i, child in enumerate(children) if order.uses(child, late)), None)
            if c is None or not order.all_uses_from(late, children[c][0]):
                continue
            needs_barrier = not (c and order.is_barrier(children[c - 1]))
            if needs_barrier and late.size * element_bytes(late) < REUSE_WORTH_A_BARRIER:
                continue
            for early in order.shared:
                if early is late or early in reuse.get(late, ()):
                    continue
                used = [i for i, child in enumerate(children[:c]) if order.uses(child, early)]
                if not used or not order.all_uses_within(early, children[0][0], children[used[-1]][1]):
                    continue
                if not order.wgmma_retired(early, children[c][0]):
                    continue
                reuse.setdefault(late, []).append(early)
                wants = splits.setdefault(number, {})
                wants[c] = wants.get(c, False) or order.copied_asynchronously(early)
    if not reuse:
        return kernel
    body = _insert_barriers(kernel.body, splits)
    return replace(kernel, body=body, shared_reuse=tuple((late, tuple(dead)) for late, dead in reuse.items()))


class _Order:
    """The kernel's statements numbered in execution order (pre-order): the statements
    that use buffers, and the sequences that no serial loop encloses, each with the
    number span of every statement in it."""

    def __init__(self, kernel: Kernel):
        self.leaves: list = []  # (number, buffers it uses, stmt)
        self.sequences: list = []  # (number, [(first, last) of each statement])
        self._count = 0
        self._visit(kernel.body, parallel=True)
        self._uses: dict = {}  # buffer -> the numbers of the statements that use it
        for n, used, _ in self.leaves:
            for b in used:
                self._uses.setdefault(b, []).append(n)
        self.shared = [b for b in self._uses if b.scope == "shared"]

    def _visit(self, stmt, parallel: bool) -> tuple:
        first = self._count
        self._count += 1
        if isinstance(stmt, Seq):
            spans = [self._visit(child, parallel) for child in stmt.stmts]
            if parallel:
                self.sequences.append((first, spans))
        elif isinstance(stmt, For):  # NOTE: a loop of one iteration runs once, as a bound one does
            self._visit(stmt.body, parallel and (stmt.kind in _PARALLEL or stmt.extent == 1))
        elif isinstance(stmt, Allocate):
            self._visit(stmt.body, parallel)
        else:
            self.leaves.append((first, _buffers(stmt), stmt))
        return first, self._count - 1

    def is_barrier(self, span: tuple) -> bool:
        """Is the statement numbered ``span`` a barrier?"""
        return any(n == span[0] and isinstance(leaf, Barrier) for n, _, leaf in self.leaves)

    def uses(self, span: tuple, buffer) -> bool:
        """Does a statement numbered within ``span`` use ``buffer``?"""
        return any(span[0] <= n <= span[1] for n in self._uses[buffer])

    def all_uses_from(self, buffer, start: int) -> bool:
        return all(n >= start for n in self._uses[buffer])

    def all_uses_within(self, buffer, first: int, last: int) -> bool:
        return all(first <= n <= last for n in self._uses[buffer])

    def wgmma_retired(self, buffer, start: int) -> bool:
        """Is every wgmma that reads ``buffer`` followed, before number ``start``, by a
        ``wgmma.wait_group 0``?"""
        readers = [n for n, _, leaf in self.leaves if isinstance(leaf, WarpgroupMma) and buffer in (leaf.a, leaf.b)]
        if not readers:
            return True
        return any(max(readers) < n < start for n, _, leaf in self.leaves
                   if isinstance(leaf, WarpgroupWait) and leaf.pending == 0)

    def copied_asynchronously(self, buffer) -> bool:
        return any(isinstance(leaf, Store) and leaf.buffer is buffer and leaf.asynchronous
                   for _, _, leaf in self.leaves)


def _buffers(stmt) -> frozenset:
    """The buffers one statement (a leaf: a store, a matrix instruction) reads or writes."""
    found = set()
    for node in walk(stmt):
        for value in vars(node).values():
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, Buffer):
                    found.add(item)
    return frozenset(found)


def _insert_barriers(body, splits: dict):
    """A barrier (after a ``cp.async.wait_group 0`` where asked) before statement ``c`` of
    each sequence in ``splits`` (numbered as :class:`_Order` numbers them), unless a
    barrier stands right before it already."""
    count = 0

    def visit(stmt):
        nonlocal count
        number = count
        count += 1
        if isinstance(stmt, Seq):
            children = [visit(child) for child in stmt.stmts]
            wanted = splits.get(number, {})
            out = []
            for i, child in enumerate(children):
                if i in wanted:
                    if wanted[i]:
                        out.append(AsyncWait(0))
                    if not (out and isinstance(out[-1], Barrier)):
                        out.append(Barrier())
                out.append(child)
            return Seq(tuple(out))
        if isinstance(stmt, (For, Allocate)):
            return replace(stmt, body=visit(stmt.body))
        return stmt

    return visit(body)


__all__ = ["REUSE_WORTH_A_BARRIER", "share_shared_memory"]
