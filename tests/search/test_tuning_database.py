"""The tuning database (tcomp/search/database.py): records round-trip, a corrupt or
truncated line is skipped with a warning naming it, processes append at once without
losing or tearing a record, and the workload key ignores names but not structure."""

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest

import tcomp as tc
from tcomp.lang.canonical import canonical_form, workload_key
from tcomp.search.database import Record, TuningDatabase, TuningDatabaseWarning, current_target

TARGET = {"gpu": "NVIDIA H200", "sms": 132, "cc": [9, 0], "driver": 13000, "numba_cuda": "0.30.4"}
SCHEDULE = "def schedule(s, out):\n    i, j = s[out].axis\n    s[out].bind(i, 'blockIdx.x')\n"


def _matmul(M, N, K, names=("A", "B", "C", "k"), dtype="float32"):
    A = tc.placeholder((M, K), dtype, name=names[0])
    B = tc.placeholder((K, N), dtype, name=names[1])
    k = tc.reduce_axis(K, name=names[3])
    return tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * B[k, j], axis=k), name=names[2])


def test_the_workload_key_ignores_names_but_not_shapes_dtypes_or_structure():
    key = workload_key(_matmul(8, 8, 4))
    assert key == workload_key(_matmul(8, 8, 4, names=("X", "W", "Y", "r")))
    assert key != workload_key(_matmul(8, 8, 5))
    assert key != workload_key(_matmul(8, 8, 4, dtype="bfloat16"))
    A = tc.placeholder((8, 4), "float32", name="A")
    B = tc.placeholder((4, 8), "float32", name="B")
    k = tc.reduce_axis(4, name="k")
    transposed = tc.compute((8, 8), lambda i, j: tc.sum(A[j, k] * B[k, i], axis=k), name="C")
    assert key != workload_key(transposed)
    assert "t2 = compute((8, 8), float32, Reduce('sum'" in canonical_form(_matmul(8, 8, 4))


def _record(n: int, **kwargs) -> Record:
    fields = {"workload": "w1", "target": TARGET, "schedule": SCHEDULE, "status": "ok",
              "predicted": 1e-3, "measured": 1e-3 * (1 + n), "spread": 0.02}
    fields.update(kwargs)
    return Record(**fields)


def test_records_round_trip_and_the_best_is_the_fastest_ok(tmp_path):
    db = TuningDatabase(tmp_path / "db.jsonl")
    for n in range(3):
        db.append(_record(n))
    db.append(_record(9, measured=1e-6, status="wrong", error="differs from the reference in 3 elements"))
    db.append(_record(9, measured=1e-7, target={**TARGET, "gpu": "NVIDIA H100"}))
    got = db.records("w1", TARGET)
    assert [r.measured for r in got] == [1e-3, 2e-3, 3e-3, 1e-6]
    assert got[3].status == "wrong" and "3 elements" in got[3].error
    assert db.best("w1", TARGET) == got[0]
    assert db.best("w2", TARGET) is None
    assert got[0].schedule == SCHEDULE and got[0].tcomp_version


def test_a_corrupt_or_truncated_line_is_skipped_with_a_warning_naming_it(tmp_path):
    path = tmp_path / "db.jsonl"
    db = TuningDatabase(path)
    db.append(_record(0))
    with open(path, "a") as f:
        f.write('{"workload": "w1", "target": {"gpu"\n')  # cut short
        f.write('["not", "a", "record"]\n')
    db.append(_record(1))
    with pytest.warns(TuningDatabaseWarning) as caught:
        got = db.records("w1")
    assert [r.measured for r in got] == [1e-3, 2e-3]
    messages = [str(w.message) for w in caught]
    assert any(f"{path}:2: skipped" in m for m in messages), messages
    assert any(f"{path}:3: skipped" in m and "not a JSON object" in m for m in messages), messages


def test_an_unknown_status_is_refused():
    with pytest.raises(ValueError, match="status 'fast' is not one of ok, wrong, crash"):
        _record(0, status="fast")


def _append_many(args):
    path, worker = args
    db = TuningDatabase(path)
    for n in range(50):
        db.append(_record(n, workload=f"w{worker}", error="x" * 2000))  # long lines: no torn writes
    return worker


def test_processes_appending_at_once_lose_and_tear_nothing(tmp_path):
    path = tmp_path / "db.jsonl"
    with ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_append_many, [(str(path), w) for w in range(4)]))
    db = TuningDatabase(path)
    for worker in range(4):
        assert len(db.records(f"w{worker}")) == 50
    assert len(path.read_text().splitlines()) == 200


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"), reason="a simulator-only fact")
def test_the_target_in_the_simulator_says_so():
    assert current_target()["gpu"] == "CUDA simulator"


@pytest.mark.gpu
def test_the_target_on_a_gpu_round_trips_through_the_database(tmp_path):
    target = current_target()
    assert target["sms"] > 0 and len(target["cc"]) == 2 and len(target["driver"]) == 2
    db = TuningDatabase(tmp_path / "db.jsonl")
    db.append(_record(0, target=target))
    assert db.best("w1", target) is not None  # the target read back equals the one written
