"""The search on a Ray cluster (``pip install "tcomp[cluster]"``): ``tc.autoschedule(out, ...,
cluster="auto" | "HOST:PORT" | "ray://HOST:PORT")``.

The driver (the process that called ``tc.autoschedule``) keeps the search's decisions and
is the only writer of the tuning database; the cluster does the work:

- **screening**: the points go out in chunks as tasks of one CPU each; a task screens its
  chunk as the local search does (each point in a forked process with a time limit);
- **measuring**: one actor per GPU of the cluster (``num_gpus=1``), wherever the GPU is,
  each holding a runner (``tcomp.search.measure``) on its node. The bench (the algorithm,
  its inputs and references) goes into Ray's object store once; each actor writes it to
  a folder of its own node, so no file system is shared;
- **building**: each candidate is built ahead of its measurement by a task of one CPU
  pinned to the node of the actor that will measure it, into that node's kernel cache,
  and the actor's call waits for that build (Ray resolves the build's result, an argument
  of the call, first), so that the GPU measures while later candidates compile;
- **without a GPU** in the cluster the actors take one CPU each and validate candidates
  in Numba's CUDA simulator (the search is then model-only, as it is on a machine
  without a GPU).

Every candidate is a call of its own, so its result reaches the driver, and the
database, as soon as it ends. When a node dies, the candidates its actor had not
finished are measured again on another actor (``RETRIES`` times at most); one left with
no actor, or out of retries, is recorded as ``crash`` with the node named.

Every node needs tcomp installed, at the driver's version (checked when the actors
start), and the same Python packages.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from ..errors import TcompError
from .measure import Measurement

#: what installs Ray
CLUSTER_EXTRA = 'pip install "tcomp[cluster]"'
#: how many times a candidate whose node died is measured again on another node
RETRIES = 1
#: seconds to wait for the measuring actors to start before giving up
START_SECONDS = 120.0
#: points per screening task, at most
SCREEN_CHUNK = 8


class ClusterError(TcompError):
    """The cluster cannot be reached or cannot run the search."""


def _ray():
    try:
        import ray
    except ImportError:
        raise ClusterError(f"searching on a cluster needs Ray, which is not installed: {CLUSTER_EXTRA}") from None
    return ray


def connect(address: str) -> "Cluster":
    """Join the Ray cluster at ``address`` ("auto": the one this machine belongs to, as
    ``RAY_ADDRESS`` or a local ``ray start`` says; "HOST:PORT"; "ray://HOST:PORT" through
    Ray Client). Joining the cluster that this process already joined is a no-op."""
    if not isinstance(address, str) or not address.strip():
        raise ClusterError(f"a cluster address is 'auto', 'HOST:PORT' or 'ray://HOST:PORT', got {address!r}")
    ray = _ray()
    address = address.strip()
    if ray.is_initialized():
        joined = ray.get_runtime_context().gcs_address
        if address not in ("auto", joined, f"ray://{joined}"):
            raise ClusterError(f"this process has joined the Ray cluster at {joined} already; it cannot search on "
                               f"{address!r} too (ray.shutdown() leaves the first)")
        return Cluster(ray, joined)
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise ClusterError(f"no Ray cluster could be joined at {address!r}: {err}") from None
    return Cluster(ray, address)


@dataclass(frozen=True)
class WorkerInfo:
    """Where a measuring actor runs and what it measures on."""

    node: str  # the node's address and id, shortened: how errors name it
    node_id: str  # Ray's id of the node
    target: dict  # tcomp.search.database.current_target() on that node
    tcomp_version: str


class Cluster:
    """A joined Ray cluster: what it holds, and the search's work on it."""

    def __init__(self, ray, address: str):
        self.ray = ray
        self.address = address

    def resources(self) -> dict:
        return dict(self.ray.cluster_resources())

    def gpus(self) -> int:
        return int(self.resources().get("GPU", 0))

    def cpus(self) -> int:
        return int(self.resources().get("CPU", 0))

    def describe(self) -> str:
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        return f"{len(nodes)} node(s), {self.cpus()} CPUs, {self.gpus()} GPUs (Ray at {self.address})"

    def screener(self, space, target) -> "ClusterScreener":
        return ClusterScreener(self, space, target)

    def actors(self, on_gpus: bool) -> "ClusterActors":
        """Start the measuring actors: one per GPU, or (``on_gpus`` False) one per CPU but
        one, validating in the simulator."""
        return ClusterActors(self, on_gpus)

    def measurer(self, out, on_gpus: bool, progress=None) -> "ClusterMeasurer":
        """Measuring actors of one search of ``out`` (``actors``), stopped when the
        measurer closes. ``progress`` (the search's ``Progress``) is told when a node
        dies."""
        actors = self.actors(on_gpus)
        try:
            measurer = actors.measurer(out, progress)
        except BaseException:
            actors.close()
            raise
        measurer.owns = True
        return measurer


# ---------------------------------------------------------------------- screening


def _screen_chunk(space, points, target, seconds):
    from .filters import Screener

    return Screener(space, 1, target, seconds).screen(points)


class ClusterScreener:
    """``Screener.screen`` with the points spread over the cluster's CPUs (same results,
    same order)."""

    def __init__(self, cluster: Cluster, space, target):
        from .filters import CHECK_SECONDS

        self.cluster = cluster
        self.space = cluster.ray.put(space)
        self.target = target
        self.seconds = CHECK_SECONDS
        self.task = cluster.ray.remote(num_cpus=1, max_retries=3)(_screen_chunk)

    def screen(self, points: list) -> list:
        if not points:
            return []
        size = max(1, min(SCREEN_CHUNK, -(-len(points) // max(1, 2 * self.cluster.cpus()))))
        chunks = [points[n:n + size] for n in range(0, len(points), size)]
        refs = [self.task.remote(self.space, chunk, self.target, self.seconds) for chunk in chunks]
        return [screened for part in self.cluster.ray.get(refs) for screened in part]


# ---------------------------------------------------------------------- measuring


def read_bench(folder: str) -> dict:
    """The files of a bench folder (``measure.prepare_bench``) as ``{name: bytes}``."""
    files = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            files[name] = f.read()
    return files


def write_bench(files: dict) -> str:
    """A new folder on this node holding the bench ``files``; its path."""
    folder = tempfile.mkdtemp(prefix="tcomp-bench-")
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return folder


class MeasuringWorker:
    """The actor of one GPU (or, without one, of one CPU running the simulator): the
    benches of the searches it serves, each written to its node, and a runner
    (``measure._Runner``) for each that keeps one measuring process at a time."""

    def __init__(self, simulated: bool, standin: bool):
        if simulated:  # NOTE: read by the runner's child when it first imports numba
            os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        if standin:  # NOTE: the driver's tests' stand-in clock (measure.standin_timing), passed on
            os.environ["TCOMP_MEASURE_STANDIN"] = "1"
        self.runners: dict = {}  # bench name -> _Runner

    def info(self) -> WorkerInfo:
        import ray

        from .database import current_target, tcomp_version

        node = ray.get_runtime_context().get_node_id()
        return WorkerInfo(f"{ray.util.get_node_ip_address()} ({node[:8]})", node, current_target(), tcomp_version())

    def add_bench(self, name: str, files: dict) -> str:
        """Write the bench ``files`` to this node as ``name``; its folder."""
        from .measure import _Runner

        folder = write_bench(files)
        self.runners[name] = _Runner(folder, None)
        return folder

    def measure(self, bench: str, source: str, built: str, timeout: float, repeats: int, warmup: int,
                checked: bool) -> Measurement:
        """Validate and time ``source`` against the bench ``bench`` (``built``: the build
        task's answer, which Ray waits for before this call runs; unused)."""
        return self.runners[bench].measure(source, timeout, repeats, warmup, checked)

    def measure_batch(self, bench: str, sources: list, timeout: float, repeats: int, warmup: int,
                      checked: bool) -> list:
        """One measurement of each of ``sources``, in order, on this GPU (the search's
        interleaved final rounds)."""
        return [self.runners[bench].measure(s, timeout, repeats, warmup, checked) for s in sources]


def _build_on_node(bench: str, source: str, checked: bool) -> str:
    from .measure import prebuild

    return prebuild(bench, source, checked)


_DIED = ("RayActorError", "WorkerCrashedError", "NodeDiedError")


def _died(ray) -> tuple:
    """The exceptions by which Ray says an actor's process or node is gone."""
    return tuple(getattr(ray.exceptions, name) for name in _DIED)


class ClusterActors:
    """The measuring actors of a cluster, shared by the searches that measure on it (one
    search, or every workload of a job: ``tcomp.search.job``), and the candidates'
    distribution over them (see the module docstring). Each search adds its bench
    (``measurer``) and measures through the ``ClusterMeasurer`` it gets back."""

    def __init__(self, cluster: Cluster, on_gpus: bool):
        ray = cluster.ray
        self.ray, self.cluster, self.on_gpus = ray, cluster, on_gpus
        count = cluster.gpus() if on_gpus else max(1, cluster.cpus() - 1)
        if count < 1:
            raise ClusterError(f"the cluster at {cluster.address} has no GPU to measure on")
        actor = ray.remote(num_gpus=1, num_cpus=0)(MeasuringWorker) if on_gpus else \
            ray.remote(num_cpus=1)(MeasuringWorker)
        from .measure import standin_timing

        workers = [actor.remote(not on_gpus, standin_timing()) for _ in range(count)]
        answers = [w.info.remote() for w in workers]
        ray.wait(answers, num_returns=count, timeout=START_SECONDS)
        infos, started = [], []
        for worker, answer in zip(workers, answers):
            try:
                infos.append(ray.get(answer, timeout=0))
                started.append(worker)
            except (ray.exceptions.GetTimeoutError, *_died(ray)):
                ray.kill(worker)  # NOTE: one that did not start (its node died, no room for it) is left out
        if not started:
            raise ClusterError(f"none of the cluster's {count} measuring actors started within {START_SECONDS:g} s "
                               f"({cluster.describe()})")
        from .database import tcomp_version

        stale = [i for i in infos if i.tcomp_version != tcomp_version()]
        if stale:
            for worker in started:
                ray.kill(worker)
            raise ClusterError(f"node {stale[0].node} has tcomp {stale[0].tcomp_version}, the driver "
                               f"{tcomp_version()}: install the same version on every node")
        # NOTE: timings belong to one kind of GPU: the most common one measures, the others stay idle
        targets = [i.target for i in infos]
        self.target = max(targets, key=targets.count)
        self.workers = {w: i for w, i in zip(started, infos) if i.target == self.target}
        for worker, info in zip(started, infos):
            if worker not in self.workers:
                ray.kill(worker)
        self.left_out = len(started) - len(self.workers)
        self.build = ray.remote(num_cpus=1)(_build_on_node)
        self.benches: dict = {}  # bench name -> {worker: its folder on the worker's node}

    @property
    def parallel(self) -> int:
        """Candidates measured at once."""
        return max(1, len(self.workers))

    def describe(self) -> str:
        """How many actors measure, on which GPU, on which nodes."""
        kind = self.target.get("gpu", "?")
        nodes = sorted({info.node for info in self.workers.values()})
        text = f"{len(self.workers)} measuring actor(s) on {kind} at {', '.join(nodes)}"
        return text + (f" ({self.left_out} on other GPUs left out)" if self.left_out else "")

    def measurer(self, out, progress=None) -> "ClusterMeasurer":
        """The measurer of one search of ``out``: its bench (the algorithm, inputs and
        references) goes into Ray's object store once and is written on every actor's
        node. ``progress`` (the search's ``Progress``) is told when a node dies."""
        from .measure import prepare_bench

        ray = self.ray
        name = f"bench{len(self.benches)}"
        with tempfile.TemporaryDirectory(prefix="tcomp-bench-") as folder:
            files = ray.put(read_bench(prepare_bench(out, folder)))
        answers = {w: w.add_bench.remote(name, files) for w in self.workers}
        folders = {}
        for worker, answer in answers.items():
            try:
                folders[worker] = ray.get(answer)
            except _died(ray):
                folders[worker] = None
        for worker in [w for w, f in folders.items() if f is None]:
            self._lose(worker, progress)
            folders.pop(worker)
        if not self.workers:
            raise ClusterError(f"every measuring actor of the cluster at {self.cluster.address} died")
        self.benches[name] = folders
        return ClusterMeasurer(self, name, progress)

    def _lose(self, worker, progress) -> str:
        """Forget ``worker``, whose node died; that node's name."""
        node = self.workers.pop(worker).node
        if progress is not None:
            progress.stage(f"node {node} died; its candidates go to the other actors")
        return node

    def _submit(self, bench: str, worker, source: str, timeout: float, repeats: int, warmup: int, checked: bool):
        built = ""  # NOTE: the simulator's actors hold every CPU; their runner builds
        if self.on_gpus:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            strategy = NodeAffinitySchedulingStrategy(self.workers[worker].node_id, soft=False)
            built = self.build.options(scheduling_strategy=strategy).remote(self.benches[bench][worker], source,
                                                                            checked)
        return worker.measure.remote(bench, source, built, timeout, repeats, warmup, checked)

    def measure(self, bench: str, sources: list, on_result, progress=None, *, timeout: float, repeats: int,
                warmup: int = 3, checked: bool = False) -> list:
        """Measure ``sources`` against ``bench`` on the actors, round robin;
        ``on_result(index, measurement)`` as each ends (in whatever order they end); the
        measurements in the order of ``sources``."""
        ray = self.ray
        results: list = [None] * len(sources)
        attempts = [0] * len(sources)
        pending = {}  # ref -> (index, worker)
        live = list(self.workers)
        dead: dict = {}  # worker -> its node

        def assign(index: int, turn: int) -> None:
            worker = live[turn % len(live)]
            pending[self._submit(bench, worker, sources[index], timeout, repeats, warmup, checked)] = (index, worker)

        for index in range(len(sources)):
            assign(index, index)
        turn = len(sources)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index, worker = pending.pop(ref)
                try:
                    m = ray.get(ref)
                except _died(ray) as err:
                    if worker in live:
                        live.remove(worker)
                        dead[worker] = self._lose(worker, progress)
                    attempts[index] += 1
                    if live and attempts[index] <= RETRIES:
                        assign(index, turn)
                        turn += 1
                        continue
                    why = "no other measuring actor was left" if not live else f"{attempts[index]} nodes died"
                    m = Measurement(sources[index], "crash",
                                    error=f"the node {dead[worker]} measuring it died ({type(err).__name__}); {why}")
                results[index] = m
                on_result(index, m)
        return results

    def measure_batch(self, bench: str, sources: list, progress=None, *, timeout: float, repeats: int,
                      warmup: int = 3, checked: bool = False) -> list:
        """One measurement of each of ``sources`` in order on one actor (the final
        interleaved rounds), on the next actor if its node dies."""
        ray = self.ray
        for worker in list(self.workers):
            try:
                return ray.get(worker.measure_batch.remote(bench, sources, timeout, repeats, warmup, checked))
            except _died(ray):
                self._lose(worker, progress)
        return [Measurement(s, "crash", error="no measuring actor was left on the cluster") for s in sources]

    def close(self) -> None:
        """Stop the actors (those of nodes still alive; nothing once this process has
        left the cluster)."""
        if self.ray.is_initialized():
            for worker in self.workers:
                try:
                    self.ray.kill(worker)
                except (self.ray.exceptions.RayError, ValueError):  # NOTE: its node is gone
                    pass
        self.workers = {}


class ClusterMeasurer:
    """What one search measures through: its bench on the cluster's actors (the
    interface of ``runners.LocalMeasurer``). Closing it stops the actors when it owns
    them (a search alone), not when a job shares them."""

    def __init__(self, actors: ClusterActors, bench: str, progress=None, owns: bool = False):
        self.actors, self.bench, self.progress, self.owns = actors, bench, progress, owns
        self.target = actors.target

    @property
    def parallel(self) -> int:
        return self.actors.parallel

    @property
    def on_gpus(self) -> bool:
        """Do the actors measure on GPUs (False: they validate in the simulator)?"""
        return self.actors.on_gpus

    def describe(self) -> str:
        return self.actors.describe()

    def measure(self, sources: list, on_result, **options) -> list:
        return self.actors.measure(self.bench, sources, on_result, self.progress, **options)

    def measure_batch(self, sources: list, **options) -> list:
        return self.actors.measure_batch(self.bench, sources, self.progress, **options)

    def close(self) -> None:
        if self.owns:
            self.actors.close()


__all__ = ["CLUSTER_EXTRA", "Cluster", "ClusterActors", "ClusterError", "ClusterMeasurer", "ClusterScreener", "connect"]
