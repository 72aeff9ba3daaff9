"""What the commands share: loading a workload at a shape, progress lines, launch sizes
(random inputs, the comparison with the reference and flop counts: ``tcomp.validation``).

NOTE: nothing here imports numba (or tcomp, which may) at module level: ``tcomp demo``
must be able to set ``NUMBA_ENABLE_CUDASIM=1`` before numba reads its configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..validation import SIMULATOR_THREADS_PER_SECOND as SIM_THREADS_PER_SECOND  # noqa: F401  (re-exported)


def simulator_requested() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def gpu_device_node() -> bool:
    """A cheap look for an NVIDIA driver, without importing numba."""
    return os.path.exists("/dev/nvidiactl")


def fall_back_to_simulator(say) -> bool:
    """Without an NVIDIA GPU, switch to Numba's CUDA simulator (before numba is imported);
    tell ``say`` what was chosen. Returns whether the simulator runs the kernels."""
    if not simulator_requested() and not gpu_device_node():
        if "numba" in sys.modules:
            say("warning: numba is already imported; NUMBA_ENABLE_CUDASIM cannot take effect now")
        # NOTE: numba reads NUMBA_ENABLE_CUDASIM once, when it is first imported.
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        say("no NVIDIA GPU found (no /dev/nvidiactl): running in Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)")
        return True
    if simulator_requested():
        say("NUMBA_ENABLE_CUDASIM is set: running in Numba's CUDA simulator")
        return True
    say("NVIDIA GPU found: compiling with numba-cuda")
    return False


class Progress:
    """Progress lines for the slow steps: ``[demo] building ... done (1.2 s)``."""

    def __init__(self, name: str, out=None):
        self.name = name
        self.out = out or sys.stdout

    def step(self, text: str):
        return Step(self, text)

    def say(self, text: str) -> None:
        print(f"[{self.name}] {text}", file=self.out, flush=True)


class Step:
    def __init__(self, progress: Progress, text: str):
        self.progress, self.text = progress, text

    def __enter__(self):
        print(f"[{self.progress.name}] {self.text} ...", end="", file=self.progress.out, flush=True)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        dt = time.perf_counter() - self.t0
        print(f" {'done' if exc_type is None else 'failed'} ({dt:.2f} s)", file=self.progress.out, flush=True)
        self.seconds = dt
        return False


def section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(3, 72 - len(title)), flush=True)


def format_shape(shape: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def prepare(args, progress: Progress | None = None):
    """Load the workload, build its algorithm at the requested shape, apply the schedule.

    Returns ``(schedule, out, shape, description of the schedule)``.
    """
    import tcomp as tc
    from ..workload import apply_schedule, load_schedule, load_workload, parse_shape, warn_default_schedule

    workload = load_workload(args.file)
    out, shape = workload.build_algorithm(parse_shape(args.shape))
    s = tc.create_schedule(out)
    if args.schedule:
        fn, where = load_schedule(args.schedule, workload)
    elif workload.schedule is not None:
        fn, where = workload.schedule, f"{args.file}:schedule"
    else:
        fn, where = None, "none (every stage at root: the default schedule)"
        warn_default_schedule(args.file)
    if fn is not None:
        apply_schedule(s, out, fn, where=f"schedule {where}")
    return s, out, shape, where


def outputs_of(s) -> list:
    return list(s.outputs)


def host_dtype_of(dtype: str):
    from ..dtypes import host_dtype

    return host_dtype(dtype)


def launch_threads(mod) -> int:
    from ..validation import launch_threads as program_threads

    return program_threads(mod.program)


def target_name(text: str) -> str:
    """``--target``'s type: the target module's name for ``text`` (any case, or an alias
    such as ``a6000``); an unknown one is a usage error (exit status 2) naming the choices."""
    from ..errors import TcompError
    from ..target.gpus import get_target, target_names

    try:
        return get_target(text).name
    except TcompError:
        raise argparse.ArgumentTypeError(f"unknown target {text!r}; choose one of {', '.join(target_names())}") \
            from None


def add_target_arg(p: argparse.ArgumentParser, what: str) -> None:
    """``--target NAME``, one of the target module's names (``tcomp.target.target_names``),
    the same in every command's help and validation; ``what`` says what it is for. Left
    out, it is None, which :func:`machine_target` resolves."""
    from ..target.gpus import DEFAULT_TARGET, target_names

    p.add_argument("--target", default=None, type=target_name, choices=target_names(), metavar="NAME",
                   help=f"{what}: one of %(choices)s (default: this machine's GPU where tcomp has a record "
                        f"of it, else {DEFAULT_TARGET.name})")


#: where the NVIDIA driver describes each GPU ("Model: NVIDIA H100 80GB HBM3"), readable
#: without a CUDA context (so before the CUDA simulator may still be chosen)
DRIVER_GPU_INFO = "/proc/driver/nvidia/gpus/*/information"


def machine_target() -> str:
    """The target name of this machine's first GPU, as its driver names it, where tcomp has
    a record of that GPU (an H100 is ranked as an H100); else the default target's."""
    import glob

    from ..target.gpus import DEFAULT_TARGET, target_of_device

    for path in sorted(glob.glob(DRIVER_GPU_INFO)):
        try:
            with open(path) as f:
                model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("Model:")), "")
        except OSError:
            continue
        found = target_of_device(model)
        if found is not None:
            return found.name
    return DEFAULT_TARGET.name


def add_workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="workload file defining algorithm(**shape) and "
                   "optionally schedule(s, out), such as examples/matmul_silu_quant.py")
    p.add_argument("--schedule", metavar="PATH",
                   help="schedule file defining schedule(s, out) (as tcomp autoschedule writes), PATH:NAME for "
                        "another function in it, or the NAME of a function in FILE; default: FILE's own "
                        "schedule, else the default schedule")
    p.add_argument("--shape", metavar="M=..,N=..",
                   help="override shape keywords of algorithm(), for example M=256,N=256,K=128")
