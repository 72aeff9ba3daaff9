"""The schedule fuzzer: random schedules, held to the reference.

For one of a few small workloads (matmul, matmul + SiLU + quantize, SwiGLU + quantize,
row max + quantize, an elementwise chain, a bfloat16 FFN) at tiny shapes
(:mod:`tcomp.testing.fuzz_workloads`), a
`hypothesis <https://hypothesis.readthedocs.io>`_ strategy draws a schedule over the
primitives of docs/language.md (:mod:`tcomp.testing.schedule_drawer`): caches, inlines, splits
(divisible or not), tiles, reorders, fuses, bindings, placements (``compute_at`` /
``reverse_compute_at`` at random loops), unrolls, vectorizes, scopes, storage orders,
double buffers. Then :func:`~tcomp.testing.oracle.evaluate_schedule` holds the checker
and the code generator to ``tc.evaluate`` (:mod:`tcomp.testing.oracle`):

- ``tc.check`` says legal: the built module must compute ``tc.evaluate``'s result
  (float tolerance; int8 exactly unless the check reports a reassociation);
- ``tc.check`` raises ``tc.IllegalScheduleError``: built with ``check=False``, the
  module must compute something else on at least one of a few random inputs, unless
  the error says that a later recomputation hides the violation
  (:func:`~tcomp.testing.oracle.is_hidden_by_recomputation`; counted apart). An
  illegal schedule whose result never differs is a checker false positive;
- anything raised that is not a ``tc.TcompError`` is a bug; a ``tc.TcompError`` from a
  primitive, the check or the build is a clean rejection.

A failure raises :class:`~tcomp.testing.oracle.FuzzFailure` (or lets the unexpected
exception through) with the schedule as replayable Python
(:func:`~tcomp.testing.reproducer.repro_source`); hypothesis shrinks it to a minimal
one. The test target is ``tests/fuzz`` (``pytest tests/fuzz --fuzz-examples 5000`` for
a longer run); :data:`STATS` counts what the run drew
(:mod:`tcomp.testing.fuzz_stats`). This module holds the property, :func:`fuzz_one`,
and hands on the names that the tests and the reproducers import.

In Numba's CUDA simulator the runs are instrumented (:func:`simulator_chaos`): blocks
run and threads start in a shuffled order, uninitialized local and shared memory
holds NaN (or a sentinel), shared memory is fresh for every block, the global
intermediates are poisoned before every call, blocks and threads can be isolated
(each block sees global memory as it was at the launch, each thread global and shared
memory as it was at the last barrier, as if all ran at once) and all threads of a
launch can take turns, preempted at random memory accesses, so that a schedule that
reads a value before it is written, or races between blocks or threads, computes a
visibly wrong result (:mod:`tcomp.testing.simulator_chaos`).

Bugs found and not fixed yet are listed in :data:`KNOWN_ISSUES`
(:mod:`tcomp.testing.known_issues`): the fuzzer counts a case it recognizes apart
("known") instead of failing, and each has an ``xfail(strict=True)`` test in
``tests/fuzz/test_fuzz_regressions.py``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tcomp.testing.fuzz_stats import STATS, FuzzStats
from tcomp.testing.fuzz_workloads import WORKLOADS, FuzzWorkload, workloads
from tcomp.testing.known_issues import KNOWN_ISSUES
from tcomp.testing.oracle import (FuzzFailure, Outcome, evaluate_schedule, is_hidden_by_recomputation, matches,
                                  run_module)
from tcomp.testing.reproducer import repro_source
from tcomp.testing.schedule_drawer import ScheduleDrawer, draw_schedule
from tcomp.testing.simulator_chaos import simulator_chaos


def fuzz_one(data, name: str, stats: FuzzStats | None = None) -> Outcome:
    """The property: draw a workload and a schedule, evaluate it, count the outcome.

    On any failure the reproducer (the schedule as Python) is attached with
    ``hypothesis.note`` and to the exception, so the shrunk example prints it.
    """
    import time

    from hypothesis import note

    stats = STATS if stats is None else stats
    t0 = time.perf_counter()
    wl = data.draw(workloads(name), label="workload")
    seed = data.draw(st.integers(0, 2**16), label="input seed")
    try:
        s, drawer, error = draw_schedule(data, wl)
    except Exception as err:
        if hasattr(err, "fuzz_repro"):
            note(err.fuzz_repro)
            stats.add(Outcome("failed", f"{type(err).__name__} from a primitive (not a tc.TcompError)"))
        stats.seconds += time.perf_counter() - t0
        raise
    try:
        if error is not None:
            outcome = Outcome("rejected", f"{type(error).__name__} from a primitive")
        else:
            repro = repro_source(wl, s, seed=seed)
            try:
                outcome = evaluate_schedule(wl, s, seed, repro)
            except FuzzFailure:  # its message holds the reproducer
                stats.add(Outcome("failed", "wrong result or checker false positive"))
                raise
            except Exception as err:  # not a TcompError: a bug
                note(repro)
                err.add_note(f"reproducer:\n{repro}")
                stats.add(Outcome("failed", f"{type(err).__name__} (not a tc.TcompError)"))
                raise
        stats.add(outcome)
        return outcome
    finally:
        stats.seconds += time.perf_counter() - t0


__all__ = ["FuzzFailure", "FuzzStats", "FuzzWorkload", "KNOWN_ISSUES", "Outcome", "STATS", "ScheduleDrawer",
           "WORKLOADS", "draw_schedule", "evaluate_schedule", "fuzz_one", "is_hidden_by_recomputation", "matches",
           "repro_source", "run_module", "simulator_chaos", "workloads"]
