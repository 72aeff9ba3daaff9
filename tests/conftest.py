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
