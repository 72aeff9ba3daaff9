"""Loop nests tensorized onto Hopper's ``wgmma.mma_async.m64nNk16``, and the ordering the
asynchronous instruction needs.

``warpgroup_mma`` replaces a nest marked ``tensorize.wgmma_m64n{N}k16`` by one
:class:`~tcomp.ir.stmt.WarpgroupMma`. The nest, read thread by thread, must already
compute what the instruction computes: thread ``t`` of the warpgroup (the 128 threads on
``threadIdx.x``) adds, over a k step of 16 (the marked loop), the products of A's row
``row(t, i)`` and B's column ``col(t, i)`` into its accumulator register i, for each of
the N / 2 iterations i of the spatial loops below (``accumulator_element`` of
``tcomp.codegen.wgmma_layout`` gives row and col). The instruction reads A and B from
shared memory itself, through descriptors, so both operands must be shared buffers in
8 x 8 blocks (``storage_blocks(8, 8)``) or in the 128-byte swizzle (``storage_swizzle``),
and every thread's elements must sit where the
descriptor's layout puts them, relative to one start per operand that is the same for the
whole warpgroup. The pass finds the starts from thread 0's first register and checks
every thread, register and k of the nest against them by evaluating the indices at a few
values of the loops around (``sample_environments``); it refuses the schedule
(``ScheduleError``) with the first mismatch it finds.

``widen_stacked_mma`` then makes one instruction of an unrolled loop of them that read
the same A and one B tile's consecutive columns (SwiGLU's two projections, stored panel
after panel), and ``order_warpgroup_mma`` places, in each kernel that has such
instructions:

- ``fence.proxy.async`` before every barrier, so that the shared tiles the block's
  threads stored (or copied by cp.async and waited for) are visible to wgmma once the
  barrier is passed;
- ``wgmma.fence`` before, and ``wgmma.commit_group`` + ``wgmma.wait_group d`` after, each
  chain: a maximal statement whose loops are all unrolled and that holds instructions (a
  k step's instructions, say). ``d`` is 0, or the reader lag of the operands' pipeline
  rings (``s[T].pipeline(stages, reader_lag)``), whose copies then stay out of the slots
  that the ``d`` chains left running read; after the serial loop of such chains a
  ``wait_group 0`` retires them. Nothing else reads the accumulators or writes the
  operand tiles while a chain runs.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

import numpy as np

from ..target.wgmma_layout import WARPGROUP, a_address, accumulator_element, b_address
from ..errors import ScheduleError
from ..ir.expr import IntImm, binary
from ..ir.simplify import simplify
from ..ir.stmt import (Allocate, Barrier, For, Kernel, ProxyFence, Seq, Stmt, Store, WarpgroupFence, WarpgroupMma,
                       WarpgroupWait)
from ..ir.visitor import free_vars, rewrite, substitute, walk
from .matrix_operands import index_function, multiply_add, operand_load, sample_environments

#: element offsets of an operand's block rows: a core matrix is 8 x 8 16-bit values
_CORE = (8, 8)
_CORE_BYTES = 128
#: the threads whose every k is checked (all are checked at k = 0)
_K_CHECKED_THREADS = (0, 1, 3, 4, 31, 32, 63, 64, 95, 127)


def warpgroup_mma(loop: For, loops: tuple, kernel: Kernel, intrinsic: str, width: int) -> WarpgroupMma:
    """The :class:`WarpgroupMma` that the nest ``loop`` (marked with ``intrinsic``) computes."""

    def refuse(why: str):
        raise ScheduleError(f"tensorize({loop.var.name}, {intrinsic!r}): {why}")

    thread = next((f for f in loops if f.kind == "threadIdx.x"), None)
    need = f"the instruction needs a warpgroup, {WARPGROUP} threads on threadIdx.x"
    if thread is None or thread.extent != WARPGROUP or kernel.block[0] != WARPGROUP:
        found = ("no loop around it is bound to threadIdx.x" if thread is None else
                 f"loop {thread.var.name} on threadIdx.x has {thread.extent} iterations and the blocks "
                 f"{kernel.block[0]} threads along x")
        refuse(f"{need}; {found}")
    if loop.extent != 16:
        refuse(f"the tensorized loop is the k step of 16; {loop.var.name} has {loop.extent} iterations")
    spatial, body = [], loop.body
    while isinstance(body, For):
        spatial.append(body)
        body = body.body
    registers = int(np.prod([f.extent for f in spatial])) if spatial else 1
    if not isinstance(body, Store) or registers != width // 2:
        shown = " x ".join(str(f.extent) for f in spatial) or "no"
        refuse(f"the nest below the k step must be loops over the thread's {width // 2} accumulators (N / 2) "
               f"around one multiply-add; it is {shown} loops around {type(body).__name__}")
    store = body
    if store.predicate is not None:
        refuse("the multiply-add is guarded (a tile does not divide its extent); the instruction computes whole "
               f"64 x {width} x 16 tiles")
    if loop.var in free_vars(store.index):
        refuse(f"the accumulator's index depends on the k step {loop.var.name}")
    acc, factors = multiply_add(store)
    if acc is None:
        refuse(f"the nest's body must be {store.buffer.name}[...] += a * b with a and b 16-bit floats; it is {store}")
    extents = {f.var: f.extent for f in loops}
    problems = []
    for a, b in (factors, factors[::-1]):
        a_load, b_load = operand_load(a), operand_load(b)
        for trans_b in (True, False):
            found = _match(store, a_load, b_load, trans_b, thread.var, loop.var, spatial, extents, width)
            if isinstance(found, WarpgroupMma):
                return found
            problems.append(found)
    # the first reason from a pairing whose operands are laid out for a descriptor, where there is one
    refuse(next((p for p in problems if not p.startswith("operand ")), problems[0]))


def _operand_layout(buffer, role: str, trans_b: bool):
    """(leading, stride, mode) of a shared buffer as operand ``role`` of the descriptor
    (mode 0: 8 x 8 blocks, 1: the 128-byte swizzle), or a reason it cannot be one."""
    swizzled = buffer.swizzle and len(buffer.blocks) == 2 and buffer.blocks[1] == 64
    if buffer.scope != "shared" or len(buffer.shape) < 2 or not (swizzled or tuple(buffer.blocks) == _CORE):
        return (f"operand {buffer.name} must be a shared buffer stored in 8 x 8 blocks (storage_blocks(8, 8)) or "
                f"in the 128-byte swizzle (storage_swizzle())")
    if swizzled:
        # blocks of 8 rows follow each other along a row; taller ones hold their rows
        # 128 bytes apart, and each 64-column panel of a row of blocks is contiguous
        block_rows = buffer.blocks[0]
        row_group = buffer.shape[-1] // 64 * 1024 if block_rows == 8 else 1024  # bytes from 8 rows to the next 8
        panel = 1024 if block_rows == 8 else block_rows * 128  # bytes from 64 columns to the next 64
        return (16, row_group, 1) if role == "a" or not trans_b else (panel, row_group, 1)
    row_bytes = buffer.shape[-1] // 8 * _CORE_BYTES  # one row of blocks
    if role == "b" and trans_b:  # k rows, n contiguous
        return row_bytes, _CORE_BYTES, 0
    return _CORE_BYTES, row_bytes, 0


def _match(store, a_load, b_load, trans_b, thread, kk, spatial, extents, width):
    """The instruction, if the nest computes it with ``a_load`` as A and ``b_load`` as B
    (n contiguous with ``trans_b``); else a reason it does not."""
    layout_a, layout_b = _operand_layout(a_load.buffer, "a", trans_b), _operand_layout(b_load.buffer, "b", trans_b)
    for layout in (layout_a, layout_b):
        if isinstance(layout, str):
            return layout

    def a_element(start, r, k):  # element index of A's (r, k) for a descriptor at element start
        return a_address(2 * start, r, k, *layout_a) // 2

    def b_element(start, k, n):
        return b_address(2 * start, k, n, layout_b[0], layout_b[1], trans_b, layout_b[2]) // 2

    loop_vars = [thread] + [f.var for f in spatial] + [kk]
    indices = (store.index, a_load.index, b_load.index)
    others = sorted({v for e in indices for v in free_vars(e)} - set(loop_vars), key=lambda v: v.name)
    if any(v not in extents for v in others):
        return "the operands' indices use variables of no loop around the nest"
    functions = [index_function(e, loop_vars + others, arrays=True) for e in indices]
    if None in functions:
        return "the operands' indices are not integer arithmetic on the loops"
    _, a_of, b_of = functions
    # every thread (rows) against every iteration of the spatial loops (columns, in the
    # order of itertools.product), as numpy arrays
    combos = list(product(*(range(f.extent) for f in spatial)))
    grid = [g.reshape(1, -1) for g in np.meshgrid(*(np.arange(f.extent) for f in spatial), indexing="ij")]
    threads = np.arange(WARPGROUP).reshape(-1, 1)
    shape = (WARPGROUP, len(combos))
    registers = np.arange(width // 2).reshape(-1, 1)
    acc_rows, acc_cols = accumulator_element(threads.reshape(1, -1), registers)  # (register, thread)
    register_combo = None
    for env in sample_environments(others, extents):
        a_at = np.broadcast_to(a_of(threads, *grid, 0, *env), shape)
        b_at = np.broadcast_to(b_of(threads, *grid, 0, *env), shape)
        # thread 0's register 0 reads row 0 of A and column 0 of B: the first elements
        a_start, b_start = int(a_at[0].min()), int(b_at[0].min())
        rows = _position(a_element(a_start, np.arange(64), 0), a_at)
        cols = _position(b_element(b_start, 0, np.arange(width)), b_at)
        outside = np.argwhere((rows < 0) | (cols < 0))
        if len(outside):
            t, j = outside[0]
            on_a = rows[t, j] < 0
            return (f"thread {t} reads its {'A' if on_a else 'B'} operand outside the 64 x {width} "
                    f"tile that one descriptor of {(a_load if on_a else b_load).buffer.name} reaches")
        # per thread, the iteration that computes each (row, column) of the tile
        iteration = np.full((WARPGROUP, 64 * width), -1)
        iteration[np.broadcast_to(threads, shape), rows * width + cols] = np.arange(len(combos))
        held = iteration[threads.reshape(1, -1), acc_rows * width + acc_cols]  # (register, thread)
        wrong = np.flatnonzero((held < 0).any(axis=1) | (held != held[:, :1]).any(axis=1))
        if len(wrong):
            i = wrong[0]
            return (f"the threads do not hold the instruction's accumulator layout: register {i} of thread t "
                    f"must be row 16 * (t // 32) + (t % 32) // 4 + {8 * ((i // 2) % 2)}, column "
                    f"{8 * (i // 4)} + 2 * (t % 4) + {i % 2} of the 64 x {width} tile")
        mapping = [combos[j] for j in held[:, 0]]
        if register_combo is not None and mapping != register_combo:
            return "the threads' registers map to different loop iterations at different values of the outer loops"
        register_combo = mapping
        # along k, for a few threads: (thread, register, k)
        checked = np.array(_K_CHECKED_THREADS).reshape(-1, 1, 1)
        of_register = [np.array([combo[n] for combo in mapping]).reshape(1, -1, 1) for n in range(len(spatial))]
        ks = np.arange(16).reshape(1, 1, -1)
        r, c = accumulator_element(checked, registers.reshape(1, -1, 1))
        full = (len(_K_CHECKED_THREADS), width // 2, 16)
        differ = ((np.broadcast_to(a_of(checked, *of_register, ks, *env), full) != a_element(a_start, r, ks))
                  | (np.broadcast_to(b_of(checked, *of_register, ks, *env), full) != b_element(b_start, ks, c)))
        bad = np.argwhere(differ)
        if len(bad):
            t, i, k = bad[0]
            return (f"thread {_K_CHECKED_THREADS[t]} register {i} at k = {k} reads operand elements other than the "
                    f"ones the descriptors' layout gives (A k-contiguous; B {'n' if trans_b else 'k'}-contiguous)")
    first = register_combo[0]  # thread 0's register 0: row 0, column 0 of the tile
    sub = {f.var: IntImm(v) for f, v in zip(spatial, first)}
    a_start = simplify(substitute(a_load.index, {**sub, thread: IntImm(0), kk: IntImm(0)}))
    b_start = simplify(substitute(b_load.index, {**sub, thread: IntImm(0), kk: IntImm(0)}))
    acc_index = tuple(simplify(substitute(store.index, {f.var: IntImm(v) for f, v in zip(spatial, combo)}))
                      for combo in register_combo)
    offsets = [simplify(binary("-", i, acc_index[0])) for i in acc_index]
    if not all(isinstance(o, IntImm) for o in offsets) or len({o.value for o in offsets}) != len(offsets):
        return (f"the thread's {width // 2} accumulators must be distinct elements of {store.buffer.name} at constant "
                f"distances from one another")
    return WarpgroupMma(width, a_load.dtype, store.buffer, acc_index, a_load.buffer, a_start, layout_a[:2],
                        b_load.buffer, b_start, layout_b[:2], trans_b, (layout_a[2], layout_b[2]))


def _position(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each of ``values``, the position of the equal key in ``keys`` (the last one,
    were two equal), or -1 where none is."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    at = np.searchsorted(ordered, values, side="right") - 1
    found = (at >= 0) & (ordered[np.clip(at, 0, None)] == values)
    return np.where(found, order[np.clip(at, 0, None)], -1)


# ---------------------------------------------------------------------------- stacked products


def widen_stacked_mma(kernel: Kernel) -> Kernel:
    """An unrolled loop whose body is one wgmma that reads the same A each iteration and,
    iteration after iteration, the next columns of one B tile into the next registers
    becomes one instruction as wide as all of them (at most 256 columns). SwiGLU's
    stacked weights are such a tile: the gate's and the up projection's columns of a k
    step, each a whole number of 64-column panels of the 128-byte swizzle, stored one
    after the other. The wide instruction reads A from shared memory once for both."""
    return replace(kernel, body=rewrite(kernel.body, _widened))


def _widened(node):
    """The one instruction of an unrolled loop of instructions that continue one another
    along B's columns and the accumulator's registers; None where they do not."""
    if not (isinstance(node, For) and node.kind == "unroll" and isinstance(node.body, WarpgroupMma)):
        return None
    mma, var = node.body, node.var
    width = mma.width * node.extent
    if width > 256 or mma.width % 64 or not mma.trans_b or mma.modes[1] != 1 or var in free_vars(mma.a_start):
        return None  # NOTE: B n-contiguous in the swizzle: its 64-column panels lie b_strides[0] bytes apart
    at = [{var: IntImm(v)} for v in range(node.extent)]
    b_start = simplify(substitute(mma.b_start, at[0]))
    panels = mma.width // 64 * mma.b_strides[0] // 2  # elements from one instruction's columns to the next's
    for v, env in enumerate(at):
        step = simplify(binary("-", substitute(mma.b_start, env), b_start))
        if not (isinstance(step, IntImm) and step.value == v * panels):
            return None
    acc_index = tuple(simplify(substitute(i, env)) for env in at for i in mma.acc_index)
    return replace(mma, width=width, acc_index=acc_index, b_start=b_start)


# ---------------------------------------------------------------------------- ordering


def order_warpgroup_mma(kernel: Kernel) -> Kernel:
    """Fences, commits and waits around the kernel's wgmma chains (see the module docstring)."""
    instructions = [n for n in walk(kernel.body) if isinstance(n, WarpgroupMma)]
    if not instructions:
        return kernel
    accumulators = tuple(dict.fromkeys(n.acc for n in instructions))
    in_flight = min(min(n.a.reader_lag, n.b.reader_lag) for n in instructions)
    return replace(kernel, body=_order(kernel.body, accumulators, in_flight))


def _has_mma(s: Stmt) -> bool:
    return any(isinstance(n, WarpgroupMma) for n in walk(s))


def _is_chain(s: Stmt) -> bool:
    """Is ``s`` made of unrolled loops around instructions only?"""
    if isinstance(s, WarpgroupMma):
        return True
    if isinstance(s, For):
        return s.kind == "unroll" and _is_chain(s.body)
    if isinstance(s, Seq):
        return all(_is_chain(x) for x in s.stmts)
    return False


def _order(s: Stmt, accumulators: tuple, in_flight: int) -> Stmt:
    if isinstance(s, Barrier):
        return Seq((ProxyFence(), s))
    if _is_chain(s) and _has_mma(s):  # NOTE: the structural test first: it fails fast, the walk does not
        return Seq((WarpgroupFence(accumulators), s, WarpgroupWait(in_flight, accumulators)))
    if isinstance(s, Seq):
        return Seq(tuple(_order(x, accumulators, in_flight) for x in s.stmts))
    if isinstance(s, For) and in_flight and s.kind == "serial" and _has_mma(s):
        ordered = replace(s, body=_order(s.body, accumulators, in_flight))
        if any(_is_chain(x) and _has_mma(x) for x in _children(s.body)):
            return Seq((ordered, WarpgroupWait(0, accumulators, commit=False)))  # the chains left running
        return ordered
    if isinstance(s, (For, Allocate)):
        return replace(s, body=_order(s.body, accumulators, in_flight))
    return s


def _children(s: Stmt) -> tuple:
    """The statements of ``s``'s body at its own level (through allocations)."""
    while isinstance(s, Allocate):
        s = s.body
    return s.stmts if isinstance(s, Seq) else (s,)


__all__ = ["order_warpgroup_mma", "warpgroup_mma", "widen_stacked_mma"]
