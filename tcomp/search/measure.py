"""Measuring one candidate in a process of its own: validated, then timed.

``measure(candidate)`` runs ``python -m tcomp.search.measure`` with the candidate as JSON
on its standard input and a timeout. The child loads the workload file at the shape,
replays the schedule, builds it (``tc.build`` checks legality first), runs it on seeded
random inputs (never zeros) into outputs poisoned with NaN (or an integer sentinel),
compares every output with ``tc.evaluate`` on the same inputs, and only then, on a GPU,
times it with CUDA events after warm-up: the median of the repeats and their spread.
It answers one JSON line on its standard output.

Whatever happens to the child is a :class:`~tcomp.search.database.Record` status, and
the search goes on: ``ok``; ``wrong`` (an output differs from the reference); ``illegal``
(``tc.check`` refuses the schedule); ``over capacity`` (more threads, shared memory or
device memory than the target has); ``crash`` (an exception, an illegal address, a
killed process: the error text is the end of what it printed); ``timeout``.

The environment variable ``TCOMP_MEASURE_FAULT`` (``crash``, ``hang`` or ``wrong``) makes
the child fail on purpose, so that tests can check that the parent records each case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from .database import Record, current_target

#: how much of a failed child's output an error record keeps
ERROR_CHARS = 2000


@dataclass(frozen=True)
class Candidate:
    """A schedule of a workload file at a shape."""

    workload: str  # path of the workload file (defines algorithm(**shape))
    source: str  # Python source defining schedule(s, out)
    shape: dict = field(default_factory=dict)  # shape keywords of algorithm()


def measure(candidate: Candidate, *, timeout: float = 120.0, repeats: int = 10, warmup: int = 3,
            seed: int = 0, predicted: float | None = None) -> Record:
    """Validate and time ``candidate`` in a child process (see the module docstring)."""
    from ..lang.canonical import workload_key
    from ..workload import load_workload

    out, _ = load_workload(candidate.workload).build_algorithm(candidate.shape)
    request = {"workload": candidate.workload, "source": candidate.source, "shape": candidate.shape,
               "repeats": repeats, "warmup": warmup, "seed": seed}
    common = {"workload": workload_key(out), "target": current_target(), "schedule": candidate.source,
              "predicted": predicted}
    try:
        proc = subprocess.run([sys.executable, "-m", "tcomp.search.measure"], input=json.dumps(request),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Record(status="timeout", error=f"no answer within {timeout:g} s", **common)
    answer = _answer(proc.stdout)
    if answer is None:
        tail = (proc.stderr or proc.stdout or "")[-ERROR_CHARS:]
        return Record(status="crash", error=f"the measuring process exited with status {proc.returncode}: {tail}",
                      **common)
    return Record(status=answer["status"], measured=answer.get("measured"), spread=answer.get("spread"),
                  error=answer.get("error", ""), **common)


def _answer(stdout: str):
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


# ---------------------------------------------------------------------- the child


def _child(request: dict) -> dict:
    import tcomp as tc
    from ..errors import CapacityError, CodegenError, LoweringError, ScheduleError
    from ..validation import compare, random_inputs
    from ..workload import apply_schedule, load_schedule, load_workload

    fault = os.environ.get("TCOMP_MEASURE_FAULT", "")
    workload = load_workload(request["workload"])
    out, _ = workload.build_algorithm(request["shape"])
    s = tc.create_schedule(out)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(request["source"])
    try:
        fn, where = load_schedule(f.name)
        apply_schedule(s, out, fn, where=f"candidate {where}")
    finally:
        os.unlink(f.name)
    try:
        mod = tc.build(s)
    except CapacityError as err:
        return {"status": "over capacity", "error": str(err)[:ERROR_CHARS]}
    except (ScheduleError, LoweringError, CodegenError) as err:  # refused by tc.check (check = build)
        return {"status": "illegal", "error": f"{type(err).__name__}: {err}"[:ERROR_CHARS]}
    if fault == "crash":
        os._exit(3)
    if fault == "hang":
        import time

        time.sleep(3600)
    feeds = random_inputs(s, seed=request["seed"])
    outputs = list(s.outputs)
    results = [_poisoned(t) for t in outputs]
    mod(*feeds.values(), *results)
    if fault == "wrong":
        results[0].reshape(-1)[::2] += 3  # half the elements off by 3: beyond any tolerance
    for t, got in zip(outputs, results):
        ok, lines = compare(got, tc.evaluate(t, feeds), t.dtype)
        if not ok:
            return {"status": "wrong", "error": f"output {t.name}: {'; '.join(lines)}"}
    if mod.simulator:
        return {"status": "ok", "measured": None, "spread": None}
    median, spread = _time(mod, feeds, outputs, request["repeats"], request["warmup"])
    return {"status": "ok", "measured": median, "spread": spread}


def _poisoned(t):
    import numpy as np

    from ..dtypes import host_dtype, is_float

    dt = host_dtype(t.dtype)
    return np.full(t.shape, np.nan if is_float(t.dtype) else -77, dtype=dt)


def _time(mod, feeds, outputs, repeats: int, warmup: int) -> tuple:
    import numpy as np
    from numba import cuda

    from ..dtypes import DEVICE_STORAGE, host_dtype

    d_in = [cuda.to_device(a.view(DEVICE_STORAGE[t.dtype]) if t.dtype in DEVICE_STORAGE else a)
            for t, a in feeds.items()]
    d_out = [cuda.device_array(t.shape, dtype=DEVICE_STORAGE.get(t.dtype, host_dtype(t.dtype))) for t in outputs]
    for _ in range(warmup):
        mod(*d_in, *d_out)
    cuda.synchronize()
    times = []
    start, end = cuda.event(), cuda.event()
    for _ in range(repeats):
        start.record()
        mod(*d_in, *d_out)
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end) / 1e3)
    median = float(np.median(times))
    return median, float((max(times) - min(times)) / median) if median > 0 else 0.0


def main() -> int:
    request = json.loads(sys.stdin.read())
    try:
        answer = _child(request)
    except Exception as err:  # NOTE: any failure of the candidate is a record, not a crash of the search
        import traceback

        answer = {"status": "crash", "error": "".join(traceback.format_exception(err))[-ERROR_CHARS:]}
    print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
