"""Prologue fusion: an elementwise stage that a matrix product reads as an operand is
computed where the product fills its shared-memory tile of that operand (a quantization
or a cast in the product's prologue), in the product's kernel. The tiling rules of
matrix products place it (``Group.staged``)."""

from __future__ import annotations

from ..kernels import STAGED
from ..stages import matrix_product_operands
from .base import FusionRule


class StagedOperand(FusionRule):
    """An elementwise operand of a matrix product, its one reader, computed in the tile fills."""

    name = STAGED

    def proposes(self, stage, space) -> bool:
        if stage.reduction or len(stage.consumers) != 1:
            return False
        consumer = space.stages[stage.consumers[0]]
        # NOTE: any other input of a reduction is staged through shared memory by the tiling rules
        return consumer.reduction and stage.name in (matrix_product_operands(consumer.op) or ())


__all__ = ["StagedOperand"]
