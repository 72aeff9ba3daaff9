"""Compile every example schedule to PTX for sm_90a and report ptxas figures as JSON lines.

    python -m tcomp.codegen.ptx_examples [examples/...py ...]

Runs without a GPU (and must run without NUMBA_ENABLE_CUDASIM). The test suite calls it
in a subprocess, since its own process runs the CUDA simulator.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..schedule import create_schedule
from ..lower import lower
from ..workload import load_workload
from .ptx import ptx_report


def example_schedules(path: str):
    """(module, {name: schedule function}) of a workload file: its SCHEDULES table, else
    ``schedule``. Each is compiled at the file's default shape, or at the shape its
    ``SCHEDULE_SHAPES`` names for it (a decode schedule at one row)."""
    module = load_workload(path).module
    table = getattr(module, "SCHEDULES", None) or {"schedule": module.schedule}
    return module, table


def main(argv=None) -> int:
    paths = (argv if argv is not None else sys.argv[1:]) or sorted(
        str(p) for p in Path(__file__).resolve().parents[2].joinpath("examples").glob("*.py"))
    for path in paths:
        module, table = example_schedules(path)
        shapes = getattr(module, "SCHEDULE_SHAPES", {})
        for name, fn in table.items():
            out = module.algorithm(**shapes.get(name, {}))
            s = create_schedule(out)
            fn(s, out)
            for r in ptx_report(lower(s)):
                print(json.dumps({"file": Path(path).name, "schedule": name, "kernel": r.kernel,
                                  "registers": r.registers, "spill_stores": r.spill_stores,
                                  "spill_loads": r.spill_loads, "shared_bytes": r.shared_bytes}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
