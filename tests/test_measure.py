"""Measuring a candidate in a process of its own (tcomp/search/measure.py): every way a
candidate can end is recorded as such, and the caller goes on. Faults are injected with
TCOMP_MEASURE_FAULT; in the simulator nothing is timed (measured is None)."""

import os
import textwrap

import pytest

from tcomp.search.database import Record
from tcomp.search.measure import Candidate, measure

WORKLOAD = '''
import tcomp as tc


def algorithm(M=8, N=8, K=4):
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    return tc.compute((M, N), lambda i, j: tc.quantize(tc.silu(C[i, j]), 0.05, "int8"), name="Q")
'''

LEGAL = '''
def schedule(s, out):
    i, j = s[out].axis
    s[out].bind(i, "blockIdx.x")
    s[out].bind(j, "threadIdx.x")
    s["C"].compute_at(s[out], j)
'''

ILLEGAL = '''
def schedule(s, out):
    (k,) = s["C"].reduce_axis
    s[out].reverse_compute_at(s["C"], k)  # SiLU of a partial sum
'''

TOO_MANY_THREADS = '''
def schedule(s, out):
    i, j = s[out].axis
    f = s[out].fuse(i, j)
    fo, fi = s[out].split(f, 2048)
    s[out].bind(fi, "threadIdx.x")
'''


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "wl.py"
    path.write_text(textwrap.dedent(WORKLOAD))
    return str(path)


def _measure(workload, source, shape=None, **kwargs) -> Record:
    return measure(Candidate(workload, textwrap.dedent(source), shape or {"M": 8, "N": 8, "K": 4}), **kwargs)


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"), reason="a simulator-only fact")
def test_a_legal_candidate_is_ok_and_not_timed_in_the_simulator(workload):
    r = _measure(workload, LEGAL, predicted=1e-6)
    assert r.status == "ok", r.error
    assert r.measured is None and r.predicted == 1e-6 and r.target["gpu"] == "CUDA simulator"
    assert len(r.workload) == 64 and "def schedule(s, out)" in r.schedule


@pytest.mark.parametrize("fault, status, needle", [
    ("wrong", "wrong", "output Q: max abs difference"),
    ("crash", "crash", "exited with status 3"),
])
def test_a_faulty_candidate_is_recorded_as_such(workload, monkeypatch, fault, status, needle):
    monkeypatch.setenv("TCOMP_MEASURE_FAULT", fault)
    r = _measure(workload, LEGAL)
    assert r.status == status and needle in r.error, r


def test_a_hanging_candidate_times_out(workload, monkeypatch):
    monkeypatch.setenv("TCOMP_MEASURE_FAULT", "hang")
    r = _measure(workload, LEGAL, timeout=20)
    assert r.status == "timeout" and "no answer within 20 s" in r.error


def test_an_illegal_candidate_is_recorded_with_the_checks_message(workload):
    r = _measure(workload, ILLEGAL)
    assert r.status == "illegal" and "reverse_compute_at" in r.error and "is illegal" in r.error, r.error


def test_a_candidate_over_the_targets_capacity(workload):
    r = _measure(workload, TOO_MANY_THREADS, shape={"M": 64, "N": 64, "K": 4})
    assert r.status == "over capacity" and "2048 threads per block" in r.error, r.error


def test_a_candidate_that_does_not_replay_is_a_crash_with_the_reason(workload):
    r = _measure(workload, "def schedule(s, out):\n    s['NoSuchStage'].compute_inline()\n")
    assert r.status == "crash" and "NoSuchStage" in r.error, r.error


@pytest.mark.gpu
def test_a_legal_candidate_is_timed_on_the_gpu(workload):
    r = _measure(workload, LEGAL, shape={"M": 256, "N": 256, "K": 64}, repeats=5)
    assert r.status == "ok", r.error
    assert r.measured > 0 and r.spread is not None and r.spread >= 0 and r.target["sms"] > 0
