"""One kernel of a fusion choice (:class:`Group`), and the names of the built-in ways a
stage joins a kernel, which the tiling rules read.

A fusion choice gives every intermediate stage either :data:`ROOT` (its own kernel, its
result written to device memory) or the name of the fusion rule that puts it into the
kernel of a stage that reads it (``tcomp.search.fusion``). A :class:`Group` is what a
tiling rule sees of one resulting kernel: its anchor and its members, each with the name
of the fusion rule that brought it in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the stage is its own kernel
ROOT = "root"
#: an elementwise stage substituted into its consumer (``compute_inline``)
INLINE = "inline"
#: a reduction computed at its consumer's thread tile, in the consumer's kernel
EPILOGUE = "fused"
#: an elementwise operand of a matrix product computed where the product fills its
#: shared-memory tile of that operand
STAGED = "staged"
#: a row statistic, or an elementwise stage between statistics, computed in the kernel of
#: the row operator's output, a block per row (``tcomp.search.fusion.row``)
ROW = "row"


@dataclass(frozen=True)
class Group:
    """One kernel of a fusion choice: its root stage (the anchor, whose result goes to
    device memory) and the stages computed inside it, as ``members``: ``((stage, fusion
    rule name), ...)`` in the order the stages run."""

    anchor: str
    members: tuple = ()
    stages: dict = field(default_factory=dict, compare=False, repr=False)  # name -> StageInfo

    def members_by(self, fusion_rule: str) -> tuple:
        """The stages that the fusion rule named ``fusion_rule`` put into this kernel."""
        return tuple(name for name, how in self.members if how == fusion_rule)

    @property
    def names(self) -> tuple:
        """Every stage of the kernel, the anchor first."""
        return (self.anchor,) + tuple(name for name, _ in self.members)

    @property
    def inlined(self) -> tuple:
        """Elementwise stages substituted into the kernel (:data:`INLINE`)."""
        return self.members_by(INLINE)

    @property
    def fused(self) -> tuple:
        """Reductions computed at the anchor's thread tile (:data:`EPILOGUE`)."""
        return self.members_by(EPILOGUE)

    @property
    def staged(self) -> tuple:
        """Elementwise operands of the product computed in its tile fills (:data:`STAGED`)."""
        return self.members_by(STAGED)

    @property
    def row_members(self) -> tuple:
        """A row operator's statistics and the elementwise stages between them (:data:`ROW`)."""
        return self.members_by(ROW)

    @property
    def reductions(self) -> tuple:
        """The reductions the kernel computes: the fused ones, then the anchor if it is one."""
        anchor = self.stages[self.anchor]
        return self.fused + ((self.anchor,) if anchor.reduction else ())


__all__ = ["EPILOGUE", "Group", "INLINE", "ROOT", "ROW", "STAGED"]
