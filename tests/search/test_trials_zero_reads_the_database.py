"""``tc.autoschedule(out, trials=0)`` reads the tuning database whether or not it may
measure (tcomp/search/search.py): a corrupt line is reported with a
TuningDatabaseWarning, as a resumed search reports it, and the recorded best comes back
at once, nothing screened and nothing measured (issue 30: with ``model_only`` the
database was never read)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tcomp as tc
import tcomp.search.runners as runners
import tcomp.search.search as search
from tcomp.lang.canonical import workload_key
from tcomp.search.database import Record, TuningDatabase, TuningDatabaseWarning, current_target

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import matmul_silu_quant  # noqa: E402

STAND_IN_GPU = {"gpu": "stand-in GPU", "sms": 132, "cc": [9, 0], "driver": [13, 0], "numba_cuda": "test"}


def _algorithm():
    return matmul_silu_quant.algorithm(32, 32, 32)


def _hand_schedule_source(out) -> str:
    s = tc.create_schedule(out)
    matmul_silu_quant.schedule(s, out)
    return s.trace_source(with_sites=False)


def _database_with_a_corrupt_line(path, record: Record) -> TuningDatabase:
    db = TuningDatabase(path)
    with open(path, "w") as f:
        f.write('{"workload": "cut short", "target": {"gpu"\n')
    db.append(record)
    return db


@pytest.fixture
def nothing_searched(monkeypatch):
    """Fail the test if the search screens a point or measures a candidate."""

    monkeypatch.setattr(search._Pool, "draw", _refuse)
    monkeypatch.setattr(search, "measure_batch", _refuse)
    monkeypatch.setattr(runners, "measure_batch", _refuse)


def test_model_only_trials_zero_returns_the_record_validated_in_the_simulator(tmp_path, nothing_searched):
    out = _algorithm()
    source = _hand_schedule_source(out)
    record = Record(workload=workload_key(out), target=current_target(), schedule=source, status="ok",
                    predicted=2e-6)
    db = _database_with_a_corrupt_line(tmp_path / "db.jsonl", record)
    with pytest.warns(TuningDatabaseWarning, match=r"db\.jsonl:1: skipped a record that cannot be read"):
        result = tc.autoschedule(out, trials=0, model_only=True, db=db.path, workers=1)
    assert result.source == source and result.records == [record]
    assert result.predicted == 2e-6 and result.measured is None
    assert "tuning database" in result.description
    tc.check(result.schedule)


def test_model_only_trials_zero_on_a_gpu_returns_the_measured_best(tmp_path, nothing_searched, monkeypatch):
    monkeypatch.setattr(search, "_can_measure", lambda: True)
    monkeypatch.setattr(search, "current_target", lambda: dict(STAND_IN_GPU))
    out = _algorithm()
    source = _hand_schedule_source(out)
    fast = Record(workload=workload_key(out), target=STAND_IN_GPU, schedule=source, status="ok",
                  predicted=2e-6, measured=1e-6, spread=0.01)
    db = _database_with_a_corrupt_line(tmp_path / "db.jsonl", fast)
    db.append(Record(workload=workload_key(out), target=STAND_IN_GPU, schedule="slower", status="ok",
                     predicted=1e-6, measured=3e-6))
    with pytest.warns(TuningDatabaseWarning, match="skipped a record"):
        result = tc.autoschedule(out, trials=0, model_only=True, db=db.path, workers=1)
    assert result.source == source and result.measured == 1e-6 and result.spread == 0.01


def test_trials_zero_returns_what_a_model_only_search_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "MIN_DRAWS", 12)
    out = _algorithm()
    db = tmp_path / "db.jsonl"
    first = tc.autoschedule(out, trials=4, model_only=True, db=db, workers=1)
    monkeypatch.setattr(search._Pool, "draw", _refuse)
    monkeypatch.setattr(search, "measure_batch", _refuse)
    again = tc.autoschedule(_algorithm(), trials=0, model_only=True, db=db, workers=1)
    assert again.source == first.source and again.predicted == first.predicted
    assert "when it was recorded" in again.validated


def test_trials_zero_with_an_empty_database_still_searches(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "MIN_DRAWS", 12)
    result = tc.autoschedule(_algorithm(), trials=0, model_only=True, db=tmp_path / "db.jsonl", workers=1)
    assert result.validated.startswith("matches tc.evaluate") and result.records


def test_the_command_line_reports_the_corrupt_line_and_the_recorded_best(tmp_path):
    out = _algorithm()
    source = _hand_schedule_source(out)
    db = _database_with_a_corrupt_line(tmp_path / "db.jsonl", Record(
        workload=workload_key(out), target=current_target(), schedule=source, status="ok", predicted=2e-6))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", TCOMP_CACHE_DIR=str(tmp_path / "cache"))
    written = tmp_path / "best.py"
    r = subprocess.run([sys.executable, "-m", "tcomp.cli", "autoschedule", "examples/matmul_silu_quant.py",
                        "--shape", "M=32,N=32,K=32", "--trials", "0", "--model-only", "--workers", "1",
                        "--db", str(db.path), "--out", str(written)],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "db.jsonl:1: skipped a record that cannot be read" in r.stdout + r.stderr
    assert "candidates tried: 1 ok" in r.stdout and "the best record of the tuning database" in r.stdout
    assert written.read_text().endswith(source)


def _refuse(*args, **kwargs):
    raise AssertionError("trials=0 must return the recorded best without searching")
