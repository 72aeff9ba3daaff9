"""``tcomp autoschedule`` end to end at a tiny shape without a GPU (model only): the
progress, the plain statement that nothing was measured, the check of the winner in the
simulator, an --out file that tcomp check and tcomp explain accept, and shape buckets
(``--shapes``): a search per extent, the kernel sets weighed, the chosen set written."""

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


def test_shape_buckets_search_each_extent_and_write_the_cheapest_set(tmp_path, env):
    """Two row counts, 200 calls of one row and one of 16 a group: each searched (its
    preparation timed), every set of bucket kernels that holds 16 rows weighed over
    --groups groups, the cheapest one's schedules written, one file per bucket (which
    set wins at these launch-bound sizes is the cost model's call; the choice between
    call mixes is tests/search/test_buckets.py's)."""
    import re

    args = ["autoschedule", "examples/silu_mul_quant.py", "--shapes", "M=1:200,M=16:1", "--shape", "N=32",
            "--trials", "2", "--model-only", "--workers", "2", "--db", str(tmp_path / "db.jsonl")]
    r = _tcomp(*args, "--groups", "7", "--out", str(tmp_path / "chain.py"), env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "== M = 1 (200 calls a group)" in r.stdout and "== M = 16 (1 calls a group)" in r.stdout
    assert "kernel sets for 7 groups of 200 x M=1, 1 x M=16" in r.stdout
    table = re.findall(r"^  ([\d, ]+?) +([\d.]+)s .* ([\d.]+)s$", r.stdout, re.MULTILINE)
    assert sorted(row[0] for row in table) == ["1, 16", "16"]
    best = min(table, key=lambda row: float(row[2]))[0]
    assert f"chosen for 7 groups: buckets {best}" in r.stdout
    written = sorted(p.name for p in tmp_path.glob("chain_M*.py"))
    assert written == sorted(f"chain_M{e}.py" for e in best.split(", "))
    assert "shape:    M=16, N=32" in (tmp_path / "chain_M16.py").read_text()
    r = _tcomp("autoschedule", "examples/silu_mul_quant.py", "--shapes", "M=1:2,N=4:1", env=env)
    assert r.returncode == 2 and "--shapes buckets one axis; got M and N" in r.stderr
    r = _tcomp("autoschedule", "examples/silu_mul_quant.py", "--shapes", "M=1:2", "--shape", "M=3", env=env)
    assert r.returncode == 2 and "--shape sets M, which --shapes buckets" in r.stderr


def test_bad_arguments_are_usage_errors(tmp_path, env):
    r = _tcomp("autoschedule", "no/such/file.py", env=env)
    assert r.returncode == 2 and "no such file" in r.stderr
    r = _tcomp("autoschedule", "examples/silu_mul_quant.py", "--trials", "-1", env=env)
    assert r.returncode == 2 and "--trials must be 0 or more" in r.stderr
    r = _tcomp("autoschedule", "examples/silu_mul_quant.py", "--gpus", "0", env=env)
    assert r.returncode == 2 and "--gpus must be 1 or more" in r.stderr
    r = _tcomp("autoschedule", "examples/silu_mul_quant.py", "--shapes", "M=1:2", "--groups", "0", env=env)
    assert r.returncode == 2 and "--groups must be 1 or more" in r.stderr
    r = _tcomp("autoschedule", "--help", env=env)
    assert r.returncode == 0 and "--model-only" in r.stdout and "--trials" in r.stdout and "--gpus" in r.stdout
    assert "--shapes" in r.stdout and "--groups" in r.stdout
