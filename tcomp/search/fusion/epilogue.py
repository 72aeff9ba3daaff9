"""Epilogue fusion: a reduction read by one elementwise stage is computed at that
stage's thread tile, in its kernel (the accumulator of a fused epilogue). The tiling
rules of matrix products place it (``Group.fused``)."""

from __future__ import annotations

from ..kernels import EPILOGUE
from .base import FusionRule


class Epilogue(FusionRule):
    """A reduction whose one reader is elementwise, accumulated inside the reader's kernel."""

    name = EPILOGUE

    def proposes(self, stage, space) -> bool:
        if not stage.reduction or len(stage.consumers) != 1:
            return False
        return not space.stages[stage.consumers[0]].reduction


__all__ = ["Epilogue"]
