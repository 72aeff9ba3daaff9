"""Reductions run by the threads of a block together (``s[T].reduce_across_threads``).

A reduction loop marked ``across_threads`` is one that every thread of the block runs
alone in the nest as built (the schedule's view, and ``tc.check``'s): each thread adds all
of the loop's terms into its own register (``local`` scope), one after another. This pass
gives the block's threads the terms instead, and combines what they hold in log steps:

1. Thread ``t`` of the ``X`` threads on ``threadIdx.x`` adds terms ``t``, ``t + X``,
   ``t + 2X``, ... (the loop's iterations it owns; none past the loop's extent).
2. The 32 lanes of each warp combine their values by a butterfly of shuffles
   (``shfl.sync``, lane ``l`` reads lane ``l ^ o`` for ``o`` = 16, 8, 4, 2, 1): after it
   every lane holds its warp's total.
3. With more than one warp in a row of the block (``X > 32``), lane 0 of each warp stores
   its total in shared memory, a barrier, and lane ``w`` of every warp reads warp ``w``'s
   total (the reduction's identity past the last warp) and the butterfly runs again.
4. Every thread combines the total into its register, as the loop would have.

Every thread ends with the same total, in a fixed order (the same bits every run), but not
the loop's order: ``tc.check`` reports the reassociation. The loop needs ``X`` to be a power
of two up to 32 or a multiple of 32, a body that is one update ``acc = acc op term`` of a
``local`` accumulator (op ``+``, ``max`` or ``min``), and no loop bound to ``threadIdx.x``
around it: each thread's copy of the surrounding code must be the same, since the threads
share their terms. Loops bound to ``threadIdx.y`` / ``threadIdx.z`` around it keep their
rows apart (each row of the block reduces on its own).

Where the terms are slices in shared memory that the threads wrote just before (a row's
statistic cut into one slice a thread, ``rows_in_blocks(combine="tree")``), thread ``t``
reads only slice ``t``, the one it wrote itself: the barrier between the slices' stores and
the tree, which ``tc.check`` needs for its view (every thread reading every slice), is
dropped (:func:`own_slices_need_no_barrier`). The conditions: one row of threads in the
block, as many terms as threads on ``threadIdx.x``, every store to the slices' buffer since
the barrier before it (or the start of its sequence) on a ``threadIdx.x`` loop of the same
threads at the index the tree's thread reads, and nothing else after the barrier reading
what was written since the one before.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ScheduleError
from ..ir.expr import (Binary, IntImm, Load, Select, Var, WarpShuffle, binary, compare, logical_and,
                       reduction_identity)
from ..ir.simplify import simplify
from ..ir.stmt import ACROSS_THREADS, BLOCK_TAGS, THREAD_TAGS, Allocate, Barrier, Buffer, For, Kernel, Seq, Store
from ..ir.visitor import free_vars, stores_with_loops, substitute, walk

WARP = 32
_COMBINERS = {"+": "sum", "max": "max", "min": "min"}


def reduce_across_threads(kernel: Kernel) -> Kernel:
    """``kernel`` with each ``across_threads`` loop run by the block's threads together
    (module docstring)."""
    if not any(isinstance(n, For) and n.kind == ACROSS_THREADS for n in walk(kernel.body)):
        return kernel
    threads_x = kernel.block[0]
    if not (threads_x in (1, 2, 4, 8, 16, 32) or threads_x % WARP == 0):
        raise ScheduleError(f"reduce_across_threads: {kernel.name} has {threads_x} threads on threadIdx.x; a "
                            f"reduction across threads needs a power of two up to 32 or a multiple of 32 (whole "
                            f"warps)")
    if kernel.block[0] * kernel.block[1] * kernel.block[2] % WARP:
        raise ScheduleError(f"reduce_across_threads: {kernel.name}'s block of {kernel.block} threads is not whole "
                            f"warps; the threads' shuffles need every lane of a warp")
    trees = []
    own_slots = {}  # id of a tree's statement -> (its thread's var, the shared loads of its one term)

    def visit(stmt, enclosing):
        if isinstance(stmt, For) and stmt.kind == ACROSS_THREADS:
            return _tree(kernel, stmt, enclosing, trees, own_slots)
        if isinstance(stmt, For):
            return replace(stmt, body=visit(stmt.body, enclosing + (stmt,)))
        if isinstance(stmt, Allocate):
            return replace(stmt, body=visit(stmt.body, enclosing))
        if isinstance(stmt, Seq):
            return own_slices_need_no_barrier(Seq(tuple(visit(child, enclosing) for child in stmt.stmts)),
                                              own_slots, threads_x)
        return stmt

    body = visit(kernel.body, ())
    for buffer in trees:
        body = Allocate(buffer, body)
    return replace(kernel, body=body)


def _update(loop: For):
    """The loop's one update ``acc[i] = acc[i] op term``, under loops of one iteration:
    ``(store, op, term)``."""
    for store in (n for n in walk(loop.body) if isinstance(n, Store)):
        if store.buffer.scope != "local":
            raise ScheduleError(f"reduce_across_threads: {store.buffer.name} is in {store.buffer.scope} memory; "
                                f"the threads' total goes to each thread's own copy, so it must be local "
                                f"(set_scope('local'))")
    body, fixed = loop.body, {}
    while isinstance(body, For) and body.extent == 1 or isinstance(body, Seq) and len(body.stmts) == 1:
        if isinstance(body, For):
            fixed[body.var] = IntImm(0, body.var.dtype)
            body = body.body
        else:
            body = body.stmts[0]
    if not isinstance(body, Store) or not isinstance(body.value, Binary) or body.value.op not in _COMBINERS:
        raise ScheduleError(f"reduce_across_threads: loop {loop.var.name}'s body must be one update "
                            f"acc = acc + term (or max, min); it is {body}")
    store = substitute(body, fixed) if fixed else body
    value = store.value

    def is_acc(e):
        if not (isinstance(e, Load) and e.buffer is store.buffer):
            return False
        offset = simplify(binary("-", e.index, store.index))
        return isinstance(offset, IntImm) and offset.value == 0

    if is_acc(value.a):
        term = value.b
    elif is_acc(value.b):  # every combiner here commutes
        term = value.a
    else:
        raise ScheduleError(f"reduce_across_threads: loop {loop.var.name}'s body must add a term to its "
                            f"accumulator ({store.buffer.name}); it stores {value}")
    if any(isinstance(n, Load) and n.buffer is store.buffer for n in walk(term)):
        raise ScheduleError(f"reduce_across_threads: the term of loop {loop.var.name} reads its own accumulator "
                            f"{store.buffer.name}")
    if loop.var in free_vars(store.index):
        raise ScheduleError(f"reduce_across_threads: loop {loop.var.name} is not a reduction of "
                            f"{store.buffer.name}: the element it updates depends on it")
    return store, value.op, term


def _tree(kernel: Kernel, loop: For, enclosing: tuple, trees: list, own_slots: dict):
    """The statements that run ``loop`` across the block's threads; where each thread adds
    one term (as many terms as threads, one row of threads), ``own_slots`` gets the tree's
    thread variable and its term's loads of shared memory under the tree's id."""
    bound = {f.kind: f.var for f in enclosing if f.kind in THREAD_TAGS}
    if "threadIdx.x" in bound:
        raise ScheduleError(f"reduce_across_threads: loop {loop.var.name} is inside a loop bound to threadIdx.x "
                            f"({bound['threadIdx.x'].name}): each thread's copy of the code around it differs, so "
                            f"the threads cannot share its terms")
    store, op, term = _update(loop)
    identity = _identity(op, store.value.dtype)
    threads_x = kernel.block[0]
    rounds = -(-loop.extent // threads_x)
    sizes = dict(zip(THREAD_TAGS, kernel.block))
    tag_vars = {tag: bound[tag] if tag in bound else Var(f"{loop.var.name}_{tag[-1]}", "int32")
                if tag == "threadIdx.x" or sizes[tag] > 1 else IntImm(0) for tag in THREAD_TAGS}
    t = tag_vars["threadIdx.x"]
    part = Buffer(f"{store.buffer.name}_part", store.value.dtype, (1,), "local")
    zero = IntImm(0)
    held = Load(part, zero)

    def combine(a, b):
        return binary(op, a, b)

    steps = [Store(part, zero, identity)]
    q = Var(f"{loop.var.name}_round", "int32")
    iteration = binary("+", binary("*", q, IntImm(threads_x)), t) if rounds > 1 else t
    owned = substitute(term, {loop.var: iteration})
    in_loop = compare("<", iteration, loop.extent) if loop.extent % threads_x else None
    predicate = logical_and(*(p for p in (in_loop, _substituted(store.predicate, loop.var, iteration))
                              if p is not None)) if in_loop is not None or store.predicate is not None else None
    add = Store(part, zero, combine(held, owned), predicate)
    steps.append(For(q, rounds, "unroll", add) if rounds > 1 else substitute(add, {q: zero}))
    linear = binary("+", t, binary("*", IntImm(threads_x), binary(
        "+", tag_vars["threadIdx.y"], binary("*", tag_vars["threadIdx.z"], IntImm(kernel.block[1])))))
    lane = simplify(binary("%", linear, IntImm(WARP)))
    steps += _butterfly(part, combine, lane, min(threads_x, WARP))
    if threads_x > WARP:
        warps = threads_x // WARP
        rows = kernel.block[1] * kernel.block[2]
        totals = Buffer(f"{store.buffer.name}_warps", store.value.dtype, (rows * warps,), "shared")
        trees.append(totals)
        first = binary("*", binary("//", linear, IntImm(threads_x)), IntImm(warps))
        # a power of two of warps: each group of that many lanes reads every warp's total,
        # so a butterfly as wide gives every lane the total; else lanes past the last warp
        # hold the identity and the whole warp's butterfly runs
        whole_groups = warps == _power_of_two_at_least(warps)
        total = Load(totals, binary("+", first, binary("%", lane, IntImm(warps))))
        steps += [
            Store(totals, binary("+", first, binary("//", t, IntImm(WARP))), held, compare("==", lane, 0)),
            Barrier(),
            Store(part, zero, total if whole_groups else Select(compare("<", lane, warps), total, identity)),
        ]
        steps += _butterfly(part, combine, lane, warps if whole_groups else WARP)
        if any(f.kind not in THREAD_TAGS + BLOCK_TAGS and f.extent > 1 for f in enclosing):
            steps.append(Barrier())  # the next iteration's totals wait for this one's reads
    steps.append(replace(store, value=combine(Load(store.buffer, store.index), held), predicate=None))
    body = Seq(tuple(steps))
    for tag in reversed(THREAD_TAGS):
        if isinstance(tag_vars[tag], Var) and tag not in bound:
            body = For(tag_vars[tag], sizes[tag], tag, body)
    tree = Allocate(part, body)
    if loop.extent == threads_x and kernel.block[1] * kernel.block[2] == 1:
        own_slots[id(tree)] = (t, tuple(e for e in walk(owned) if isinstance(e, Load) and e.buffer.scope == "shared"))
    return tree


def own_slices_need_no_barrier(seq: Seq, own_slots: dict, threads_x: int) -> Seq:
    """``seq`` without the barriers between shared slices and the trees that add them where
    each thread reads only the slice it wrote (module docstring)."""
    if not own_slots:
        return seq
    stmts = list(seq.stmts)
    keep = [True] * len(stmts)
    # the sequence's start counts as a barrier: a loop whose body refills shared memory ends
    # in one (tcomp.lower.loop_body), and a body that runs once has no earlier reads
    barriers = [-1] + [i for i, st in enumerate(stmts) if isinstance(st, Barrier)]
    for before, at in zip(barriers, barriers[1:]):
        if at + 1 >= len(stmts):
            continue
        trees = [own_slots[id(n)] for n in walk(stmts[at + 1]) if id(n) in own_slots]
        written = [n for st in stmts[before + 1:at] for n in walk(st)
                   if isinstance(n, Store) and n.buffer.scope == "shared"]
        if trees and written and _reads_own_slots(stmts[before + 1:at], written, stmts[at + 1], trees, threads_x):
            keep[at] = False
    return seq if all(keep) else Seq(tuple(st for st, k in zip(stmts, keep) if k))


def _reads_own_slots(segment: list, written: list, after: Stmt, trees: list, threads_x: int) -> bool:
    """Whether the statements ``after`` a barrier read what ``segment`` wrote to shared memory
    (the stores ``written``) only in the trees' terms, each thread the slot it stored."""
    buffers = {st.buffer for st in written}
    term_loads = {id(load) for _, loads in trees for load in loads}
    if any(isinstance(n, Load) and n.buffer in buffers and id(n) not in term_loads for n in walk(after)):
        return False
    for var, loads in trees:
        for load in loads:
            if load.buffer in buffers and not _stored_by_the_same_thread(segment, after, load, var, threads_x):
                return False
    return True


def _stored_by_the_same_thread(segment: list, after: Stmt, load: Load, thread_var, threads_x: int) -> bool:
    """Whether every store to ``load``'s buffer in ``segment`` runs on a ``threadIdx.x`` loop
    of ``threads_x`` threads, unguarded, at the index that ``load`` (in ``after``, on the
    tree's thread ``thread_var``) reads: the same slot on the same thread."""
    after_loops = {n.var: n for n in walk(after) if isinstance(n, For)}
    read_vars = free_vars(load.index) - {thread_var}
    if any(v in after_loops and after_loops[v].extent != 1 for v in read_vars):
        return False
    read = substitute(load.index, {v: IntImm(0, v.dtype) for v in read_vars if v in after_loops})
    stores = [(store, loops) for store, loops in stores_with_loops(segment) if store.buffer is load.buffer]
    for store, loops in stores:
        threads = [f for f in loops if f.kind == "threadIdx.x"]
        index_vars = free_vars(store.index)
        if store.predicate is not None or len(threads) != 1 or threads[0].extent != threads_x \
                or any(f.extent != 1 and f.var in index_vars for f in loops if f is not threads[0]):
            return False
        stored = substitute(store.index, {**{f.var: IntImm(0, f.var.dtype) for f in loops if f.extent == 1},
                                          threads[0].var: thread_var})
        difference = simplify(binary("-", stored, read))
        if not (isinstance(difference, IntImm) and difference.value == 0):
            return False
    return bool(stores)


def _butterfly(part: Buffer, combine, lane, width: int) -> list:
    """Lanes ``0 .. width - 1`` of each group of ``width`` combine ``part`` in log steps."""
    held = Load(part, IntImm(0))
    steps, offset = [], width // 2
    while offset >= 1:
        steps.append(Store(part, IntImm(0), combine(held, WarpShuffle(held, binary("^", lane, IntImm(offset))))))
        offset //= 2
    return steps


def _power_of_two_at_least(n: int) -> int:
    width = 1
    while width < n:
        width *= 2
    return width


def _identity(op: str, dtype: str):
    return reduction_identity(_COMBINERS[op], dtype)


def _substituted(predicate, var, value):
    return None if predicate is None else substitute(predicate, {var: value})


__all__ = ["own_slices_need_no_barrier", "reduce_across_threads"]
