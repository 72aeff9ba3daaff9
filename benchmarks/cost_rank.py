"""Does the cost model rank schedules the way the GPU does?

Times fp32 matmul schedules of many tile shapes on the GPU (the SGEMM ladder's
``blocktile_2d`` with different BM, BN, BK, TM, TN, plus the ladder's simpler rungs),
predicts each with ``tc.estimate(s, target="h200")``, and reports Kendall's tau
between predicted and measured times.

    python benchmarks/cost_rank.py --out cost_rank.json              # on the GPU (about 2-4 min)
    python benchmarks/cost_rank.py --plot cost_rank.json scatter.png # here: the scatter (matplotlib)
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/cost_rank.py --tiny --out /tmp/tiny.json   # no GPU

Each schedule is built (kernels compiled in parallel worker processes first, which
fill Numba's on-disk cache), run once on NaN-poisoned output and checked against a
float64 reference, then timed with CUDA events: ``--repeat`` batches of ``--batch``
back-to-back launches after warm-up, the median of the batch means. The JSON holds
one row per schedule (name, parameters, predicted and measured seconds, correctness)
and the tau figures; ``--plot`` draws it (the GPU machine has no matplotlib).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _p in (ROOT, os.path.join(ROOT, "examples")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

#: blocktile_2d shapes (BM, BN, BK, TM, TN, A transposed): every block tile from 32x32
#: to 256x128, k steps 8 to 32, thread tiles 2x2 to 8x8; 64 to 1024 threads a block;
#: at most 48 KiB of shared memory (static allocation)
BLOCKTILE = [
    (128, 128, 8, 8, 8, False), (128, 128, 16, 8, 8, False), (128, 128, 32, 8, 8, False),
    (128, 128, 8, 8, 8, True), (128, 128, 16, 8, 8, True),
    (128, 128, 8, 8, 4, False), (128, 128, 8, 4, 8, False), (128, 128, 8, 4, 4, False),
    (128, 128, 16, 4, 4, False),
    (128, 64, 8, 8, 8, False), (64, 128, 8, 8, 8, False), (128, 64, 16, 8, 4, False), (64, 128, 16, 4, 8, False),
    (128, 64, 8, 4, 4, False), (64, 128, 8, 4, 4, False),
    (256, 128, 8, 8, 8, False), (128, 256, 8, 8, 8, False),
    (64, 64, 8, 8, 8, False), (64, 64, 32, 8, 8, False), (64, 64, 8, 8, 4, False), (64, 64, 8, 4, 8, False),
    (64, 64, 8, 4, 4, False), (64, 64, 16, 4, 4, False), (64, 64, 32, 4, 4, False), (64, 64, 16, 4, 4, True),
    (64, 64, 16, 2, 4, False), (64, 64, 8, 2, 2, False),
    (32, 64, 8, 4, 4, False), (64, 32, 8, 4, 4, False), (32, 128, 8, 4, 8, False), (128, 32, 8, 8, 4, False),
    (32, 32, 8, 4, 4, False), (32, 32, 8, 2, 2, False), (32, 32, 16, 2, 2, False), (32, 32, 32, 2, 2, False),
]
#: the ladder's simpler rungs (examples/sgemm_ladder.py SCHEDULES), where present
RUNGS = ["naive", "coalesced", "shared", "blocktile_1d", "vectorized"]

#: the same, at the simulator's size (--tiny: M = N = K = 32)
TINY_BLOCKTILE = [(32, 32, 8, 4, 4, False), (16, 16, 8, 2, 2, False), (32, 16, 4, 4, 2, False),
                  (16, 32, 8, 2, 4, True)]
TINY_RUNGS = ["coalesced", "shared"]


# ---------------------------------------------------------------------------- schedules


def blocktile_name(cfg) -> str:
    bm, bn, bk, tm, tn, tr = cfg
    return f"bt_{bm}x{bn}x{bk}_t{tm}x{tn}" + ("_T" if tr else "")


def candidates(tiny: bool) -> list:
    """(name, family, parameters) of every schedule to time."""
    import sgemm_ladder as ladder

    rows = []
    for name in (TINY_RUNGS if tiny else RUNGS):
        if name in ladder.SCHEDULES:
            rows.append((name, "rung", {}))
    for cfg in (TINY_BLOCKTILE if tiny else BLOCKTILE):
        bm, bn, bk, tm, tn, tr = cfg
        rows.append((blocktile_name(cfg), "blocktile_2d",
                     dict(BM=bm, BN=bn, BK=bk, TM=tm, TN=tn, transpose_a=tr)))
    return rows


def make_schedule(name: str, family: str, params: dict, n: int):
    import sgemm_ladder as ladder

    import tcomp as tc

    C = ladder.algorithm(n, n, n)
    s = tc.create_schedule(C)
    if family == "rung":
        ladder.SCHEDULES[name](s, C)
    else:
        CL = s.cache_write(C, "local")
        ladder.blocktile_2d(s, C, CL, "A", "B", **params)
    return s, C


# ---------------------------------------------------------------------------- statistics


def kendall_tau(x, y) -> float:
    """Kendall's tau-b of two equally long sequences (tcomp.search.search.kendall_tau)."""
    from tcomp.search.search import kendall_tau as tau_b

    tau = tau_b(list(zip(x, y)))
    return float("nan") if tau is None else tau


def summarize(rows: list) -> dict:
    ok = [r for r in rows if r.get("measured_s") and r.get("correct")]
    out = {"schedules_timed": len(ok)}
    if len(ok) >= 2:
        out["kendall_tau"] = kendall_tau([r["predicted_s"] for r in ok], [r["measured_s"] for r in ok])
    bt = [r for r in ok if r["family"] == "blocktile_2d"]
    if len(bt) >= 2:
        out["kendall_tau_blocktile_2d"] = kendall_tau([r["predicted_s"] for r in bt], [r["measured_s"] for r in bt])
        out["blocktile_2d_timed"] = len(bt)
    if ok:
        best_pred = min(ok, key=lambda r: r["predicted_s"])
        best_meas = min(ok, key=lambda r: r["measured_s"])
        out["predicted_best"] = best_pred["name"]
        out["measured_best"] = best_meas["name"]
        out["predicted_best_measured_s"] = best_pred["measured_s"]
        out["measured_best_s"] = best_meas["measured_s"]
    return out


# ---------------------------------------------------------------------------- compiling in parallel


def _signature(kernel):
    from numba import types

    from tcomp.codegen.cuda_source import STORAGE_TYPE

    return tuple(getattr(types, STORAGE_TYPE[b.dtype])[::1] for b in kernel.params)


def _precompile(job):
    """Worker: build one schedule and compile its kernels into Numba's disk cache."""
    name, family, params, n = job
    t0 = time.time()
    try:
        import tcomp as tc

        s, _ = make_schedule(name, family, params, n)
        mod = tc.build(s, check=False)
        for kernel, fn in zip(mod.program.kernels, mod._kernels):
            fn.compile(_signature(kernel))
        return name, time.time() - t0, None
    except Exception as err:  # the main process builds again and reports it
        return name, time.time() - t0, f"{type(err).__name__}: {err}"


def precompile(rows, n: int, jobs: int, log, timeout: float = 420.0) -> None:
    """Compile every schedule's kernels in ``jobs`` worker processes (spawned, each with
    its own CUDA context) so that the timing loop finds them in Numba's disk cache. Any
    trouble here only costs time: the main process builds whatever is missing itself."""
    import concurrent.futures as cf
    import multiprocessing as mp

    t0 = time.time()
    pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"))
    try:
        futures = [pool.submit(_precompile, (nm, fam, p, n)) for nm, fam, p in rows]
        for fut in cf.as_completed(futures, timeout=timeout):
            name, dt, err = fut.result()
            log(f"  compiled {name} in {dt:.1f} s" + (f" (failed: {err})" if err else ""))
        pool.shutdown(wait=True)
    except Exception as err:  # a worker died or the pool timed out: carry on serially
        log(f"parallel compile stopped ({type(err).__name__}: {err}); the rest compiles on first use")
        pool.shutdown(wait=False, cancel_futures=True)
    log(f"parallel compile of {len(rows)} schedules with {jobs} processes: {time.time() - t0:.1f} s")


# ---------------------------------------------------------------------------- timing


def _launcher(mod, args):
    """A function launching the module's kernels back to back with no synchronization."""
    try:
        buffers = dict(zip(mod.arg_buffers, [a.reshape(a.size) for a in args]))
        buffers.update(mod._intermediate_arrays())
        launches = [(fn[k.grid, k.block], [buffers[b] for b in k.params])
                    for k, fn in zip(mod.program.kernels, mod._kernels)]

        def run():
            for fn, params in launches:
                fn(*params)

        return run
    except AttributeError:  # the module's internals changed: the public call (synchronizes)
        return lambda: mod(*args)


def time_gpu(run, repeat: int, batch: int, warmup: int, simulator: bool = False) -> float:
    """Median over ``repeat`` batches of the mean seconds of ``batch`` back-to-back runs
    (CUDA events; in the simulator, whose events measure nothing, the host clock)."""
    from numba import cuda

    for _ in range(warmup):
        run()
    cuda.synchronize()
    times = []
    for _ in range(repeat):
        if simulator:
            t0 = time.perf_counter()
            for _ in range(batch):
                run()
            times.append((time.perf_counter() - t0) / batch)
            continue
        start, stop = cuda.event(), cuda.event()
        start.record()
        for _ in range(batch):
            run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / batch)
    return statistics.median(times)


# ---------------------------------------------------------------------------- the run


def run_benchmark(args) -> int:
    import numpy as np
    from numba import cuda

    import tcomp as tc

    sim = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
    n = 32 if args.tiny else args.size
    repeat, batch, warmup = (1, 1, 0) if args.tiny else (args.repeat, args.batch, args.warmup)
    log = lambda text: print(text, flush=True)  # noqa: E731

    rows = candidates(args.tiny)
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - {r[0] for r in rows})
        if unknown:
            raise SystemExit(f"--only: no schedule named {', '.join(unknown)}; the schedules are "
                             f"{', '.join(r[0] for r in rows)}")
        rows = [r for r in rows if r[0] in wanted]
    if args.limit:
        rows = rows[: args.limit]
    device = "CUDA simulator" if sim else cuda.get_current_device().name
    device = device.decode() if isinstance(device, bytes) else str(device)
    log(f"device: {device}; M = N = K = {n}; {len(rows)} schedules; target {args.target}")
    if not sim and args.jobs > 1:
        precompile(rows, n, args.jobs, log)

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    nan = np.full((n, n), np.nan, dtype=np.float32)
    # NOTE: the simulator's device arrays are not what a tcomp module takes; there the
    # arrays stay numpy (the simulator runs the kernels on them directly)
    to_device = (lambda x: x.copy()) if sim else cuda.to_device
    d_a, d_b = to_device(a), to_device(b)

    results = []
    for name, family, params in rows:
        row = {"name": name, "family": family, **{k: v for k, v in params.items()}}
        try:
            s, _ = make_schedule(name, family, params, n)
            est = tc.estimate(s, target=args.target)
            k0 = est.kernels[0]
            row.update(predicted_s=est.predicted_seconds, bound=k0.bound, limiter=k0.limiter,
                       blocks_per_sm=k0.blocks_per_sm, regs_estimate=k0.regs_per_thread,
                       threads=k0.threads_per_block, dram_bytes=est.dram_bytes)
            t0 = time.time()
            mod = tc.build(s, check=False)
            d_c = to_device(nan)
            mod(d_a, d_b, d_c)
            cuda.synchronize()
            row["build_s"] = time.time() - t0
            c = d_c if sim else d_c.copy_to_host()
            err = float(np.nanmax(np.abs(c - ref)) / np.abs(ref).max()) if np.isfinite(c).any() else float("inf")
            row["correct"] = bool(np.isfinite(c).all()) and err < 1e-4
            row["rel_err"] = err
            row["measured_s"] = time_gpu(_launcher(mod, (d_a, d_b, d_c)), repeat, batch, warmup, sim)
            log(f"{name:26s} predicted {row['predicted_s'] * 1e3:9.3f} ms  measured "
                f"{row['measured_s'] * 1e3:9.3f} ms  {'ok ' if row['correct'] else 'WRONG'} "
                f"({k0.limiter}, {k0.blocks_per_sm} blocks/SM, build {row['build_s']:.1f} s)")
        except Exception as err:
            row["error"] = f"{type(err).__name__}: {err}"
            log(f"{name:26s} FAILED: {row['error']}")
            if args.verbose:
                traceback.print_exc()
        results.append(row)

    summary = summarize(results)
    report = {"device": device, "size": n, "target": args.target, "repeat": repeat, "batch": batch,
              "rows": results, **summary}
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)
        log(f"wrote {args.out}")
    print_table(report)
    failed = [r["name"] for r in results if "error" in r or not r.get("correct")]
    if failed:
        log(f"failed or wrong: {', '.join(failed)}")
    return 0 if not failed else 1


def print_table(report: dict) -> None:
    rows = sorted((r for r in report["rows"] if r.get("measured_s")), key=lambda r: r["measured_s"])
    print("\n| schedule | predicted ms | measured ms | predicted / measured | limiter | correct |")
    print("| --- | ---: | ---: | ---: | --- | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['predicted_s'] * 1e3:.3f} | {r['measured_s'] * 1e3:.3f} | "
              f"{r['predicted_s'] / r['measured_s']:.2f} | {r.get('limiter', '')} | {r.get('correct')} |")
    tau = report.get("kendall_tau")
    if tau is not None:
        print(f"\nKendall tau, all {report['schedules_timed']} schedules: {tau:.3f}")
    if report.get("kendall_tau_blocktile_2d") is not None:
        print(f"Kendall tau, the {report['blocktile_2d_timed']} blocktile_2d shapes: "
              f"{report['kendall_tau_blocktile_2d']:.3f}")
    if report.get("predicted_best"):
        print(f"predicted best: {report['predicted_best']} (measured {report['predicted_best_measured_s'] * 1e3:.3f} "
              f"ms); measured best: {report['measured_best']} ({report['measured_best_s'] * 1e3:.3f} ms)")


# ---------------------------------------------------------------------------- the scatter


def plot(json_path: str, png_path: str) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(json_path) as fh:
        report = json.load(fh)
    rows = [r for r in report["rows"] if r.get("measured_s") and r.get("correct")]
    fig, ax = plt.subplots(figsize=(7, 6))
    for family, marker, color in (("blocktile_2d", "o", "tab:blue"), ("rung", "s", "tab:orange")):
        pts = [r for r in rows if r["family"] == family]
        if not pts:
            continue
        ax.scatter([r["predicted_s"] * 1e3 for r in pts], [r["measured_s"] * 1e3 for r in pts],
                   marker=marker, color=color, label=family if family != "rung" else "ladder rungs", alpha=0.8)
        for r in pts:
            if family == "rung":
                ax.annotate(r["name"], (r["predicted_s"] * 1e3, r["measured_s"] * 1e3), fontsize=7,
                            xytext=(4, -8), textcoords="offset points")
    lo = min(min(r["predicted_s"], r["measured_s"]) for r in rows) * 1e3 / 1.3
    hi = max(max(r["predicted_s"], r["measured_s"]) for r in rows) * 1e3 * 1.3
    ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.8, linestyle="--", label="predicted = measured")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"predicted ms (tc.estimate, target {report.get('target', 'h200')})")
    ax.set_ylabel(f"measured ms ({report.get('device', 'GPU')}, CUDA events)")
    tau = report.get("kendall_tau")
    tau_bt = report.get("kendall_tau_blocktile_2d")
    title = f"fp32 matmul {report['size']}^3: {len(rows)} schedules"
    if tau is not None:
        title += f", Kendall tau {tau:.2f}"
    if tau_bt is not None:
        title += f" ({tau_bt:.2f} among blocktile_2d)"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="both", linewidth=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=130)
    print(f"wrote {png_path}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=2048, help="M = N = K (default 2048)")
    parser.add_argument("--repeat", type=int, default=7, help="timed batches (default 7)")
    parser.add_argument("--batch", type=int, default=5, help="launches per timed batch (default 5)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed launches first (default 3)")
    parser.add_argument("--target", default="h200", help="cost-model target (default h200)")
    parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1),
                        help="processes compiling kernels in parallel before timing (default min(8, CPUs); 1: off)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N schedules")
    parser.add_argument("--only", metavar="NAME,..", help="only these schedules (names as printed)")
    parser.add_argument("--tiny", action="store_true",
                        help="M = N = K = 32 and a few schedules, one run each: for NUMBA_ENABLE_CUDASIM=1")
    parser.add_argument("--out", metavar="JSON", help="write the rows and tau figures here")
    parser.add_argument("--plot", nargs=2, metavar=("JSON", "PNG"), help="draw the scatter of a results file")
    parser.add_argument("--verbose", action="store_true", help="tracebacks of failures")
    args = parser.parse_args(argv)
    if args.plot:
        return plot(*args.plot)
    return run_benchmark(args)


if __name__ == "__main__":
    sys.exit(main())
