"""Five workloads of the chapter's request tuned as one job (issue 35): the FFN projection
(examples/ffn_bf16.py, 12288 x 4096), the down projection (examples/linear_bf16.py, W as
[N, K], 4096 x 12288), RMSNorm (examples/rmsnorm.py, 4096 wide), SwiGLU's gate and
multiply, int8-quantized (examples/silu_mul_quant.py, 12288 wide: the chapter's Z =
SiLU(G) * U of section 5.3.1) and a softmax (examples/softmax.py, 4096 wide),
each at one decode row (1,116 calls a request: 36 layers x 31 decode steps) and at the
prefill's 7,239 rows (36 calls), as the chapter's section 5.6.3 counts them.

    python benchmarks/job_share.py [--trials 40] [--share savings,equal] [--rows 1,7239]
                                   [--out results.json]

Each share (``savings``: by what each workload could still save the request, the
default; ``equal``: the same trials each, the baseline) runs the whole job with the same
seed and its own tuning database. It prints how the trials were shared, each winner's
measured time, and the request's time at the winners' (calls x time, summed), the
shares compared in the same run; ``--out`` keeps them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")

#: workload -> (example file, shape but the rows)
WORKLOADS = {
    "ffn_projection": ("ffn_bf16.py", dict(N=12288, K=4096)),
    "down_projection": ("linear_bf16.py", dict(N=4096, K=12288)),
    "rmsnorm": ("rmsnorm.py", dict(N=4096)),
    "swiglu": ("silu_mul_quant.py", dict(N=12288)),
    "softmax": ("softmax.py", dict(N=4096)),
}
#: rows -> calls a request (36 layers: 31 decode steps of one row, one prefill of 7,239)
CALLS = {1: 36 * 31, 7239: 36}


def job_workloads(rows: list) -> list:
    """The job's ``JobWorkload``s: every workload at every row count of ``rows``."""
    from tcomp.search.job import JobWorkload
    from tcomp.workload import load_workload

    found = []
    for name, (file, shape) in WORKLOADS.items():
        workload = load_workload(os.path.join(EXAMPLES, file))
        for m in rows:
            out, _ = workload.build_algorithm({**shape, "M": m})
            found.append(JobWorkload(f"{name}_M{m}", out, CALLS[m]))
    return found


def run_share(share: str, rows: list, trials: int, seed: int, folder: str) -> dict:
    from tcomp.search.job import tune

    workloads = job_workloads(rows)
    start = time.perf_counter()
    job = tune(workloads, trials, share=share, seed=seed, db=os.path.join(folder, f"{share}.jsonl"),
               progress_for=_line)
    wall = time.perf_counter() - start
    rows_out = []
    for w in workloads:
        result = job.results[w.name]
        rows_out.append(dict(workload=w.name, calls=w.calls, trials=job.trials[w.name], measured=result.measured,
                             predicted=result.predicted, winner=result.description))
    return dict(share=share, wall=wall, request=job.request_time(workloads), workloads=rows_out,
                order=[(name, n, {k: float(v) for k, v in worth.items()}) for name, n, worth in job.order])


def _line(name: str):
    """Progress of one workload: each stage on a line of its own."""
    from tcomp.search.search import Progress

    class _Line(Progress):
        def stage(self, text: str) -> None:
            print(f"  [{name}] {text}", flush=True)

    return _Line()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--share", default="savings,equal")
    parser.add_argument("--rows", default="1,7239")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    rows = [int(r) for r in args.rows.split(",")]
    if any(r not in CALLS for r in rows):
        parser.error(f"--rows takes {', '.join(map(str, CALLS))}")
    folder = tempfile.mkdtemp(prefix="tcomp-job-bench-")
    runs = []
    for share in args.share.split(","):
        print(f"== share {share}: {args.trials} trials", flush=True)
        run = run_share(share, rows, args.trials, args.seed, folder)
        runs.append(run)
        print(f"{'workload':22s} {'calls':>6s} {'trials':>6s} {'winner ms':>10s} {'request ms':>11s}")
        for w in run["workloads"]:
            took = w["measured"] if w["measured"] is not None else w["predicted"]
            print(f"{w['workload']:22s} {w['calls']:6d} {w['trials']:6d} {took * 1e3:10.4f} "
                  f"{w['calls'] * took * 1e3:11.3f}  {w['winner']}")
        print("batches: " + ", ".join(f"{name} {n}" for name, n, _ in run["order"]))
        request = run["request"]
        print(f"request at the winners' measured times: "
              f"{'not measured' if request is None else f'{request * 1e3:.3f} ms'}; wall {run['wall']:.0f} s",
              flush=True)
    if len(runs) == 2 and all(r["request"] for r in runs):
        print(f"\nrequest {runs[0]['share']} / {runs[1]['share']}: {runs[0]['request'] / runs[1]['request']:.3f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(runs, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, ".."))
    sys.exit(main())
