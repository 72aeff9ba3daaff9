"""Illegal schedules: tc.check and tc.build reject them, naming the schedule call (file and
line), the stages and tensor, the violated dependence (in words and as an isl relation), a
concrete violating pair of iterations and the legal alternatives; and built without the
check they compute something other than the algorithm (or lowering refuses them too, or
the message says why the final result happens to match)."""

import numpy as np
import pytest

import tcomp as tc
from legality_cases import ILLEGAL, make_inputs, run, same


# NOTE: index arithmetic such as ``7 - j`` wraps around in uint32 in the generated code
# (and back, so it is right); the simulator's numpy warns about it.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

RACE_RUNS = 20  # stop at the first run that differs


def _ids(make):
    return make.__name__[len("illegal_"):]


def _message(case) -> str:
    with pytest.raises(tc.IllegalScheduleError) as info:
        tc.check(case.s)
    return str(info.value)


@pytest.mark.parametrize("make", ILLEGAL, ids=_ids)
def test_rejected_with_call_site_tensor_and_counterexample(make):
    case = make()
    msg = _message(case)
    first = msg.splitlines()[0]
    assert case.site in first, f"the error does not name the schedule call's line {case.site}:\n{msg}"
    assert "counterexample: " in msg and "violated dependence: " in msg
    assert "as an isl relation: {" in msg
    for text in case.expect:
        assert text in msg, f"missing {text!r} in:\n{msg}"
    assert ("happens to match" in msg) == (case.outcome == "hidden"), msg
    with pytest.raises(tc.IllegalScheduleError) as info:
        tc.build(case.s)
    assert str(info.value) == msg


@pytest.mark.parametrize("make", ILLEGAL, ids=_ids)
def test_unchecked_build_computes_something_else(make, request):
    """The checker rejects no correct schedule: built with check=False, each illegal
    schedule gives a wrong result, except where the error says a later recomputation
    hides the violation (or lowering cannot build it either)."""
    case = make()
    _message(case)
    if case.outcome == "refused":
        with pytest.raises(tc.ScheduleError):
            tc.build(case.s, check=False)
        return
    arrays = make_inputs(case)
    want = tc.evaluate(case.out, dict(zip(case.inputs, arrays)))
    if case.outcome == "hidden":
        assert same(run(case, arrays, check=False), want, case.out.dtype)
    elif case.outcome == "differs":
        assert not same(run(case, arrays, check=False), want, case.out.dtype)
    else:
        assert case.outcome == "race"
        request.getfixturevalue("preempted_threads")
        mod = tc.build(case.s, check=False)
        results = []
        for _ in range(RACE_RUNS):
            out = np.zeros_like(want)
            mod(*arrays, out)
            results.append(same(out, want, case.out.dtype))
            if not results[-1]:
                break
        assert not all(results), f"{RACE_RUNS} racy runs all matched the reference"


def test_enough_cases():
    outcomes = [make().outcome for make in ILLEGAL]
    assert len(outcomes) >= 25
    assert {"differs", "race", "hidden", "refused"} <= set(outcomes)
