"""The tensor language: what to compute."""

from .evaluate import evaluate, inputs
from .ops import SCALAR_FUNCTION_API, cast, clamp, max, maximum, min, minimum, quantize, sum, where
from .tensor import IterVar, Tensor, compute, placeholder, reduce_axis

globals().update(SCALAR_FUNCTION_API)  # tc.exp, tc.silu, ...: one per entry of tcomp.ir.functions

__all__ = ["evaluate", "inputs", "cast", "clamp", "max", "maximum", "min", "minimum", "quantize", "sum", "where", "IterVar",
           "Tensor", "compute", "placeholder", "reduce_axis", *SCALAR_FUNCTION_API]
