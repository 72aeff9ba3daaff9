"""Passes over the loop-nest IR, each a pure function Kernel -> Kernel."""

from __future__ import annotations

from dataclasses import replace

from ..ir.expr import And, Expr, IntImm, Load, Var, compare, logical_and
from ..ir.simplify import simplify
from ..ir.stmt import BLOCK_TAGS, THREAD_TAGS, For, Kernel, Store
from ..ir.visitor import free_vars, map_children, rewrite, substitute, walk
from .fragments import load_fragments
from .partition import partition_loops
from .shared_reuse import share_shared_memory
from .warp_shuffle import shuffle_within_warps
from .tensorize import tensorize_loops
from .thread_reduction import reduce_across_threads
from .warp_roles import split_warp_roles
from .warpgroup import order_warpgroup_mma, widen_stacked_mma


def infer_launch(kernel: Kernel) -> Kernel:
    """Grid and block sizes: the largest extent bound to each block/thread index."""
    grid, block = [1, 1, 1], [1, 1, 1]
    for node in walk(kernel.body):
        if isinstance(node, For) and node.kind in BLOCK_TAGS + THREAD_TAGS:
            dims, tags = (grid, BLOCK_TAGS) if node.kind in BLOCK_TAGS else (block, THREAD_TAGS)
            d = tags.index(node.kind)
            dims[d] = max(dims[d], node.extent)
    return replace(kernel, grid=tuple(grid), block=tuple(block))


def guard_bound_loops(kernel: Kernel) -> Kernel:
    """Guards that keep surplus threads from writing.

    A loop bound to threads with a smaller extent than the block has threads in that
    dimension: the stores under it that depend on its variable are guarded, so surplus
    threads write nothing (and still reach the barriers). A store that does not mention
    the variable writes the same value from every thread, or only the thread's own
    registers, and needs no guard; this is what lets a shared buffer be filled by all
    threads of a block inside a consumer's smaller thread loop.

    A shared or global buffer that is accumulated into (a reduction computed in shared
    or global memory) is different: if a thread dimension of the block is bound by none
    of the loops around its stores, every thread of that dimension would run the same
    read-modify-write and they would race (and lose updates). Those stores get a single
    writer, ``threadIdx.d == 0`` for each such dimension. (The legality check models a
    store that no loop bound to threads encloses as one such writer.)
    """
    sizes = dict(zip(BLOCK_TAGS, kernel.grid)) | dict(zip(THREAD_TAGS, kernel.block))
    accumulated = _accumulators(kernel.body)

    def visit(stmt, guards, bound):
        if isinstance(stmt, For) and stmt.kind in sizes:
            bound = {**bound, stmt.kind: stmt.var}
            if stmt.extent < sizes[stmt.kind]:
                guards = guards + (compare("<", stmt.var, stmt.extent),)
        if isinstance(stmt, Store):
            used = free_vars(stmt)
            relevant = [g for g in guards if g.a in used]
            unbound, writers = [], []
            if stmt.buffer in accumulated:
                # all threads of a dimension the store does not depend on would run the same
                # read-modify-write: only the first one writes
                for tag in THREAD_TAGS:
                    if sizes[tag] > 1 and tag not in bound:
                        unbound.append(tag)
                        writers.append(Var(tag.replace(".", "_"), "int32"))
                    elif sizes[tag] > 1 and bound[tag] not in used:
                        relevant.append(compare("==", bound[tag], 0))
            relevant += [compare("==", w, 0) for w in writers]
            if relevant:
                stmt = replace(stmt, predicate=logical_and(*relevant, stmt.predicate))
            for tag, writer in reversed(list(zip(unbound, writers))):
                stmt = For(writer, sizes[tag], tag, stmt)
            return stmt
        return map_children(stmt, lambda c: visit(c, guards, bound) if not hasattr(c, "dtype") else c)

    return replace(kernel, body=visit(kernel.body, (), {}))


def _accumulators(body) -> set:
    """Shared and global buffers that some store reads back (read-modify-write)."""
    out = set()
    for node in walk(body):
        if isinstance(node, Store) and node.buffer.scope in ("shared", "global"):
            if any(isinstance(n, Load) and n.buffer is node.buffer for n in walk(node.value)):
                out.add(node.buffer)
    return out


def simplify_indices(kernel: Kernel) -> Kernel:
    """Canonical affine form for every integer expression."""
    return replace(kernel, body=_simplify_stores(kernel.body))


def _simplify_stores(body):
    def fn(node):
        pred = simplify_pred(node.predicate) if node.predicate is not None else None
        in_bounds = simplify_pred(node.in_bounds) if node.in_bounds is not None else None
        return replace(node, index=simplify(node.index), value=simplify(node.value), predicate=pred,
                       in_bounds=in_bounds)

    return rewrite(body, lambda n: fn(n) if isinstance(n, Store) else None)


def drop_unit_loops(kernel: Kernel) -> Kernel:
    """An unrolled or vectorized loop of one iteration becomes its body, with the loop's
    variable 0. Left in the source, such a loop keeps its variable in the indices until
    NVVM unrolls it, which is after loop-invariant code motion has run: the
    double-buffered SGEMM rung's prefetch addresses then held a register each (111
    registers against 107 when the loop was unrolled in the Python source). Serial loops
    of one iteration stay: dropping those too took the blocktile_1d rung from 32
    registers to 48 (LLVM then schedules its loads differently)."""

    def fn(node):
        if isinstance(node, For) and node.extent == 1 and node.kind in ("unroll", "vectorize"):
            return _simplify_stores(substitute(node.body, {node.var: IntImm(0, node.var.dtype)}))
        return None

    return replace(kernel, body=rewrite(kernel.body, fn))


def simplify_in_loop_ranges(kernel: Kernel) -> Kernel:
    """Every integer expression simplified again, now knowing that each loop variable
    lies in ``[0, extent - 1]``: the divisions and remainders of fused and split loops
    that the ranges decide disappear (``tcomp.ir.simplify``). Matrix-instruction passes
    write new indices, so this runs after them."""

    def visit(node, ranges):
        if isinstance(node, For):
            ranges = {**ranges, node.var: (0, node.extent - 1)}
        if isinstance(node, Expr):
            return simplify_pred(node, ranges) if isinstance(node, And) else simplify(node, ranges)
        return map_children(node, lambda child: visit(child, ranges))

    return replace(kernel, body=visit(kernel.body, {}))


def simplify_pred(p, ranges=None):
    if isinstance(p, And):
        return And(simplify_pred(p.a, ranges), simplify_pred(p.b, ranges))
    return simplify(p, ranges)


#: the ordered pass list applied to every kernel after the loop nests are built
KERNEL_PASSES = (
    ("infer_launch", infer_launch),
    ("guard_bound_loops", guard_bound_loops),
    ("reduce_across_threads", reduce_across_threads),
    ("partition_loops", partition_loops),
    ("simplify_indices", simplify_indices),
    ("tensorize_loops", tensorize_loops),
    ("widen_stacked_mma", widen_stacked_mma),
    ("order_warpgroup_mma", order_warpgroup_mma),
    ("load_fragments", load_fragments),
    ("drop_unit_loops", drop_unit_loops),
    ("shuffle_within_warps", shuffle_within_warps),
    ("share_shared_memory", share_shared_memory),
    ("split_warp_roles", split_warp_roles),
    ("simplify_in_loop_ranges", simplify_in_loop_ranges),
)
