"""The filters and the rank of the search: what happens to a point before it is built.

``screen(point)`` turns a point of the space into a :class:`Screened` record, in this order
(check feasibility, then estimate; docs/architecture.md, "Search"):

1. the primitives' own errors, while the point is applied to a fresh schedule;
2. ``tc.check``: legality, and what ``tc.build`` would refuse (threads, grid, shared
   memory, local memory);
3. the cost model's capacity: a kernel of which no block fits on an SM (registers,
   shared memory) is "over capacity";
4. the rank: ``tc.estimate``'s predicted seconds; between points whose predictions agree
   to 0.1% (a kernel bound by device memory at every tile size), the one whose bound
   hides less other work (the SMs' issue and latency terms) first (:func:`rank_key`).

Each point is screened in a forked process of its own, killed after ``CHECK_SECONDS``
and recorded as a timeout: the polyhedral flow analysis can take minutes on a few
layouts, inside one isl call that no signal interrupts, and one slow point must not
stall the search. :class:`Screener` runs ``workers`` such processes at a time.
"""

from __future__ import annotations

import os
import pickle
import selectors
import time
from dataclasses import dataclass

from .space import Point, Space

#: the longest one point's check and estimate may take
CHECK_SECONDS = 10


@dataclass(frozen=True)
class Screened:
    """A point after the filters: its schedule source, status and predicted time."""

    point: Point
    source: str = ""  # the replayable trace, when the point could be applied
    status: str = "ok"  # "ok", "illegal", "over capacity" or "timeout" (database statuses)
    predicted: float | None = None  # seconds, for status "ok"
    error: str = ""
    hidden: float = 0.0  # seconds of issue and latency terms under the kernels' bounds


def rank_key(s: Screened) -> tuple:
    """How the search orders screened points: by predicted time to 0.1%, then by the
    work that the bound of each kernel hides, also to 0.1% (a memory-bound chain at
    8-element vectors before the same at 2: both read the same bytes, but the first
    issues fewer loads), then by the predicted time itself."""
    return (float(f"{s.predicted:.3g}"), float(f"{s.hidden:.3g}"), s.predicted)


def screen(space: Space, point: Point, target="h200") -> Screened:
    """Apply, check and estimate ``point`` in this process (see the module docstring)."""
    from ..check import check
    from ..cost import estimate
    from ..errors import CapacityError, TcompError

    try:
        s = space.schedule(point)
    except TcompError as err:
        return Screened(point, status="illegal", error=f"{type(err).__name__}: {err}")
    source = s.trace_source(with_sites=False)
    try:
        check(s, target=target)
        est = estimate(s, target=target)
    except CapacityError as err:
        return Screened(point, source, "over capacity", error=str(err))
    except TcompError as err:
        return Screened(point, source, "illegal", error=f"{type(err).__name__}: {err}")
    unfit = [k for k in est.kernels if not k.fits]
    if unfit:
        notes = "; ".join(n for k in unfit for n in k.notes) or f"kernel {unfit[0].name} does not fit on an SM"
        return Screened(point, source, "over capacity", est.predicted_seconds, error=notes)
    hidden = sum(k.t_issue + k.t_latency for k in est.kernels)
    return Screened(point, source, "ok", est.predicted_seconds, hidden=hidden)


class Screener:
    """Screens points, each in a forked process with a time limit, ``workers`` at a time."""

    def __init__(self, space: Space, workers: int = 1, target="h200", seconds: float = CHECK_SECONDS):
        self.space = space
        self.target = target
        self.workers = max(1, workers)
        self.seconds = seconds

    def screen(self, points: list) -> list:
        """The screens of ``points``, in their order."""
        results: list = [None] * len(points)
        running: dict = {}  # read end -> (index, pid, deadline, chunks)
        todo = list(enumerate(points))
        with selectors.DefaultSelector() as sel:
            while todo or running:
                while todo and len(running) < self.workers:
                    index, point = todo.pop(0)
                    fd, pid = self._fork(point)
                    running[fd] = (index, pid, time.monotonic() + self.seconds, [])
                    sel.register(fd, selectors.EVENT_READ)
                wait = min(deadline for _, _, deadline, _ in running.values()) - time.monotonic()
                for key, _ in sel.select(max(0.0, wait)):
                    fd = key.fd
                    data = os.read(fd, 1 << 20)
                    if data:
                        running[fd][3].append(data)
                        continue
                    index, pid, _, chunks = running.pop(fd)
                    sel.unregister(fd)
                    os.close(fd)
                    os.waitpid(pid, 0)
                    results[index] = self._result(points[index], b"".join(chunks))
                now = time.monotonic()
                for fd, (index, pid, deadline, _) in list(running.items()):
                    if now >= deadline:
                        os.kill(pid, 9)
                        os.waitpid(pid, 0)
                        sel.unregister(fd)
                        os.close(fd)
                        del running[fd]
                        results[index] = Screened(points[index], status="timeout",
                                                  error=f"the check took over {self.seconds:g} s")
        return results

    def _fork(self, point: Point) -> tuple:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: screen, answer, exit without running the parent's cleanup
            os.close(read)
            try:
                data = pickle.dumps(screen(self.space, point, self.target))
            except BaseException as err:  # NOTE: reported as the point's error
                data = pickle.dumps(Screened(point, status="illegal", error=f"{type(err).__name__}: {err}"))
            with os.fdopen(write, "wb") as f:
                f.write(data)
            os._exit(0)
        os.close(write)
        return read, pid

    @staticmethod
    def _result(point: Point, data: bytes) -> Screened:
        try:
            return pickle.loads(data)
        except Exception:  # NOTE: the child died before answering
            return Screened(point, status="illegal", error="the screening process died without an answer")


__all__ = ["CHECK_SECONDS", "Screened", "Screener", "screen"]
