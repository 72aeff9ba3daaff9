"""``tc.autoschedule``: a measured search over the space of ``tcomp.search.space``.

The procedure (docs/architecture.md, "Search"), one step per stage, in this order:

1. **space**: draw points (fusion boundaries and tilings) with a seeded generator;
2. **filters**: the primitives' errors, ``tc.check``, capacity (``tcomp.search.filters``);
3. **rank**: ``tc.estimate``'s predicted time;
4. **measure**: the most promising, in a runner process with validation before timing
   (``tcomp.search.measure``), built ahead in a pool of processes while the GPU measures;
5. **refine**: mutate the best measured (a tile size, a fusion choice, unrolling, vector
   width), screen the mutants, measure the best predicted, until ``trials`` is spent;
6. **select**: re-measure the last few contenders interleaved, so that noise does not
   pick the winner, and report the spread;
7. **record**: every candidate goes to the tuning database as it ends.

A second search of the same workload on the same target starts from the database:
candidates measured before are not measured again, and with ``trials=0`` the best record
is returned at once (the fastest measured; with ``model_only`` or no GPU, else the best
predicted that a model-only search validated), nothing screened or measured. A record
written by another tcomp version is re-measured (replayed and validated) before it can
win. Without a GPU, or with ``model_only``, the rank alone decides and the winner is
validated in the simulator (or on the GPU) at the algorithm's shape; ``measured`` is
then None.
"""

from __future__ import annotations

import os
import random
import tempfile
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..validation import SIMULATOR_THREADS_PER_SECOND
from .database import Record, TuningDatabase, current_target, tcomp_version
from .filters import Screened, Screener, rank_key
from .measure import Measurement, measure_batch, prepare_bench
from .runners import LocalMeasurer
from .space import Space

#: how many points to draw and screen before the first measurement, per trial
DRAWS_PER_TRIAL = 6
#: the fewest points drawn (model-only searches draw these and measure none)
MIN_DRAWS = 96
#: how many mutants of the best measured to screen per candidate measured in refinement
MUTANTS_PER_TRIAL = 4
#: how many contenders the final interleaved re-measurement compares
FINALISTS = 3
#: rounds of the interleaved re-measurement
FINAL_ROUNDS = 3



@dataclass
class SearchResult:
    """What ``tc.autoschedule`` returns (docs/language.md)."""

    schedule: object  # a tc.Schedule of the algorithm, the winner applied
    source: str  # the winner as Python text defining schedule(s, out)
    predicted: float | None  # the cost model's seconds for it
    measured: float | None  # its measured median seconds, None when nothing was measured
    records: list  # every candidate tried (tcomp.search.database.Record), in the order they ended
    spread: float | None = None  # the winner's (slowest - fastest) / median in the final re-measurement
    validated: str = ""  # how the winner's result was checked
    kendall_tau: float | None = None  # the cost model's rank correlation over the measured candidates
    description: str = ""  # the winner's point in words
    finalists: list = field(default_factory=list)  # (source, median, spread) of the re-measurement


class Progress:
    """What a search reports while it runs; the CLI's progress bar overrides these."""

    def stage(self, text: str) -> None:
        pass

    def update(self, *, screened: int = 0, built: int = 0, measured: int = 0, failed: int = 0,
               best: float | None = None) -> None:
        pass


def autoschedule(out, trials: int = 64, target="h200", db=None, model_only: bool = False, seed: int = 0, *,
                 workers: int | None = None, timeout: float = 120.0, executor: Executor | None = None,
                 gpus: int | None = None, progress: Progress | None = None, repeats: int = 10,
                 cluster: str | None = None, resume: bool = False) -> SearchResult:
    """Search for a fast, legal schedule of ``out`` (see the module docstring).

    ``trials`` bounds the candidates measured; ``db`` is a tuning database path (None: the
    default under the tcomp cache directory); ``workers`` the processes that screen and
    build (default: every CPU core); ``timeout`` the seconds one candidate may take in
    the runner; ``executor`` a ``concurrent.futures`` executor that runs
    ``measure_batch`` (default: one thread per visible GPU, each with its own runner).
    ``target`` (a name or a ``tcomp.target.Target``) is the GPU the space's tiling rules
    size their tiles for (shared memory, registers, SMs, matrix instructions) and the
    cost model ranks on.

    ``cluster`` ("auto", "HOST:PORT" or "ray://HOST:PORT") screens, builds and measures on
    a Ray cluster instead (``tcomp.search.cluster``; without a GPU in it, its workers
    validate the ``trials`` best-predicted candidates in the simulator); it may also be a
    ``cluster.ClusterActors``, measuring actors that several searches share (a job's).
    ``resume``
    continues the last search of ``out`` recorded in the database, which must be given
    the same ``trials`` and ``seed``: it makes the same choices, and a candidate that the
    interrupted search measured is taken from its record, not measured again.
    """
    options = dict(target=target, db=db, model_only=model_only, seed=seed, workers=workers, timeout=timeout,
                   executor=executor, gpus=gpus, progress=progress, repeats=repeats, cluster=cluster, resume=resume)
    with searching(out, trials, **options) as started:
        if isinstance(started, SearchResult):
            return started
        rng, search = started
        return search.run(rng, trials)


@contextmanager
def searching(out, trials: int, *, target="h200", db=None, model_only: bool = False, seed: int = 0,
              workers: int | None = None, timeout: float = 120.0, executor: Executor | None = None,
              gpus: int | None = None, progress: Progress | None = None, repeats: int = 10,
              cluster: str | None = None, resume: bool = False):
    """Steps 1 to 3 of ``autoschedule`` (its arguments): yields a finished
    ``SearchResult`` where nothing is left to measure (``trials=0`` from the database, a
    model-only search), else ``(rng, search)``, a measured search ready for its steps
    (``tcomp.search.job`` steps several); its measurer is closed on leaving."""
    from ..errors import TcompError
    from ..lang.canonical import workload_key

    if executor is not None and cluster is not None:
        raise TcompError("autoschedule takes an executor or a cluster, not both")
    progress = progress or Progress()
    rng = random.Random(seed)
    space = Space(out, target=target)  # NOTE: the tiling rules size their tiles by this GPU
    workers = workers or os.cpu_count() or 1
    shared = cluster if _shared_actors(cluster) else None
    joined = _join(shared.cluster if shared else cluster, progress) if cluster is not None else None
    measuring = not model_only and (_cluster_can_measure(joined) if joined else _can_measure())
    database = TuningDatabase(db)
    key = workload_key(out)
    job, replay = _job(database, key, resume)
    if trials == 0 and not resume:
        recorded = _recorded_best(out, database, key, measuring)
        if recorded is not None:
            yield recorded
            return
    progress.stage("screening" + (" on the cluster" if joined else ""))
    pool = _Pool(space, joined.screener(space, target) if joined else Screener(space, workers, target), progress)
    pool.add_seeds()
    pool.draw(rng, max(MIN_DRAWS, DRAWS_PER_TRIAL * trials))
    if not measuring and joined is None:
        yield _model_only(out, space, pool, database, key, progress, timeout, job, replay)
        return
    if joined is not None:
        measurer = shared.measurer(out, progress) if shared else joined.measurer(out, joined.gpus() > 0, progress)
        progress.stage(f"measuring on {measurer.describe()}")
        measuring_target = measurer.target
    else:
        measurer = LocalMeasurer(out, gpus or _gpu_count(), workers, executor, progress)
        measuring_target = current_target()
    try:
        if not measuring:
            yield _validate_on_cluster(out, pool, database, key, progress, timeout, trials, measurer, job, replay)
            return
        yield rng, _MeasuredSearch(out, space, pool, database, key, measuring_target, progress, timeout, repeats,
                                   measurer, job, replay)
    finally:
        measurer.close()


def _shared_actors(cluster) -> bool:
    """Is ``cluster`` a job's measuring actors (``cluster.ClusterActors``), not an address?"""
    if cluster is None or isinstance(cluster, str):
        return False
    from .cluster import ClusterActors

    return isinstance(cluster, ClusterActors)


def _join(cluster, progress: Progress):
    """The cluster at ``cluster`` (an address, or one joined already), joined."""
    from .cluster import connect

    joined = connect(cluster) if isinstance(cluster, str) else cluster
    progress.stage(f"joined {joined.describe()}")
    return joined


def _cluster_can_measure(joined) -> bool:
    """Does the cluster have a GPU to time candidates on (or the tests' stand-in clock)?"""
    from .measure import standin_timing

    return joined.gpus() > 0 or standin_timing()


def resumable(out, db=None) -> bool:
    """Does the tuning database ``db`` hold a search of ``out`` that ``resume=True`` would
    continue (one by this tcomp version)?"""
    from ..lang.canonical import workload_key

    return bool(_job_records(TuningDatabase(db), workload_key(out)))


def _job_records(database: TuningDatabase, key: str) -> list:
    """The records of ``key`` in ``database`` that name their search, by this tcomp
    version (what a resumed search continues)."""
    version = tcomp_version()
    return [r for r in database.records(key) if r.job and r.tcomp_version == version]


def _job(database: TuningDatabase, key: str, resume: bool) -> tuple:
    """The search's job name and, resuming, the records of the job it resumes (by
    schedule): the last job of ``key`` in ``database`` written by this tcomp version."""
    if not resume:
        import secrets
        import time

        return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}", {}
    from ..errors import TcompError

    records = _job_records(database, key)
    if not records:
        raise TcompError(f"nothing to resume: the tuning database {database.path} holds no search of this workload "
                         f"by tcomp {tcomp_version()}; run the search without resuming")
    job = records[-1].job
    return job, {r.schedule: r for r in records if r.job == job}


def _recorded_best(out, database: TuningDatabase, key: str, measuring: bool) -> SearchResult | None:
    """What ``trials=0`` returns: the best record of this tcomp version for ``out`` on this
    target, nothing screened or measured; None when the database holds none.

    The fastest measured ``ok`` record wins. A search that may not measure (``model_only``,
    no GPU) also accepts the best-predicted ``ok`` record, which a model-only search
    validated against the reference before it recorded it. Reading the database reports
    every corrupt line with a TuningDatabaseWarning, whichever way the search runs.
    """
    current = [r for r in database.records(key, current_target())
               if r.status == "ok" and r.tcomp_version == tcomp_version()]
    measured = [r for r in current if r.measured is not None]
    if measured:
        best = min(measured, key=lambda r: r.measured)
        how = "matched the reference when it was measured"
    else:
        predicted = [r for r in current if r.predicted is not None] if not measuring else []
        if not predicted:
            return None
        best = min(predicted, key=lambda r: r.predicted)
        how = "matched the reference when it was recorded (a model-only search)"
    return SearchResult(_winner_schedule(out, best.schedule), best.schedule, best.predicted, best.measured,
                        [best], spread=best.spread, validated=how,
                        description="the best record of the tuning database")


def _can_measure() -> bool:
    """Is there a GPU to time candidates on (not Numba's simulator; in the simulator, the
    tests' stand-in clock, ``measure.standin_timing``)?"""
    from ..codegen import simulator_enabled
    from .measure import standin_timing

    if simulator_enabled():
        return standin_timing()
    return _gpu_count() > 0


def _can_run_kernels() -> bool:
    """A GPU, or Numba's CUDA simulator, to run a candidate on."""
    from ..codegen import simulator_enabled

    return simulator_enabled() or _gpu_count() > 0


def _gpu_count() -> int:
    try:
        from numba import cuda

        return len(cuda.gpus) if cuda.is_available() else 0
    except Exception:  # NOTE: no driver, no device: the search runs on the model alone
        return 0


class _Pool:
    """Every point screened so far, by its source (distinct points can print alike)."""

    def __init__(self, space: Space, screener: Screener, progress: Progress):
        self.space = space
        self.screener = screener
        self.progress = progress
        self.seen: set = set()
        self.by_source: dict = {}
        self.seeds: set = set()

    def add(self, points: list) -> list:
        fresh = [p for p in points if p is not None and p not in self.seen]
        self.seen.update(fresh)
        added = []
        for screened in self.screener.screen(fresh):
            if screened.source and screened.source not in self.by_source:
                self.by_source[screened.source] = screened
                added.append(screened)
        self.progress.update(screened=len(fresh))
        return added

    def add_seeds(self) -> list:
        """Screen the rules' seed points (``Space.seed_points``) and remember them."""
        points = self.space.seed_points()
        self.seeds.update(points)
        return self.add(points)

    def draw(self, rng: random.Random, n: int) -> list:
        """Screen ``n`` drawn points: an equal share for each fusion choice."""
        fusions = self.space.tileable_fusions()
        points = [self.space.sample(rng, fusions[i % len(fusions)]) for i in range(n)]
        return self.add(points)

    def legal(self) -> list:
        return sorted((s for s in self.by_source.values() if s.status == "ok"), key=rank_key)


def _winner_schedule(out, source: str):
    from ..schedule.schedule import replay

    return replay(source, out)


def _model_only(out, space, pool: _Pool, database, key, progress: Progress, timeout: float, job: str,
                replay: dict) -> SearchResult:
    """Rank with the cost model alone; validate the best-predicted point that replays
    and computes the right result (a resumed job's validations taken from its records)."""
    from ..codegen import simulator_enabled

    legal = pool.legal()
    if not legal:
        raise _no_legal(pool)
    progress.stage("validating")
    target = current_target()
    records = []
    best = legal[0]
    if not _can_run_kernels():
        return _unvalidated(out, best, "not validated: no GPU here and Numba's CUDA simulator is off "
                                       "(NUMBA_ENABLE_CUDASIM=1 runs it; `tcomp autoschedule` switches it on)")
    too_big = _too_big_for_the_simulator(out, best, timeout, simulator_enabled())
    if too_big is not None:
        return too_big
    with tempfile.TemporaryDirectory(prefix="tcomp-bench-") as folder:
        bench = prepare_bench(out, folder)
        for screened in legal[:FINALISTS]:
            record = replay.get(screened.source)
            if record is None:
                m = measure_batch(bench, [screened.source], timeout=timeout, repeats=3, warmup=1, checked=True)[0]
                record = _record(key, target, screened, m, job)
                database.append(record)
            records.append(record)
            if record.status == "ok":
                return _validated(out, screened, record, records, "")
            progress.update(failed=1)
    return _first_validated(out, pool, legal[:FINALISTS], records, "", timeout)


def _validate_on_cluster(out, pool: _Pool, database, key, progress: Progress, timeout: float, trials: int,
                         measurer, job: str, replay: dict) -> SearchResult:
    """A model-only search on a cluster (no GPU in it, or ``model_only``): the ``trials``
    best-predicted candidates validated on its workers at once, each recorded as it
    ends; the best-predicted that computes the right result wins, as it would here."""
    legal = pool.legal()
    if not legal:
        raise _no_legal(pool)
    too_big = _too_big_for_the_simulator(out, legal[0], timeout, not measurer.on_gpus)
    if too_big is not None:
        return too_big
    chosen = legal[:max(1, trials)]
    progress.stage(f"validating {len(chosen)} on {measurer.describe()}")
    ended = {s.source: replay[s.source] for s in chosen if s.source in replay}
    fresh = [s for s in chosen if s.source not in ended]

    def on_result(index, m):
        record = _record(key, measurer.target, fresh[index], m, job)
        database.append(record)
        ended[record.schedule] = record
        progress.update(measured=1, failed=int(m.status != "ok"))

    measurer.measure([s.source for s in fresh], on_result, timeout=timeout, repeats=3, warmup=1, checked=True)
    return _first_validated(out, pool, chosen, [ended[s.source] for s in chosen], " on the cluster", timeout)


def _first_validated(out, pool: _Pool, chosen: list, records: list, where: str, timeout: float) -> SearchResult:
    """Of the ``chosen`` candidates (best predicted first) and their validations'
    ``records``: the first that computed the right result; where none did but some ran
    past the time limit (the simulator is slow on a large shape; a timeout shows nothing
    wrong), the first of those, unvalidated, saying so; else the error."""
    for screened, record in zip(chosen, records):
        if record.status == "ok":
            return _validated(out, screened, record, records, where)
    slow = [(screened, record) for screened, record in zip(chosen, records) if record.status == "timeout"]
    if slow:
        best, _ = slow[0]
        wrong = len(records) - len(slow)
        return _unvalidated(out, best, f"not validated: the CUDA simulator{where} ran past the {timeout:g} s limit "
                                       f"on {len(slow)} of the best-predicted candidates"
                                       + (f" ({wrong} others failed)" if wrong else "")
                                       + "; check the schedule at a smaller shape, or on a GPU", records)
    raise _no_legal(pool, records)


def _validated(out, screened: Screened, record: Record, records: list, where: str) -> SearchResult:
    how = "on the GPU" if record.measured is not None else "in the CUDA simulator"
    return SearchResult(_winner_schedule(out, screened.source), screened.source, screened.predicted, None, records,
                        validated=f"matches tc.evaluate {how}{where}", description=screened.point.describe())


def _unvalidated(out, best: Screened, why: str, records: list = ()) -> SearchResult:
    return SearchResult(_winner_schedule(out, best.source), best.source, best.predicted, None, list(records),
                        validated=why, description=best.point.describe())


def _too_big_for_the_simulator(out, best: Screened, timeout: float, simulated: bool) -> SearchResult | None:
    """The unvalidated result where the simulator would take longer than ``timeout`` to
    run ``best``; None where it would not (or where a GPU runs it)."""
    if not simulated:
        return None
    from ..lower import lower
    from ..validation import launch_threads

    threads = launch_threads(lower(_winner_schedule(out, best.source)))
    if threads <= SIMULATOR_THREADS_PER_SECOND * timeout:
        return None
    return _unvalidated(out, best, f"not validated: the CUDA simulator would run {threads:,} threads here (about "
                                   f"{threads / SIMULATOR_THREADS_PER_SECOND / 60:,.0f} minutes); check the "
                                   f"schedule at a smaller shape, or on a GPU")


def _no_legal(pool: _Pool, records=()):
    from ..errors import TcompError

    statuses: dict = {}
    for s in list(pool.by_source.values()) + list(records):
        statuses[s.status] = statuses.get(s.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    return TcompError(f"the search found no candidate that is legal and correct ({summary or 'none drawn'})")


def _record(key, target, screened: Screened, m: Measurement | None = None, job: str = "") -> Record:
    if m is None:
        return Record(workload=key, target=target, schedule=screened.source, status=screened.status,
                      predicted=screened.predicted, error=screened.error, job=job)
    return Record(workload=key, target=target, schedule=screened.source, status=m.status,
                  predicted=screened.predicted, measured=m.measured, spread=m.spread, error=m.error, job=job)


def _measurement_of(r: Record) -> Measurement:
    return Measurement(r.schedule, r.status, r.measured, r.spread, (), r.error)


class _MeasuredSearch:
    """Steps 4 to 7 of the module docstring, measuring through ``measurer`` (this
    machine's GPUs, ``runners.LocalMeasurer``, or a cluster's,
    ``cluster.ClusterMeasurer``). With ``replay`` (a resumed job's records, by source),
    a candidate the job measured before is taken from its record, not measured again."""

    BATCH = 8  # candidates measured per GPU per refinement step

    def __init__(self, out, space, pool: _Pool, database, key, target, progress, timeout, repeats, measurer,
                 job: str, replay: dict):
        self.out, self.space, self.pool, self.database = out, space, pool, database
        self.key, self.target, self.progress = key, target, progress
        self.timeout, self.repeats = timeout, repeats
        self.measurer = measurer
        self.job, self.replay = job, dict(replay)
        self.records: list = []
        self.measured: dict = {}  # source -> Measurement of this search or the database
        self.prior_versions: list = []
        self._load_database()

    def _load_database(self):
        for r in self.database.records(self.key, self.target):
            if r.tcomp_version != tcomp_version():
                if r.status == "ok":
                    self.prior_versions.append(r)  # NOTE: replayed and validated before it can win
                continue
            if r.schedule in self.replay:  # NOTE: the resumed job's own: counted when the job reaches it again
                continue
            self.measured[r.schedule] = _measurement_of(r)
            if r.schedule not in self.pool.by_source:
                self.pool.by_source[r.schedule] = Screened(None, r.schedule, "ok", r.predicted)

    # ------------------------------------------------------------------ measuring

    def _measure(self, screened: list) -> list:
        """Measure ``screened`` candidates (those the resumed job measured are taken from
        its records); each is recorded as it ends."""
        if not screened:
            return []
        fresh = [s for s in screened if s.source not in self.replay]
        for s in screened:
            if s.source in self.replay:
                self._take(s, _measurement_of(self.replay.pop(s.source)), record=False)

        def on_result(index, m):
            self._take(fresh[index], m, record=True)

        # NOTE: a candidate screened in this search has passed tc.check; one from the
        # database (no point) is checked again where it is built
        self.measurer.measure([s.source for s in fresh], on_result, timeout=self.timeout, repeats=self.repeats,
                              checked=all(s.point is not None for s in fresh))
        return [(s, self.measured[s.source]) for s in screened]

    def _take(self, s: Screened, m: Measurement, record: bool) -> None:
        self.measured[s.source] = m
        entry = _record(self.key, self.target, s, m, self.job)
        self.records.append(entry)
        if record:
            self.database.append(entry)
        self.progress.update(measured=1, failed=int(m.status != "ok"), best=self._best_time())

    def _best_time(self):
        times = [m.measured for m in self.measured.values() if m.status == "ok" and m.measured is not None]
        return min(times, default=None)

    def _ranked_measured(self) -> list:
        ok = [(m.measured, src) for src, m in self.measured.items() if m.status == "ok" and m.measured is not None]
        return [src for _, src in sorted(ok)]

    # ------------------------------------------------------------------ the procedure

    def run(self, rng: random.Random, trials: int) -> SearchResult:
        self.revalidate(trials)
        budget = trials
        if budget > 0:
            budget -= self.step(rng, max(1, budget // 2), first=True)
        while budget > 0:
            measured = self.step(rng, min(budget, self.BATCH * self.measurer.parallel))
            if not measured:
                break
            budget -= measured
        return self.select()

    def revalidate(self, trials: int) -> None:
        """Measure the best records of other tcomp versions again before they can win."""
        if self.prior_versions:
            self.progress.stage(f"re-validating {len(self.prior_versions)} old records")
            olds = [Screened(None, r.schedule, "ok", r.predicted) for r in self.prior_versions[:max(trials, 4)]]
            for s in olds:
                self.pool.by_source.setdefault(s.source, s)
            self._measure(olds)

    def step(self, rng: random.Random, n: int, first: bool = False) -> int:
        """Measure up to ``n`` more candidates: the first choices (``first``), else the
        refinements of the best measured; how many were measured (0: none was left)."""
        self.progress.stage("measuring" if first else "refining")
        batch = self._first_choices(n) if first else self._refinements(rng, n)
        self._measure(batch)
        return len(batch)

    def could_save(self) -> float:
        """Seconds a call that more trials could still save: the best measured time less
        the best prediction among the candidates not measured yet, scaled by the least
        that the model was off by for a candidate measured (measured over predicted: where
        the model ranked two alike and one measured faster, the candidates it ranks alike
        with the best may too); 0 when nothing is left or nothing was measured."""
        ranked = self._ranked_measured()
        left = [s for s in self.pool.legal() if s.source not in self.measured]
        if not ranked or not left:
            return 0.0
        measured = self.measured[ranked[0]].measured
        ratios = [self.measured[src].measured / self.pool.by_source[src].predicted for src in ranked
                  if src in self.pool.by_source and self.pool.by_source[src].predicted]
        scale = min(ratios) if ratios else 1.0
        return max(0.0, measured - left[0].predicted * scale)

    def _first_choices(self, n: int) -> list:
        """The ``n`` best-predicted candidates not measured yet: the rules' seeds first
        (``Rule.seeds``: what hand schedules measured fast; a few at most), then the best of
        every fusion choice that no seed stands for (so that each partition is measured at
        least once: the FFN has eight, as many as the first trials of a 16-trial search,
        which left no room for a seed after them), then the best of the rest."""
        legal = [s for s in self.pool.legal() if s.source not in self.measured]
        chosen = [s for s in legal if s.point in self.pool.seeds]
        partitions = {s.point.fusion for s in chosen}
        for s in legal:
            fusion = s.point.fusion if s.point is not None else None
            if fusion not in partitions:
                partitions.add(fusion)
                chosen.append(s)
        for s in legal:
            if len(chosen) >= n:
                break
            if s not in chosen:
                chosen.append(s)
        return chosen[:n]

    def _refinements(self, rng: random.Random, n: int) -> list:
        """The next ``n`` candidates: the best measured point's tilings under every other
        fusion choice (the partitions compared at equal tile sizes), then the
        best-predicted mutants of the three best measured."""
        best = [self.pool.by_source[src] for src in self._ranked_measured()[:3]]
        parents = [s.point for s in best if s.point is not None]
        if not parents:
            self.pool.draw(rng, MUTANTS_PER_TRIAL * n)
            return [s for s in self.pool.legal() if s.source not in self.measured][:n]
        siblings = {self.space.with_fusion(parents[0], fusion, rng) for fusion in self.space.tileable_fusions()
                    if fusion != parents[0].fusion} - {None}
        mutants = []
        for _ in range(MUTANTS_PER_TRIAL * n):
            child = self.space.mutate(rng.choice(parents), rng)
            if child is not None:
                mutants.append(child)
        self.pool.add(sorted(siblings, key=repr) + mutants)
        fresh = [s for s in self.pool.legal() if s.source not in self.measured]
        first = [s for s in fresh if s.point in siblings]
        return (first + [s for s in fresh if s.point not in siblings])[:n]

    def select(self) -> SearchResult:
        """Step 6: the finalists measured again, interleaved; the winner."""
        ranked = [src for src in self._ranked_measured()
                  if self.measured[src].measured is not None][:FINALISTS]
        if not ranked:
            raise _no_legal(self.pool, self.records)
        self.progress.stage("final re-measure")
        times: dict = {src: [] for src in ranked}
        for _ in range(FINAL_ROUNDS):
            round_ = self.measurer.measure_batch(ranked, timeout=self.timeout, repeats=self.repeats, checked=True)
            for src, m in zip(ranked, round_):
                if m.status == "ok":
                    times[src].extend(m.times)
        import numpy as np

        finalists = []
        for src, ts in times.items():
            if ts:
                median = float(np.median(ts))
                finalists.append((src, median, float((max(ts) - min(ts)) / median)))
        finalists.sort(key=lambda f: f[1])
        if not finalists:
            raise _no_legal(self.pool, self.records)
        source, median, spread = finalists[0]
        screened = self.pool.by_source[source]
        point = screened.point
        return SearchResult(_winner_schedule(self.out, source), source, screened.predicted, median, self.records,
                            spread=spread, validated="matches tc.evaluate on the GPU",
                            kendall_tau=kendall_tau(self._pairs()),
                            description=point.describe() if point is not None else "from the tuning database",
                            finalists=finalists)

    def _pairs(self) -> list:
        return [(self.pool.by_source[src].predicted, m.measured) for src, m in self.measured.items()
                if m.status == "ok" and m.measured is not None and src in self.pool.by_source
                and self.pool.by_source[src].predicted is not None]


def kendall_tau(pairs: list) -> float | None:
    """Kendall's tau-b of ``[(predicted, measured), ...]``; None for fewer than 2 pairs."""
    n = len(pairs)
    if n < 2:
        return None
    concordant = discordant = ties_x = ties_y = 0
    for a in range(n):
        for b in range(a + 1, n):
            dx = pairs[a][0] - pairs[b][0]
            dy = pairs[a][1] - pairs[b][1]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = ((concordant + discordant + ties_x) * (concordant + discordant + ties_y)) ** 0.5
    return (concordant - discordant) / denominator if denominator else None


__all__ = ["Progress", "SearchResult", "autoschedule", "kendall_tau"]
