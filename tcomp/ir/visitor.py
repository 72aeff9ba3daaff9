"""Generic traversal of IR nodes (expressions and statements alike).

``map_children`` rebuilds a node only when a child changed, so a rewrite that
changes nothing returns the very same object.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Callable, Iterator

from .expr import Expr, Var
from .stmt import Allocate, For, Seq, Stmt, Store

_NODE_TYPES = (Expr, Stmt)
_FIELD_NAMES: dict = {}  # node class -> (names of its fields, names of those __init__ takes)


def _is_node(value) -> bool:
    return isinstance(value, _NODE_TYPES)


def _field_names(cls) -> tuple:
    """The names of ``cls``'s dataclass fields, and of those its ``__init__`` takes (looked
    up once a class: ``dataclasses.fields`` was a tenth of a search's screening)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        every = fields(cls)
        names = _FIELD_NAMES[cls] = (tuple(f.name for f in every), tuple(f.name for f in every if f.init))
    return names


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
    for name in _field_names(type(node))[1]:
        value = getattr(node, name)
        new = _map_value(value, f)
        if new is not value:
            changes[name] = new
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
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        children = []
        for name in _field_names(type(current))[0]:
            value = getattr(current, name)
            if isinstance(value, tuple):
                children.extend(v for v in value if isinstance(v, _NODE_TYPES))
            elif isinstance(value, _NODE_TYPES):
                children.append(value)
        stack.extend(reversed(children))


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
