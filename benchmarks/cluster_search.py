"""The same search here and through Ray (issue 35): ``tc.autoschedule`` of one workload on
this machine's GPU, then on a one-node Ray cluster started on this machine (its GPU as
the cluster's), with the same seed and trials, in one run.

    python benchmarks/cluster_search.py [--file examples/gemm_bf16.py] [--shape M=2048,N=2048,K=2048]
                                        [--trials 16]

It prints each search's wall time, its winner and the winner's measured time, both
compared (the winner's time within 3%, the wall time within 10%; also with the seconds of
``ray.init``, which starts the cluster's worker processes before the search, where the
local search starts its build processes inside its wall time), and Ray's overhead a
candidate: the round trip of an empty call to an actor, and the wall times' difference
over the candidates measured. Each search writes a database of its own (under a
temporary folder) and a kernel cache of its own, so neither starts from the other's
records or builds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", default=os.path.join(ROOT, "examples", "gemm_bf16.py"))
    parser.add_argument("--shape", default="M=2048,N=2048,K=2048")
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import ray

    import tcomp as tc
    from tcomp.workload import load_workload, parse_shape

    workload = load_workload(args.file)
    folder = tempfile.mkdtemp(prefix="tcomp-cluster-bench-")
    runs = {}
    for where in ("here", "ray"):
        # NOTE: a kernel cache of its own, so that neither search finds the other's builds (Ray's
        # workers take the environment at ray.init)
        os.environ["TCOMP_CACHE_DIR"] = os.path.join(folder, f"cache-{where}")
        out, _ = workload.build_algorithm(parse_shape(args.shape))
        cluster, started = None, time.perf_counter()
        if where == "ray":
            ray.init(num_cpus=os.cpu_count(), num_gpus=1, log_to_driver=False, logging_level="ERROR")
            cluster = "auto"
        startup = time.perf_counter() - started  # NOTE: the cluster's processes start here, outside the wall
        start = time.perf_counter()
        result = tc.autoschedule(out, trials=args.trials, seed=args.seed, db=os.path.join(folder, f"{where}.jsonl"),
                                 cluster=cluster)
        wall = time.perf_counter() - start
        runs[where] = (wall, result, startup)
        print(f"{where:5s} wall {wall:7.1f} s, {len(result.records)} candidates, winner {result.measured * 1e3:.4f} ms: "
              f"{result.description}", flush=True)
    echo = ray.remote(num_cpus=0)(type("Echo", (), {"ping": lambda self: 0}))
    actor = echo.remote()
    ray.get(actor.ping.remote())
    trips = []
    for _ in range(200):
        t0 = time.perf_counter()
        ray.get(actor.ping.remote())
        trips.append(time.perf_counter() - t0)
    ray.shutdown()
    (wall_here, here, _), (wall_ray, there, ray_startup) = runs["here"], runs["ray"]
    time_ratio, wall_ratio = there.measured / here.measured, wall_ray / wall_here
    print(f"\nwinner's time through Ray / here: {time_ratio:.3f} (same winner: {there.source == here.source})")
    print(f"wall time through Ray / here: {wall_ratio:.3f}; with ray.init's {ray_startup:.1f} s (the cluster's worker "
          f"processes, started before the search here, as a standing cluster's are): "
          f"{(wall_ray + ray_startup) / wall_here:.3f}")
    print(f"Ray's overhead a candidate: an actor call's round trip {statistics.median(trips) * 1e6:.0f} us (median "
          f"of 200); the wall times' difference over {len(there.records)} candidates "
          f"{(wall_ray - wall_here) / max(1, len(there.records)):.2f} s")
    return 0 if abs(time_ratio - 1) <= 0.03 and wall_ratio <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(main())
