"""Substitute inlined stages into the expressions that read them."""

from __future__ import annotations

from ..ir.expr import TensorRead
from ..ir.visitor import rewrite, substitute


def expand_inline(body, schedule):
    """``body`` with every read of an inlined stage replaced by that stage's expression.

    Casts in the inlined expression are kept: inlining never removes a rounding point.
    """

    def visit(node):
        if not isinstance(node, TensorRead):
            return None
        stage = schedule.stage_of(node.tensor)
        if stage is None or stage.attach.kind != "inline":
            return None
        inner = substitute(stage.op.body, dict(zip(stage.op.axis, node.indices)))
        return expand_inline(inner, schedule)

    return rewrite(body, visit)
