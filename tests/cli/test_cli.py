"""The ``tcomp`` command line and workload-file loading (tcomp/cli/, tcomp/workload.py).

In-process tests call ``tcomp.cli.main(argv)``; the end-to-end ones run ``python -m
tcomp.cli`` in a subprocess with NUMBA_ENABLE_CUDASIM=1, as a user would.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tcomp import cli
from tcomp.workload import WorkloadError, load_schedule, load_workload, parse_shape

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "matmul_silu_quant.py"

SMALL_WORKLOAD = '''
import tcomp as tc


def algorithm(M=32, N=32, K=8):
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    return tc.compute((M, N), lambda i, j: tc.quantize(tc.silu(C[i, j]), 0.05, "int8"), name="Q")


def schedule(s, out):
    i, j = s[out].axis
    io, jo, ii, ji = s[out].tile(i, j, 16, 16)
    s[out].bind(io, "blockIdx.y")
    s[out].bind(jo, "blockIdx.x")
    s[out].bind(ii, "threadIdx.y")
    s[out].bind(ji, "threadIdx.x")
    s["C"].compute_at(s[out], ji)
'''


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def run_cli(*argv, timeout=300):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "tcomp.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=str(REPO), timeout=timeout)


# ---------------------------------------------------------------------- --help


@pytest.mark.parametrize("command", [[], ["demo"], ["check"], ["bench"]])
def test_help_exits_zero(command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([*command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: tcomp" in out
    if command:
        assert command[0] in out


def _target_options():
    """``(command, its parser, its --target action)`` for every command that takes a target."""
    import argparse

    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        for action in sub._actions:
            if "--target" in action.option_strings:
                yield name, sub, action


def test_every_command_with_a_target_lists_the_target_modules_names():
    import re

    from tcomp.target import gpus

    names = gpus.target_names()
    spellings = set(names) | set(gpus._ALIASES)  # every way of writing a target that tcomp knows
    found = list(_target_options())
    assert {name for name, _, _ in found} >= {"autoschedule", "check", "explain"}
    for command, sub, action in found:
        assert tuple(action.choices) == names, command
        help_text = " ".join(sub.format_help().split())
        assert ", ".join(names) in help_text, (command, help_text)
        mentioned = {word for word in re.findall(r"[\w-]+", help_text) if word in spellings}
        assert mentioned == set(names), (command, mentioned)


@pytest.mark.parametrize("command", ["autoschedule", "explain"])
def test_a_target_is_validated_by_the_command_line(command, capsys):
    parser = cli.build_parser()
    assert parser.parse_args([command, str(EXAMPLE), "--target", "a6000"]).target == "rtx_a6000"
    assert parser.parse_args([command, str(EXAMPLE), "--target", "H100"]).target == "h100"
    with pytest.raises(SystemExit) as exc:
        parser.parse_args([command, str(EXAMPLE), "--target", "h300"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown target 'h300'; choose one of h200, h100, rtx_a6000, rtx_pro_6000" in err


def test_no_command_prints_usage_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "usage: tcomp" in capsys.readouterr().err


def test_unknown_option_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["check", str(EXAMPLE), "--no-such-option"])
    assert exc.value.code == 2


def test_importing_the_cli_does_not_import_numba():
    # `tcomp demo` sets NUMBA_ENABLE_CUDASIM before numba is imported; that only works
    # while importing tcomp (and tcomp.cli) leaves numba alone.
    code = "import sys, tcomp.cli; sys.exit(1 if 'numba' in sys.modules else 0)"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0


# ---------------------------------------------------------------------- check


def test_check_example_is_legal(capsys):
    assert cli.main(["check", str(EXAMPLE), "--shape", "M=64,N=64,K=32"]) == 0
    out = capsys.readouterr().out
    assert "legal" in out
    assert "M=64, N=64, K=32" in out


def test_check_file_without_algorithm(tmp_path, capsys):
    path = write(tmp_path, "noalg.py", "def schedule(s, out):\n    pass\n")
    assert cli.main(["check", path]) == 2
    err = capsys.readouterr().err
    assert "does not define algorithm" in err
    assert path in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_check_missing_file(tmp_path, capsys):
    assert cli.main(["check", str(tmp_path / "nope.py")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "Traceback" not in err


def test_check_file_with_syntax_error(tmp_path, capsys):
    path = write(tmp_path, "broken.py", "def algorithm(M=4:\n    pass\n")
    assert cli.main(["check", path]) == 2
    err = capsys.readouterr().err
    assert "syntax error" in err and "broken.py:1" in err


def test_check_schedule_file_without_schedule(tmp_path, capsys):
    wl = write(tmp_path, "wl.py", SMALL_WORKLOAD)
    sched = write(tmp_path, "sched.py", "def not_a_schedule(s, out):\n    pass\n")
    assert cli.main(["check", wl, "--schedule", sched]) == 2
    err = capsys.readouterr().err
    assert "does not define schedule(s, out)" in err and "sched.py" in err
    assert len(err.strip().splitlines()) == 1


def test_check_schedule_that_fails_to_replay(tmp_path, capsys):
    wl = write(tmp_path, "wl.py", SMALL_WORKLOAD)
    # three handles where the stage has two axes: a Python error inside the schedule
    sched = write(tmp_path, "sched.py", """
        def schedule(s, out):
            i, j, k = s[out].axis
        """)
    assert cli.main(["check", wl, "--schedule", sched]) == 2
    err = capsys.readouterr().err
    assert "failed to replay" in err and "sched.py:3" in err and "ValueError" in err
    assert "Traceback" not in err


def test_check_schedule_naming_an_unknown_stage(tmp_path, capsys):
    wl = write(tmp_path, "wl.py", SMALL_WORKLOAD)
    sched = write(tmp_path, "sched.py", """
        def schedule(s, out):
            s["NoSuchStage"].compute_inline()
        """)
    assert cli.main(["check", wl, "--schedule", sched]) == 2
    err = capsys.readouterr().err
    assert "NoSuchStage" in err and "Traceback" not in err


def test_check_with_separate_schedule_file(tmp_path, capsys):
    wl = write(tmp_path, "wl.py", SMALL_WORKLOAD)
    sched = write(tmp_path, "sched.py", """
        def schedule(s, out):
            i, j = s[out].axis
            io, ii = s[out].split(i, 8)
            s[out].bind(io, "blockIdx.x")
            s[out].bind(ii, "threadIdx.x")
        """)
    assert cli.main(["check", wl, "--schedule", sched]) == 0
    out = capsys.readouterr().out
    assert "sched.py" in out and "legal" in out


def test_check_a_schedule_that_cannot_be_built_exits_1(tmp_path, capsys):
    """Legal dependences, but 2048 threads per block: tc.check refuses it as tc.build would."""
    wl = write(tmp_path, "wl.py", SMALL_WORKLOAD)
    sched = write(tmp_path, "sched.py", """
        def schedule(s, out):
            i, j = s[out].axis
            f = s[out].fuse(i, j)
            fo, fi = s[out].split(f, 2048)
            s[out].bind(fi, "threadIdx.x")
        """)
    assert cli.main(["check", wl, "--schedule", sched, "--shape", "M=64,N=64"]) == 1
    out = capsys.readouterr().out
    assert "the schedule cannot be built (CapacityError" in out and "2048 threads per block" in out, out


UNSCHEDULED_WORKLOAD = SMALL_WORKLOAD.split("\n\ndef schedule")[0] + "\n"


def test_a_workload_without_a_schedule_says_so_and_points_at_autoschedule(tmp_path, capsys):
    wl = write(tmp_path, "wl.py", UNSCHEDULED_WORKLOAD)
    assert cli.main(["check", wl, "--shape", "M=8,N=8,K=4"]) == 0
    err = capsys.readouterr().err
    assert f"tcomp check: warning: {wl} defines no schedule(s, out)" in err, err
    assert "one thread" in err and f"tcomp autoschedule {wl}" in err
    assert "Traceback" not in err and "warnings.warn" not in err


def test_a_workload_with_a_schedule_raises_no_warning(tmp_path, capsys):
    wl = write(tmp_path, "wl.py", SMALL_WORKLOAD)
    assert cli.main(["check", wl, "--shape", "M=16,N=16,K=4"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_check_unknown_shape_parameter(tmp_path, capsys):
    wl = write(tmp_path, "wl.py", SMALL_WORKLOAD)
    assert cli.main(["check", wl, "--shape", "X=3"]) == 2
    err = capsys.readouterr().err
    assert "no shape parameter 'X'" in err and "M, N, K" in err


def test_bench_in_the_simulator_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    wl = write(tmp_path, "wl.py", SMALL_WORKLOAD)
    assert cli.main(["bench", wl]) == 2
    err = capsys.readouterr().err
    assert "GPU" in err and "Traceback" not in err


# ---------------------------------------------------------------------- workload helpers


def test_parse_shape():
    assert parse_shape("M=16,N=32, K=0x10") == {"M": 16, "N": 32, "K": 16}
    assert parse_shape(None) == {}
    with pytest.raises(WorkloadError, match="NAME=VALUE"):
        parse_shape("M16")


def test_load_workload_default_shape(tmp_path):
    wl = load_workload(write(tmp_path, "wl.py", SMALL_WORKLOAD))
    assert wl.default_shape() == {"M": 32, "N": 32, "K": 8}
    out, shape = wl.build_algorithm({"K": 4})
    assert shape == {"M": 32, "N": 32, "K": 4}
    assert out.name == "Q" and tuple(out.shape) == (32, 32)


def test_algorithm_returning_something_else(tmp_path):
    wl = load_workload(write(tmp_path, "wl.py", "def algorithm(M=4):\n    return M\n"))
    with pytest.raises(WorkloadError, match="must return the output tensor"):
        wl.build_algorithm()


def test_schedule_by_function_name(tmp_path):
    wl = load_workload(write(tmp_path, "wl.py", SMALL_WORKLOAD + "\n\ndef schedule_other(s, out):\n    pass\n"))
    fn, where = load_schedule("schedule_other", wl)
    assert fn is wl.module.schedule_other and where.endswith(":schedule_other")
    fn, where = load_schedule(f"{wl.path}:schedule_other", wl)
    assert fn.__name__ == "schedule_other"
    with pytest.raises(WorkloadError, match="defines no function"):
        load_schedule("schedule_missing", wl)


# ---------------------------------------------------------------------- demo (subprocess, simulator)


def test_demo_runs_in_the_simulator():
    proc = run_cli("demo", "--shape", "M=16,N=16,K=8")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "simulator" in out
    assert "loop nest (tc.lower)" in out and "kernel k_" in out
    assert "generated source (mod.source)" in out and "@cuda.jit" in out
    assert "int8 elements that differ:" in out
    assert "max abs difference:" in out


ELEMENTWISE_WORKLOAD = '''
import tcomp as tc


def algorithm(M=64, N=64):
    X = tc.placeholder((M, N), "float32", name="X")
    Y = tc.placeholder((M, N), "float32", name="Y")
    return tc.compute((M, N), lambda i, j: tc.silu(X[i, j]) * Y[i, j], name="Z")


def schedule(s, out):
    i, j = s[out].axis
    s[out].bind(i, "blockIdx.x")
    s[out].bind(j, "threadIdx.x")
'''


def test_demo_runs_a_workload_without_a_k_axis(tmp_path):
    wl = write(tmp_path, "elementwise.py", ELEMENTWISE_WORKLOAD)
    proc = run_cli("demo", "--file", wl)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "shape:    M=32, N=32" in proc.stdout  # the demo's small sizes for the keywords it takes
    assert "output Z (32, 32) float32:" in proc.stdout and "result: matches tc.evaluate" in proc.stdout
    proc = run_cli("demo", "--file", wl, "--shape", "M=8")
    assert proc.returncode == 0 and "shape:    M=8, N=64" in proc.stdout, proc.stdout + proc.stderr


def test_demo_passes_the_inputs_in_the_modules_order(tmp_path):
    """B is read before A, so the traversal meets B first; the module takes A first."""
    wl = write(tmp_path, "difference.py", ELEMENTWISE_WORKLOAD.replace(
        "tc.silu(X[i, j]) * Y[i, j]", "Y[i, j] - X[i, j]"))
    proc = run_cli("demo", "--file", wl, "--shape", "M=4,N=8")
    assert proc.returncode == 0 and "result: matches tc.evaluate" in proc.stdout, proc.stdout + proc.stderr


def test_demo_bad_shape_is_a_user_error():
    proc = run_cli("demo", "--shape", "M=16,Z=3")
    assert proc.returncode == 2
    assert "no shape parameter 'Z'" in proc.stderr and "Traceback" not in proc.stderr


def test_check_via_subprocess():
    proc = run_cli("check", str(EXAMPLE), "--shape", "M=32,N=32,K=16")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "legal" in proc.stdout


def test_check_holds_the_schedule_to_the_target_it_is_given():
    gemm = str(Path(__file__).resolve().parents[2] / "examples" / "gemm_bf16.py")
    on_h200 = run_cli("check", gemm, "--shape", "M=256,N=256,K=256")
    assert on_h200.returncode == 0, on_h200.stdout + on_h200.stderr
    on_a6000 = run_cli("check", gemm, "--shape", "M=256,N=256,K=256", "--target", "rtx_a6000")
    assert on_a6000.returncode == 1
    assert "target:   rtx_a6000" in on_a6000.stdout
    assert "wgmma_m64n128k16, which the rtx_a6000 does not have" in on_a6000.stdout


def test_the_target_defaults_to_the_machines_gpu(tmp_path, monkeypatch):
    """Without --target the commands rank and check for this machine's GPU, as its driver
    names it, where tcomp has a record of it (an H100 as an H100); else for the H200."""
    from tcomp.cli import common

    monkeypatch.setattr(common, "DRIVER_GPU_INFO", str(tmp_path / "*" / "information"))
    assert common.machine_target() == "h200"  # no GPU
    (tmp_path / "0000:19:00.0").mkdir()
    info = tmp_path / "0000:19:00.0" / "information"
    info.write_text("Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:             17\n")
    assert common.machine_target() == "h100"
    info.write_text("Model: \t\t Tesla T4\n")
    assert common.machine_target() == "h200"  # a GPU tcomp has no record of
    assert cli.build_parser().parse_args(["explain", str(EXAMPLE)]).target is None  # resolved by main
