"""Loop partitioning: serial loops split where their guards stop holding.

A guard of a store inside a serial loop over ``v`` that grows with ``v`` (``c * v + rest <
bound`` with ``c > 0``, ``rest`` not involving ``v``) holds for the first iterations and
fails from some iteration on: the tail of a split whose factor does not divide the
reduction (``k_o * 16 + k_i < 1000``), or the prefetch of the next k step that the last
step has no use for (``k_o + 1 < 63``). ``partition_loops`` splits such a loop into the
iterations where every such guard holds for every value of the other variables, emitted
without those guards, followed by the remaining iterations as they were (TVM's loop
partitioning)::

    for k_o in range(63):              for k_o in range(62):
      if k_o * 16 + k_i < 1000:   ->     S(k_o)
        S(k_o)                         if 62 * 16 + k_i < 1000:
                                         S(62)

The iterations run in the same order as before, every thread runs both parts (so the
barriers inside stay uniform), and a guard is dropped only where it is provably true, so
the result is the same program. The parts are partitioned in turn (an inner loop of the
last iteration splits where its own guard stops holding), and a store whose guard can
never hold is removed. Spatial tails bound to blocks need no partitioning:
bound inference shifts those tiles inwards (``bounds.py``). A loop around a
warp-specialized ring's loop (a persistent block's tiles) keeps its guards: peeling it
would emit the ring twice.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.expr import And, Compare, IntImm, Load, Var, binary, logical_and
from ..ir.simplify import linear_form
from ..ir.stmt import Allocate, For, Kernel, ProducerLoop, Seq, Store
from ..ir.visitor import free_vars, rewrite, substitute, walk
from .intervals import value_range


def partition_loops(kernel: Kernel) -> Kernel:
    """Split every serial loop at the first iteration where one of its guards may fail."""
    body = _visit(kernel.body, {})
    return replace(kernel, body=Seq(()) if body is None else body)


def _visit(stmt, extents: dict):
    """``stmt`` with its serial loops partitioned and the stores whose guard can never
    hold (in the last iterations of a partitioned loop) removed; None when nothing is left."""
    if isinstance(stmt, For):
        inner = {**extents, stmt.var: stmt.extent}
        if stmt.kind == "serial":
            split = _partition(stmt, inner)
            if split is not None:
                return _seq([_visit(part, extents) for part in split])
        body = _visit(stmt.body, inner)
        return None if body is None else replace(stmt, body=body)
    if isinstance(stmt, Store):
        if stmt.predicate is not None and any(_never_holds(a, extents) for a in _atoms(stmt.predicate)):
            return None
        return stmt
    if isinstance(stmt, Seq):
        return _seq([_visit(s, extents) for s in stmt.stmts])
    if isinstance(stmt, Allocate):
        body = _visit(stmt.body, extents)
        return None if body is None else replace(stmt, body=body)
    return stmt


def _seq(stmts: list):
    kept = tuple(s for s in stmts if s is not None)
    return None if not kept else kept[0] if len(kept) == 1 else Seq(kept)


def _partition(loop: For, extents: dict):
    """(guard-free head, tail) of ``loop``, or None when no guard of it can be dropped
    (or may not: :func:`_holds_a_ring`)."""
    if _holds_a_ring(loop):
        return None
    all_extents = {**extents, **{f.var: f.extent for f in walk(loop.body) if isinstance(f, For)}}
    holds = {}  # guard atom -> number of leading iterations for which it always holds
    for node in walk(loop.body):
        if isinstance(node, Store) and node.predicate is not None and not _register_copy(node):
            for atom in _atoms(node.predicate):
                count = _leading_iterations(atom, loop.var, all_extents)
                if count is not None and 0 < count < loop.extent:
                    holds[atom] = count
    if not holds:
        return None
    head = min(holds.values())
    dropped = {atom for atom, count in holds.items() if count >= head}

    def drop(node):
        if isinstance(node, Store) and node.predicate is not None:
            kept = [a for a in _atoms(node.predicate) if a not in dropped]
            if len(kept) < len(_atoms(node.predicate)):
                return replace(node, predicate=logical_and(*kept))
        return None

    head_loop = replace(loop, extent=head, body=rewrite(loop.body, drop))
    if loop.extent - head == 1:  # one last iteration: its body, at that iteration
        return head_loop, substitute(loop.body, {loop.var: IntImm(head)})
    tail_var = Var(loop.var.name, loop.var.dtype)
    tail_body = substitute(loop.body, {loop.var: binary("+", tail_var, head)})
    return head_loop, For(tail_var, loop.extent - head, loop.kind, tail_body)


def _holds_a_ring(loop: For) -> bool:
    """Whether ``loop`` runs a warp-specialized ring's loop again (a persistent block's
    loop over its tiles): peeling an iteration would repeat the whole ring, the producer's
    loop, the k loop and their barriers' setup, to drop a guard of the last tile's stores."""
    return any(isinstance(n, ProducerLoop) for n in walk(loop.body))


def _register_copy(store: Store) -> bool:
    """A copy from device memory into registers (a double buffer's prefetch of the next
    tile): its guard costs a predicate per element, while peeling the iteration where it
    stops holding repeats the whole loop body (on the warptiled SGEMM rung at K = 1000:
    registers spilled). Such a guard stays in the loop."""
    return (store.buffer.scope == "local" and isinstance(store.value, Load)
            and store.value.buffer.scope == "global")


def _atoms(predicate) -> list:
    if isinstance(predicate, And):
        return _atoms(predicate.a) + _atoms(predicate.b)
    return [predicate]


def _never_holds(atom, extents: dict) -> bool:
    """Whether guard ``atom`` (``e < bound``) is false for every value of its variables."""
    if not isinstance(atom, Compare) or atom.op != "<" or not isinstance(atom.b, IntImm):
        return False
    r = value_range(atom.a, extents)
    return r is not None and r[0] >= atom.b.value


def _leading_iterations(atom, var: Var, extents: dict):
    """How many first values of ``var`` make ``atom`` true for every value of the other
    variables, when ``atom`` is ``c * var + rest < bound`` with c > 0; else None."""
    if not isinstance(atom, Compare) or atom.op != "<" or not isinstance(atom.b, IntImm):
        return None
    terms, const = linear_form(atom.a)
    coef = terms.get(var, 0)
    if coef <= 0 or any(var in free_vars(a) for a in terms if a is not var):
        return None
    rest = {a: c for a, c in terms.items() if a is not var}
    if not rest:
        # NOTE: a guard on the loop variable alone (``k_o + 1 < 63``: the prefetch of a next
        # step that the last step does not need) is cheap, and peeling its last iteration
        # costs the warptiled SGEMM rung registers and spills; it is left in the loop
        return None
    low, high = const, const
    for a, c in rest.items():
        r = value_range(a, extents) if not isinstance(a, Var) else (0, extents[a] - 1) if a in extents else None
        if r is None:
            return None
        low += min(c * r[0], c * r[1])
        high += max(c * r[0], c * r[1])
    if low < 0:  # NOTE: the GPU computes indices in uint32; a negative value would wrap
        return None
    # c * v + high < bound  <=>  v <= (bound - 1 - high) // c
    return (atom.b.value - 1 - high) // coef + 1
