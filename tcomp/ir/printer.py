"""Text form of expressions, statements and programs (what ``tc.lower`` prints)."""

from __future__ import annotations

from .expr import And, Binary, Call, Cast, Compare, Expr, FloatImm, IntImm, Load, Select, Var

_PREC = {"max": 100, "min": 100, "*": 20, "/": 20, "//": 20, "%": 20, "+": 10, "-": 10}


def expr_to_str(e: Expr, parent_prec: int = 0) -> str:
    from ..lang.tensor import Reduce, TensorRead  # the language's own nodes

    if isinstance(e, Var):
        return e.name
    if isinstance(e, IntImm):
        return str(e.value) if e.dtype == "int32" else f"{e.dtype}({e.value})"
    if isinstance(e, FloatImm):
        return repr(e.value) if e.dtype == "float32" else f"{e.dtype}({e.value!r})"
    if isinstance(e, Binary):
        if e.op in ("max", "min"):
            return f"{e.op}({expr_to_str(e.a)}, {expr_to_str(e.b)})"
        prec = _PREC[e.op]
        right_prec = prec + 1  # a - (b - c) keeps its parentheses
        text = f"{expr_to_str(e.a, prec)} {e.op} {expr_to_str(e.b, right_prec)}"
        return f"({text})" if prec < parent_prec else text
    if isinstance(e, Compare):
        return f"{expr_to_str(e.a, 5)} {e.op} {expr_to_str(e.b, 5)}"
    if isinstance(e, And):
        return f"{expr_to_str(e.a)} and {expr_to_str(e.b)}"
    if isinstance(e, Call):
        return f"{e.name}({', '.join(expr_to_str(a) for a in e.args)})"
    if isinstance(e, Cast):
        return f"{e.dtype}({expr_to_str(e.value)})"
    if isinstance(e, Select):
        return f"select({expr_to_str(e.cond)}, {expr_to_str(e.a)}, {expr_to_str(e.b)})"
    if isinstance(e, Load):
        return f"{e.buffer.name}[{expr_to_str(e.index)}]"
    if isinstance(e, TensorRead):
        return f"{e.tensor.name}[{', '.join(expr_to_str(i) for i in e.indices)}]"
    if isinstance(e, Reduce):
        axes = ", ".join(a.name for a in e.axes)
        return f"{e.combiner}({expr_to_str(e.source)}, axis=[{axes}])"
    return repr(e)


def stmt_to_str(s, indent: int = 0) -> str:
    from .stmt import Allocate, Barrier, For, Kernel, Seq, Store

    pad = "  " * indent
    if isinstance(s, Seq):
        return "\n".join(stmt_to_str(x, indent) for x in s.stmts)
    if isinstance(s, For):
        kind = "" if s.kind == "serial" else f"  # {s.kind}"
        return f"{pad}for {s.var.name} in range({s.extent}):{kind}\n{stmt_to_str(s.body, indent + 1)}"
    if isinstance(s, Store):
        line = f"{s.buffer.name}[{expr_to_str(s.index)}] = {expr_to_str(s.value)}"
        if s.predicate is not None:
            return f"{pad}if {expr_to_str(s.predicate)}:\n{pad}  {line}"
        return pad + line
    if isinstance(s, Allocate):
        b = s.buffer
        shape = "x".join(str(d) for d in b.shape)
        return f"{pad}{b.name} = alloc {b.scope} {b.dtype}[{shape}]\n{stmt_to_str(s.body, indent)}"
    if isinstance(s, Barrier):
        return f"{pad}syncthreads()"
    if isinstance(s, Kernel):
        params = ", ".join(p.name for p in s.params)
        head = f"{pad}kernel {s.name}({params})  # grid={s.grid} block={s.block}"
        return f"{head}\n{stmt_to_str(s.body, indent + 1)}"
    return pad + repr(s)


def program_to_str(p) -> str:
    lines = []
    for b in p.intermediates:
        lines.append(f"{b.name} = alloc global {b.dtype}[{'x'.join(str(d) for d in b.shape)}]")
    lines.extend(stmt_to_str(k) for k in p.kernels)
    return "\n".join(lines)
