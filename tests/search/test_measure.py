"""Measuring candidates in a runner process (tcomp/search/measure.py): every way a
candidate can end is recorded as such, and the candidates after it are still measured.
Faults are injected with TCOMP_MEASURE_FAULT; in the simulator nothing is timed."""

import os
import textwrap

import numpy as np
import pytest

import tcomp as tc
from tcomp.search.measure import measure_batch, prepare_bench


def algorithm(M=8, N=8, K=4):
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    return tc.compute((M, N), lambda i, j: tc.quantize(tc.silu(C[i, j]), 0.05, "int8"), name="Q")


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

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


@pytest.fixture
def bench(tmp_path):
    return prepare_bench(algorithm(), tmp_path / "bench", seed=1)


def _one(bench, source, **kwargs):
    return measure_batch(bench, [textwrap.dedent(source)], **kwargs)[0]


def test_the_bench_holds_random_inputs_and_the_reference(bench):
    a = np.load(os.path.join(bench, "input0.npy"))
    ref = np.load(os.path.join(bench, "reference0.npy"))
    assert a.shape == (8, 4) and np.count_nonzero(a) == a.size
    assert ref.dtype == np.int8 and ref.shape == (8, 8)


@pytest.mark.skipif(not SIMULATOR, reason="a simulator-only fact")
def test_a_legal_candidate_is_ok_and_not_timed_in_the_simulator(bench):
    m = _one(bench, LEGAL)
    assert m.status == "ok", m.error
    assert m.measured is None


@pytest.mark.skipif(not SIMULATOR, reason="a simulator-only fact")
def test_a_source_validated_in_the_simulator_is_not_run_again(bench, monkeypatch):
    """The simulator has no clock: a fresh runner of the same bench (the final
    re-measurement's next round) takes the first run's answer instead of running the
    source again; here a crash injected for the second run never happens. Another source
    still runs."""
    assert _one(bench, LEGAL).status == "ok"
    monkeypatch.setenv("TCOMP_MEASURE_FAULT", "crash")
    again = _one(bench, LEGAL)
    assert again.status == "ok" and again.measured is None, again.error
    other = _one(bench, textwrap.dedent(LEGAL) + "# another source\n")
    assert other.status == "crash" and "exited with status 3" in other.error


@pytest.mark.parametrize("fault, status, needle", [
    ("wrong", "wrong", "output Q: max abs difference"),
    ("crash", "crash", "exited with status 3"),
    ("driver", "crash", "DriverError: cuFuncSetAttribute failed"),
])
def test_a_faulty_candidate_is_recorded_and_the_next_one_measured(bench, monkeypatch, fault, status, needle):
    monkeypatch.setenv("TCOMP_MEASURE_FAULT", f"{fault}:# the faulty one")
    faulty = textwrap.dedent(LEGAL) + "# the faulty one\n"
    first, second = measure_batch(bench, [faulty, textwrap.dedent(LEGAL)])
    assert first.status == status and needle in first.error, first
    assert second.status == "ok", second.error


def test_a_hanging_candidate_times_out_and_the_next_one_is_measured(bench, monkeypatch):
    monkeypatch.setenv("TCOMP_MEASURE_FAULT", "hang:# hangs")
    first, second = measure_batch(bench, [textwrap.dedent(LEGAL) + "# hangs\n", textwrap.dedent(LEGAL)],
                                  timeout=20)
    assert first.status == "timeout" and "no answer within 20 s" in first.error
    assert second.status == "ok", second.error


def test_an_illegal_candidate_is_recorded_with_the_checks_message(bench):
    m = _one(bench, ILLEGAL)
    assert m.status == "illegal" and "reverse_compute_at" in m.error and "is illegal" in m.error, m.error


def test_a_candidate_over_the_targets_capacity(tmp_path):
    bench = prepare_bench(algorithm(64, 64, 4), tmp_path / "bench")
    m = _one(bench, TOO_MANY_THREADS)
    assert m.status == "over capacity" and "2048 threads per block" in m.error, m.error


def test_a_candidate_that_does_not_replay_is_a_crash_with_the_reason(bench):
    m = _one(bench, "def schedule(s, out):\n    s['NoSuchStage'].compute_inline()\n")
    assert m.status == "crash" and "NoSuchStage" in m.error, m.error


@pytest.mark.gpu
def test_a_legal_candidate_is_timed_on_the_gpu(tmp_path):
    bench = prepare_bench(algorithm(256, 256, 64), tmp_path / "bench")
    m = _one(bench, LEGAL, repeats=5)
    assert m.status == "ok", m.error
    assert m.measured > 0 and m.spread is not None and m.spread >= 0 and len(m.times) == 5


def test_a_checked_candidate_is_built_without_checking_again(bench):
    """``checked=True`` (the search's screened candidates) skips tc.check in the runner: this
    illegal schedule then builds and runs (its last recomputation reads the complete sum,
    so it matches the reference), where an unchecked one is refused."""
    assert _one(bench, ILLEGAL).status == "illegal"
    m = _one(bench, ILLEGAL, checked=True)
    assert m.status == "ok", m


@pytest.mark.skipif(not SIMULATOR, reason="a simulator-only fact")
def test_inputs_reach_the_module_in_its_argument_order(tmp_path):
    """The body reads Y before X; the module takes X, Y (the order they were made), so
    the runner must pass them in that order, not in the order the body reads them."""
    X = tc.placeholder((4, 8), "float32", name="X")
    Y = tc.placeholder((4, 8), "float32", name="Y")
    O = tc.compute((4, 8), lambda i, j: Y[i, j] - 2.0 * X[i, j], name="O")
    bench = prepare_bench(O, tmp_path / "bench", seed=3)
    m = _one(bench, '''
    def schedule(s, out):
        i, j = s[out].axis
        s[out].bind(i, "blockIdx.x")
        s[out].bind(j, "threadIdx.x")
    ''')
    assert m.status == "ok", m.error
