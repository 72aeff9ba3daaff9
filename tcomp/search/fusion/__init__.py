"""The fusion rules: which stages share a kernel (``tcomp.search.fusion.base``).

The built-in ones, in the order the space offers them, each before ``"root"``:

- ``"inline"`` (:mod:`.inline`): an elementwise stage substituted into its consumer;
- ``"fused"`` (:mod:`.epilogue`): a reduction computed at its consumer's thread tile;
- ``"staged"`` (:mod:`.staged`): a product's elementwise operand computed in its tile fills.

A stage read by several stages, or read by a reduction other than as a matrix product's
operand, gets none of these and stays at root, unless a registered rule proposes it.
"""

from .base import FusionRule, register_fusion_rule, registered_fusion_rules, unregister_fusion_rule
from .epilogue import Epilogue
from .inline import Inline
from .staged import StagedOperand

INLINE_RULE = register_fusion_rule(Inline())
EPILOGUE_RULE = register_fusion_rule(Epilogue())
STAGED_RULE = register_fusion_rule(StagedOperand())

__all__ = ["EPILOGUE_RULE", "Epilogue", "FusionRule", "INLINE_RULE", "Inline", "STAGED_RULE", "StagedOperand",
           "register_fusion_rule", "registered_fusion_rules", "unregister_fusion_rule"]
