"""``tcomp explain FILE [--schedule PATH] [--target NAME]`` and the ranking benchmark's
helpers (benchmarks/cost_rank.py), in the CUDA simulator."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tcomp import cli

REPO = Path(__file__).resolve().parents[2]
LADDER = REPO / "examples" / "sgemm_ladder.py"

WORKLOAD = '''
import tcomp as tc


def algorithm(M=1024, N=12288):
    G = tc.placeholder((M, N), "bfloat16", name="G")
    U = tc.placeholder((M, N), "bfloat16", name="U")
    T = tc.compute((M, N), lambda i, j: tc.silu(G[i, j]), name="T")
    return tc.compute((M, N), lambda i, j: T[i, j] * U[i, j], name="Z")


def _elementwise(s, t):
    i, j = s[t].axis
    bx, tx = s[t].split(s[t].fuse(i, j), 256)
    s[t].bind(bx, "blockIdx.x")
    s[t].bind(tx, "threadIdx.x")


def schedule(s, out):
    s["T"].compute_inline()
    _elementwise(s, out)


def separate(s, out):
    _elementwise(s, s["T"].tensor)
    _elementwise(s, out)
'''


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "swiglu_tail.py"
    path.write_text(textwrap.dedent(WORKLOAD))
    return str(path)


def test_explain_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["explain", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for option in ("--schedule", "--target", "--shape", "--regs"):
        assert option in text


def test_explain_prints_nest_tables_and_totals(workload, capsys):
    assert cli.main(["explain", workload]) == 0
    out = capsys.readouterr().out
    assert "loop nest (tc.lower)" in out and "kernel k_Z(G, U, Z)" in out
    assert "cost on the h200" in out
    assert "blocks per SM" in out and "occupancy" in out and "limited by" in out
    assert "G 24.0 MiB read; U 24.0 MiB read; Z 24.0 MiB written" in out
    assert "total: 1 kernel launch, " in out and "72.0 MiB of device memory traffic" in out


def test_explain_schedule_and_target(workload, capsys):
    assert cli.main(["explain", workload, "--schedule", "separate", "--target", "h100"]) == 0
    out = capsys.readouterr().out
    assert "target h100" in out
    assert "total: 2 kernel launches" in out and "120.0 MiB of device memory traffic" in out


def test_explain_registers_and_shape(capsys):
    argv = ["explain", str(LADDER), "--schedule", "schedule_shared", "--shape", "M=4092,N=4092,K=4092",
            "--target", "rtx_a6000", "--regs", "37"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "registers         37 per thread (given)" in out
    assert "occupancy         66.7% (32 of 48 warps)" in out


def test_explain_unknown_target(workload, capsys):
    with pytest.raises(SystemExit) as exc:  # NOTE: a usage error, as argparse reports them (issue 30)
        cli.main(["explain", workload, "--target", "tpu"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown target 'tpu'" in err and "h200" in err


def test_explain_end_to_end_subprocess(workload):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-m", "tcomp.cli", "explain", workload], capture_output=True,
                          text=True, env=env, cwd=str(REPO), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "predicted" in proc.stdout


# ---------------------------------------------------------------------------- benchmarks/cost_rank.py


def _bench():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import cost_rank
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return cost_rank


def test_kendall_tau():
    kt = _bench().kendall_tau
    assert kt([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kt([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert kt([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # 7 concordant and 3 discordant pairs of 10
    assert kt([1, 2, 3, 4, 5], [3, 1, 2, 5, 4]) == pytest.approx(0.4)


def test_benchmark_has_thirty_tile_shapes():
    bench = _bench()
    rows = bench.candidates(tiny=False)
    shapes = [r for r in rows if r[1] == "blocktile_2d"]
    assert len(shapes) >= 30 and len({r[0] for r in rows}) == len(rows)
    for _, _, p in shapes:  # each fits the code generator's limits
        threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
        assert 64 <= threads <= 1024
        assert (p["BM"] + p["BN"]) * p["BK"] * 4 <= 48 * 1024


def test_benchmark_tiny_run_in_the_simulator(tmp_path):
    out = tmp_path / "tiny.json"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "cost_rank.py"), "--tiny", "--only",
                           "bt_16x16x8_t2x2,bt_16x32x8_t2x4_T", "--out", str(out)],
                          capture_output=True, text=True, env=env, cwd=str(REPO), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["size"] == 32 and len(report["rows"]) == 2
    for row in report["rows"]:
        assert row["correct"] and row["predicted_s"] > 0 and row["measured_s"] > 0
    assert "kendall_tau" in report
