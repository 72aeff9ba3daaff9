"""``tc.build`` on a machine without a GPU, outside Numba's CUDA simulator (issue 30, item
7): a ``tc.CodegenError`` (a ``tc.TcompError``) at build time that names the problem and
the two ways to run, not numba-cuda's own ``CudaSupportError`` from deep inside a
compile. The simulator is not switched on behind the user's back: it runs about 4,000
threads a second, a silent 1000x slowdown.

The tests run with NUMBA_ENABLE_CUDASIM=1 (conftest.py), so this one runs a Python
process without it; on a machine with a GPU the build succeeds and the test is skipped.
"""

import pytest

from workloads import json_from_a_process_without_the_simulator

_BUILD = """
import json
import tcomp as tc
from numba import cuda

A = tc.placeholder((8,), "float32", name="A")
B = tc.compute((8,), lambda i: A[i] * 2.0, name="B")
s = tc.create_schedule(B)
outcome = {"gpu": cuda.is_available()}
try:
    tc.build(s)
except Exception as err:
    outcome.update(raised=type(err).__name__, tcomp=isinstance(err, tc.TcompError), message=str(err))
print(json.dumps(outcome))
"""


def test_build_without_a_gpu_raises_a_tcomp_error_that_says_how_to_run():
    outcome = json_from_a_process_without_the_simulator(["-c", _BUILD], timeout=300)
    if outcome["gpu"]:
        pytest.skip("this machine has a GPU: tc.build compiles for it")
    assert outcome.get("raised") == "CodegenError" and outcome["tcomp"], outcome
    message = outcome["message"]
    assert "no CUDA GPU" in message
    assert "NUMBA_ENABLE_CUDASIM=1" in message and "NVIDIA GPU" in message
