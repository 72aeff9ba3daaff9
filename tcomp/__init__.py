"""tcomp: a schedule-based tensor compiler for NVIDIA GPUs, generating Numba CUDA kernels.

Public API (see DESIGN.md section 1)::

    import tcomp as tc
    A = tc.placeholder((M, K), "float32", name="A")
    ...
    s = tc.create_schedule(out)
    mod = tc.build(s)
"""

from .errors import (ArgumentError, CapacityError, CodegenError, DriverError, IllegalScheduleError, InternalError,
                     LanguageError, LoweringError, ScheduleError, TcompError)
from .lang import (IterVar, Tensor, abs, cast, clamp, compute, evaluate, exp, max, maximum, min, minimum,
                   placeholder, quantize, reduce_axis, round, sigmoid, silu, sum)

__all__ = [
    "ArgumentError", "CapacityError", "CodegenError", "DriverError", "IllegalScheduleError", "InternalError",
    "LanguageError", "LoweringError", "ScheduleError", "TcompError",
    "IterVar", "Tensor", "abs", "cast", "clamp", "compute", "evaluate", "exp", "max", "maximum", "min",
    "minimum", "placeholder", "quantize", "reduce_axis", "round", "sigmoid", "silu", "sum",
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
