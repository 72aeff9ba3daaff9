"""The search (tcomp/search/search.py). Model-only end to end in the simulator; the
measured procedure with a stand-in for the GPU runner (times drawn from the cost model's
prediction and the source's hash): trials bound the measurements, a fixed seed repeats
the trials, a second search resumes from the database, records of another tcomp
version are re-measured before they count, and failures are recorded while the search
goes on."""

import hashlib
import json
import sys
from pathlib import Path

import pytest

import tcomp as tc
import tcomp.search.runners as runners
import tcomp.search.search as search
from tcomp.search.measure import Measurement
from tcomp.search.search import kendall_tau

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import matmul_silu_quant  # noqa: E402

FAKE_GPU = {"gpu": "stand-in GPU", "sms": 132, "cc": [9, 0], "driver": [13, 0], "numba_cuda": "test"}


def _noise(source: str) -> float:
    return 0.8 + 0.4 * int(hashlib.sha256(source.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


class FakeRunner:
    """measure_batch without a GPU: a time from the source's hash; chosen sources crash."""

    def __init__(self, crash_every: int = 0):
        self.calls: list = []
        self.crash_every = crash_every

    def __call__(self, bench, sources, **kwargs):
        out = []
        for src in sources:
            self.calls.append(src)
            if self.crash_every and len(self.calls) % self.crash_every == 0:
                out.append(Measurement(src, "crash", error="an illegal memory access (stand-in)"))
                continue
            t = 1e-3 * _noise(src)
            out.append(Measurement(src, "ok", t, 0.01, (t, t * 1.01, t * 0.99)))
        return out


@pytest.fixture
def fake_gpu(monkeypatch):
    runner = FakeRunner()
    monkeypatch.setattr(runners, "measure_batch", runner)
    monkeypatch.setattr(search, "_can_measure", lambda: True)
    monkeypatch.setattr(search, "current_target", lambda: dict(FAKE_GPU))
    monkeypatch.setattr(search, "MIN_DRAWS", 12)
    monkeypatch.setattr(search, "DRAWS_PER_TRIAL", 2)  # NOTE: fewer screens keep the file fast
    monkeypatch.setattr(search, "MUTANTS_PER_TRIAL", 2)
    return runner


def _algorithm():
    return matmul_silu_quant.algorithm(32, 32, 32)


def _measured(runner):
    return [src for src in runner.calls]


def test_trials_bound_the_measurements_and_the_seed_fixes_them(fake_gpu, tmp_path):
    result = tc.autoschedule(_algorithm(), trials=6, db=tmp_path / "a.jsonl", workers=1, seed=5)
    trial_sources = [r.schedule for r in result.records]
    assert len(trial_sources) == 6 and len(set(trial_sources)) == 6
    best = min((r for r in result.records if r.status == "ok"), key=lambda r: r.measured)
    assert result.source in [f[0] for f in result.finalists] and result.measured is not None
    assert result.spread is not None and result.kendall_tau is not None
    assert best.schedule in [f[0] for f in result.finalists]
    again = tc.autoschedule(_algorithm(), trials=6, db=tmp_path / "b.jsonl", workers=1, seed=5)
    assert [r.schedule for r in again.records] == trial_sources
    other = tc.autoschedule(_algorithm(), trials=6, db=tmp_path / "c.jsonl", workers=1, seed=6)
    assert [r.schedule for r in other.records] != trial_sources


def test_the_first_measurements_cover_every_partition(fake_gpu, tmp_path):
    result = tc.autoschedule(_algorithm(), trials=8, db=tmp_path / "db.jsonl", workers=1)
    kernels = set()
    for r in result.records[:4]:
        kernels.add(r.schedule.count("blockIdx.x"))
    assert len(kernels) > 1  # one, two and three kernels among the first measured


def test_a_second_search_resumes_and_trials_zero_returns_the_best_at_once(fake_gpu, tmp_path):
    db = tmp_path / "db.jsonl"
    first = tc.autoschedule(_algorithm(), trials=4, db=db, workers=1)
    before = len(fake_gpu.calls)
    second = tc.autoschedule(_algorithm(), trials=4, db=db, workers=1)
    fresh = [r.schedule for r in second.records]
    assert not set(fresh) & {r.schedule for r in first.records}  # nothing measured twice
    assert second.measured <= first.measured * 1.05
    calls = len(fake_gpu.calls)
    assert calls > before
    best = tc.autoschedule(_algorithm(), trials=0, db=db, workers=1)
    assert len(fake_gpu.calls) == calls  # nothing measured
    lines = [json.loads(line) for line in db.read_text().splitlines()]
    assert best.measured == min(r["measured"] for r in lines if r["status"] == "ok")
    tc.check(best.schedule)


def test_records_of_another_version_are_re_measured_before_they_count(fake_gpu, tmp_path):
    db = tmp_path / "db.jsonl"
    tc.autoschedule(_algorithm(), trials=3, db=db, workers=1)
    lines = [json.loads(line) for line in db.read_text().splitlines()]
    for line in lines:
        line["tcomp_version"] = "0.0.1-other"
        line["measured"] = 1e-9  # unbelievably fast: must not win unchecked
    db.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fake_gpu.calls.clear()
    result = tc.autoschedule(_algorithm(), trials=3, db=db, workers=1)
    old = {line["schedule"] for line in lines}
    assert old <= set(fake_gpu.calls[:len(old)])  # replayed and validated first
    assert result.measured > 1e-6


def test_failures_are_recorded_and_the_search_goes_on(fake_gpu, tmp_path):
    fake_gpu.crash_every = 2
    result = tc.autoschedule(_algorithm(), trials=6, db=tmp_path / "db.jsonl", workers=1)
    statuses = [r.status for r in result.records]
    assert "crash" in statuses and "ok" in statuses
    assert "illegal memory access" in next(r.error for r in result.records if r.status == "crash")
    assert result.measured is not None


def test_model_only_search_validates_its_choice_in_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "MIN_DRAWS", 12)
    out = _algorithm()
    result = tc.autoschedule(out, trials=4, model_only=True, db=tmp_path / "db.jsonl", workers=1)
    assert result.measured is None and result.predicted > 0
    assert "matches tc.evaluate" in result.validated
    replayed = tc.create_schedule(out)
    exec(result.source, globals())
    schedule(replayed, out)  # noqa: F821  (defined by the exec)
    assert str(tc.lower(replayed)) == str(tc.lower(result.schedule))
    assert [r.status for r in result.records][-1] == "ok"


def test_kendall_tau():
    assert kendall_tau([(1, 1), (2, 2), (3, 3)]) == pytest.approx(1.0)
    assert kendall_tau([(1, 3), (2, 2), (3, 1)]) == pytest.approx(-1.0)
    assert kendall_tau([(1, 1)]) is None


def test_measurements_run_through_a_given_process_pool_executor(fake_gpu, tmp_path):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        result = tc.autoschedule(_algorithm(), trials=5, db=tmp_path / "db.jsonl", workers=1, executor=pool)
    assert len(result.records) == 5 and all(r.status == "ok" for r in result.records)
    assert fake_gpu.calls == []  # measured in the pool's processes, not here


def test_model_only_at_a_shape_too_big_for_the_simulator_says_it_did_not_validate(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "MIN_DRAWS", 6)
    result = tc.autoschedule(matmul_silu_quant.algorithm(2048, 2048, 64), trials=1, model_only=True,
                             db=tmp_path / "db.jsonl", workers=2, timeout=5)
    assert result.validated.startswith("not validated: the CUDA simulator would run")
    assert result.measured is None and result.records == []


def test_model_only_whose_validations_run_past_the_limit_returns_the_best_unvalidated(tmp_path, monkeypatch):
    """The thread count estimated the simulator fast enough, but each finalist ran past
    the time limit: a timeout shows nothing wrong, so the best-predicted is returned,
    saying that it was not validated and why, its records kept."""
    monkeypatch.setattr(search, "MIN_DRAWS", 6)
    monkeypatch.setattr(search, "SIMULATOR_THREADS_PER_SECOND", 10 ** 12)  # NOTE: the estimate lets it try
    result = tc.autoschedule(_algorithm(), trials=1, model_only=True, db=tmp_path / "db.jsonl", workers=1,
                             timeout=0.001)
    assert result.validated.startswith("not validated: the CUDA simulator ran past the 0.001 s limit on 3 of the "
                                       "best-predicted candidates")
    assert [r.status for r in result.records] == ["timeout"] * 3 and result.measured is None
    assert result.source == result.records[0].schedule


def test_a_search_whose_every_candidate_fails_says_how_they_ended(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "MIN_DRAWS", 6)
    monkeypatch.setenv("TCOMP_MEASURE_FAULT", "wrong")
    with pytest.raises(tc.TcompError, match=r"no candidate that is legal and correct \(.*3 wrong"):
        tc.autoschedule(_algorithm(), trials=1, model_only=True, db=tmp_path / "db.jsonl", workers=2)


def test_refinement_tries_the_best_tiling_under_every_other_partition(fake_gpu, tmp_path, monkeypatch):
    """After the first measurements (the best point of each partition), the best measured
    point's tilings are measured under the other fusion choices before any mutant (the
    model alone cannot rank partitions: on the H200 it ranked C fused into Q last)."""
    import re

    monkeypatch.setattr(search, "MUTANTS_PER_TRIAL", 0)  # siblings only
    result = tc.autoschedule(_algorithm(), trials=8, db=tmp_path / "db.jsonl", workers=1)
    first, later = result.records[:4], result.records[4:]
    best = min(first, key=lambda r: r.measured)

    def tile_sizes(source):
        return re.search(r"\.tile\(\w+, \w+, (\d+), (\d+)\)", source).groups()

    siblings = later[:3]  # four partitions: the best's own and three others
    assert len(siblings) == 3
    for r in siblings:
        assert tile_sizes(r.schedule) == tile_sizes(best.schedule)
    assert len({r.schedule for r in siblings + [best]}) == 4


def test_model_only_without_a_gpu_or_the_simulator_says_it_did_not_validate(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "MIN_DRAWS", 12)
    monkeypatch.setattr(search, "_can_run_kernels", lambda: False)
    result = tc.autoschedule(_algorithm(), trials=4, model_only=True, db=tmp_path / "db.jsonl", workers=1)
    assert result.measured is None and result.predicted > 0 and result.records == []
    assert result.validated.startswith("not validated: no GPU here") and "NUMBA_ENABLE_CUDASIM=1" in result.validated


def test_batches_go_round_two_gpus_and_no_record_is_lost(fake_gpu, tmp_path, monkeypatch):
    """Two GPUs: batches go round both devices; two batches never time on one device at
    once; the database gets every record once."""
    import threading
    import time

    intervals, lock = [], threading.Lock()

    def runner(bench, sources, gpu=None, **kwargs):
        start = time.perf_counter()
        time.sleep(0.05)
        out = fake_gpu(bench, sources, **kwargs)
        with lock:
            intervals.append((gpu, start, time.perf_counter()))
        return out

    monkeypatch.setattr(runners, "measure_batch", runner)
    monkeypatch.setattr(runners.LocalMeasurer, "BATCH", 2)
    monkeypatch.setattr(search._MeasuredSearch, "BATCH", 2)
    db = tmp_path / "db.jsonl"
    result = tc.autoschedule(_algorithm(), trials=8, db=db, workers=1, gpus=2)
    searched = [iv for iv in intervals if iv[0] is not None]
    assert {gpu for gpu, *_ in searched} == {0, 1}
    for gpu in (0, 1):
        spans = sorted((a, b) for g, a, b in searched if g == gpu)
        assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:])), f"two batches at once on GPU {gpu}"
    lines = [json.loads(line) for line in db.read_text().splitlines()]
    schedules = [r["schedule"] for r in lines]
    assert len(schedules) == len(set(schedules)) == len(result.records) == 8


def test_batches_measured_one_after_another_still_go_round_the_gpus(monkeypatch):
    """A thread pool reuses an idle thread: when each batch is timed before the next is
    built, one thread runs them all, and they must still alternate between the GPUs."""
    used = []
    monkeypatch.setattr(runners, "measure_batch", lambda bench, sources, gpu=None, **kw: used.append(gpu) or [])
    slots = runners.DeviceSlots(2)
    for _ in range(3):
        slots.measure("bench", ["source"])
    assert used == [0, 1, 0]


def test_workers_are_mapped_onto_the_visible_devices():
    from tcomp.search.measure import worker_device

    assert [worker_device(w, visible="2,3") for w in range(3)] == ["2", "3", "2"]
    assert [worker_device(w, visible="", count=1) for w in range(2)] == ["0", "0"]  # two workers, one GPU
    assert worker_device(5, visible=" 4 , 6 ") == "6"


@pytest.mark.gpu
def test_two_measuring_workers_share_one_gpu_and_every_record_is_kept_once(tmp_path, monkeypatch):
    """On a machine of one GPU, ``gpus=2`` runs two measuring workers that both map onto
    that device (``worker_device``); every candidate is measured once and filed once."""
    from tcomp.search.measure import worker_device

    workers = []
    real = runners.measure_batch

    def spy(bench, sources, gpu=None, **kwargs):
        workers.append(gpu)
        return real(bench, sources, gpu=gpu, **kwargs)

    monkeypatch.setattr(runners, "measure_batch", spy)
    monkeypatch.setattr(runners.LocalMeasurer, "BATCH", 2)
    monkeypatch.setattr(search._MeasuredSearch, "BATCH", 2)
    db = tmp_path / "db.jsonl"
    result = tc.autoschedule(matmul_silu_quant.algorithm(256, 256, 256), trials=8, db=db, workers=2, gpus=2)
    searched = [w for w in workers if w is not None]  # NOTE: the final re-measure names no worker
    assert set(searched) == {0, 1} and len({worker_device(w) for w in searched}) == 1  # the one GPU
    lines = [json.loads(line) for line in db.read_text().splitlines()]
    schedules = [r["schedule"] for r in lines]
    assert len(schedules) == len(set(schedules)) == len(result.records) == 8
    assert all(r["status"] == "ok" and r["measured"] > 0 for r in lines)


def test_a_rules_seed_is_measured_among_the_first_trials(fake_gpu, tmp_path):
    """``Rule.seeds``: the row kernel's seed (64 threads, 16-byte vector slices, every
    thread adding) is a point of the softmax's space, screened with the draws, and
    measured in the first half of the trials whatever the draws and the model say."""
    import softmax  # examples/, on the path above

    from tcomp.search.space import Space

    out = softmax.algorithm(4, 512)
    space = Space(out)
    seeds = space.seed_points()
    assert seeds and all(space.contains(p) for p in seeds)
    (seed,) = [p for p in seeds if len(p.tilings) == 1]
    (_, rule, params) = seed.tilings[0]
    assert rule == "row_kernel"
    assert dict(params)["vector_slices"] and dict(params)["combine"] == "every_thread" and dict(params)["vector"] == 4
    wanted = space.schedule(seed).trace_source(with_sites=False)  # as the search records a schedule
    result = tc.autoschedule(out, trials=4, db=tmp_path / "db.jsonl", workers=1, seed=3)
    assert wanted in [r.schedule for r in result.records[:2]]


def test_the_seed_is_measured_where_the_partitions_fill_the_first_trials(fake_gpu, tmp_path, monkeypatch):
    """The FFN has eight fusion choices, as many as the first half of 16 trials: a seed that
    is not its partition's best-predicted point is measured among them all the same
    (before, each partition's best came first and the seed never: on the H100 the search's
    winner took 59.8 us and the seed 44.9 us, 1 x 4096 x 12288)."""
    import ffn_bf16  # examples/, on the path above

    from tcomp.search.space import Space
    from tcomp.search.tiling.skinny import SkinnyProduct

    monkeypatch.setattr(SkinnyProduct, "seeds", lambda self, group, space: [
        dict(parts=16, threads=64, unroll=2, one_kernel=True, block_parts=1)])  # predicted slower than others
    out = ffn_bf16.algorithm(1, 32, 2048)
    space = Space(out)
    assert len(space.tileable_fusions()) == 8
    (seed,) = space.seed_points()
    wanted = space.schedule(seed).trace_source(with_sites=False)
    result = tc.autoschedule(out, trials=16, db=tmp_path / "db.jsonl", workers=2, seed=3)
    assert wanted in [r.schedule for r in result.records[:8]]


def test_a_row_that_fills_an_sm_is_seeded_on_the_most_threads():
    """A staged row of over half an SM's shared memory (32768 floats: 128 KB) leaves an SM
    one block, whose phases nothing hides: the row kernel's seeds (and the softmax example's
    default) are then 1024 threads, not the 256 that suit a 4096-wide row whose slices go
    in a tree (nor the 64 where every thread adds them); the tree is seeded first."""
    import softmax  # examples/, on the path above

    from tcomp.search.space import Space

    def seeds(N):
        points = [p for p in Space(softmax.algorithm(8, N)).seed_points() if len(p.tilings) == 1]
        return [(dict(p.tilings[0][2])["combine"], dict(p.tilings[0][2])["threads"]) for p in points]

    assert seeds(32768) == [("tree", 1024), ("every_thread", 1024)]
    assert seeds(4096) == [("tree", 256), ("every_thread", 64)]
    for N, threads in ((32768, 1024), (4096, 256)):  # the example's hand schedule likewise
        out = softmax.algorithm(8, N)
        s = tc.create_schedule(out)
        softmax.schedule(s, out)
        assert [k.block for k in tc.lower(s).kernels] == [(threads, 1, 1)]
