"""The cost model's rank accuracy on the measured records of a tuning database, recomputed
without a GPU: each record of the workload (its ``workload_key``) whose schedule replays
is estimated again with ``tc.estimate`` and set against the time the GPU measured for it,
so that a change to the model can be judged on recorded data.

    python benchmarks/rerank_records.py examples/ffn_bf16.py --shape M=1024,N=12288,K=4096 \\
        benchmarks/results/tuning_tensor_cores_7th.jsonl

Prints one line per record (recorded prediction, prediction now, measured time, its
``mma_tiling``-style summary: block and warp tiles, k step, stages, block order) and the
Kendall tau of the recorded and the current predictions against the measured times.
"""

from __future__ import annotations

import argparse
import json
import re
import sys


def _summary(source: str) -> str:
    """A short description of a saved schedule: its tile() and split() factors and the
    block binding, enough to tell the records of one search apart."""
    tiles = re.findall(r"\.tile\([^,]+, [^,]+, (\d+), (\d+)\)", source)
    warps = re.findall(r"\.split\([^,]+, (\d+)\)", source)[:2]
    k_step = re.search(r"\.split\(\w+_k, (\d+)\)", source)
    stages = re.findall(r"\.pipeline\((\d+)", source)
    rows_on_x = re.search(r"bind\(\w+_i_o, 'blockIdx.x'\)", source) is not None
    parts = [f"blocks {'x'.join(tiles[0])}" if tiles else "no tile", f"warps {'x'.join(warps)}",
             f"BK {k_step.group(1) if k_step else '-'}", f"stages {stages[0] if stages else 0}",
             "rows fastest" if rows_on_x else "columns fastest"]
    return ", ".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", help="the workload file (examples/...)")
    parser.add_argument("records", nargs="+", help="tuning database files (JSON lines)")
    parser.add_argument("--shape", default="", help="KEY=VALUE,... for the workload's algorithm")
    parser.add_argument("--target", default="h200")
    args = parser.parse_args(argv)

    import tcomp as tc
    from tcomp.lang.canonical import workload_key
    from tcomp.schedule.schedule import replay
    from tcomp.search.search import kendall_tau
    from tcomp.workload import load_workload, parse_shape

    workload = load_workload(args.workload)
    shape = parse_shape(args.shape)
    key = workload_key(workload.algorithm(**shape))
    rows = []
    for path in args.records:
        with open(path) as f:
            for line in f:
                record = json.loads(line)
                if record.get("workload") != key or record.get("status") != "ok" or not record.get("measured"):
                    continue
                s = replay(record["schedule"], workload.algorithm(**shape))
                now = tc.estimate(s, target=args.target).predicted_seconds
                rows.append((record["predicted"], now, record["measured"], _summary(record["schedule"])))
    if len(rows) < 2:
        print(f"{len(rows)} measured records of this workload ({key[:12]}...): nothing to rank", file=sys.stderr)
        return 1
    print(f"{'recorded us':>12} {'now us':>9} {'measured us':>12}  schedule")
    for recorded, now, measured, summary in sorted(rows, key=lambda r: r[2]):
        print(f"{recorded * 1e6:12.1f} {now * 1e6:9.1f} {measured * 1e6:12.1f}  {summary}")
    before = kendall_tau([(r[0], r[2]) for r in rows])
    after = kendall_tau([(r[1], r[2]) for r in rows])
    print(f"{len(rows)} records; Kendall tau recorded {before:.3f}, now {after:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
