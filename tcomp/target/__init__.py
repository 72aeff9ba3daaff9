"""What a GPU is: the target records, their launch and storage limits, the matrix
instructions and their shapes. Every layer (lower, check, codegen, cost, search) reads
these; none keeps a machine figure of its own."""

from .gpus import (DEFAULT_TARGET, H100, H200, RTX_A6000, RTX_PRO_6000, TARGETS, Target, get_target, target_names,
                   target_of_device)
from .resources import check_resources

__all__ = ["DEFAULT_TARGET", "H100", "H200", "RTX_A6000", "RTX_PRO_6000", "TARGETS", "Target", "check_resources",
           "get_target", "target_names", "target_of_device"]
