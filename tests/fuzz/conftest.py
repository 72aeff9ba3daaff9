"""Options and the end-of-run summary of the schedule fuzzer (``tcomp.testing.fuzz``).

``pytest tests/fuzz`` draws ``--fuzz-examples`` schedules (default 300, split evenly
over the workloads) from a fixed seed (``--fuzz-seed``), so that CI runs the same
schedules every time; ``pytest tests/fuzz --fuzz-examples 5000`` runs a longer
search, ``--fuzz-seed random`` a different one each run.
"""

import pytest

DEFAULT_EXAMPLES = 300
DEFAULT_SEED = 20240605


def pytest_addoption(parser):
    group = parser.getgroup("fuzz", "schedule fuzzer (tests/fuzz)")
    group.addoption("--fuzz-examples", type=int, default=DEFAULT_EXAMPLES,
                    help=f"schedules to draw in all, split over the workloads (default {DEFAULT_EXAMPLES})")
    group.addoption("--fuzz-seed", default=str(DEFAULT_SEED),
                    help=f"hypothesis seed (default {DEFAULT_SEED}); 'random' for a fresh one each run")


@pytest.fixture(scope="session")
def fuzz_examples(request) -> int:
    return request.config.getoption("--fuzz-examples")


@pytest.fixture(scope="session")
def fuzz_seed(request):
    value = request.config.getoption("--fuzz-seed")
    return None if value == "random" else int(value)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    try:
        from tcomp.testing.fuzz import STATS
    except ImportError:  # hypothesis missing: the fuzz tests were skipped
        return
    lines = STATS.lines()
    if lines:
        terminalreporter.section("schedule fuzzer")
        for line in lines:
            terminalreporter.write_line(line)
