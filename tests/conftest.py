"""Test configuration: tests run in Numba's CUDA simulator, no GPU needed (unless TCOMP_TEST_GPU=1).

The environment must be set before anything imports numba, which is why it is done
at import time of this file (pytest imports conftest.py before the test modules).
Tests that need a real GPU carry ``@pytest.mark.gpu`` and are skipped here.
"""

import atexit
import os
import shutil
import sys
import tempfile

# TCOMP_TEST_GPU=1 runs the suite on a real GPU instead (the gpu-marked tests included).
if os.environ.get("TCOMP_TEST_GPU", "0") in ("", "0"):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
_CACHE_DIR = tempfile.mkdtemp(prefix="tcomp-test-cache-")
os.environ["TCOMP_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, True)

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
for _path in (os.path.dirname(_TESTS_DIR), _TESTS_DIR):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a real NVIDIA GPU; skipped in the CUDA simulator")
    _register_stats_from_workers(config)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"):
        return
    skip = pytest.mark.skip(reason="needs a real GPU; NUMBA_ENABLE_CUDASIM=1 is set")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng(request):
    """A fresh generator per test, seeded from the test's name so failures reproduce."""
    import numpy as np
    import zlib

    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def preempted_threads(request):
    """Run simulated kernels with their threads taking turns, each preempted at random
    memory accesses (``simulator_chaos(preempt=True)``, seeded from the test's name),
    so that a data race between threads or blocks shows up as a wrong result instead of
    hiding behind the simulator's run-to-completion scheduling. Every launch gets
    another interleaving: run the kernel a few times. A no-op on a GPU."""
    import zlib

    from tcomp.testing.simulator_chaos import simulator_chaos

    with simulator_chaos(seed=zlib.crc32(request.node.nodeid.encode()), preempt=True):
        yield


# ---------------------------------------------------------------------------- the schedule fuzzer
# Its options and end-of-run summary (``tcomp.testing.fuzz``): ``pytest tests/fuzz`` draws
# ``--fuzz-examples`` schedules (default 300, split evenly over the workloads) from a fixed
# seed (``--fuzz-seed``), so that CI runs the same schedules every time; ``pytest -m long``
# runs the long search of ``--fuzz-long-examples`` schedules (default 3,000);
# ``--fuzz-seed random`` draws other ones each run. They live here, not in
# ``tests/fuzz/conftest.py``, so that a run of the whole suite knows the options.

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


class _StatsFromWorkers:
    """Under pytest-xdist each worker draws its share: the workers hand their counts to
    the controller, which prints the sum."""

    def pytest_testnodedown(self, node, error):
        from tcomp.testing.fuzz import STATS

        shipped = getattr(node, "workeroutput", {}).get("fuzz_stats")
        if shipped:
            for category, reason, n in shipped["counts"]:
                STATS.counts[(category, reason)] += n
            STATS.seconds += shipped["seconds"]


def _register_stats_from_workers(config):
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_StatsFromWorkers(), "fuzz-stats-from-workers")


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workeroutput"):  # not an xdist worker
        return
    try:
        from tcomp.testing.fuzz import STATS
    except ImportError:
        return
    session.config.workeroutput["fuzz_stats"] = {
        "counts": [[category, reason, n] for (category, reason), n in STATS.counts.items()],
        "seconds": STATS.seconds}


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
