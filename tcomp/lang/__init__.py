"""The tensor language: what to compute."""

from .evaluate import evaluate
from .ops import abs, cast, clamp, exp, max, maximum, min, minimum, quantize, round, sigmoid, silu, sum
from .tensor import IterVar, Tensor, compute, placeholder, reduce_axis

__all__ = ["evaluate", "abs", "cast", "clamp", "exp", "max", "maximum", "min", "minimum", "quantize",
           "round", "sigmoid", "silu", "sum", "IterVar", "Tensor", "compute", "placeholder", "reduce_axis"]
