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
    """
    gpu = _code_target(target)
    simulator = simulator_enabled()
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
