"""The schedule fuzzer (issue 5): random schedules of the example workloads, each held to
``tc.evaluate`` through ``tc.check``, ``tc.build`` and a run in the simulator.

See ``tcomp/testing/fuzz.py`` for what is drawn and what counts as a failure; the
counts of legal, illegal and cleanly rejected schedules print at the end of the run.
Run longer with ``pytest tests/fuzz --fuzz-examples 5000``.
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


@pytest.mark.parametrize("name", NAMES)
def test_random_schedules_match_the_reference(name, fuzz_examples, fuzz_seed):
    examples = max(1, math.ceil(fuzz_examples / len(NAMES)))

    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(st.data())
    def prop(data):
        fuzz_one(data, name)

    if fuzz_seed is not None:
        prop = hypothesis.seed(fuzz_seed + NAMES.index(name))(prop)
    prop()
