"""The fuzzer's legal schedules compile to PTX through NVVM's unroll pragmas (no GPU:
``python -m tcomp.testing.fuzz_ptx`` in a subprocess without the simulator)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_random_legal_schedules_compile_for_sm90a(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["TCOMP_CACHE_DIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "tcomp.testing.fuzz_ptx", "60"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "compiled" in proc.stdout, proc.stdout
