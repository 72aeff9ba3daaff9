"""The tuning database: one JSON line per candidate schedule the search has tried.

A record says which workload (``workload_key``: structure, shapes and dtypes, not names),
on which target (GPU name, SM count, compute capability, CUDA driver and numba-cuda
versions), with which tcomp version, in which search (its job name), which schedule (replayable Python defining
``schedule(s, out)``), what the cost model predicted, what was measured (median seconds
and the spread of the repeats), and how it ended: ``ok``, ``wrong`` (a result that
differs from the reference), ``crash``, ``timeout``, ``illegal`` (refused by
``tc.check``) or ``over capacity`` (more threads, shared memory or registers than the
target has), with the error's text.

The file is appended to, one whole line per write under an exclusive lock, so that
several processes may record into one database at once. A line that does not parse (a
write cut short, an edit) is skipped with a :class:`TuningDatabaseWarning` naming the
file and line; the rest stays usable. The default file is ``tuning.jsonl`` in the tcomp
cache directory (``$TCOMP_CACHE_DIR``, default ``~/.cache/tcomp``).
"""

from __future__ import annotations

import fcntl
import json
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: how a candidate ended
STATUSES = ("ok", "wrong", "crash", "timeout", "illegal", "over capacity")


class TuningDatabaseWarning(UserWarning):
    """A record of the tuning database could not be read and was skipped."""


def tcomp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tcomp")
    except PackageNotFoundError:  # NOTE: run from a source tree that is not installed
        return "unknown"


@dataclass(frozen=True)
class Record:
    """One candidate schedule of one workload on one target, and how it ended."""

    workload: str  # tcomp.lang.canonical.workload_key of the algorithm
    target: dict  # current_target(): what the timing belongs to
    schedule: str  # Python source defining schedule(s, out)
    status: str  # one of STATUSES
    predicted: float | None = None  # the cost model's seconds
    measured: float | None = None  # median measured seconds
    spread: float | None = None  # (slowest - fastest) / median of the measured repeats
    error: str = ""  # why it was not ok
    tcomp_version: str = field(default_factory=tcomp_version)
    job: str = ""  # the search that tried it (what tc.autoschedule(resume=True) continues)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {', '.join(STATUSES)}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> "Record":
        """The record of one line; ValueError (or a subclass) when it is not one."""
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        names = {f for f in cls.__dataclass_fields__}
        missing = {"workload", "target", "schedule", "status"} - set(data)
        if missing:
            raise ValueError(f"missing {', '.join(sorted(missing))}")
        return cls(**{k: v for k, v in data.items() if k in names})


def default_path() -> Path:
    root = os.environ.get("TCOMP_CACHE_DIR") or os.path.join(Path.home(), ".cache", "tcomp")
    return Path(root) / "tuning.jsonl"


class TuningDatabase:
    """The records of one JSON-lines file (see the module docstring)."""

    def __init__(self, path=None):
        self.path = Path(path) if path is not None else default_path()

    def append(self, record: Record) -> None:
        """Add ``record`` as one line; safe against other processes appending at once."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = record.to_json() + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                f.write(line)
                f.flush()
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def records(self, workload: str | None = None, target: dict | None = None) -> list:
        """Every readable record, of ``workload`` and ``target`` where given, in the order
        written; unreadable lines are skipped with a TuningDatabaseWarning."""
        if not self.path.exists():
            return []
        out = []
        with open(self.path, encoding="utf-8", errors="replace") as f:
            fcntl.flock(f, fcntl.LOCK_SH)
            try:
                lines = f.readlines()
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = Record.from_json(line)
            except (ValueError, TypeError) as err:
                warnings.warn(f"{self.path}:{number}: skipped a record that cannot be read ({err})",
                              TuningDatabaseWarning, stacklevel=2)
                continue
            if workload is not None and record.workload != workload:
                continue
            if target is not None and record.target != target:
                continue
            out.append(record)
        return out

    def best(self, workload: str, target: dict) -> Record | None:
        """The fastest measured ``ok`` record of ``workload`` on ``target``, or None."""
        measured = [r for r in self.records(workload, target) if r.status == "ok" and r.measured is not None]
        return min(measured, key=lambda r: r.measured, default=None)


def current_target() -> dict:
    """What a measurement here belongs to: the GPU (name, SMs, compute capability), the
    CUDA driver and numba-cuda versions; in Numba's CUDA simulator, just that."""
    from importlib.metadata import version

    from ..codegen import simulator_enabled

    numba_cuda = version("numba-cuda")
    if simulator_enabled():
        return {"gpu": "CUDA simulator", "numba_cuda": numba_cuda}
    from numba import cuda
    from numba.cuda.cudadrv.driver import get_version

    if not cuda.is_available():  # NOTE: a model-only search on a machine without a GPU
        return {"gpu": "none", "numba_cuda": numba_cuda}
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    # NOTE: lists, not tuples, so that a target read back from JSON compares equal
    return {"gpu": name, "sms": device.MULTIPROCESSOR_COUNT, "cc": list(device.compute_capability),
            "driver": list(get_version()), "numba_cuda": numba_cuda}
