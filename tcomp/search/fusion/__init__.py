"""The fusion rules: which stages share a kernel (``tcomp.search.fusion.base``).

The built-in ones, in the order the space offers them, each before ``"root"``:

- ``"inline"`` (:mod:`.inline`): an elementwise stage substituted into its consumer;
- ``"fused"`` (:mod:`.epilogue`): a reduction computed at its consumer's thread tile;
- ``"staged"`` (:mod:`.staged`): a product's elementwise operand computed in its tile fills;
- ``"row"`` (:mod:`.row`): a row statistic (softmax's max), or an elementwise stage
  between statistics, computed in the kernel of the row operator's output.

A stage read by several stages, or read by a reduction other than as a matrix product's
operand, gets none of the first three: it stays at root unless it is part of a row
operator (``"row"``) or a registered rule proposes it.
"""

from .base import FusionRule, register_fusion_rule, registered_fusion_rules, unregister_fusion_rule
from .epilogue import Epilogue
from .inline import Inline
from .row import RowFusion
from .staged import StagedOperand

INLINE_RULE = register_fusion_rule(Inline())
EPILOGUE_RULE = register_fusion_rule(Epilogue())
STAGED_RULE = register_fusion_rule(StagedOperand())
ROW_RULE = register_fusion_rule(RowFusion())

__all__ = ["EPILOGUE_RULE", "Epilogue", "FusionRule", "INLINE_RULE", "Inline", "ROW_RULE", "RowFusion", "STAGED_RULE",
           "StagedOperand", "register_fusion_rule", "registered_fusion_rules", "unregister_fusion_rule"]
