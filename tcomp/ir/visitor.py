"""Generic traversal of IR nodes (expressions and statements alike).

``map_children`` rebuilds a node only when a child changed, so a rewrite that
changes nothing returns the very same object.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Callable, Iterator

from .expr import Expr, Var
from .stmt import Allocate, For, Seq, Store


def _is_node(value) -> bool:
    from .stmt import Stmt

    return isinstance(value, (Expr, Stmt))


def _map_value(value, f):
    if _is_node(value):
        return f(value)
    if isinstance(value, tuple):
        items = tuple(_map_value(x, f) for x in value)
        if any(a is not b for a, b in zip(items, value)):
            return items
    return value


def map_children(node, f: Callable):
    """Apply ``f`` to every child node; rebuild ``node`` only if a child changed."""
    changes = {}
    for fld in fields(node):
        if not fld.init:
            continue
        value = getattr(node, fld.name)
        new = _map_value(value, f)
        if new is not value:
            changes[fld.name] = new
    return replace(node, **changes) if changes else node


def rewrite(node, fn: Callable):
    """Post-order rewrite: children first, then ``fn(node)``; ``fn`` returns a node or None."""

    def visit(n):
        n = map_children(n, visit)
        result = fn(n)
        return n if result is None else result

    return visit(node)


def substitute(node, mapping: dict):
    """Replace variables by expressions (keys are Var objects, compared by identity)."""
    if not mapping:
        return node
    return rewrite(node, lambda n: mapping.get(n) if isinstance(n, Var) else None)


def walk(node) -> Iterator:
    """Every node under ``node``, pre-order."""
    yield node
    for fld in fields(node):
        value = getattr(node, fld.name)
        values = value if isinstance(value, tuple) else (value,)
        for v in values:
            if _is_node(v):
                yield from walk(v)


def free_vars(node) -> set:
    return {n for n in walk(node) if isinstance(n, Var)}


def stores_with_loops(body) -> list:
    """``(store, the loops around it in body, innermost last)`` of every store in ``body``
    (a statement, or a list of them)."""
    out = []

    def visit(stmt, loops):
        if isinstance(stmt, Store):
            out.append((stmt, loops))
        elif isinstance(stmt, For):
            visit(stmt.body, loops + (stmt,))
        elif isinstance(stmt, Allocate):
            visit(stmt.body, loops)
        elif isinstance(stmt, Seq):
            for child in stmt.stmts:
                visit(child, loops)

    for stmt in body if isinstance(body, list) else [body]:
        visit(stmt, ())
    return out
