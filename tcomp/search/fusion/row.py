"""Row fusion: the stages of a row operator (softmax, RMSNorm, LayerNorm) in the kernel of
the elementwise stage that writes the rows, a block per row.

A row operator over ``rows x N`` is made of

- **statistics**: reductions along the row (``Mx[i] = max_k X[i, k]``), shape ``(rows,)``;
- **row stages**: elementwise stages of shape ``(rows, N)`` between them (softmax's
  ``E = exp(X - Mx)``), read by a later statistic and by the output, so by more than
  one stage (which the ``"inline"`` rule does not take);
- the **output**, an elementwise ``(rows, N)`` stage at root: the kernel's anchor.

Under the ``"row"`` choice a statistic or a row stage joins the kernel of its last
reader; the choice is valid only where every reader is in that same kernel (nothing a
row stage computes leaves the kernel unwritten) and that kernel's anchor writes rows of
the same shape. The row tiling rule (``tcomp.search.tiling.rows.RowKernel``) places the
stages; this rule's ``apply`` does nothing.
"""

from __future__ import annotations

from ..kernels import ROW
from .base import FusionRule


def row_shape(stage) -> tuple | None:
    """``(rows, N)`` of a statistic (a one-axis reduction whose output has one axis) or
    of an elementwise two-axis stage; None for any other stage."""
    op = stage.op
    if stage.reduction:
        if len(stage.shape) != 1 or len(op.reduce_axis) != 1:
            return None
        return (stage.shape[0], op.reduce_axis[0].extent)
    return tuple(stage.shape) if len(stage.shape) == 2 else None


class RowFusion(FusionRule):
    """A statistic or a row stage computed in the kernel of the row operator's output."""

    name = ROW

    def proposes(self, stage, space) -> bool:
        """A statistic whose readers are row stages, or a row stage that a statistic reads."""
        shape = row_shape(stage)
        if shape is None or not stage.consumers:
            return False
        readers = [space.stages[c] for c in stage.consumers]
        if any(row_shape(r) != shape for r in readers):
            return False
        return stage.reduction or any(r.reduction for r in readers)

    def host(self, stage, space) -> str:
        """The reader that runs last."""
        order = list(space.stages)
        return max(stage.consumers, key=order.index)

    def valid(self, stage, choice: dict, space) -> bool:
        kernel = space.kernel_of(stage.name, choice)
        anchor = space.stages[kernel]
        return (not anchor.reduction and row_shape(anchor) == row_shape(stage)
                and all(space.kernel_of(c, choice) == kernel for c in stage.consumers))


__all__ = ["RowFusion", "row_shape"]
