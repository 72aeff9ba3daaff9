"""Tensorized loop nests as warp-wide matrix instructions (``s[T].tensorize``).

A loop marked ``tensorize`` with ``"mma_m16n8k16"`` heads a nest that, read thread by
thread, already computes what the instruction computes: lane ``l`` of the warp (the 32
threads on ``threadIdx.x``) adds, over a k step of 16,

    C_local[c(r_row, r_col)] += A(l // 4, r_row, kk) * B(l % 4, r_col, kk)

for its two rows ``8 * r_row + l // 4`` and two columns ``2 * (l % 4) + r_col`` of a 16x8
tile, which are the four accumulator registers the instruction gives lane ``l``. The pass
replaces the nest by one :class:`~tcomp.ir.stmt.WarpMma` whose operands are the elements
the instruction's fragment layouts give each lane (``a_element`` and ``b_element`` of
``tcomp.codegen.warp_mma``): A's element of row ``g + 8 * (r % 2)`` and column
``2t + 8 * (r // 2) + h`` is the nest's A operand with ``r_row = r % 2`` and
``kk = 2t + 8 * (r // 2) + h`` (the row's ``l // 4`` is the lane's own); B's element
``(2t + 8r + h, g)`` is the B operand as lane ``g // 2`` with ``r_col = g % 2`` reads it.

That rewriting is exact when A depends on the lane only through ``l // 4`` and not on
``r_col``, B only through ``l % 4`` and not on ``r_row``, and both are read from memory
every lane can read (shared or global). The pass checks those conditions by evaluating
the operands' indices at every lane, register and k, for a few values of the other loop
variables, and refuses the schedule (``ScheduleError``) where they fail.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ScheduleError
from ..ir.expr import IntImm, Var, binary
from ..ir.simplify import simplify
from ..ir.stmt import Allocate, For, Kernel, Seq, Store, WarpMma
from ..ir.visitor import free_vars, substitute
from ..target.instructions import MMA_SHAPE, wgmma_width
from .matrix_operands import index_function, multiply_add, operand_load, sample_environments
from .warpgroup import warpgroup_mma


def tensorize_loops(kernel: Kernel) -> Kernel:
    """Replace every loop nest marked ``tensorize`` by the warp instruction it computes
    (or, marked for wgmma, by the warpgroup instruction: ``tcomp.lower.warpgroup``)."""

    return replace(kernel, body=_visit(kernel.body, (), kernel))


def _visit(stmt, loops: tuple, kernel: Kernel):
    if isinstance(stmt, Seq):
        return Seq(tuple(_visit(s, loops, kernel) for s in stmt.stmts))
    if isinstance(stmt, Allocate):
        return replace(stmt, body=_visit(stmt.body, loops, kernel))
    if isinstance(stmt, For):
        if stmt.kind == "tensorize":
            return _warp_mma(stmt, loops, kernel)
        if stmt.kind.startswith("tensorize."):
            intrinsic = stmt.kind.partition(".")[2]
            return warpgroup_mma(stmt, loops, kernel, intrinsic, wgmma_width(intrinsic))
        return replace(stmt, body=_visit(stmt.body, loops + (stmt,), kernel))
    return stmt


def _refuse(loop: For, why: str):
    raise ScheduleError(f"tensorize({loop.var.name}, 'mma_m16n8k16'): {why}")


def _warp_mma(loop: For, loops: tuple, kernel: Kernel) -> WarpMma:
    lane = next((f for f in loops if f.kind == "threadIdx.x"), None)
    need = "the instruction needs a whole warp, its 32 lanes on threadIdx.x"
    if lane is None:
        _refuse(loop, f"{need}; no loop around it is bound to threadIdx.x")
    if lane.extent != 32:
        _refuse(loop, f"{need}; loop {lane.var.name} on threadIdx.x has {lane.extent} iterations")
    if kernel.block[0] != 32:
        _refuse(loop, f"{need}; the kernel's blocks have {kernel.block[0]} threads along x")
    nest, body = [loop], loop.body
    while isinstance(body, For):
        nest.append(body)
        body = body.body
    shape = " x ".join(str(f.extent) for f in nest)
    if len(nest) != 3 or not isinstance(body, Store):
        _refuse(loop, f"the nest below it must be three loops (k of 16 and two of 2) around one multiply-add; "
                      f"it is {shape} loops around {type(body).__name__}")
    store = body
    if store.predicate is not None:
        _refuse(loop, "the multiply-add is guarded (a tile does not divide its extent); the instruction "
                      "computes whole 16 x 8 x 16 tiles")
    index_vars = free_vars(store.index)
    ks = [f.var for f in nest if f.extent == MMA_SHAPE[2] and f.var not in index_vars]
    pair = [f.var for f in nest if f.extent == 2 and f.var in index_vars]
    if len(ks) != 1 or len(pair) != 2:
        _refuse(loop, f"the nest's loops are {shape}; the instruction needs a reduction loop of 16 (the "
                      f"accumulator does not depend on it) and two loops of 2 over the lane's accumulators")
    kk = ks[0]
    acc, factors = multiply_add(store)
    if acc is None:
        _refuse(loop, f"the nest's body must be {store.buffer.name}[...] += a * b with a and b 16-bit floats; "
                      f"it is {store}")
    extents = {f.var: f.extent for f in loops}
    for rows, cols in ((pair[0], pair[1]), (pair[1], pair[0])):
        for a, b in (factors, factors[::-1]):
            if _as_a(a, lane.var, rows, cols, kk, extents) and _as_b(b, lane.var, rows, cols, kk, extents):
                return _instruction(store, a, b, lane.var, rows, cols, kk, loop)
    _refuse(loop, "the lanes do not compute the instruction's layout: each of the 32 lanes l must hold rows "
                  "8 * r + l // 4 and columns 2 * (l % 4) + c of a 16 x 8 tile (r and c the two loops of 2), "
                  "with A's operand independent of l % 4 and B's of l // 4, both in shared or global memory")


def _as_a(operand, lane: Var, rows: Var, cols: Var, kk: Var, extents: dict) -> bool:
    """Does A's index depend on the lane only through ``lane // 4``, and not on ``cols``?"""
    return _invariant(operand_load(operand).index, lane, rows, cols, kk, extents,
                      lambda ln, r, c: (4 * (ln // 4), r, 0))


def _as_b(operand, lane: Var, rows: Var, cols: Var, kk: Var, extents: dict) -> bool:
    """Does B's index depend on the lane only through ``lane % 4``, and not on ``rows``?"""
    return _invariant(operand_load(operand).index, lane, rows, cols, kk, extents,
                      lambda ln, r, c: (ln % 4, 0, c))


def _invariant(index, lane, rows, cols, kk, extents, canonical) -> bool:
    """Is ``index`` at (lane, rows, cols, kk) equal to its value at ``canonical(lane,
    rows, cols)`` and kk, for every lane, register and k, at a few values of the loop
    variables outside (zero, the last, two drawn at random)?"""
    others = sorted((v for v in free_vars(index) if v not in (lane, rows, cols, kk)), key=lambda v: v.name)
    if any(v not in extents for v in others):
        return False
    evaluate = index_function(index, [lane, rows, cols, kk] + others)
    if evaluate is None:
        return False
    for env in sample_environments(others, extents):
        for ln in range(32):
            for r in range(2):
                for c in range(2):
                    ln2, r2, c2 = canonical(ln, r, c)
                    for k in range(MMA_SHAPE[2]):
                        if evaluate(ln, r, c, k, *env) != evaluate(ln2, r2, c2, k, *env):
                            return False
    return True


def _instruction(store: Store, a, b, lane: Var, rows: Var, cols: Var, kk: Var, loop: For) -> WarpMma:
    """The WarpMma of a checked nest (see the module docstring for the substitutions)."""
    group, t = binary("//", lane, IntImm(4)), binary("%", lane, IntImm(4))
    a_values = tuple(simplify(substitute(a, {rows: IntImm(r % 2), cols: IntImm(0),
                                             kk: binary("+", binary("*", t, IntImm(2)), IntImm(8 * (r // 2) + h))}))
                     for r in range(4) for h in range(2))
    b_values = tuple(simplify(substitute(b, {lane: binary("//", group, IntImm(2)), rows: IntImm(0),
                                             cols: binary("%", group, IntImm(2)),
                                             kk: binary("+", binary("*", t, IntImm(2)), IntImm(8 * r + h))}))
                     for r in range(2) for h in range(2))
    acc_index = tuple(simplify(substitute(store.index, {rows: IntImm(r // 2), cols: IntImm(r % 2)})) for r in range(4))
    if len({str(i) for i in acc_index}) != 4:
        _refuse(loop, f"the lane's four accumulators must be four elements of {store.buffer.name}; "
                      f"they are {', '.join(map(str, acc_index))}")
    return WarpMma("mma_m16n8k16", operand_load(a).dtype, store.buffer, acc_index, a_values, b_values)


__all__ = ["tensorize_loops"]
