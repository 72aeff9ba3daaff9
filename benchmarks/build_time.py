"""Build time and registers of every example schedule, no GPU needed.

    python benchmarks/build_time.py [--shapes default,1000,4000] [--only warptiled,ffn]
                                    [--json results.jsonl] [--warm]

For each schedule of each ``examples/*.py`` file (its ``SCHEDULES`` table, else its
``schedule``), at the file's default shape and at M = N = K = 1000 and 4000 (shapes that
no tile divides), this times what a build pays after the legality check: lowering, the
generated source, ``numba.cuda.compile_ptx`` for sm_90a and ``ptxas -arch=sm_90a -v``.
It prints one row per kernel with the seconds, registers, spill bytes and stack frame,
and exits 1 if any build exceeds ``--limit`` seconds (default 5), spills, or has its wgmma
instructions serialized by ptxas (the row then ends with the reason). A schedule that
raises ``tc.ScheduleError`` at a shape (the tensor-core one needs K a multiple of 32) gets a
row saying so.
Each build runs in a fresh subprocess with an empty kernel cache, so that no build
profits from an earlier one. With ``--warm`` the subprocess first compiles a one-line
kernel, so that the figure leaves out what a process pays once, at its first compile
(importing ``numba.cuda`` and filling numba's registries: about a second here): what
each further build costs, as in the auto-scheduler's build processes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _warm_up() -> None:
    """What a process pays at its first compile: numba.cuda's import and registries."""
    from numba import cuda, uint32

    def one_line(a):
        a[0] = uint32(1)

    cuda.compile_ptx(one_line, "void(uint32[:])", cc=(9, 0, "a"))


def _child(path: str, name: str, shape: dict, warm: bool) -> None:
    """Build one schedule and print one JSON line per kernel (runs in the subprocess)."""
    sys.path.insert(0, str(ROOT))
    from tcomp.codegen.ptx import ptx_report
    from tcomp.errors import ScheduleError
    from tcomp.codegen.ptx_examples import example_schedules
    from tcomp.lower import lower
    from tcomp.schedule import create_schedule

    import inspect

    module, table = example_schedules(path)
    takes = inspect.signature(module.algorithm).parameters
    out = module.algorithm(**{k: v for k, v in shape.items() if k in takes})  # NOTE: a 2-D chain has no K
    s = create_schedule(out)
    try:
        table[name](s, out)
    except ScheduleError as err:  # NOTE: a schedule that does not apply at this shape says so itself
        print(json.dumps({"refused": str(err)}))
        return
    if warm:
        _warm_up()
    start = time.perf_counter()
    reports = ptx_report(lower(s))
    seconds = time.perf_counter() - start
    for r in reports:
        print(json.dumps({"kernel": r.kernel, "seconds": round(seconds, 2), "registers": r.registers,
                          "spill_bytes": r.spill_stores + r.spill_loads, "stack": r.stack_frame,
                          "wgmma_serialized": r.wgmma_serialized}))


def _shape(spec: str) -> dict:
    if spec == "default":
        return {}
    n = int(spec)
    return {"M": n, "N": n, "K": n}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="default,1000,4000",
                        help="comma-separated: 'default' (the file's shape) or N for M = N = K = N")
    parser.add_argument("--only", default="", help="comma-separated substrings of 'file:schedule' to keep")
    parser.add_argument("--limit", type=float, default=5.0, help="seconds a build may take (default 5)")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds before a build is abandoned")
    parser.add_argument("--json", help="also append every row to this JSON-lines file")
    parser.add_argument("--warm", action="store_true",
                        help="leave out the process's first-compile costs (numba.cuda's import and registries)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], json.loads(args.child[2]), args.child[3] == "warm")
        return 0

    sys.path.insert(0, str(ROOT))
    from tcomp.codegen.ptx_examples import example_schedules

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    only = [o for o in args.only.split(",") if o]
    print("| example | schedule | shape | kernel | build s | registers | spill bytes | stack bytes |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: |", flush=True)
    failed = False
    for path in sorted(ROOT.joinpath("examples").glob("*.py")):
        _, table = example_schedules(str(path))
        for name in table:
            label = f"{path.stem}:{name}"
            if only and not any(o in label for o in only):
                continue
            for spec in args.shapes.split(","):
                shape = _shape(spec)
                with tempfile.TemporaryDirectory() as cache:
                    cmd = [sys.executable, __file__, "--child", str(path), name, json.dumps(shape),
                           "warm" if args.warm else "cold"]
                    try:
                        proc = subprocess.run(cmd, env={**env, "TCOMP_CACHE_DIR": cache}, capture_output=True,
                                              text=True, timeout=args.timeout)
                    except subprocess.TimeoutExpired:
                        print(f"| {path.name} | {name} | {spec} | - | > {args.timeout:.0f} | | | |", flush=True)
                        failed = True
                        continue
                if proc.returncode != 0:
                    print(f"| {path.name} | {name} | {spec} | - | failed: {proc.stderr.strip().splitlines()[-1]} | | | |")
                    failed = True
                    continue
                for line in proc.stdout.splitlines():
                    row = json.loads(line)
                    if "refused" in row:
                        print(f"| {path.name} | {name} | {spec} | - | not at this shape: {row['refused']} | | | |")
                        continue
                    bad = row["seconds"] > args.limit or row["spill_bytes"] > 0 or bool(row["wgmma_serialized"])
                    failed |= bad
                    print(f"| {path.name} | {name} | {spec} | {row['kernel']} | {row['seconds']:.1f} | "
                          f"{row['registers']} | {row['spill_bytes']} | {row['stack']} |" + (" **over**" if bad else "")
                          + (f" wgmma serialized: {row['wgmma_serialized']}" if row["wgmma_serialized"] else ""),
                          flush=True)
                    if args.json:
                        with open(args.json, "a") as f:
                            f.write(json.dumps({"file": path.name, "schedule": name, "shape": spec, **row}) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
