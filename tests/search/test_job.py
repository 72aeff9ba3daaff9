"""Several workloads tuned as one job (tcomp/search/job.py), with the stand-in for the GPU
runner of test_search.py: the trials are shared by what each workload could still save a
request (calls x the best measured less the best prediction left), all of them spent and
each workload given some; an equal share is the baseline; the errors name the problem."""

import json
import sys
from pathlib import Path

import pytest

import tcomp as tc
from tcomp.search.job import JobWorkload, tune

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_search import fake_gpu  # noqa: E402,F401  (the fixture, used by name)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import matmul_silu_quant  # noqa: E402


def _workloads(calls_a: int, calls_b: int) -> list:
    return [JobWorkload("a", matmul_silu_quant.algorithm(32, 32, 32), calls_a),
            JobWorkload("b", matmul_silu_quant.algorithm(32, 64, 32), calls_b)]


def test_the_trials_go_where_the_calls_make_them_worth_most(fake_gpu, tmp_path, monkeypatch):  # noqa: F811
    import tcomp.search.search as search

    monkeypatch.setattr(search._MeasuredSearch, "BATCH", 2)
    db = tmp_path / "db.jsonl"
    job = tune(_workloads(1000, 1), trials=12, db=db, workers=1, seed=1)
    assert sum(job.trials.values()) == 12 and min(job.trials.values()) >= 1
    assert job.trials["a"] > job.trials["b"], job.order
    lines = [json.loads(line) for line in db.read_text().splitlines()]
    assert len(lines) == 12 and len({(r["workload"], r["schedule"]) for r in lines}) == 12
    assert all(job.results[n].measured is not None for n in "ab")
    assert job.request_time(_workloads(1000, 1)) == pytest.approx(1000 * job.results["a"].measured
                                                                  + job.results["b"].measured)
    for name, measured, worth in job.order[2:]:  # NOTE: after each workload's first choices
        assert worth[name] == max(worth.values()) and measured >= 1
    assert [name for name, _, _ in job.order[:2]] == ["a", "b"] and job.order[0][1] == 3  # 12 // (2 x 2)


def test_the_trials_left_are_cut_into_batches_the_share_can_place(fake_gpu, tmp_path):  # noqa: F811
    """A search's batch is 8 candidates a GPU; a job of 12 trials for two workloads measures
    3 each first, then cuts the 6 left into batches of 2 (6 over twice the workloads, rounded
    up), each placed by the share, not into one batch of 6."""
    job = tune(_workloads(1000, 1), trials=12, db=tmp_path / "db.jsonl", workers=1, seed=1)
    assert [measured for _, measured, _ in job.order] == [3, 3, 2, 2, 2]
    assert sum(job.trials.values()) == 12


def test_an_equal_share_gives_each_workload_the_same_trials(fake_gpu, tmp_path, monkeypatch):  # noqa: F811
    import tcomp.search.search as search

    monkeypatch.setattr(search._MeasuredSearch, "BATCH", 2)
    job = tune(_workloads(1000, 1), trials=12, db=tmp_path / "db.jsonl", workers=1, seed=1, share="equal")
    assert sum(job.trials.values()) == 12 and abs(job.trials["a"] - job.trials["b"]) <= 2  # a batch of 2


def test_an_interrupted_job_resumed_measures_nothing_twice(fake_gpu, tmp_path, monkeypatch):  # noqa: F811
    """A job stopped after its fourth record (the first workload's first choices and one
    of the second's), then resumed: the same trials each and batches in the same order as
    a job never stopped, every candidate recorded once, the records before the stop kept."""
    import tcomp.search.search as search
    from tcomp.search.database import TuningDatabase

    monkeypatch.setattr(search._MeasuredSearch, "BATCH", 2)
    whole = tune(_workloads(1000, 1), trials=12, db=tmp_path / "whole.jsonl", workers=1, seed=1)
    db = tmp_path / "db.jsonl"
    real_append = TuningDatabase.append

    def stop_after_four(self, record):
        real_append(self, record)
        if len(self.records()) == 4:
            raise KeyboardInterrupt

    monkeypatch.setattr(TuningDatabase, "append", stop_after_four)
    with pytest.raises(KeyboardInterrupt):
        tune(_workloads(1000, 1), trials=12, db=db, workers=1, seed=1)
    monkeypatch.setattr(TuningDatabase, "append", real_append)
    before = [json.loads(line) for line in db.read_text().splitlines()]
    assert len(before) == 4
    resumed = tune(_workloads(1000, 1), trials=12, db=db, workers=1, seed=1, resume=True)
    lines = [json.loads(line) for line in db.read_text().splitlines()]
    assert lines[:4] == before and len(lines) == 12
    assert len({(r["workload"], r["schedule"]) for r in lines}) == 12  # nothing measured twice
    assert resumed.trials == whole.trials
    assert [(n, k) for n, k, _ in resumed.order] == [(n, k) for n, k, _ in whole.order]
    assert {n: r.source for n, r in resumed.results.items()} == {n: r.source for n, r in whole.results.items()}
    with pytest.raises(tc.TcompError, match="nothing to resume: the tuning database holds no search of the job's"):
        tune(_workloads(1000, 1), trials=12, db=tmp_path / "empty.jsonl", workers=1, seed=1, resume=True)


def test_a_job_refuses_what_it_cannot_share(tmp_path):
    out = matmul_silu_quant.algorithm(32, 32, 32)
    with pytest.raises(tc.TcompError, match="1 trials cannot give each of the job's 2 workloads one"):
        tune([JobWorkload("a", out), JobWorkload("b", out)], trials=1, db=tmp_path / "db.jsonl")
    with pytest.raises(tc.TcompError, match="distinct names"):
        tune([JobWorkload("a", out), JobWorkload("a", out)], trials=4, db=tmp_path / "db.jsonl")
    with pytest.raises(tc.TcompError, match="called at least once"):
        tune([JobWorkload("a", out, 0)], trials=4, db=tmp_path / "db.jsonl")
    with pytest.raises(tc.TcompError, match="a job needs at least one workload"):
        tune([], trials=4, db=tmp_path / "db.jsonl")
    with pytest.raises(tc.TcompError, match="share is 'savings' or 'equal', got 'fair'"):
        tune([JobWorkload("a", out)], trials=4, db=tmp_path / "db.jsonl", share="fair")


def _two_workload_files(folder) -> list:
    """Two workload files, "small" (32 x 32 x 32) and "wide" (N = 64), in ``folder``."""
    files = []
    for name, n in (("small", 32), ("wide", 64)):
        path = folder / f"{name}.py"
        path.write_text(f"from matmul_silu_quant import algorithm as _product\n\n\n"
                        f"def algorithm(M=32, N={n}, K=32):\n    return _product(M, N, K)\n")
        files.append(str(path))
    return files


def test_the_cli_tunes_several_files_as_one_job(fake_gpu, tmp_path, monkeypatch, capsys):  # noqa: F811
    import tcomp.search.search as search
    from tcomp.cli import main as cli

    monkeypatch.setattr(search, "MIN_DRAWS", 12)
    monkeypatch.setattr(search._MeasuredSearch, "BATCH", 2)
    files = _two_workload_files(tmp_path)
    assert cli(["autoschedule", files[0] + ":100", files[1], "--trials", "6", "--db", str(tmp_path / "db.jsonl"),
                "--workers", "1", "--out", str(tmp_path / "winners")]) == 0
    shown = capsys.readouterr().out
    assert "small               100" in shown and "wide                  1" in shown
    assert "trials in the order given (savings): small 1, wide 1" in shown
    assert "the request's calls at the winners' times" in shown
    assert (tmp_path / "winners" / "small.py").exists() and (tmp_path / "winners" / "wide.py").exists()
    assert cli(["autoschedule", files[0], files[1], "--shape", "M=16"]) != 0
    assert "--shape takes one workload" in capsys.readouterr().err


def test_the_cli_job_with_shapes_tunes_each_file_at_each_extent(fake_gpu, tmp_path, monkeypatch, capsys):  # noqa: F811
    """Each FILE[:CALLS] at each extent of --shapes is a workload of the job, called the
    file's calls times the extent's."""
    import tcomp.search.search as search
    from tcomp.cli import main as cli

    monkeypatch.setattr(search, "MIN_DRAWS", 12)
    monkeypatch.setattr(search._MeasuredSearch, "BATCH", 2)
    files = _two_workload_files(tmp_path)
    assert cli(["autoschedule", files[0] + ":3", files[1], "--shapes", "M=16:10,M=48:1", "--trials", "4",
                "--db", str(tmp_path / "db.jsonl"), "--workers", "1", "--out", str(tmp_path / "winners")]) == 0
    shown = capsys.readouterr().out
    for name, calls in (("small_M16", 30), ("small_M48", 3), ("wide_M16", 10), ("wide_M48", 1)):
        assert f"{name:16s} {calls:6d}      1" in shown, name
        assert (tmp_path / "winners" / f"{name}.py").exists()
    assert "shape:    M=48, N=64, K=32" in (tmp_path / "winners" / "wide_M48.py").read_text()


def test_the_cli_names_a_job_file_called_no_times_and_two_workloads_of_one_name(tmp_path, capsys):
    from tcomp.cli import main as cli

    examples = Path(__file__).resolve().parents[2] / "examples"
    assert cli(["autoschedule", f"{examples}/softmax.py:0", f"{examples}/rmsnorm.py"]) != 0
    assert "softmax.py:0: a workload of a job is called at least once a request" in capsys.readouterr().err
    other = tmp_path / "softmax.py"
    other.write_text((examples / "softmax.py").read_text())
    assert cli(["autoschedule", f"{examples}/softmax.py", str(other)]) != 0
    assert "two workloads of the job are named 'softmax'" in capsys.readouterr().err


def test_what_a_workload_could_save_counts_candidates_the_model_ranks_alike():
    """The model predicts A and C alike (a memory-bound floor, say) and B slower; A measured
    1.5x its prediction and B on it. C, unmeasured, may run as B did against its
    prediction: the workload could still save A's time less C's prediction. Scaled by the
    best-measured A's error alone, C would be predicted at A's time: nothing to save."""
    from tcomp.search.filters import Screened
    from tcomp.search.measure import Measurement
    from tcomp.search.search import _MeasuredSearch, _Pool

    search = object.__new__(_MeasuredSearch)
    search.pool = object.__new__(_Pool)
    search.pool.by_source = {src: Screened(None, src, "ok", predicted)
                             for src, predicted in (("A", 10e-6), ("B", 20e-6), ("C", 10e-6))}
    search.measured = {"A": Measurement("A", "ok", 15e-6), "B": Measurement("B", "ok", 20e-6)}
    assert search.could_save() == pytest.approx(5e-6)
    search.measured["B"] = Measurement("B", "ok", 40e-6)  # B 2x off: A's error is the least
    assert search.could_save() == pytest.approx(0.0)
    search.measured["C"] = Measurement("C", "ok", 12e-6)
    assert search.could_save() == 0.0  # nothing left to measure
