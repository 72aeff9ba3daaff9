"""Options and the end-of-run summary of the schedule fuzzer (``tcomp.testing.fuzz``).

``pytest tests/fuzz`` draws ``--fuzz-examples`` schedules (default 300, split evenly
over the workloads) from a fixed seed (``--fuzz-seed``), so that CI runs the same
schedules every time; ``pytest -m long`` runs the long search of ``--fuzz-long-examples``
schedules (default 3,000), ``--fuzz-seed random`` a different one each run.
"""

import pytest

DEFAULT_EXAMPLES = 300
DEFAULT_LONG_EXAMPLES = 3000
DEFAULT_SEED = 20240605


def pytest_addoption(parser):
    group = parser.getgroup("fuzz", "schedule fuzzer (tests/fuzz)")
    group.addoption("--fuzz-examples", type=int, default=DEFAULT_EXAMPLES,
                    help=f"schedules to draw in all, split over the workloads (default {DEFAULT_EXAMPLES})")
    group.addoption("--fuzz-long-examples", type=int, default=DEFAULT_LONG_EXAMPLES,
                    help=f"schedules the long run draws (``-m long``; default {DEFAULT_LONG_EXAMPLES})")
    group.addoption("--fuzz-seed", default=str(DEFAULT_SEED),
                    help=f"hypothesis seed (default {DEFAULT_SEED}); 'random' for a fresh one each run")


@pytest.fixture(scope="session")
def fuzz_examples(request) -> int:
    return request.config.getoption("--fuzz-examples")


@pytest.fixture(scope="session")
def fuzz_long_examples(request) -> int:
    return request.config.getoption("--fuzz-long-examples")


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
