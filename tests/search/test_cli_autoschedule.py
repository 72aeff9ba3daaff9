"""``tcomp autoschedule`` end to end at a tiny shape without a GPU (model only): the
progress, the plain statement that nothing was measured, the check of the winner in the
simulator, and an --out file that tcomp check and tcomp explain accept."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tcomp(*args, env=None):
    return subprocess.run([sys.executable, "-m", "tcomp.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=600)


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", TCOMP_CACHE_DIR=str(tmp_path / "cache"))
    return e


def test_model_only_search_writes_a_schedule_that_replays(tmp_path, env):
    out = tmp_path / "chosen.py"
    r = _tcomp("autoschedule", "examples/silu_mul_quant.py", "--shape", "M=16,N=32", "--trials", "4",
               "--model-only", "--workers", "2", "--out", str(out), "--db", str(tmp_path / "db.jsonl"), env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "nothing was measured (--model-only)" in r.stdout
    assert "check: matches tc.evaluate in the CUDA simulator" in r.stdout
    text = out.read_text()
    assert text.startswith('"""Schedule of silu_mul_quant.py') and "shape:    M=16, N=32" in text
    assert "def schedule(s, out):" in text
    check = _tcomp("check", "examples/silu_mul_quant.py", "--schedule", str(out), "--shape", "M=16,N=32", env=env)
    assert check.returncode == 0 and "legal" in check.stdout, check.stdout + check.stderr
    explain = _tcomp("explain", "examples/silu_mul_quant.py", "--schedule", str(out), "--shape", "M=16,N=32",
                     env=env)
    assert explain.returncode == 0, explain.stderr


def test_bad_arguments_are_usage_errors(tmp_path, env):
    r = _tcomp("autoschedule", "no/such/file.py", env=env)
    assert r.returncode == 2 and "no such file" in r.stderr
    r = _tcomp("autoschedule", "examples/silu_mul_quant.py", "--trials", "-1", env=env)
    assert r.returncode == 2 and "--trials must be 0 or more" in r.stderr
    r = _tcomp("autoschedule", "examples/silu_mul_quant.py", "--gpus", "0", env=env)
    assert r.returncode == 2 and "--gpus must be 1 or more" in r.stderr
    r = _tcomp("autoschedule", "--help", env=env)
    assert r.returncode == 0 and "--model-only" in r.stdout and "--trials" in r.stdout and "--gpus" in r.stdout
