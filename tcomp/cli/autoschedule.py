"""``tcomp autoschedule``: search for a fast, legal schedule of a workload file.

Shows a progress bar (candidates screened, built, measured, failed, the best time so far),
then a table of the best candidates against the workload's hand schedule (and cuBLAS
through torch where the workload is a plain matmul), measured again in one interleaved
run; the cost model's Kendall tau over the measured candidates; a PNG of predicted
against measured time (with matplotlib); and with ``--out`` the winner as a schedule
file that ``tcomp check``, ``explain`` and ``bench`` accept.
"""

from __future__ import annotations

import datetime
import os
import tempfile

from .common import add_target_arg, fall_back_to_simulator, format_shape

#: rows of the final table
TABLE_ROWS = 5


def add_parser(sub) -> None:
    p = sub.add_parser(
        "autoschedule", help="search for a fast schedule (cost model + measurement on the GPU)",
        description="Search the schedules of FILE's algorithm: fusion boundaries and tilings, filtered by the "
                    "primitives, tc.check and the target's capacity, ranked by the cost model, the most promising "
                    "built and measured on the GPU after their results are checked against the reference. "
                    "Without a GPU (or with --model-only) the cost model alone chooses and the choice is checked "
                    "in the simulator; nothing is measured then.")
    p.add_argument("file", metavar="FILE[:CALLS]", nargs="+",
                   help="workload file defining algorithm(**shape), such as examples/matmul_silu_quant.py; "
                        "several make one job whose trials are shared by what each could still save a request, "
                        "each called CALLS times a request (default 1), at its default shape")
    p.add_argument("--shape", metavar="M=..,N=..", help="override shape keywords of algorithm()")
    p.add_argument("--shapes", metavar="AXIS=EXTENT:CALLS,...",
                   help="shape buckets: search each extent of one axis (M=1:1116,M=7239:36: 1116 calls of one row "
                        "and 36 of 7239 a group), report which set of kernels costs least for --groups groups, "
                        "preparation included, and write its schedules as OUT_M1.py, ... (EXTENT:0 adds a bucket "
                        "that no call has exactly); with several FILEs, each file at each extent is a workload of "
                        "the job, called CALLS times the file's")
    p.add_argument("--groups", type=int, default=1000, metavar="N",
                   help="with --shapes: the groups of calls (requests) to weigh the kernels' preparation against "
                        "(default 1000)")
    p.add_argument("--trials", type=int, default=64, metavar="N",
                   help="candidates to measure at most (default 64); 0 returns the best of the database at once")
    p.add_argument("--out", metavar="PATH", help="write the winner here as a schedule file")
    p.add_argument("--db", metavar="PATH", help="tuning database (JSON lines; default: tuning.jsonl in the tcomp "
                   "cache directory, $TCOMP_CACHE_DIR or ~/.cache/tcomp)")
    add_target_arg(p, "the GPU the cost model ranks for")
    p.add_argument("--model-only", action="store_true", help="rank with the cost model alone; measure nothing")
    p.add_argument("--workers", type=int, metavar="N", help="processes that screen and build (default: all cores)")
    p.add_argument("--gpus", type=int, metavar="N", help="measuring workers, each keeping one device (default: one "
                   "per visible GPU; more than there are GPUs share them, and their timings disturb each other)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="seconds one candidate may take to build, validate and time (default 120)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the search (default 0)")
    p.add_argument("--plot", metavar="PATH", help="PNG of predicted against measured time (default: beside --out, "
                   "else autoschedule_<file>.png)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="screen, build and measure on a Ray cluster: 'auto' (the one this machine belongs to), "
                        "HOST:PORT or ray://HOST:PORT; its GPUs measure, one actor each (pip install "
                        "\"tcomp[cluster]\"; every node needs tcomp installed)")
    p.add_argument("--share", choices=("savings", "equal"), default="savings",
                   help="with several FILEs: share the trials by what each workload could still save a request "
                        "(default), or equally")
    p.add_argument("--resume", action="store_true",
                   help="continue the last search of this workload in the database (same --trials and --seed): "
                        "what it measured is not measured again; with several FILEs, the interrupted job")
    p.set_defaults(func=run)


class _Bar:
    """A rich progress bar that the search updates (tcomp.search.search.Progress)."""

    def __init__(self, trials: int):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.counts = {"screened": 0, "built": 0, "measured": 0, "failed": 0}
        self.best = None
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[counts]}"), TimeElapsedColumn())
        self.task = self.bar.add_task("starting", total=max(trials, 1), counts="")

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bar.__exit__(*exc)

    def stage(self, text: str) -> None:
        self.bar.update(self.task, description=text)

    def update(self, *, screened=0, built=0, measured=0, failed=0, best=None) -> None:
        from ..cost.report import fmt_time

        for key, n in (("screened", screened), ("built", built), ("measured", measured), ("failed", failed)):
            self.counts[key] += n
        if best is not None:
            self.best = best
        shown = " ".join(f"{k} {v}" for k, v in self.counts.items())
        if self.best is not None:
            shown += f" | best {fmt_time(self.best)}"
        self.bar.update(self.task, completed=self.counts["measured"], counts=shown)


def run(args) -> int:
    fall_back_to_simulator(lambda text: print(f"[autoschedule] {text}", flush=True))
    import tcomp as tc

    from ..errors import TcompError
    from ..lang.canonical import workload_key
    from ..search.space import Space
    from ..search.tiling.tensor_cores import tensor_core_notes
    from ..workload import load_workload, parse_shape

    if args.trials < 0:
        raise TcompError("--trials must be 0 or more")
    if args.gpus is not None and args.gpus < 1:
        raise TcompError("--gpus must be 1 or more")
    if args.cluster is not None and args.gpus is not None:
        raise TcompError("--gpus counts this machine's GPUs; with --cluster the cluster's GPUs measure")
    if args.resume and args.shapes and len(args.file) == 1:
        raise TcompError("--resume continues one search; with --shapes, resume each extent with --shape instead")
    search_options = dict(trials=args.trials, target=args.target, db=args.db, model_only=args.model_only,
                          seed=args.seed, workers=args.workers, timeout=args.timeout, gpus=args.gpus,
                          cluster=args.cluster, resume=args.resume)
    from .job import parse_job_file, run_job

    if len(args.file) > 1:
        return run_job(args, search_options, lambda path, result, workload_file, shape: write_schedule_file(
            path, result, workload_file, shape, args.target))
    args.file = parse_job_file(args.file[0])[0]  # NOTE: one workload: its calls weigh nothing
    workload = load_workload(args.file)
    if args.shapes:
        if args.groups < 1:
            raise TcompError("--groups must be 1 or more")
        from .buckets import run_buckets

        def search(out):
            with _Bar(args.trials) as bar:
                return tc.autoschedule(out, progress=bar, **search_options)

        def write(path, result, shape, shape_option):
            write_schedule_file(path, result, args.file, shape, args.target, shape_option)

        return run_buckets(args, workload, search, write)
    out, shape = workload.build_algorithm(parse_shape(args.shape))
    print(f"workload: {args.file}\nshape:    {format_shape(shape)}\nkey:      {workload_key(out)[:16]}", flush=True)
    for note in tensor_core_notes(Space(out, target=args.target)):
        print(f"tensor cores: {note}", flush=True)
    with _Bar(args.trials) as bar:
        result = tc.autoschedule(out, progress=bar, **search_options)
    _summary(result)
    if result.measured is not None:
        _compare(args, workload, out, result)
        _plot(args, result)
    else:
        print("nothing was measured (" + ("--model-only" if args.model_only else "no GPU in the cluster" if args.cluster else "no GPU here") +
              "): the cost model alone chose this schedule.", flush=True)
    print(f"check: {result.validated}", flush=True)
    if args.out:
        _write(args, shape, result)
    return 0


def _summary(result) -> None:
    from ..cost.report import fmt_time

    counts: dict = {}
    for r in result.records:
        counts[r.status] = counts.get(r.status, 0) + 1
    tried = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"
    print(f"\ncandidates tried: {tried}")
    print(f"winner: {result.description}")
    print(f"predicted: {fmt_time(result.predicted) if result.predicted else 'n/a'}", end="")
    if result.measured is not None:
        print(f"   measured: {fmt_time(result.measured)} (spread {100 * (result.spread or 0):.1f}% "
              f"over the final interleaved repeats)", end="")
    print()
    if result.kendall_tau is not None:
        print(f"cost model Kendall tau over the {sum(1 for r in result.records if r.measured)} measured "
              f"candidates: {result.kendall_tau:.3f}")


def _compare(args, workload, out, result) -> None:
    """Measure the winner, the next best, the hand schedule and cuBLAS (plain matmul)
    again, interleaved, in one runner; print the table."""
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    import tcomp as tc

    from ..cost.report import fmt_time
    from ..search.measure import TORCH_MATMUL, measure_batch, prepare_bench
    from ..search.tiling import matrix_product_operands
    from ..validation import flop_count

    ok = sorted((r for r in result.records if r.status == "ok" and r.measured), key=lambda r: r.measured)
    others = [r for r in ok if r.schedule != result.source][:TABLE_ROWS - 1]
    rows = [("winner", result.source, result.predicted)]
    rows += [(f"runner-up {n + 1}", r.schedule, r.predicted) for n, r in enumerate(others)]
    if workload.schedule is not None:
        hand = tc.create_schedule(out)
        workload.schedule(hand, out)
        rows.append(("hand schedule", hand.trace_source(with_sites=False), tc.estimate(hand, args.target)
                     .predicted_seconds))
    s = tc.create_schedule(out)
    if len(s.stages) == 1 and matrix_product_operands(s.stages[0].op) and _has_torch():
        rows.append(("cuBLAS (torch.matmul)", TORCH_MATMUL, None))
    times: dict = {label: [] for label, _, _ in rows}
    with tempfile.TemporaryDirectory(prefix="tcomp-compare-") as folder:
        bench = prepare_bench(out, folder)
        for _ in range(3):
            for (label, src, _), m in zip(rows, measure_batch(bench, [src for _, src, _ in rows],
                                                            timeout=args.timeout)):
                times[label].extend(m.times if m.status == "ok" else [])
    flops = flop_count(out)
    reference = next((label for label in ("cuBLAS (torch.matmul)", "hand schedule") if times.get(label)), "winner")
    ref_time = float(np.median(times[reference])) if times.get(reference) else None
    table = Table(title=f"measured again, interleaved (ratios to {reference})")
    for col in ("schedule", "predicted", "measured", "TFLOP/s", "ratio"):
        table.add_column(col, justify="left" if col == "schedule" else "right")
    for label, _, predicted in rows:
        if not times[label]:
            table.add_row(label, fmt_time(predicted) if predicted else "", "failed", "", "")
            continue
        t = float(np.median(times[label]))
        rate = f"{flops / t / 1e12:.1f}" if flops else ""
        ratio = f"{ref_time / t:.2f}x" if ref_time else ""
        table.add_row(label, fmt_time(predicted) if predicted else "", fmt_time(t), rate, ratio)
    Console().print(table)


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _plot(args, result) -> None:
    pairs = [(r.predicted, r.measured) for r in result.records if r.status == "ok" and r.measured and r.predicted]
    path = args.plot or (os.path.splitext(args.out)[0] + ".png" if args.out else
                         f"autoschedule_{os.path.splitext(os.path.basename(args.file))[0]}.png")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is not installed (pip install 'tcomp[bench]')")
        return
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter([p * 1e3 for p, _ in pairs], [m * 1e3 for _, m in pairs], s=12)
    ax.set_xlabel("predicted (ms)")
    ax.set_ylabel("measured (ms)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    tau = f", Kendall tau {result.kendall_tau:.2f}" if result.kendall_tau is not None else ""
    ax.set_title(f"{len(pairs)} candidates{tau}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def _write(args, shape, result) -> None:
    write_schedule_file(args.out, result, args.file, shape, args.target, args.shape)
    print(f"written: {args.out}", flush=True)


def write_schedule_file(path, result, workload_file: str, shape: dict, target_name: str = "h200",
                        shape_option: str | None = None) -> None:
    """Write ``result``'s winner to ``path`` as a schedule file with a comment header:
    workload, shape, target, measured time, date, and the command that replays it."""
    from ..cost.report import fmt_time
    from ..search.database import current_target

    target = current_target() if result.measured is not None else {"gpu": f"cost model {target_name} (not measured)"}
    measured = fmt_time(result.measured) if result.measured is not None else "not measured (cost model only)"
    header = [
        f'"""Schedule of {os.path.basename(workload_file)} found by tcomp autoschedule.',
        "",
        f"workload: {workload_file}",
        f"shape:    {format_shape(shape)}",
        f"target:   {target.get('gpu')}" + (f" ({target.get('sms')} SMs)" if target.get("sms") else ""),
        f"measured: {measured}" + (f", predicted {fmt_time(result.predicted)}" if result.predicted else ""),
        f"point:    {result.description}",
        f"date:     {datetime.date.today().isoformat()}",
        "",
        f"    tcomp bench {workload_file} --schedule {path}" + (f" --shape {shape_option}" if shape_option else ""),
        '"""',
        "",
        "",
    ]
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(header) + result.source)


__all__ = ["add_parser", "run", "write_schedule_file"]
