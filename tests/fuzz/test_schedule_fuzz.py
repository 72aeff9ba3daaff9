"""The schedule fuzzer (issue 5): random schedules of the example workloads, each held to
``tc.evaluate`` through ``tc.check``, ``tc.build`` and a run in the simulator.

See ``tcomp/testing/fuzz.py`` for what is drawn and what counts as a failure; the
counts of legal, illegal and cleanly rejected schedules print at the end of the run.
The fast suite draws ``--fuzz-examples`` schedules; ``pytest -m long`` draws
``--fuzz-long-examples`` (3,000) from the same seed.
"""

import math

import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tcomp.testing.fuzz import WORKLOADS, fuzz_one  # noqa: E402

# NOTE: index arithmetic such as ``7 - j`` wraps around in uint32 in the generated code
# (and back, so it is right); the simulator's numpy warns about it. Casting a NaN (the
# poison of unwritten memory) to an integer warns too.
pytestmark = [pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
              pytest.mark.timeout(0)]

NAMES = list(WORKLOADS)


def _fuzz(name: str, schedules: int, seed) -> None:
    """Draw ``schedules`` (split over the workloads) random schedules of workload ``name``
    and hold each to the reference (``fuzz_one``)."""
    examples = max(1, math.ceil(schedules / len(NAMES)))

    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(st.data())
    def prop(data):
        fuzz_one(data, name)

    if seed is not None:
        prop = hypothesis.seed(seed + NAMES.index(name))(prop)
    prop()


@pytest.mark.parametrize("name", NAMES)
def test_random_schedules_match_the_reference(name, fuzz_examples, fuzz_seed):
    _fuzz(name, fuzz_examples, fuzz_seed)


@pytest.mark.long
@pytest.mark.parametrize("name", NAMES)
def test_a_long_run_of_random_schedules_matches_the_reference(name, fuzz_long_examples, fuzz_seed):
    """The long run (``pytest -m long``; CI runs it after the fast suite)."""
    _fuzz(name, fuzz_long_examples, fuzz_seed)
