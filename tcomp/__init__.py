"""tcomp: a schedule-based tensor compiler for NVIDIA GPUs, generating Numba CUDA kernels.

Public API (docs/language.md)::

    import tcomp as tc
    A = tc.placeholder((M, K), "float32", name="A")
    ...
    s = tc.create_schedule(out)
    mod = tc.build(s)
"""

from .errors import (ArgumentError, CapacityError, CodegenError, DriverError, IllegalScheduleError, InternalError,
                     LanguageError, LoweringError, ScheduleError, TcompError)
from .lang import (SCALAR_FUNCTION_API, IterVar, Tensor, cast, clamp, compute, evaluate, inputs, max, maximum, min,
                   minimum, placeholder, quantize, reduce_axis, sum, where)

globals().update(SCALAR_FUNCTION_API)  # tc.exp, tc.silu, ...: one per entry of tcomp.ir.functions

__all__ = [
    "ArgumentError", "CapacityError", "CodegenError", "DriverError", "IllegalScheduleError", "InternalError",
    "LanguageError", "LoweringError", "ScheduleError", "TcompError",
    "IterVar", "Tensor", "cast", "clamp", "compute", "evaluate", "inputs", "max", "maximum", "min",
    "minimum", "placeholder", "quantize", "reduce_axis", "sum", "where", *SCALAR_FUNCTION_API,
]

from .build import build, lower
from .check import check
from .codegen.graph import Graph, graph
from .schedule import Schedule, Stage, create_schedule

__all__ += ["build", "lower", "check", "graph", "Graph", "Schedule", "Stage", "create_schedule"]

from . import cost
from .cost import estimate

__all__ += ["cost", "estimate"]

from .search import SearchResult, autoschedule

__all__ += ["SearchResult", "autoschedule"]
