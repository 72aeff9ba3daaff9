"""``tcomp demo``: matmul + SiLU + int8 quantization, end to end (the simulator without a GPU)."""

from __future__ import annotations

from pathlib import Path

from ..validation import compare, random_inputs
from .common import (SIM_THREADS_PER_SECOND, Progress, fall_back_to_simulator, format_shape, host_dtype_of,
                     launch_threads, outputs_of, prepare, section, simulator_requested)


#: the shape ``tcomp demo`` runs at unless told otherwise: small enough for the simulator
DEMO_SHAPE = "M=32,N=32,K=16"
DEMO_FILE = "matmul_silu_quant.py"


def _find_demo_file() -> Path | None:
    here = Path(__file__).resolve().parents[1]
    for candidate in (here.parent / "examples" / DEMO_FILE, Path.cwd() / "examples" / DEMO_FILE):
        if candidate.is_file():
            return candidate
    return None


def demo_shape(path: str, requested: str | None) -> str:
    """The shape the demo runs ``path`` at: ``requested`` (``--shape``) where given, else
    ``DEMO_SHAPE``'s small sizes for the shape keywords that its ``algorithm()`` takes
    (an elementwise workload has no ``K``); its own defaults fill in the rest."""
    if requested:
        return requested
    import inspect

    from ..workload import load_workload, parse_shape

    takes = inspect.signature(load_workload(path).algorithm).parameters
    return ",".join(f"{name}={size}" for name, size in parse_shape(DEMO_SHAPE).items() if name in takes)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "demo", help="compile and run matmul + SiLU + int8 quantization end to end",
        description="Build examples/matmul_silu_quant.py at a small shape with its hand schedule, print the "
                    "loop nest and the generated Numba CUDA source, run it on random inputs and compare with "
                    "tc.evaluate. Without a GPU it runs in Numba's CUDA simulator.")
    p.add_argument("--shape", metavar="M=..,N=..,K=..",
                   help=f"problem shape (default {DEMO_SHAPE} for the shape keywords the workload's algorithm() "
                        f"takes; its own defaults for any other; the simulator runs about "
                        f"{SIM_THREADS_PER_SECOND} threads a second, so keep it small without a GPU)")
    p.add_argument("--file", metavar="PATH", help=f"another workload file (default examples/{DEMO_FILE})")
    p.add_argument("--schedule", metavar="PATH", help="a schedule file instead of the workload's own schedule")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.set_defaults(func=run)


def run(args) -> int:
    progress = Progress("demo")
    fall_back_to_simulator(progress.say)

    from ..workload import WorkloadError

    if args.file is None:
        found = _find_demo_file()
        if found is None:
            raise WorkloadError(f"cannot find examples/{DEMO_FILE} beside the tcomp package or in the current "
                                "folder (tcomp demo runs from a source checkout installed with pip install -e .); "
                                "give a workload with --file PATH")
        args.file = str(found)

    args.shape = demo_shape(args.file, args.shape)

    with progress.step("importing numba"):
        import numpy as np
        from numba import config, cuda  # noqa: F401

        import tcomp as tc
    if simulator_requested() and not config.ENABLE_CUDASIM:
        progress.say("warning: numba was imported before NUMBA_ENABLE_CUDASIM was set; it will try a real GPU")

    with progress.step(f"loading {args.file} and applying its schedule"):
        s, out, shape, where = prepare(args)
    outs = outputs_of(s)
    print(f"workload: {args.file}\nshape:    {format_shape(shape)}\nschedule: {where}", flush=True)

    section("loop nest (tc.lower)")
    print(tc.lower(s), flush=True)

    with progress.step("building: legality check, lowering, code generation, compile"):
        mod = tc.build(s)

    section("generated source (mod.source)")
    print(mod.source, flush=True)
    print(f"(written to {mod.source_path})", flush=True)
    section("run and check")

    feeds = random_inputs(s, seed=args.seed)
    results = [np.zeros(t.shape, dtype=host_dtype_of(t.dtype)) for t in outs]
    threads = launch_threads(mod)
    where_run = "the CUDA simulator" if mod.simulator else "the GPU"
    if mod.simulator:
        seconds = threads / SIM_THREADS_PER_SECOND
        note = f"{threads} threads, " + (f"about {seconds:.0f} s" if seconds >= 1 else "under a second")
    else:
        note = "one call"
    with progress.step(f"running on {where_run} ({note})"):
        mod(*[feeds[p] for p in tc.inputs(outs)], *results)  # NOTE: the module's order, not the traversal's
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
