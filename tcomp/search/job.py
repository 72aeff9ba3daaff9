"""Several workloads tuned as one job: ``tcomp autoschedule a.py:1116 b.py:36 ...``.

A request calls each workload some number of times (its ``calls``); what a trial is worth
is the time it could still save a request. The job's ``trials`` are shared out the way
the chapter's Example 5-9 weighs shapes by their calls:

1. each workload first measures its first choices (the rules' seeds and the best
   predicted of each partition): an equal share of half the trials, at least one;
2. then, batch by batch (a batch no larger than the trials left over twice the
   workloads, so that the share decides often: ``_batch``), the workload whose next
   batch could save the request the most gets it: its ``calls`` times what a call could
   still save, the best measured time less the best prediction among its candidates not
   measured yet (the prediction scaled by the least the model was off by for one
   measured: ``_MeasuredSearch.could_save``), computed again after every batch;
3. each search selects its winner as it would alone.

Where nothing can be measured (no GPU, ``model_only``), each workload is searched on its
own, model-only, as ``tc.autoschedule`` does. On a cluster (``cluster=ADDRESS``) the
workloads share one set of measuring actors (``cluster.ClusterActors``), to which each
search adds its bench; a batch holds every actor.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field

from .search import SearchResult, resumable, searching


@dataclass
class JobWorkload:
    """One workload of a job: its name, algorithm output and calls per request."""

    name: str
    out: object
    calls: int = 1


@dataclass
class JobResult:
    """What ``tune`` returns: each workload's result and how many trials it got."""

    results: dict  # name -> SearchResult
    trials: dict  # name -> candidates measured for it
    # each batch in order: (workload, candidates measured, {workload: calls x seconds a call could
    # still save, when the batch was given}); the first steps' dicts are empty
    order: list = field(default_factory=list)

    def request_time(self, workloads: list) -> float | None:
        """Seconds of a request's calls at the winners' measured times (None where one
        was not measured)."""
        times = [self.results[w.name].measured for w in workloads]
        if any(t is None for t in times):
            return None
        return sum(w.calls * t for w, t in zip(workloads, times))


def tune(workloads: list, trials: int, *, progress_for=None, share: str = "savings", **options) -> JobResult:
    """Search every workload of ``workloads`` (``JobWorkload``) with ``trials`` candidates
    in all, shared as the module docstring says (``share="equal"``: the same number for
    each, the baseline the sharing is compared with). ``options`` are
    ``tc.autoschedule``'s keywords (``db``, ``target``, ``seed``, ``cluster``, ...);
    ``progress_for(name)`` gives each workload's ``Progress``. ``resume=True`` continues
    an interrupted job (the same workloads, trials and seed): each workload resumes its
    last search, and one that the job never reached starts afresh."""
    from ..errors import TcompError

    if not workloads:
        raise TcompError("a job needs at least one workload")
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise TcompError(f"the job's workloads need distinct names, got {names}")
    if any(not isinstance(w.calls, int) or w.calls < 1 for w in workloads):
        raise TcompError("each workload of a job is called at least once a request")
    if share not in ("savings", "equal"):
        raise TcompError(f"share is 'savings' or 'equal', got {share!r}")
    if trials < len(workloads):
        raise TcompError(f"{trials} trials cannot give each of the job's {len(workloads)} workloads one")
    # NOTE: resuming, a workload the interrupted job never reached starts its search afresh
    resuming = bool(options.pop("resume", False))
    resume = {w.name: resuming and resumable(w.out, options.get("db")) for w in workloads}
    if resuming and not any(resume.values()):
        raise TcompError("nothing to resume: the tuning database holds no search of the job's workloads by this "
                         "tcomp version; run the job without resuming")
    with ExitStack() as stack:
        if isinstance(options.get("cluster"), str):
            options["cluster"] = _shared_actors(options["cluster"], stack)
        started = {}
        for w in workloads:
            progress = progress_for(w.name) if progress_for else None
            started[w.name] = stack.enter_context(searching(w.out, trials, progress=progress, resume=resume[w.name],
                                                            **options))
        finished = {n: s for n, s in started.items() if isinstance(s, SearchResult)}
        running = {n: s for n, s in started.items() if not isinstance(s, SearchResult)}
        counts = {n: 0 for n in names}
        order: list = []
        budget = trials
        first = max(1, trials // (2 * len(workloads)))
        for w in workloads:
            if w.name in running and budget > 0:
                rng, search = running[w.name]
                search.revalidate(trials)
                measured = search.step(rng, min(first, budget), first=True)
                counts[w.name] += measured
                budget -= measured
                order.append((w.name, measured, {}))
        calls = {w.name: w.calls for w in workloads}
        exhausted: set = set()
        left = budget  # NOTE: the trials after the first choices, cut into batches by _batch
        while budget > 0 and len(exhausted) < len(running):
            worth = {n: calls[n] * search.could_save() for n, (_, search) in running.items() if n not in exhausted}
            name = _next(worth, counts, share)
            rng, search = running[name]
            measured = search.step(rng, min(budget, _batch(search, left, 2 * len(running))))
            if not measured:
                exhausted.add(name)
                continue
            counts[name] += measured
            budget -= measured
            order.append((name, measured, worth))
        results = dict(finished)
        for name, (rng, search) in running.items():
            results[name] = search.select()
    return JobResult(results, counts, order)


def _shared_actors(address: str, stack: ExitStack):
    """One set of measuring actors on the cluster at ``address`` for every workload of
    the job (each search adds its bench to them), stopped when ``stack`` closes."""
    from .cluster import connect

    cluster = connect(address)
    actors = cluster.actors(on_gpus=cluster.gpus() > 0)
    stack.callback(actors.close)
    return actors


def _batch(search, left: int, decisions: int) -> int:
    """The candidates of the next batch: a search's own batch (``BATCH`` a measuring GPU),
    but no more than the trials ``left`` over ``decisions`` batches, at least one a GPU.
    Twenty trials left for ten workloads are ten batches of two, not two of eight: the
    share then decides ten times where the trials go, not twice."""
    parallel = search.measurer.parallel
    return max(parallel, min(search.BATCH * parallel, -(-left // decisions)))


def _next(worth: dict, counts: dict, share: str) -> str:
    """The workload the next batch goes to, of those in ``worth`` (what a request could
    still save by each): the most (ties: the fewest trials so far), or, with
    ``share="equal"``, the fewest trials so far."""
    if share == "equal":
        return min(worth, key=lambda n: (counts[n], n))
    return max(worth, key=lambda n: (worth[n], -counts[n]))


__all__ = ["JobResult", "JobWorkload", "tune"]
