"""A hash of the generated source of every example and saved schedule, no GPU needed.

    python benchmarks/source_hashes.py [--shapes default,1000] [--out hashes.json]
                                       [--against hashes.json]

For each schedule of each ``examples/*.py`` file (its ``SCHEDULES`` table, else its
``schedule``) at each shape, and for each ``schedules/*.py`` file at the shape its header
names, this lowers the schedule and hashes the generated module source, once as compiled
for the GPU and once as run in the CUDA simulator. A refactoring that must not change
behaviour must leave every hash as it was: ``--against`` compares with an earlier run's
``--out`` and exits 1 on any difference, naming the rows.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import re
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _shape(spec: str) -> dict:
    if spec == "default":
        return {}
    n = int(spec)
    return {"M": n, "N": n, "K": n}


def _digest(program) -> dict:
    from tcomp.codegen import program_source

    return {kind: hashlib.sha256(program_source(program, simulator).encode()).hexdigest()[:16]
            for kind, simulator in (("gpu", False), ("sim", True))}


def _rows(shapes):
    """(label, schedule function, algorithm, shape keywords) of every schedule to hash."""
    from tcomp.codegen.ptx_examples import example_schedules
    from tcomp.workload import load_workload

    for path in sorted(ROOT.joinpath("examples").glob("*.py")):
        module, table = example_schedules(str(path))
        for name, fn in table.items():
            for spec in shapes:
                yield f"{path.stem}:{name}@{spec}", fn, module.algorithm, _shape(spec)
    for path in sorted(ROOT.joinpath("schedules").glob("*.py")):
        text = path.read_text()
        workload = re.search(r"workload:\s*(\S+)", text).group(1)
        shape = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", re.search(r"shape:\s*(.*)", text).group(1))}
        algorithm = load_workload(str(ROOT / workload)).module.algorithm
        yield f"schedules/{path.name}", runpy.run_path(str(path))["schedule"], algorithm, shape


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="default,1000",
                        help="comma-separated: 'default' (the file's shape) or N for M = N = K = N")
    parser.add_argument("--out", help="write the hashes to this JSON file")
    parser.add_argument("--against", help="compare with the hashes of an earlier --out; exit 1 on a difference")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tcomp.errors import ScheduleError
    from tcomp.lower import lower
    from tcomp.schedule import create_schedule

    hashes = {}
    for label, fn, algorithm, shape in _rows(args.shapes.split(",")):
        takes = inspect.signature(algorithm).parameters
        out = algorithm(**{k: v for k, v in shape.items() if k in takes})
        s = create_schedule(out)
        try:
            fn(s, out)
            hashes[label] = _digest(lower(s))
        except ScheduleError as err:  # NOTE: a schedule that does not apply at a shape says so itself
            hashes[label] = {"refused": type(err).__name__}
        print(label, hashes[label], flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    if args.against:
        before = json.loads(Path(args.against).read_text())
        changed = sorted(k for k in set(before) | set(hashes) if before.get(k) != hashes.get(k))
        for label in changed:
            print(f"changed: {label}: {before.get(label)} -> {hashes.get(label)}")
        print(f"{len(hashes) - len(changed)} of {len(set(before) | set(hashes))} identical")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
