"""Operand fragments of warp matrix instructions, loaded by ldmatrix once per reuse.

After ``tensorize_loops`` every :class:`~tcomp.ir.stmt.WarpMma` names its operands
element by element: eight 16-bit values of A and four of B per lane, each a load from
shared memory. This pass gives each operand, where it can, two things:

1. **One ldmatrix instead of element loads.** ``ldmatrix.x4`` hands every lane the four
   registers of A's fragment when lane ``l`` gives the address of row ``l % 8`` of
   matrix ``l // 8``, each matrix an 8 x 8 block whose rows are 16 contiguous, aligned
   bytes of the shared tile; ``ldmatrix.x2.trans`` does the same for B's two registers
   from a tile stored k-major (the matrix's rows are k, its columns n). The pass tries
   both forms (with and without ``.trans``) on each operand and keeps the one whose
   fragment layout (:func:`tcomp.codegen.warp_mma.a_element` and ``b_element``) the
   operand's indices follow, checked by evaluating them at every lane, register and half
   for a few values of the loops around (``sample_environments``). An operand that
   follows neither, or is not in shared memory, keeps its element loads. Two B fragments
   of neighbouring columns, a constant distance apart, come from one ``.x4.trans``.
2. **Reuse across the warp tile.** Within the perfect nest of unrolled loops around the
   instruction (a warp tile's rows and columns of 16 x 8 tiles), A's fragment does not
   depend on the column loop and B's not on the row loop. Each fragment is loaded before
   the outermost loop of the nest it does not depend on, into an int32 register array
   with one fragment per iteration of the loops inside that it does depend on: a 64 x 64
   warp tile loads 4 fragments of A and 8 of B per k step of 16, not 32 of each.

Before::   for kt: for mi: for nj: mma(A_s[... mi, kt ...], W_s[... nj, kt ...], C[mi, nj])
After::    for kt: (for nj': W_frag[4 nj' ..] = ldmatrix.x4.trans(W_s, ...))   (nj = 2 nj', 2 nj' + 1)
                   for mi: A_frag[0..3] = ldmatrix.x4(A_s, ...)
                           for nj: mma(A_frag[0..3], W_frag[2 nj ..], C[mi, nj])

Only the nest's own loops are crossed, so no barrier or store to the tiles lies between
a fragment's load and its use.

3. **Registers straight from global memory.** An operand read from a global tensor, not a
   shared tile (a decode step's weights, each element used by one warp only), whose
   values step by one element from each n8 tile of an unrolled tile loop of 2, 4 or 8
   to the next (the warp tile's columns interleaved, ``tcomp.search.tiling.mma_rows``),
   gets each register of all the loop's tiles from two vector loads, lane ``c`` of the
   two packed into tile ``c``'s register (:class:`~tcomp.ir.stmt.RegisterPairLoad`),
   hoisted as a fragment is: B's four rows of a k step are four 16-byte loads for eight
   tiles.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..ir.expr import IntImm, Load, Var, binary
from ..ir.lanes import is_multiple, lane_form
from ..ir.simplify import simplify
from ..ir.stmt import Allocate, Buffer, For, FragmentLoad, Kernel, RegisterPairLoad, Seq, WarpMma
from ..ir.visitor import free_vars, substitute
from .matrix_operands import index_function, operand_load, sample_environments

#: 16-bit elements in one row of an ldmatrix matrix (16 bytes)
_ROW = 8


def load_fragments(kernel: Kernel) -> Kernel:
    """Load the operands of every WarpMma by ldmatrix, hoisted out of the loops of its
    nest that they do not depend on (see the module docstring)."""
    return replace(kernel, body=_visit(kernel.body, ()))


def _visit(stmt, loops: tuple):
    if isinstance(stmt, Seq):
        return Seq(tuple(_visit(s, loops) for s in stmt.stmts))
    if isinstance(stmt, Allocate):
        return replace(stmt, body=_visit(stmt.body, loops))
    if isinstance(stmt, WarpMma):
        return _with_fragments((), stmt, loops)
    if isinstance(stmt, For):
        chain, inner = _perfect_nest(stmt)
        if chain and isinstance(inner, WarpMma):
            return _with_fragments(chain, inner, loops)
        return replace(stmt, body=_visit(stmt.body, loops + (stmt,)))
    return stmt


def _perfect_nest(loop: For) -> tuple:
    """The serial and unrolled loops from ``loop`` down while each is its parent's whole
    body, and what the innermost one holds."""
    chain, body = [], loop
    while isinstance(body, For) and body.kind in ("serial", "unroll"):
        chain.append(body)
        body = body.body
    return tuple(chain), body


class _Plan:
    """How one operand's registers are loaded: ``ldmatrix.x{count}[.trans]`` of ``src``
    at ``lane``'s ``address``, hoisted to level ``level`` of the nest."""

    def __init__(self, count: int, trans: bool, src: Buffer, address, lane: Var, extents: dict, level: int,
                 fill_loops: tuple):
        self.count, self.trans, self.src, self.address, self.lane = count, trans, src, address, lane
        self.extents = extents  # of the loops around, lanes included
        self.level = level  # the fill goes just inside chain[level - 1] (0: before the nest)
        self.fill_loops = fill_loops  # loops of the nest at or below level that the address uses
        self.buffer = Buffer(f"{src.name}_frag", "int32", (count * math.prod(f.extent for f in fill_loops),), "local")

    def flat(self, mapping: dict):
        """The index of this lane's first register in the fragment buffer, with the fill
        loops' variables replaced through ``mapping``."""
        index = IntImm(0)
        for f in self.fill_loops:
            index = binary("+", binary("*", index, IntImm(f.extent)), mapping.get(f.var, f.var))
        return simplify(binary("*", index, IntImm(self.count)))

    def registers(self) -> tuple:
        base = self.flat({})
        return tuple(Load(self.buffer, simplify(binary("+", base, IntImm(m)))) for m in range(self.count))

    def fill(self):
        """The fill nest: one ldmatrix per iteration of the fill loops; two x2 loads of
        consecutive iterations of the innermost one as one x4 (lanes 16-31 give the
        second's rows) where their rows lie a constant distance apart."""
        fresh = {f.var: Var(f"{f.var.name}_frag", f.var.dtype) for f in self.fill_loops}
        loops = [(fresh[f.var], f.extent) for f in self.fill_loops]
        address, count, registers = substitute(self.address, fresh), self.count, self.flat(fresh)
        step = self._pair_step()
        if step is not None:
            inner, extent = loops[-1]
            pair = Var(f"{inner.name}_pair", inner.dtype)
            first = {inner: binary("*", pair, IntImm(2))}
            second_half = binary("*", binary("//", self.lane, IntImm(16)), IntImm(step))
            address = binary("+", substitute(address, first), second_half)
            registers, count = substitute(registers, first), 4
            loops[-1] = (pair, extent // 2)
        stmt = FragmentLoad(count, self.trans, self.src, simplify(address), self.buffer,
                            tuple(simplify(binary("+", registers, IntImm(m))) for m in range(count)))
        for var, extent in reversed(loops):
            stmt = For(var, extent, "unroll", stmt)
        return stmt

    def _pair_step(self):
        """Elements between the rows of two consecutive iterations of the innermost fill
        loop, when two x2 loads can be one x4 (an even loop, a constant, aligned step)."""
        if self.count != 2 or not self.fill_loops or self.fill_loops[-1].extent % 2:
            return None
        inner = self.fill_loops[-1]
        others = sorted(free_vars(self.address) - {inner.var}, key=lambda v: v.name)
        evaluate = index_function(self.address, [inner.var] + others)
        if evaluate is None or any(v not in self.extents for v in others):
            return None
        steps = {evaluate(2 * u + 1, *env) - evaluate(2 * u, *env)
                 for env in sample_environments(others, self.extents) for u in range(inner.extent // 2)}
        step = steps.pop() if len(steps) == 1 else None
        return step if step is not None and step % _ROW == 0 else None


def _with_fragments(chain: tuple, mma: WarpMma, loops: tuple):
    """The nest ``chain`` around ``mma``, its operands loaded by ldmatrix where they can be."""
    lane = next((f.var for f in loops if f.kind == "threadIdx.x"), None)
    extents = {f.var: f.extent for f in loops + chain}
    plans = {}
    if lane is not None and not mma.a_registers and not mma.b_registers:
        for name, values in (("a", mma.a_values), ("b", mma.b_values)):
            found = _ldmatrix_form(values, lane, extents)
            if found is not None:
                plans[name] = _placed(*found, lane, extents, chain)
            else:
                paired = _pair_plan(values, chain)
                if paired is not None:
                    plans[name] = paired
    if plans:
        mma = replace(mma, a_registers=plans["a"].registers() if "a" in plans else (),
                      b_registers=plans["b"].registers() if "b" in plans else ())

    def nest(level: int):
        body = mma if level == len(chain) else replace(chain[level], body=nest(level + 1))
        for plan in plans.values():
            if plan.level == level:
                body = Allocate(plan.buffer, Seq((plan.fill(), body)))
        return body

    return nest(0)


class _PairPlan:
    """How one operand's registers come from global memory: two vector loads per
    register, across the ``width`` iterations of the unrolled tile loop ``tiles``, placed
    at ``level`` of the nest (see the module docstring, 3.)."""

    def __init__(self, src: Buffer, runs: tuple, tiles: For, level: int):
        self.src, self.runs, self.tiles, self.level = src, runs, tiles, level  # runs: (low, high) per register
        self.count, self.width = len(runs), tiles.extent
        self.buffer = Buffer(f"{src.name}_regs", "int32", (self.count * self.width,), "local")

    def registers(self) -> tuple:
        base = binary("*", self.tiles.var, IntImm(self.count))
        return tuple(Load(self.buffer, simplify(binary("+", base, IntImm(m)))) for m in range(self.count))

    def fill(self):
        loads = [RegisterPairLoad(self.width, self.src, low, high, self.buffer,
                                  tuple(IntImm(c * self.count + m) for c in range(self.width)))
                 for m, (low, high) in enumerate(self.runs)]
        return Seq(tuple(loads))


def _pair_plan(values: tuple, chain: tuple):
    """A :class:`_PairPlan` for the operand whose halves are ``values`` (a lane's half h of
    register m is ``values[2m + h]``), or None: every value a load of one global tensor
    whose index steps by one element per iteration of one unrolled loop of the nest (2,
    4 or 8 iterations, the first of each run aligned to its bytes) and uses no loop of
    the nest inside that one."""
    loads = [operand_load(v) for v in values]
    if any(ld is None for ld in loads) or loads[0].buffer.scope != "global" \
            or any(ld.buffer is not loads[0].buffer for ld in loads):
        return None
    used = set().union(*(free_vars(ld.index) for ld in loads))
    for position, loop in enumerate(chain):
        if loop.kind != "unroll" or loop.extent not in (2, 4, 8) or loop.var not in used:
            continue
        if any(inner.var in used for inner in chain[position + 1:]):
            continue
        forms = [lane_form(ld.index, loop.var, loop.extent) for ld in loads]
        if any(f is None or f[1] != 1 or not is_multiple(f[0], loop.extent) for f in forms):
            continue
        level = position
        while level > 0 and chain[level - 1].var not in used:
            level -= 1
        runs = tuple((forms[2 * m][0], forms[2 * m + 1][0]) for m in range(len(loads) // 2))
        return _PairPlan(loads[0].buffer, runs, loop, level)
    return None


def _placed(count: int, trans: bool, src: Buffer, address, lane: Var, extents: dict, chain: tuple) -> _Plan:
    """Hoist the load before the outermost loop of ``chain`` its address does not use,
    keeping one fragment per iteration of the unrolled loops inside that it uses; a
    serial loop among those (its registers cannot be numbered at compile time) keeps it
    inside the innermost loop."""
    used = free_vars(address)
    free = [n for n, f in enumerate(chain) if f.var not in used]
    level = free[0] if free else len(chain)
    fill_loops = tuple(f for f in chain[level:] if f.var in used)
    if any(f.kind != "unroll" for f in fill_loops):
        level, fill_loops = len(chain), ()
    return _Plan(count, trans, src, address, lane, extents, level, fill_loops)


def _ldmatrix_form(values: tuple, lane: Var, extents: dict):
    """``(count, trans, src, address)`` of the ldmatrix that loads the registers whose
    halves are ``values`` (this lane's value of half h of register m is ``values[2m + h]``),
    or None."""
    loads = [operand_load(v) for v in values]
    if any(ld is None for ld in loads):
        return None
    src = loads[0].buffer
    if src.scope != "shared" or any(ld.buffer is not src for ld in loads):
        return None
    count = len(values) // 2
    others = sorted({v for ld in loads for v in free_vars(ld.index)} - {lane}, key=lambda v: v.name)
    if any(v not in extents for v in others):
        return None
    functions = [index_function(ld.index, [lane] + others) for ld in loads]
    if None in functions:
        return None
    envs = sample_environments(others, extents)
    for trans in (False, True):
        address = _lane_address(loads[0].index, functions, envs, lane, others, trans, count)
        if address is not None and _follows_layout(functions, envs, trans, count):
            return count, trans, src, address
    return None


def _row_source(trans: bool, q: int) -> tuple:
    """(half, lane) whose value of register m is the first element of row ``q`` of
    matrix m: without ``.trans`` row q is lane 4q's pair; with it, lane q // 2's half q % 2."""
    return (q % 2, q // 2) if trans else (0, 4 * q)


def _row_start(functions, env, trans: bool, m: int, q: int) -> int:
    half, lane = _row_source(trans, q)
    return functions[2 * m + half](lane, *env)


def _follows_layout(functions, envs, trans: bool, count: int) -> bool:
    """Does every lane's half h of register m lie where ldmatrix puts it: row ``l // 4``,
    column ``2 (l % 4) + h`` of matrix m (transposed: row ``2 (l % 4) + h``, column
    ``l // 4``), each row 8 contiguous elements starting 16-byte aligned?"""
    for env in envs:
        for m in range(count):
            starts = [_row_start(functions, env, trans, m, q) for q in range(_ROW)]
            if any(s % _ROW for s in starts):
                return False
            for lane in range(32):
                group, t = divmod(lane, 4)
                for h in range(2):
                    row, col = (2 * t + h, group) if trans else (group, 2 * t + h)
                    if functions[2 * m + h](lane, *env) != starts[row] + col:
                        return False
    return True


def _lane_address(first_index, functions, envs, lane: Var, others: list, trans: bool, count: int):
    """The element each lane gives ldmatrix (row ``lane % 8`` of matrix ``lane // 8``) as an
    expression of the lane: where row 0 of matrix 0 starts, plus constant strides per row
    and per matrix (``lane // 8`` split in its two bits). Checked against every lane;
    None when the rows are not evenly spaced or the addresses not 16-byte aligned."""
    strides = []
    for m, q in ((0, 1), (1, 0), (2, 0)):
        if m >= count:
            strides.append(0)
            continue
        seen = {_row_start(functions, env, trans, m, q) - _row_start(functions, env, trans, 0, 0) for env in envs}
        if len(seen) != 1:
            return None
        strides.append(seen.pop())
    row, matrix_low, matrix_high = strides
    terms = [(binary("%", lane, IntImm(_ROW)), row),
             (binary("%", binary("//", lane, IntImm(_ROW)), IntImm(2)), matrix_low),
             (binary("//", lane, IntImm(2 * _ROW)), matrix_high)]
    address = substitute(first_index, {lane: IntImm(0)})
    for term, stride in terms:
        if stride:
            address = binary("+", address, binary("*", term, IntImm(stride)))
    address = simplify(address)
    evaluate = index_function(address, [lane] + others)
    if evaluate is None or not is_multiple(address, _ROW):
        return None
    for env in envs:
        if any(evaluate(ln, *env) != _row_start(functions, env, trans, (ln // _ROW) % count, ln % _ROW)
               for ln in range(32)):
            return None
    return address


__all__ = ["load_fragments"]
