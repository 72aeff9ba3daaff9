"""The filters and the rank of the search: what happens to a point before it is built.

``screen(point)`` turns a point of the space into a :class:`Screened` record, in this order
(the chapter's section 5.4.5, "check feasibility, then estimate"):

1. the primitives' own errors, while the point is applied to a fresh schedule;
2. ``tc.check``: legality, and what ``tc.build`` would refuse (threads, grid, shared
   memory, local memory);
3. the cost model's capacity: a kernel of which no block fits on an SM (registers,
   shared memory) is "over capacity";
4. the rank: ``tc.estimate``'s predicted seconds.

A check that runs longer than ``CHECK_SECONDS`` is recorded as a timeout (the polyhedral
flow analysis can take minutes on a few layouts), so one slow point cannot stall the
search. ``screen_many`` runs screens in a pool of worker processes.
"""

from __future__ import annotations

import pickle
import signal
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from .space import Point, Space

#: the longest one point's check and estimate may take
CHECK_SECONDS = 20


@dataclass(frozen=True)
class Screened:
    """A point after the filters: its schedule source, status and predicted time."""

    point: Point
    source: str = ""  # the replayable trace, when the point could be applied
    status: str = "ok"  # "ok", "illegal", "over capacity" or "timeout" (database statuses)
    predicted: float | None = None  # seconds, for status "ok"
    error: str = ""


class _CheckTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise _CheckTimeout()


def screen(space: Space, point: Point, target="h200", seconds: int = CHECK_SECONDS) -> Screened:
    """Apply, check and estimate ``point`` (see the module docstring)."""
    from ..check import check
    from ..cost import estimate
    from ..errors import CapacityError, TcompError

    try:
        s = space.schedule(point)
    except TcompError as err:
        return Screened(point, status="illegal", error=f"{type(err).__name__}: {err}")
    source = s.trace_source(with_sites=False)
    timed = seconds > 0 and hasattr(signal, "SIGALRM")
    old = signal.signal(signal.SIGALRM, _alarm) if timed else None
    if timed:
        signal.alarm(seconds)
    try:
        check(s)
        est = estimate(s, target=target)
    except _CheckTimeout:
        return Screened(point, source, "timeout", error=f"the check took over {seconds} s")
    except CapacityError as err:
        return Screened(point, source, "over capacity", error=str(err))
    except TcompError as err:
        return Screened(point, source, "illegal", error=f"{type(err).__name__}: {err}")
    finally:
        if timed:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    unfit = [k for k in est.kernels if not k.fits]
    if unfit:
        notes = "; ".join(n for k in unfit for n in k.notes) or f"kernel {unfit[0].name} does not fit on an SM"
        return Screened(point, source, "over capacity", est.predicted_seconds, error=notes)
    return Screened(point, source, "ok", est.predicted_seconds)


# ---------------------------------------------------------------------- the pool

_worker_space: Space | None = None


def _init_worker(out_pickle: bytes) -> None:
    global _worker_space
    _worker_space = Space(pickle.loads(out_pickle))


def _screen_in_worker(point: Point, target) -> Screened:
    return screen(_worker_space, point, target)


class Screener:
    """Screens points in ``workers`` processes (in this process when ``workers`` is 1)."""

    def __init__(self, space: Space, workers: int = 1, target="h200"):
        self.space = space
        self.target = target
        self.pool = None
        if workers > 1:
            import multiprocessing

            self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                            initializer=_init_worker, initargs=(pickle.dumps(space.out),))

    def screen(self, points: list) -> list:
        """The screens of ``points``, in their order."""
        if self.pool is None:
            return [screen(self.space, p, self.target) for p in points]
        return list(self.pool.map(_screen_in_worker, points, [self.target] * len(points), chunksize=4))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


__all__ = ["CHECK_SECONDS", "Screened", "Screener", "screen"]
