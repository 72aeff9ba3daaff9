"""Inlining: an elementwise stage read by one elementwise stage is substituted into it
(``compute_inline``), so that it is computed in its consumer's kernel and never stored."""

from __future__ import annotations

from ..kernels import INLINE
from .base import FusionRule


class Inline(FusionRule):
    """An elementwise stage whose one reader is elementwise, computed inside the reader."""

    name = INLINE

    def proposes(self, stage, space) -> bool:
        if stage.reduction or len(stage.consumers) != 1:
            return False
        return not space.stages[stage.consumers[0]].reduction

    def apply(self, s, stage, group) -> None:
        s[stage].compute_inline()


__all__ = ["Inline"]
