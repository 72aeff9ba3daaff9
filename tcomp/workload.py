"""Workload files and schedule files, as the CLI (and benchmarks) load them.

A workload file (``examples/*.py``) is plain Python that defines::

    def algorithm(M=1024, N=1024, K=1024):   # shape keywords with defaults
        ...
        return Q                              # the output tensor

and may define a hand schedule ``schedule(s, out)``. A schedule file
(``schedules/*.py``, what the auto-scheduler writes) defines ``schedule(s, out)`` only.

Every problem with such a file (missing, does not parse, lacks ``algorithm``, a
schedule that raises) is a :class:`WorkloadError`, a ``tc.TcompError``, whose message
names the file and, where there is one, the line. A workload used without any schedule
(no ``schedule`` in the file, none given) runs one GPU thread a kernel: that is said with
a :class:`DefaultScheduleWarning` that points at ``tcomp autoschedule``.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import os
import sys
import traceback
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

from .errors import TcompError

_counter = itertools.count()


class WorkloadError(TcompError):
    """A workload or schedule file cannot be loaded or used."""


class DefaultScheduleWarning(UserWarning):
    """A workload runs with the default schedule: every stage at root, one thread a kernel."""


def _load_file(path: str, what: str) -> ModuleType:
    """Execute the Python file ``path`` as a fresh module (not added to ``sys.modules``)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise WorkloadError(f"{what} {path}: no such file")
    if os.path.isdir(path):
        raise WorkloadError(f"{what} {path} is a directory; give a .py file")
    name = f"tcomp_workload_{next(_counter)}_{os.path.splitext(os.path.basename(path))[0]}"
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise WorkloadError(f"{what} {path} cannot be loaded as Python; give a .py file")
    module = importlib.util.module_from_spec(spec)
    # NOTE: the file's folder goes on sys.path while it runs, so that a workload can
    # import a helper module that sits beside it, as it could when run as a script.
    folder = os.path.dirname(os.path.abspath(path))
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        raise WorkloadError(f"{what} {path}:{err.lineno}: syntax error: {err.msg}") from None
    except TcompError:
        raise
    except Exception as err:
        raise WorkloadError(f"{what} {path}{_where(err, path)}: {type(err).__name__}: {err}") from None
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    return module


def _where(err: BaseException, path: str) -> str:
    """``:LINE`` of the innermost traceback frame of ``err`` that lies in ``path``, or ''."""
    target = os.path.abspath(path)
    line = None
    for frame in traceback.extract_tb(err.__traceback__):
        if os.path.abspath(frame.filename) == target:
            line = frame.lineno
    return f":{line}" if line is not None else ""


# ---------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Workload:
    """A loaded workload file."""

    path: str
    module: ModuleType

    @property
    def algorithm(self) -> Callable:
        return self.module.algorithm

    @property
    def schedule(self) -> Callable | None:
        fn = getattr(self.module, "schedule", None)
        return fn if callable(fn) else None

    def default_shape(self) -> dict:
        """The shape keywords of ``algorithm`` with their defaults, in signature order."""
        return default_shape(self.algorithm)

    def shape(self, overrides: dict | None = None) -> dict:
        """The default shape with ``overrides`` applied; unknown names are an error."""
        shape = self.default_shape()
        params = inspect.signature(self.algorithm).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        for key, value in (overrides or {}).items():
            if key not in params and not takes_any:
                names = ", ".join(params) or "none"
                raise WorkloadError(f"{self.path}: algorithm() has no shape parameter {key!r}; "
                                    f"its parameters are {names}")
            shape[key] = value
        missing = [name for name, p in params.items()
                   if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                   and p.default is inspect.Parameter.empty and name not in shape]
        if missing:
            raise WorkloadError(f"{self.path}: algorithm() has no default for {', '.join(missing)}; "
                                f"give it with --shape {missing[0]}=...")
        return shape

    def build_algorithm(self, overrides: dict | None = None):
        """Call ``algorithm(**shape)``; return ``(output tensor, shape)``."""
        from .lang.tensor import ComputeOp, Tensor

        shape = self.shape(overrides)
        try:
            out = self.algorithm(**shape)
        except TcompError:
            raise
        except Exception as err:
            raise WorkloadError(f"{self.path}{_where(err, self.path)}: algorithm({_fmt(shape)}) raised "
                                f"{type(err).__name__}: {err}") from None
        outs = out if isinstance(out, (list, tuple)) else [out]
        if not outs or not all(isinstance(t, Tensor) and isinstance(t.op, ComputeOp) for t in outs):
            raise WorkloadError(f"{self.path}: algorithm() must return the output tensor (a tc.compute), "
                                f"got {type(out).__name__}")
        return out, shape


def load_workload(path: str) -> Workload:
    """Load a workload file; raise :class:`WorkloadError` unless it defines ``algorithm``."""
    module = _load_file(path, "workload file")
    fn = getattr(module, "algorithm", None)
    if fn is None:
        others = sorted(n for n, v in vars(module).items() if inspect.isfunction(v) and not n.startswith("_"))
        hint = f" (it defines {', '.join(others)})" if others else ""
        raise WorkloadError(f"workload file {path} does not define algorithm(**shape){hint}")
    if not callable(fn):
        raise WorkloadError(f"workload file {path}: algorithm is a {type(fn).__name__}, not a function")
    return Workload(os.fspath(path), module)


def warn_default_schedule(path: str) -> None:
    """Say that the workload file ``path`` runs with the default schedule, and how to get a
    better one (a :class:`DefaultScheduleWarning`)."""
    warnings.warn(f"{path} defines no schedule(s, out) and none was given: every stage runs at root, one "
                  "thread computing each kernel's whole output (correct, and very slow on a GPU). Search for a "
                  f"schedule with `tcomp autoschedule {path} --out SCHEDULE.py` and pass it with --schedule "
                  "SCHEDULE.py, or write schedule(s, out) in the file.", DefaultScheduleWarning, stacklevel=2)


def default_shape(algorithm: Callable) -> dict:
    """The keyword defaults of ``algorithm``'s signature: ``{"M": 1024, ...}``."""
    return {name: p.default for name, p in inspect.signature(algorithm).parameters.items()
            if p.default is not inspect.Parameter.empty}


def parse_shape(text: str | None) -> dict:
    """``"M=16,N=16,K=8"`` -> ``{"M": 16, "N": 16, "K": 8}`` (integers, or else as written)."""
    shape: dict = {}
    if not text:
        return shape
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier() or not value.strip():
            raise WorkloadError(f"bad shape {part!r} in {text!r}; write NAME=VALUE pairs such as M=16,N=16,K=8")
        value = value.strip()
        try:
            shape[key] = int(value, 0)
        except ValueError:
            try:
                shape[key] = float(value)
            except ValueError:
                shape[key] = value
    return shape


def _fmt(shape: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


# ---------------------------------------------------------------------- schedules


def load_schedule(spec: str, workload: Workload | None = None) -> tuple[Callable, str]:
    """Find the schedule function that ``spec`` names; return ``(function, description)``.

    ``spec`` is a file defining ``schedule(s, out)``, ``FILE:NAME`` for another function
    in that file, or the bare ``NAME`` of a function in the workload file itself (such as
    ``schedule_naive`` in ``examples/sgemm_ladder.py``).
    """
    path, name = spec, "schedule"
    if not os.path.exists(spec) and ":" in spec:
        head, _, tail = spec.rpartition(":")
        if tail.isidentifier() and os.path.exists(head):
            path, name = head, tail
    if not os.path.exists(path) and workload is not None and spec.isidentifier():
        fn = getattr(workload.module, spec, None)
        if callable(fn):
            return fn, f"{workload.path}:{spec}"
        raise WorkloadError(f"schedule {spec!r}: no such file, and {workload.path} defines no function {spec}")
    module = _load_file(path, "schedule file")
    fn = getattr(module, name, None)
    if not callable(fn):
        raise WorkloadError(f"schedule file {path} does not define {name}(s, out)")
    return fn, path if name == "schedule" else f"{path}:{name}"


def apply_schedule(s, out, schedule_fn: Callable, where: str = "the schedule") -> None:
    """Run ``schedule_fn(s, out)`` on schedule ``s``.

    An illegal schedule (``tc.IllegalScheduleError``) passes through as it is. Any other
    exception means the schedule does not fit this algorithm (a stage it names does not
    exist, a handle is unpacked wrongly, a primitive is misused): it becomes a
    :class:`WorkloadError` naming the schedule file and line.
    """
    from .errors import IllegalScheduleError

    try:
        schedule_fn(s, out)
    except IllegalScheduleError:
        raise
    except Exception as err:
        code = getattr(schedule_fn, "__code__", None)
        path = code.co_filename if code is not None else ""
        loc = f"{path}{_where(err, path)}" if path else where
        if isinstance(err, TcompError):
            # NOTE: a misused primitive (a stage that does not exist, a wrong axis):
            # name the line in the schedule file, which tcomp's message may not.
            raise WorkloadError(f"{where} failed to replay ({loc}): {err}") from err
        raise WorkloadError(f"{where} failed to replay ({loc}): {type(err).__name__}: {err}") from None


__all__ = ["DefaultScheduleWarning", "Workload", "WorkloadError", "apply_schedule", "default_shape",
           "load_schedule", "load_workload", "parse_shape", "warn_default_schedule"]
