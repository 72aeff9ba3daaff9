"""``tc.lower`` and ``tc.build``: from a schedule to a callable module."""

from __future__ import annotations

from .codegen import Module, program_source, simulator_enabled
from .errors import CodegenError, TcompError
from .ir.stmt import Program
from .lower import lower as _lower
from .target import check_resources, get_target


def lower(s, trace=None, target=None) -> Program:
    """The loop-nest IR of schedule ``s`` for ``target`` (default: ``tcomp.target.
    DEFAULT_TARGET``); ``print(tc.lower(s))`` shows it."""
    return _lower(s, trace=trace, target=get_target(target))


def build(s, target="cuda", check: bool = True) -> Module:
    """Compile schedule ``s`` into a module ``mod(*inputs, *outputs)``.

    ``target="cuda"`` compiles with numba-cuda for the default GPU (``tcomp.target.
    DEFAULT_TARGET``), or runs in Numba's CUDA simulator when ``NUMBA_ENABLE_CUDASIM=1``
    is set; a GPU's name (``"h200"``, ``"h100"``, ... : ``tcomp.target.target_names()``)
    or a ``tcomp.target.Target`` record holds the schedule to that GPU's instructions and
    limits. ``check=False`` skips the legality check.

    Without a GPU (and without the simulator) it raises a ``tc.CodegenError`` that says
    how to run; it does not switch to the simulator by itself, which is about a thousand
    times slower.
    """
    gpu = _code_target(target)
    simulator = simulator_enabled()
    if not simulator:
        _require_a_gpu()
    if check:
        from .check import checked_program

        _, program, source = checked_program(s, target=gpu)
    else:
        program = _lower(s, target=gpu)
        check_resources(program, gpu)
        source = program_source(program, simulator, target=gpu)
    return Module(program, source, simulator)


def _code_target(target):
    """The GPU record of ``tc.build``'s ``target=``, or a CodegenError naming the choices."""
    try:
        return get_target(target)
    except TcompError:
        from .target import target_names

        raise CodegenError(f"unknown target {target!r}; tcomp generates code for 'cuda' (the default GPU) or "
                           f"a GPU named {', '.join(map(repr, target_names()))}") from None


def _require_a_gpu() -> None:
    """Raise a CodegenError naming the problem and the fix when numba-cuda finds no GPU
    (instead of numba-cuda's own CudaSupportError from inside the first compile)."""
    from numba import cuda

    if cuda.is_available():
        return
    from .validation import SIMULATOR_THREADS_PER_SECOND

    raise CodegenError(
        f"tc.build: no CUDA GPU is usable here ({_driver_problem()}). Run on a machine with an NVIDIA GPU "
        "and its driver, or set NUMBA_ENABLE_CUDASIM=1 before Python starts (numba reads it once, when it is "
        f"imported) to run the kernels in Numba's CUDA simulator: about {SIMULATOR_THREADS_PER_SECOND:,} "
        "threads a second, tiny shapes only (`tcomp demo` and `tcomp autoschedule` switch it on by "
        "themselves). tc.check, tc.lower and tc.estimate need no GPU.")


def _driver_problem() -> str:
    """numba-cuda's reason for having no GPU, on one line."""
    from numba import cuda

    try:
        cuda.get_current_device()
    except Exception as err:  # NOTE: CudaSupportError, or a driver error: its text is what we want
        text = " ".join(str(err).split()).rstrip(": ")
        return f"numba-cuda: {text}" if text else f"numba-cuda: {type(err).__name__}"
    return "numba-cuda: cuda.is_available() is False"
