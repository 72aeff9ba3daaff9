"""``tcomp autoschedule a.py:1116 b.py:36 ...``: several workloads tuned as one job
(``tcomp.search.job``), each ``FILE[:CALLS]`` called CALLS times a request (default 1),
at the shape its ``algorithm()`` defaults to; with ``--shapes "M=1:1116,M=7239:36"``,
each file at each extent (``ffn_bf16_M1``, ``ffn_bf16_M7239``), called the file's CALLS
times that extent's calls. The trials are shared by what each workload
could still save a request (``--share equal``: the same for each); one progress line per
workload; then each winner, how the trials went and the request's time at the winners'.
With ``--out FOLDER`` each winner is written there as ``FOLDER/<file's stem>.py``.
"""

from __future__ import annotations

import os


def parse_job_file(text: str) -> tuple:
    """``"examples/ffn_bf16.py:1116"`` -> ``("examples/ffn_bf16.py", 1116)`` (calls 1 where
    none is given)."""
    from ..errors import TcompError

    path, sep, calls = text.rpartition(":")
    if not sep or not calls.strip().isdigit():
        return text, 1
    if int(calls) < 1:
        raise TcompError(f"{text}: a workload of a job is called at least once a request")
    return path, int(calls)


class _Bars:
    """One rich progress line per workload (``Progress`` of ``tcomp.search.search``)."""

    def __init__(self, names: list, trials: int):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("[bold]{task.fields[name]:>16s}"), TextColumn("{task.description}"),
                            BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[best]}"), TimeElapsedColumn())
        self.tasks = {n: self.bar.add_task("starting", total=max(trials, 1), name=n, best="") for n in names}

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bar.__exit__(*exc)

    def progress_for(self, name: str):
        from ..cost.report import fmt_time
        from ..search.search import Progress

        bar, task = self.bar, self.tasks[name]

        class _Line(Progress):
            def stage(self, text: str) -> None:
                bar.update(task, description=text)

            def update(self, *, screened=0, built=0, measured=0, failed=0, best=None) -> None:
                bar.update(task, advance=measured, **({"best": f"best {fmt_time(best)}"} if best else {}))

        return _Line()


def run_job(args, search_options: dict, write) -> int:
    """The job of ``args.file`` (several ``FILE[:CALLS]``); ``write(path, result,
    workload_file, shape)`` writes a winner."""
    from ..cost.report import fmt_time
    from ..errors import TcompError
    from ..search.buckets import parse_calls
    from ..search.job import JobWorkload, tune
    from ..workload import load_workload

    if args.shape:
        raise TcompError("--shape takes one workload; a job searches each FILE at its algorithm()'s default shape, "
                         "or at each extent of --shapes")
    axis, calls_at = parse_calls(args.shapes) if args.shapes else (None, {})
    extents = sorted(calls_at.items()) or [(None, 1)]  # NOTE: no --shapes: the default shape, once
    workloads, files = [], {}
    for text in args.file:
        path, calls = parse_job_file(text)
        stem = os.path.splitext(os.path.basename(path))[0]
        workload = load_workload(path)
        for extent, extent_calls in extents:
            name = stem if axis is None else f"{stem}_{axis}{extent}"
            if name in files:
                raise TcompError(f"two workloads of the job are named {name!r} ({files[name][0]} and {path})")
            out, shape = workload.build_algorithm({} if axis is None else {axis: extent})
            files[name] = (path, shape)
            workloads.append(JobWorkload(name, out, calls * extent_calls))
    trials = search_options.pop("trials")
    with _Bars([w.name for w in workloads], trials) as bars:
        job = tune(workloads, trials, progress_for=bars.progress_for, share=args.share, **search_options)
    print(f"\n{'workload':16s} {'calls':>6s} {'trials':>6s} {'winner':>12s} {'a request':>12s}")
    for w in workloads:
        result = job.results[w.name]
        took = result.measured if result.measured is not None else result.predicted
        print(f"{w.name:16s} {w.calls:6d} {job.trials[w.name]:6d} {fmt_time(took):>12s} "
              f"{fmt_time(w.calls * took):>12s}  {result.description}", flush=True)
    batches = ", ".join(f"{name} {n}" for name, n, _ in job.order)
    print(f"trials in the order given ({args.share}): {batches}")
    request = job.request_time(workloads)
    if request is not None:
        print(f"the request's calls at the winners' times: {fmt_time(request)}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for w in workloads:
            path, shape = files[w.name]
            target = os.path.join(args.out, f"{w.name}.py")
            write(target, job.results[w.name], path, shape)
            print(f"written: {target}", flush=True)
    return 0


__all__ = ["parse_job_file", "run_job"]
