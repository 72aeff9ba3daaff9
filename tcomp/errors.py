"""Error classes.

Every error a user can cause derives from :class:`TcompError`. Internal
inconsistencies (bugs in tcomp itself) raise :class:`InternalError`, which does
not, so that a test or a fuzzer can tell the two apart.
"""


class TcompError(Exception):
    """Base class of every user-facing tcomp error."""


class LanguageError(TcompError):
    """A tensor expression is malformed (wrong arity, unknown dtype, misplaced reduction)."""


class ScheduleError(TcompError):
    """A schedule primitive was called with arguments that make no sense."""


class IllegalScheduleError(ScheduleError):
    """A schedule would compute something other than the algorithm."""


class CapacityError(ScheduleError):
    """A schedule needs more than the target has: threads or dimensions of a block or a
    grid, shared or local memory, device memory, a 32-bit loop counter."""


class LoweringError(TcompError):
    """A schedule cannot be lowered (for example a non-affine access under compute_at)."""


class CodegenError(TcompError):
    """Code generation or kernel compilation failed for a user-visible reason."""


class DriverError(CodegenError):
    """The CUDA driver refused a call (loading, configuring or launching a kernel, a
    graph capture): the schedule is legal and its code was generated."""


class ArgumentError(TcompError):
    """A compiled module was called with wrong arguments (shape, dtype, device, layout)."""


class InternalError(Exception):
    """A bug in tcomp: an invariant of the compiler does not hold."""
