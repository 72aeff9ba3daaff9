"""The ``tcomp`` command line.

    tcomp demo  [--shape M=32,N=32,K=16]            matmul + SiLU + int8 quantization, end to end
    tcomp check FILE [--schedule PATH] [--shape ..]  is the schedule legal?
    tcomp bench FILE [--schedule PATH] [--shape ..] [--repeat N]   time it on the GPU
    tcomp explain FILE [--schedule PATH] [--shape ..] [--target NAME]  the cost model's account of it

Exit status: 0 success; 1 the answer is "no" (an illegal schedule, results that differ
from the reference); 2 a user error (a file that is missing or defines no
``algorithm``, a bad option, no GPU for ``bench``): one message, no traceback.

NOTE: nothing here imports numba (or tcomp, which may) at module level: ``tcomp demo``
must be able to set ``NUMBA_ENABLE_CUDASIM=1`` before numba reads its configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

#: the shape ``tcomp demo`` runs at unless told otherwise: small enough for the simulator
DEMO_SHAPE = "M=32,N=32,K=16"
DEMO_FILE = "matmul_silu_quant.py"
#: threads a second that Numba's CUDA simulator runs, roughly (NUMBA_CUDA.md)
SIM_THREADS_PER_SECOND = 4000


# ---------------------------------------------------------------------- helpers


def _simulator_requested() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _gpu_device_node() -> bool:
    """A cheap look for an NVIDIA driver, without importing numba."""
    return os.path.exists("/dev/nvidiactl")


class _Progress:
    """Progress lines for the slow steps: ``[demo] building ... done (1.2 s)``."""

    def __init__(self, name: str, out=None):
        self.name = name
        self.out = out or sys.stdout

    def step(self, text: str):
        return _Step(self, text)

    def say(self, text: str) -> None:
        print(f"[{self.name}] {text}", file=self.out, flush=True)


class _Step:
    def __init__(self, progress: _Progress, text: str):
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


def _section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(3, 72 - len(title)), flush=True)


def _fmt_shape(shape: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def _prepare(args, progress: _Progress | None = None):
    """Load the workload, build its algorithm at the requested shape, apply the schedule.

    Returns ``(schedule, out, shape, description of the schedule)``.
    """
    import tcomp as tc
    from .workload import apply_schedule, load_schedule, load_workload, parse_shape

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


def _outputs(s) -> list:
    return list(s.outputs)


def random_inputs(s, seed: int = 0) -> dict:
    """Random host arrays for the placeholders of schedule ``s``: ``{tensor: array}``."""
    import numpy as np

    from .dtypes import host_dtype

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
    from .lang.tensor import ComputeOp, tensor_inputs

    total = 0
    for t in tensor_inputs(out):
        op = t.op
        if isinstance(op, ComputeOp) and op.reduce_axis:
            n = 2
            for extent in tuple(t.shape) + tuple(r.extent for r in op.reduce_axis):
                n *= int(extent)
            total += n
    return total


def _find_demo_file() -> Path | None:
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "examples" / DEMO_FILE, Path.cwd() / "examples" / DEMO_FILE):
        if candidate.is_file():
            return candidate
    return None


# ---------------------------------------------------------------------- demo


def cmd_demo(args) -> int:
    progress = _Progress("demo")
    if not _simulator_requested() and not _gpu_device_node():
        if "numba" in sys.modules:
            progress.say("warning: numba is already imported; NUMBA_ENABLE_CUDASIM cannot take effect now")
        # NOTE: numba reads NUMBA_ENABLE_CUDASIM once, when it is first imported.
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        progress.say("no NVIDIA GPU found (no /dev/nvidiactl): running in Numba's CUDA simulator "
                     "(NUMBA_ENABLE_CUDASIM=1)")
    elif _simulator_requested():
        progress.say("NUMBA_ENABLE_CUDASIM is set: running in Numba's CUDA simulator")
    else:
        progress.say("NVIDIA GPU found: compiling with numba-cuda")

    from .workload import WorkloadError

    if args.file is None:
        found = _find_demo_file()
        if found is None:
            raise WorkloadError(f"cannot find examples/{DEMO_FILE} beside the tcomp package or in the current "
                                "folder (tcomp demo runs from a source checkout installed with pip install -e .); "
                                "give a workload with --file PATH")
        args.file = str(found)

    with progress.step("importing numba"):
        import numpy as np
        from numba import config, cuda  # noqa: F401

        import tcomp as tc
    if _simulator_requested() and not config.ENABLE_CUDASIM:
        progress.say("warning: numba was imported before NUMBA_ENABLE_CUDASIM was set; it will try a real GPU")

    with progress.step(f"loading {args.file} and applying its schedule"):
        s, out, shape, where = _prepare(args)
    outs = _outputs(s)
    print(f"workload: {args.file}\nshape:    {_fmt_shape(shape)}\nschedule: {where}", flush=True)

    _section("loop nest (tc.lower)")
    print(tc.lower(s), flush=True)

    with progress.step("building: legality check, lowering, code generation, compile"):
        mod = tc.build(s)

    _section("generated source (mod.source)")
    print(mod.source, flush=True)
    print(f"(written to {mod.source_path})", flush=True)
    _section("run and check")

    feeds = random_inputs(s, seed=args.seed)
    results = [np.zeros(t.shape, dtype=_host_dtype(t.dtype)) for t in outs]
    threads = _threads(mod)
    where_run = "the CUDA simulator" if mod.simulator else "the GPU"
    if mod.simulator:
        seconds = threads / SIM_THREADS_PER_SECOND
        note = f"{threads} threads, " + (f"about {seconds:.0f} s" if seconds >= 1 else "under a second")
    else:
        note = "one call"
    with progress.step(f"running on {where_run} ({note})"):
        mod(*feeds.values(), *results)
    with progress.step("computing the reference with tc.evaluate (numpy)"):
        refs = [tc.evaluate(t, feeds) for t in outs]

    ok = True
    for t, got, ref in zip(outs, results, refs):
        good, lines = compare(got, ref, t.dtype)
        ok = ok and good
        print(f"output {t.name} {tuple(t.shape)} {t.dtype}:")
        for line in lines:
            print(f"  {line}")
    return 0 if ok else 1


def _host_dtype(dtype: str):
    from .dtypes import host_dtype

    return host_dtype(dtype)


def _threads(mod) -> int:
    total = 0
    for k in mod.program.kernels:
        n = 1
        for x in tuple(k.grid) + tuple(k.block):
            n *= int(x)
        total += n
    return total


# ---------------------------------------------------------------------- check


def cmd_check(args) -> int:
    import tcomp as tc

    s, out, shape, where = _prepare(args)
    print(f"workload: {args.file}\nshape:    {_fmt_shape(shape)}\nschedule: {where}", flush=True)
    t0 = time.perf_counter()
    try:
        report = tc.check(s)
    except tc.IllegalScheduleError as err:
        print(f"illegal schedule (checked in {time.perf_counter() - t0:.2f} s):\n{err}", flush=True)
        return 1
    except (tc.ScheduleError, tc.LoweringError, tc.CodegenError) as err:
        print(f"the schedule cannot be built ({type(err).__name__}, checked in "
              f"{time.perf_counter() - t0:.2f} s):\n{err}", flush=True)
        return 1
    print(f"checked in {time.perf_counter() - t0:.2f} s (polyhedral dependence check, tc.check)", flush=True)
    print(report, flush=True)
    return 0 if getattr(report, "legal", True) else 1


# ---------------------------------------------------------------------- bench


def cmd_bench(args) -> int:
    from .workload import WorkloadError

    if args.repeat < 1 or args.warmup < 0:
        raise WorkloadError("--repeat must be at least 1 and --warmup at least 0")
    if _simulator_requested():
        raise WorkloadError("tcomp bench times kernels on a GPU; NUMBA_ENABLE_CUDASIM is set "
                            "(unset it; tcomp check and tcomp demo work without a GPU)")
    progress = _Progress("bench")
    with progress.step("looking for a GPU"):
        from numba import cuda

        available = cuda.is_available()
    if not available:
        raise WorkloadError("tcomp bench needs an NVIDIA GPU and none was found "
                            "(tcomp check and tcomp demo work without one)")

    import numpy as np

    import tcomp as tc

    from .dtypes import DEVICE_STORAGE, host_dtype

    with progress.step(f"loading {args.file} and applying the schedule"):
        s, out, shape, where = _prepare(args)
    outs = _outputs(s)
    gpu = cuda.get_current_device()
    print(f"workload: {args.file}\nshape:    {_fmt_shape(shape)}\nschedule: {where}\n"
          f"device:   {gpu.name.decode() if isinstance(gpu.name, bytes) else gpu.name}", flush=True)

    with progress.step("building: legality check, lowering, code generation, compile") as built:
        mod = tc.build(s)
    feeds = random_inputs(s, seed=args.seed)

    def storage(a):
        name = next((n for n, d in DEVICE_STORAGE.items() if host_dtype(n) == a.dtype), None)
        return a.view(DEVICE_STORAGE[name]) if name else a

    d_in = [cuda.to_device(storage(a)) for a in feeds.values()]
    d_out = [cuda.device_array(t.shape, dtype=DEVICE_STORAGE.get(t.dtype, host_dtype(t.dtype))) for t in outs]
    args_dev = (*d_in, *d_out)

    with progress.step("first call") as first:
        mod(*args_dev)
        cuda.synchronize()
    for _ in range(args.warmup):
        mod(*args_dev)
    cuda.synchronize()

    gpu_ms, wall_ms = [], []
    start, end = cuda.event(), cuda.event()
    with progress.step(f"timing {args.repeat} calls"):
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            start.record()
            mod(*args_dev)
            end.record()
            end.synchronize()
            wall_ms.append((time.perf_counter() - t0) * 1e3)
            gpu_ms.append(cuda.event_elapsed_time(start, end))

    gpu_arr, wall_arr = np.array(gpu_ms), np.array(wall_ms)
    med = float(np.median(gpu_arr))
    print(f"build (check + compile): {built.seconds:.2f} s; first run: {first.seconds:.2f} s")
    print(f"time per call (CUDA events, {args.repeat} calls): median {med:.4f} ms, "
          f"min {gpu_arr.min():.4f} ms, mean {gpu_arr.mean():.4f} ms")
    print(f"time per call (host clock, launch to synchronize): median {np.median(wall_arr):.4f} ms")
    flops = flop_count(out if not isinstance(out, (list, tuple)) else out[0])
    if flops and med > 0:
        print(f"throughput: {flops / (med * 1e-3) / 1e12:.3f} TFLOP/s "
              f"({flops / 1e9:.3g} GFLOP: 2 per multiply-add of the reductions)")

    if args.verify:
        with progress.step("checking the result against tc.evaluate"):
            refs = [tc.evaluate(t, feeds) for t in outs]
        ok = True
        for t, dev, ref in zip(outs, d_out, refs):
            got = dev.copy_to_host().view(host_dtype(t.dtype))
            good, lines = compare(got, ref, t.dtype)
            ok = ok and good
            print(f"output {t.name}: " + "; ".join(lines))
        return 0 if ok else 1
    return 0


# ---------------------------------------------------------------------- explain


def cmd_explain(args) -> int:
    import tcomp as tc

    from .cost import TARGETS, get_target
    from .workload import WorkloadError

    try:
        target = get_target(args.target)
    except tc.TcompError:
        raise WorkloadError(f"unknown target {args.target!r}; choose one of {', '.join(TARGETS)}") from None
    s, out, shape, where = _prepare(args)
    print(f"workload: {args.file}\nshape:    {_fmt_shape(shape)}\nschedule: {where}", flush=True)
    _section("loop nest (tc.lower)")
    program = tc.lower(s)
    print(program, flush=True)
    _section(f"cost on the {target.name} (tc.estimate)")
    print(tc.estimate(program, target=target, regs_per_thread=args.regs), flush=True)
    return 0


# ---------------------------------------------------------------------- parser


def _add_workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="workload file defining algorithm(**shape) and "
                   "optionally schedule(s, out), such as examples/matmul_silu_quant.py")
    p.add_argument("--schedule", metavar="PATH",
                   help="schedule file defining schedule(s, out) (as tcomp autoschedule writes), PATH:NAME for "
                        "another function in it, or the NAME of a function in FILE; default: FILE's own "
                        "schedule, else the default schedule")
    p.add_argument("--shape", metavar="M=..,N=..",
                   help="override shape keywords of algorithm(), for example M=256,N=256,K=128")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tcomp",
        description="tcomp: a schedule-based tensor compiler generating Numba CUDA kernels.",
        epilog="Exit status: 0 success, 1 an illegal schedule or a wrong result, 2 a usage error.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "demo", help="compile and run matmul + SiLU + int8 quantization end to end",
        description="Build examples/matmul_silu_quant.py at a small shape with its hand schedule, print the "
                    "loop nest and the generated Numba CUDA source, run it on random inputs and compare with "
                    "tc.evaluate. Without a GPU it runs in Numba's CUDA simulator.")
    p.add_argument("--shape", default=DEMO_SHAPE, metavar="M=..,N=..,K=..",
                   help=f"problem shape (default {DEMO_SHAPE}; the simulator runs about "
                        f"{SIM_THREADS_PER_SECOND} threads a second, so keep it small without a GPU)")
    p.add_argument("--file", metavar="PATH", help=f"another workload file (default examples/{DEMO_FILE})")
    p.add_argument("--schedule", metavar="PATH", help="a schedule file instead of the workload's own schedule")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "check", help="check a schedule's legality against the algorithm",
        description="Load a workload file, apply its schedule (or --schedule), run tc.check and print the "
                    "report. Exit status 1 for an illegal schedule.")
    _add_workload_args(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "bench", help="build and time a workload on the GPU",
        description="Load a workload file, apply its schedule (or --schedule), build it and time calls on the "
                    "GPU with CUDA events (inputs already on the device). Needs an NVIDIA GPU.")
    _add_workload_args(p)
    p.add_argument("--repeat", type=int, default=20, metavar="N", help="timed calls (default 20)")
    p.add_argument("--warmup", type=int, default=3, metavar="N",
                   help="untimed calls after the first, compiling one (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--verify", action="store_true", help="also compare the result with tc.evaluate (numpy; "
                   "slow at large shapes)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "explain", help="print the loop nest and the cost model's figures for each kernel",
        description="Load a workload file, apply its schedule (or --schedule), print the loop nest, then for each "
                    "kernel the cost model's figures on the target: flops, bytes crossing device memory (by "
                    "tensor), shared memory and registers, blocks per SM and the resource that limits them, "
                    "occupancy, waves, roofline, bytes in flight against Little's law, the terms of the "
                    "predicted time and which one binds; then the totals. Needs no GPU.")
    _add_workload_args(p)
    p.add_argument("--target", default="h200", metavar="NAME",
                   help="GPU to estimate for: h200 (default), h100, rtx_a6000, rtx_pro_6000")
    p.add_argument("--regs", type=int, default=None, metavar="N",
                   help="registers per thread, when known (from ptxas -v); default: estimated from the "
                        "schedule's local buffers")
    p.set_defaults(func=cmd_explain)
    return parser


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("tcomp")
    except Exception:
        return "(not installed)"


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    from .errors import TcompError

    # NOTE: the demo's tiny grids make numba warn about occupancy in the middle of a
    # progress line; that is expected here and says nothing about the schedule.
    warnings.filterwarnings("ignore", message=r"(?s).*will likely result in GPU under-utilization")
    try:
        return args.func(args)
    except TcompError as err:
        print(f"\ntcomp {args.command}: error: {err}" if args.command == "demo" else
              f"tcomp {args.command}: error: {err}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print(f"tcomp {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
