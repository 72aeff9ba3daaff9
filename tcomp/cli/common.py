"""What the commands share: loading a workload at a shape, progress lines, random
inputs, comparing with the reference, counting flops.

NOTE: nothing here imports numba (or tcomp, which may) at module level: ``tcomp demo``
must be able to set ``NUMBA_ENABLE_CUDASIM=1`` before numba reads its configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

#: threads a second that Numba's CUDA simulator runs, roughly (NUMBA_CUDA.md)
SIM_THREADS_PER_SECOND = 4000


def simulator_requested() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def gpu_device_node() -> bool:
    """A cheap look for an NVIDIA driver, without importing numba."""
    return os.path.exists("/dev/nvidiactl")


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
    from ..workload import apply_schedule, load_schedule, load_workload, parse_shape

    workload = load_workload(args.file)
    out, shape = workload.build_algorithm(parse_shape(args.shape))
    s = tc.create_schedule(out)
    if args.schedule:
        fn, where = load_schedule(args.schedule, workload)
    elif workload.schedule is not None:
        fn, where = workload.schedule, f"{args.file}:schedule"
    else:
        fn, where = None, "none (every stage at root: the default schedule)"
    if fn is not None:
        apply_schedule(s, out, fn, where=f"schedule {where}")
    return s, out, shape, where


def outputs_of(s) -> list:
    return list(s.outputs)


def random_inputs(s, seed: int = 0) -> dict:
    """Random host arrays for the placeholders of schedule ``s``: ``{tensor: array}``."""
    import numpy as np

    from ..dtypes import host_dtype

    rng = np.random.default_rng(seed)
    feeds = {}
    for t in s.placeholders:
        dt = host_dtype(t.dtype)
        if t.dtype == "int8":
            a = rng.integers(-128, 128, size=t.shape, dtype=np.int8)
        elif t.dtype == "int32":
            a = rng.integers(-1000, 1000, size=t.shape, dtype=np.int32)
        else:
            a = rng.standard_normal(t.shape, dtype=np.float32).astype(dt)
        feeds[t] = np.ascontiguousarray(a)
    return feeds


def compare(got, ref, dtype: str) -> tuple[bool, list[str]]:
    """Compare a result with the reference; return ``(acceptable, report lines)``.

    Integer outputs must match up to one unit in a small share of elements (a value
    that lands near a rounding tie may round either way when the float work before
    the rounding is ordered differently); float outputs within a relative tolerance.
    """
    import numpy as np

    got = np.asarray(got)
    ref = np.asarray(ref)
    lines = []
    if dtype in ("int8", "int32"):
        diff = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        differ = int(np.count_nonzero(diff))
        worst = int(diff.max()) if diff.size else 0
        lines.append(f"max abs difference: {worst}")
        lines.append(f"{dtype} elements that differ: {differ} of {diff.size}")
        ok = worst <= 1 and differ <= max(1, diff.size // 100)
        if differ == 0:
            lines.append("result: exact match with tc.evaluate")
        elif ok:
            lines.append("result: matches tc.evaluate up to rounding ties (off by one in a few elements)")
        else:
            lines.append("result: MISMATCH with tc.evaluate")
        return ok, lines
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    diff = np.abs(g - r)
    worst = float(diff.max()) if diff.size else 0.0
    scale = float(np.abs(r).max()) if r.size else 0.0
    tol = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2, "float8_e4m3": 1.3e-1}.get(dtype, 1e-4)
    ok = bool(np.all(np.isfinite(g) == np.isfinite(r))) and worst <= tol * max(scale, 1.0)
    lines.append(f"max abs difference: {worst:.3g} (largest |reference| {scale:.3g}, tolerance {tol:g} of it)")
    lines.append(f"elements that differ: {int(np.count_nonzero(diff))} of {diff.size}")
    lines.append("result: matches tc.evaluate" if ok else "result: MISMATCH with tc.evaluate")
    return ok, lines


def flop_count(out) -> int:
    """Two flops per multiply-add of every reduction that ``out`` depends on."""
    from ..lang.tensor import ComputeOp, tensor_inputs

    total = 0
    for t in tensor_inputs(out):
        op = t.op
        if isinstance(op, ComputeOp) and op.reduce_axis:
            n = 2
            for extent in tuple(t.shape) + tuple(r.extent for r in op.reduce_axis):
                n *= int(extent)
            total += n
    return total


def host_dtype_of(dtype: str):
    from ..dtypes import host_dtype

    return host_dtype(dtype)


def launch_threads(mod) -> int:
    total = 0
    for k in mod.program.kernels:
        n = 1
        for x in tuple(k.grid) + tuple(k.block):
            n *= int(x)
        total += n
    return total


def add_workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="workload file defining algorithm(**shape) and "
                   "optionally schedule(s, out), such as examples/matmul_silu_quant.py")
    p.add_argument("--schedule", metavar="PATH",
                   help="schedule file defining schedule(s, out) (as tcomp autoschedule writes), PATH:NAME for "
                        "another function in it, or the NAME of a function in FILE; default: FILE's own "
                        "schedule, else the default schedule")
    p.add_argument("--shape", metavar="M=..,N=..",
                   help="override shape keywords of algorithm(), for example M=256,N=256,K=128")
