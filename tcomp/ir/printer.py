"""Text form of expressions, statements and programs (what ``tc.lower`` prints).

Loop variables of different stages often share a name (every stage has an ``i``).
Where a loop's variable would shadow a different variable of the same name that is
already in scope, the printer shows it with a suffix (``i_2``), so that every index
expression in the printout means one thing.
"""

from __future__ import annotations

from .expr import (And, Binary, Call, Cast, Compare, Expr, FloatImm, IntImm, Load, Reduce, Select, TensorRead, Var,
                   WarpShuffle)

_PREC = {"max": 100, "min": 100, "*": 20, "/": 20, "//": 20, "%": 20, "+": 10, "-": 10, "^": 5}


def expr_to_str(e: Expr, parent_prec: int = 0, names: dict | None = None) -> str:
    """``e`` as text; ``names`` maps variables to the names they are shown with."""
    names = {} if names is None else names

    def sub(x, prec=0):
        return expr_to_str(x, prec, names)

    if isinstance(e, Var):
        return names.get(e, e.name)
    if isinstance(e, IntImm):
        return str(e.value) if e.dtype == "int32" else f"{e.dtype}({e.value})"
    if isinstance(e, FloatImm):
        return repr(e.value) if e.dtype == "float32" else f"{e.dtype}({e.value!r})"
    if isinstance(e, Binary):
        if e.op in ("max", "min"):
            return f"{e.op}({sub(e.a)}, {sub(e.b)})"
        prec = _PREC[e.op]
        right_prec = prec + 1  # a - (b - c) keeps its parentheses
        text = f"{sub(e.a, prec)} {e.op} {sub(e.b, right_prec)}"
        return f"({text})" if prec < parent_prec else text
    if isinstance(e, Compare):
        return f"{sub(e.a, 5)} {e.op} {sub(e.b, 5)}"
    if isinstance(e, And):
        return f"{sub(e.a)} and {sub(e.b)}"
    if isinstance(e, Call):
        return f"{e.name}({', '.join(sub(a) for a in e.args)})"
    if isinstance(e, Cast):
        return f"{e.dtype}({sub(e.value)})"
    if isinstance(e, Select):
        return f"select({sub(e.cond)}, {sub(e.a)}, {sub(e.b)})"
    if isinstance(e, Load):
        return f"{e.buffer.name}[{sub(e.index)}]"
    if isinstance(e, WarpShuffle):
        return f"shfl({sub(e.value)}, lane={sub(e.lane)})"
    if isinstance(e, TensorRead):
        return f"{e.tensor.name}[{', '.join(sub(i) for i in e.indices)}]"
    if isinstance(e, Reduce):
        axes = ", ".join(a.name for a in e.axes)
        return f"{e.combiner}({sub(e.source)}, axis=[{axes}])"
    return repr(e)


def stmt_to_str(s, indent: int = 0, names: dict | None = None) -> str:
    """``s`` as text; ``names`` maps the variables of enclosing loops to their shown names."""
    from .stmt import (Allocate, AsyncCommit, AsyncWait, Barrier, BarrierArrive, BarrierInit, BarrierWait, BoxCopy,
                       For, FragmentLoad, Kernel, ProxyFence, RegisterPairLoad, Seq, Specialized, Store, TileCopy,
                       WarpgroupFence, WarpgroupMma, WarpgroupWait, WarpMma)

    names = {} if names is None else names
    pad = "  " * indent
    if isinstance(s, Seq):
        return "\n".join(stmt_to_str(x, indent, names) for x in s.stmts)
    if isinstance(s, For):
        inner = _bind_loop_var(names, s.var)
        kind = "" if s.kind == "serial" else f"  # {s.kind}"
        head = f"{pad}for {inner[s.var]} in range({s.extent}):{kind}"
        return f"{head}\n{stmt_to_str(s.body, indent + 1, inner)}"
    if isinstance(s, Store):
        index, value = expr_to_str(s.index, 0, names), expr_to_str(s.value, 0, names)
        if s.in_bounds is not None:
            value = f"{value} if {expr_to_str(s.in_bounds, 0, names)} else 0"
        line = f"{s.buffer.name}[{index}] = {value}"
        if s.asynchronous:
            line = f"cp.async {line}"
        if s.predicate is not None:
            return f"{pad}if {expr_to_str(s.predicate, 0, names)}:\n{pad}  {line}"
        return pad + line
    if isinstance(s, Allocate):
        b = s.buffer
        shape = "x".join(str(d) for d in b.shape)
        blocks = f" in {b.blocks[0]}x{b.blocks[1]} blocks" if b.blocks else ""
        blocks += ", 128-byte swizzle" if b.swizzle else ""
        return f"{pad}{b.name} = alloc {b.scope} {b.dtype}[{shape}]{blocks}\n{stmt_to_str(s.body, indent, names)}"
    if isinstance(s, Barrier):
        return f"{pad}syncthreads()" if s.threads is None else f"{pad}bar.sync(1, {s.threads})  # the consumers"
    if isinstance(s, BarrierArrive):
        line = f"mbarrier.arrive({s.barriers.name}[{expr_to_str(s.slot, 0, names)}])  # each warp's first lane"
        if s.predicate is not None:
            return f"{pad}if {expr_to_str(s.predicate, 0, names)}:\n{pad}  {line}"
        return pad + line
    if isinstance(s, Specialized):
        return (f"{pad}if threadIdx.y == {s.consumer_warpgroups}:  # the producer warpgroup's first thread\n"
                f"{stmt_to_str(s.producer, indent + 1, names)}\n{pad}else:  # the consumer warpgroups\n"
                f"{stmt_to_str(s.consumers, indent + 1, names)}")
    if isinstance(s, AsyncCommit):
        return f"{pad}cp.async.commit_group()"
    if isinstance(s, AsyncWait):
        return f"{pad}cp.async.wait_group({s.pending})"
    if isinstance(s, WarpMma):
        def shown(values):
            return ", ".join(expr_to_str(v, 0, names) for v in values)

        acc = ", ".join(f"{s.acc.name}[{expr_to_str(i, 0, names)}]" for i in s.acc_index)
        a, b = (shown(regs or values) for regs, values in ((s.a_registers, s.a_values), (s.b_registers, s.b_values)))
        return f"{pad}{s.intrinsic}.{s.dtype}(acc=({acc}),\n{pad}    a=({a}),\n{pad}    b=({b}))"
    if isinstance(s, FragmentLoad):
        dst = ", ".join(f"{s.dst.name}[{expr_to_str(i, 0, names)}]" for i in s.dst_index)
        return (f"{pad}{dst} = ldmatrix.x{s.count}{'.trans' if s.trans else ''}"
                f"({s.src.name}[{expr_to_str(s.src_index, 0, names)}])")
    if isinstance(s, RegisterPairLoad):
        dst = ", ".join(f"{s.dst.name}[{expr_to_str(i, 0, names)}]" for i in s.dst_index)
        return (f"{pad}{dst} = pairs({s.src.name}[{expr_to_str(s.low_index, 0, names)} : +{s.width}], "
                f"{s.src.name}[{expr_to_str(s.high_index, 0, names)} : +{s.width}])")
    if isinstance(s, WarpgroupMma):
        acc = ", ".join(f"{s.acc.name}[{expr_to_str(i, 0, names)}]" for i in s.acc_index[:2])
        a = f"{s.a.name}[{expr_to_str(s.a_start, 0, names)}] strides={s.a_strides}"
        b = f"{s.b.name}[{expr_to_str(s.b_start, 0, names)}] strides={s.b_strides}{' trans' if s.trans_b else ''}"
        return (f"{pad}wgmma_m64n{s.width}k16.{s.dtype}(acc=({acc}, ... {len(s.acc_index)} registers),\n"
                f"{pad}    a={a},\n{pad}    b={b})")
    if isinstance(s, WarpgroupFence):
        return f"{pad}wgmma.fence()"
    if isinstance(s, WarpgroupWait):
        commit = "wgmma.commit_group(); " if s.commit else ""
        return f"{pad}{commit}wgmma.wait_group({s.pending})"
    if isinstance(s, ProxyFence):
        return f"{pad}fence.proxy.async()"
    if isinstance(s, BarrierInit):
        return f"{pad}mbarrier.init({s.barriers.name}[0:{s.barriers.size}], count={s.count})  # first thread"
    if isinstance(s, BarrierWait):
        return (f"{pad}mbarrier.wait({s.barriers.name}[{expr_to_str(s.slot, 0, names)}], "
                f"parity={expr_to_str(s.parity, 0, names)})")
    if isinstance(s, BoxCopy):
        coords = ", ".join(expr_to_str(c, 0, names) for c in s.coords)
        return (f"{pad}tma {s.buffer.name}[{expr_to_str(s.index, 0, names)}] = {s.tensor_map.tensor.name}"
                f"[box {s.tensor_map.box_rows}x{s.tensor_map.box_cols} at ({coords})]")
    if isinstance(s, TileCopy):
        head = (f"{pad}mbarrier.expect({s.barriers.name}[{expr_to_str(s.slot, 0, names)}], {s.nbytes} bytes)"
                "  # first thread")
        lines = [head] + [stmt_to_str(b, indent + 1, names) for b in s.boxes]
        if s.predicate is not None:
            return f"{pad}if {expr_to_str(s.predicate, 0, names)}:\n" + "\n".join("  " + line for line in lines)
        return "\n".join(lines)
    if isinstance(s, Kernel):
        params = ", ".join([p.name for p in s.params] + [m.name for m in s.tensor_maps])
        head = f"{pad}kernel {s.name}({params})  # grid={s.grid} block={s.block}"
        return f"{head}\n{stmt_to_str(s.body, indent + 1, {})}"
    return pad + repr(s)


def _bind_loop_var(names: dict, var: Var) -> dict:
    """``names`` plus a shown name for ``var`` that no other variable in scope shows."""
    taken = {shown for v, shown in names.items() if v is not var}
    shown, n = var.name, 1
    while shown in taken:
        n += 1
        shown = f"{var.name}_{n}"
    return {**names, var: shown}


def program_to_str(p) -> str:
    lines = []
    for b in p.intermediates:
        lines.append(f"{b.name} = alloc global {b.dtype}[{'x'.join(str(d) for d in b.shape)}]")
    lines.extend(stmt_to_str(k) for k in p.kernels)
    return "\n".join(lines)
