"""The scalar functions of the language: one table that every layer reads.

Each entry of ``SCALAR_FUNCTIONS`` says all there is to know of one function:

- ``tc.<name>``, the public function, is made from it (``tcomp.lang.ops``), with its
  ``doc`` as docstring and its ``arity``;
- ``reference`` is the numpy code ``tc.evaluate`` runs, on float32 arrays for a
  function of ``floats_only`` (and the result rounded to the call's dtype), on the
  operands' own arrays otherwise;
- ``device`` is the expression the code generator writes, ``{0}`` standing for the
  first operand's code; it may call the helpers every generated module defines
  (``_exp``, ``_rint``: ``tcomp.codegen.cuda_source``'s preludes) or a helper of its
  own, whose definition is ``helper`` (``{inline}`` stands for the GPU's
  ``, inline="always"``, empty in the simulator, so one text serves both);
- ``instructions`` is what the cost model charges for one call, in issued
  instructions of a thread (roughly: the special-function unit's sequence).

A new function is one entry here plus its tests: ``tests/ir/test_functions.py`` checks
that every entry has every part and that the code generator, the simulator and the
reference agree on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import math

import numpy as np


@dataclass(frozen=True)
class ScalarFunction:
    """One scalar function of the language (see the module docstring)."""

    name: str
    arity: int
    doc: str
    reference: Callable
    device: str
    instructions: int
    floats_only: bool = True
    helper: str = ""

    def device_code(self, *operands: str) -> str:
        """The generated code of one call on the operands' code."""
        return self.device.format(*operands)


def _rsqrt(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / np.sqrt(x.astype(np.float64))


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    return _ERF(x.astype(np.float64))


def _sigmoid(x):
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


def _silu(x):
    return x / (np.float32(1.0) + np.exp(-x))


# sigmoid as 1 / (1 + t) or t / (1 + t) with t = exp(-|x|) in (0, 1]: the reciprocal's operand
# lies in [1, 2], where the special-function unit's reciprocal (tcomp.codegen.approximate_division)
# is within 1 ulp and nothing is subnormal, and t underflows gracefully for x far below 0
_SIGMOID_HELPER = '''

@cuda.jit(device=True{inline})
def _sigmoid(x):
    t = _exp(-abs(x))
    r = _reciprocal(float32(1.0) + t)
    return r if x >= float32(0.0) else t * r
'''

_SILU_HELPER = '''

@cuda.jit(device=True{inline})
def _silu(x):
    return x * _sigmoid(x)
'''

SCALAR_FUNCTIONS = {f.name: f for f in (
    ScalarFunction("exp", 1, "e ** x; on the GPU within 2 ulp of the correctly rounded float32 value (CUDA's expf).",
                   np.exp, "_exp({0})", 2),
    ScalarFunction("sigmoid", 1, "1 / (1 + exp(-x)); on the GPU within 4 ulp of the correctly rounded float32 "
                   "value (CUDA's expf, then the special-function unit's reciprocal).", _sigmoid,
                   "_sigmoid({0})", 5, helper=_SIGMOID_HELPER),
    ScalarFunction("silu", 1, "x * sigmoid(x), computed in float32 and rounded once to x's dtype; on the GPU "
                   "within 4 ulp of the correctly rounded float32 value where x > -87 (below, where exp(x) is "
                   "subnormal and |silu(x)| < 1e-36, within 1e-42 of it).", _silu,
                   "_silu({0})", 6, helper=_SILU_HELPER),
    ScalarFunction("abs", 1, "|x|.", np.abs, "abs({0})", 1, floats_only=False),
    ScalarFunction("round", 1, "Round half to even (numpy's rint).", np.rint, "_rint({0})", 1),
    # the device's error bounds are the CUDA Math API's for the float32 functions Numba calls
    # (sqrtf is IEEE, sqrt.rn.f32); the cost is the static SASS count of one call, its slow
    # paths included (benchmarks/function_sass.py, ptxas 13.5: an upper bound)
    ScalarFunction("sqrt", 1, "The square root of x (NaN below 0); on the GPU correctly rounded in float32 "
                   "(sqrt.rn.f32).", np.sqrt, "_sqrt({0})", 37),
    ScalarFunction("rsqrt", 1, "1 / sqrt(x) (inf at 0, NaN below 0); on the GPU within 2 ulp of the correctly "
                   "rounded float32 value (CUDA's rsqrtf).", _rsqrt, "_rsqrt({0})", 4),
    ScalarFunction("tanh", 1, "The hyperbolic tangent of x; on the GPU within 2 ulp of the correctly rounded "
                   "float32 value (CUDA's tanhf).", np.tanh, "_tanh({0})", 17),
    ScalarFunction("erf", 1, "The error function of x, 2 / sqrt(pi) times the integral of exp(-t^2) from 0 to x; "
                   "on the GPU within 2 ulp of the correctly rounded float32 value (CUDA's erff).", _erf,
                   "_erf({0})", 28),
    ScalarFunction("log", 1, "The natural logarithm of x (-inf at 0, NaN below 0); on the GPU within 1 ulp of the "
                   "correctly rounded float32 value (CUDA's logf).", np.log, "_log({0})", 26),
)}


def scalar_function(name: str) -> ScalarFunction:
    """The table's entry for ``name``; KeyError names the functions there are."""
    try:
        return SCALAR_FUNCTIONS[name]
    except KeyError:
        raise KeyError(f"no scalar function {name!r}; there are {', '.join(SCALAR_FUNCTIONS)}") from None


__all__ = ["SCALAR_FUNCTIONS", "ScalarFunction", "scalar_function"]
