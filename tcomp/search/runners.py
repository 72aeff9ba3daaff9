"""Where the search's candidates are built and measured on this machine: a pool of build
processes and one measuring thread per GPU (``LocalMeasurer``). The cluster's counterpart,
with the same methods, is ``tcomp.search.cluster.ClusterMeasurer``.

Both take candidates as schedule sources and call ``on_result(index, measurement)`` as
each one ends, so that the search records it at once; both return the measurements in
the order of the sources.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import Executor, ThreadPoolExecutor

from .measure import measure_batch, prebuild, prepare_bench


class DeviceSlots:
    """The GPUs as slots that batches take in turn: a batch takes the free slot that has
    waited longest (``measure_batch``'s ``gpu``) and gives it back when it is timed, so
    that two batches are never timed on one GPU at once (unless more workers than GPUs
    were asked for) and consecutive batches go round the GPUs, whichever thread runs
    them (a thread pool reuses an idle thread)."""

    def __init__(self, workers: int):
        import queue

        self.free = queue.SimpleQueue()
        for worker in range(workers):
            self.free.put(worker)

    def measure(self, bench, sources, **kwargs):
        worker = self.free.get()
        try:
            return measure_batch(bench, sources, gpu=worker, **kwargs)
        finally:
            self.free.put(worker)


class LocalMeasurer:
    """Candidates built ahead in a pool of processes and measured in batches, one
    measuring thread per GPU (or through a given ``concurrent.futures`` executor)."""

    BATCH = 8  # candidates a runner measures per call

    def __init__(self, out, gpus: int, workers: int, executor: Executor | None = None, progress=None):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.gpus = max(1, gpus)
        self.progress = progress
        self.executor = executor or ThreadPoolExecutor(self.gpus)
        self.own_executor = executor is None
        # NOTE: with the default executor each batch takes a free device for its timing; a given executor's
        # workers measure wherever their own environment puts them
        self.devices = DeviceSlots(self.gpus) if self.own_executor and self.gpus > 1 else None
        # NOTE: spawned, not forked: a build creates a CUDA context, which a forked child of
        # a process that has one cannot
        self.builders = ProcessPoolExecutor(max(1, workers - 1), mp_context=multiprocessing.get_context("spawn")) \
            if workers > 1 else None
        self.folder = tempfile.TemporaryDirectory(prefix="tcomp-bench-")
        self.bench = prepare_bench(out, self.folder.name)

    @property
    def parallel(self) -> int:
        """Candidates measured at once."""
        return self.gpus

    def describe(self) -> str:
        return f"{self.gpus} GPU(s) of this machine"

    def measure(self, sources: list, on_result, *, timeout: float, repeats: int, checked: bool = False) -> list:
        """Every source built in the pool at once, and each batch sent to a runner as soon
        as its own builds are done, so that the GPU measures while later candidates
        compile; ``on_result(index, measurement)`` in order."""
        from concurrent.futures import TimeoutError as FutureTimeout

        if not sources:
            return []
        batches = [list(range(n, min(n + self.BATCH, len(sources)))) for n in range(0, len(sources), self.BATCH)]
        builds = [[self.builders.submit(prebuild, self.bench, sources[i], checked) for i in batch]
                  if self.builders else [] for batch in batches]
        futures = []
        for batch, pending in zip(batches, builds):
            for f in pending:
                try:
                    f.result(timeout=timeout)
                except FutureTimeout:  # NOTE: the runner meets the same build and records its timeout
                    pass
            if self.progress is not None:
                self.progress.update(built=len(batch))
            measure = self.devices.measure if self.devices is not None else measure_batch
            futures.append(self.executor.submit(measure, self.bench, [sources[i] for i in batch],
                                                timeout=timeout, repeats=repeats, checked=checked))
        results: list = [None] * len(sources)
        for batch, future in zip(batches, futures):
            for index, m in zip(batch, future.result()):
                results[index] = m
                on_result(index, m)
        return results

    def measure_batch(self, sources: list, *, timeout: float, repeats: int, checked: bool = False) -> list:
        """One measurement of each source, in order, in one runner (interleaved rounds)."""
        return self.executor.submit(measure_batch, self.bench, sources, timeout=timeout, repeats=repeats,
                                    checked=checked).result()

    def close(self) -> None:
        if self.own_executor:
            self.executor.shutdown()
        if self.builders is not None:
            self.builders.shutdown(cancel_futures=True)
        self.folder.cleanup()


__all__ = ["DeviceSlots", "LocalMeasurer"]
