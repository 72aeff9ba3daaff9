"""Every example schedule compiles offline to PTX for sm_90a, and ptxas reports no spills.

Runs in a subprocess without the CUDA simulator (this process has it on), at the examples'
default shapes (4096^3), exactly as the kernels run on the H200.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_examples_compile_for_sm90a_without_spills():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-m", "tcomp.codegen.ptx_examples"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    names = {(r["file"], r["schedule"]) for r in reports}
    for rung in ("naive", "coalesced", "shared", "blocktile_1d", "blocktile_2d", "vectorized", "double_buffered",
                 "warptiled"):
        assert ("sgemm_ladder.py", rung) in names
    assert ("matmul_silu_quant.py", "schedule") in names
    assert ("ffn_bf16.py", "schedule") in names
    for r in reports:
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, r
        assert 0 < r["registers"] <= 255, r
