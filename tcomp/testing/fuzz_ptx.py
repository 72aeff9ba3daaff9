"""Random legal schedules compiled offline to PTX for sm_90a, through ``ptxas``.

    python -m tcomp.testing.fuzz_ptx [N] [SEED]

The schedule fuzzer runs kernels in the simulator, which never reaches NVVM; this draws
the fuzzer's schedules (``tcomp.testing.fuzz``) and compiles every one that ``tc.check``
calls legal with ``numba.cuda.compile_ptx`` and ``ptxas``, as a GPU build would: the
unroll pragmas of ``codegen/nvvm_unroll.py`` must find every loop, and nothing may fail.
Prints one line of counts; exits 1 on a failure, naming it. Must run without
NUMBA_ENABLE_CUDASIM (the test suite calls it in a subprocess).
"""

from __future__ import annotations

import collections
import sys

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import tcomp as tc

from ..codegen.ptx import ptx_report
from .fuzz_workloads import WORKLOADS, workloads
from .reproducer import repro_source
from .schedule_drawer import draw_schedule


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    examples = int(argv[0]) if argv else 100
    counts, failures = collections.Counter(), []

    @seed(int(argv[1]) if len(argv) > 1 else 4711)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def compile_one(data):
        name = data.draw(st.sampled_from(sorted(WORKLOADS)))
        wl = data.draw(workloads(name))
        s, _, err = draw_schedule(data, wl)
        if err is not None:
            counts["refused by a primitive"] += 1
            return
        try:
            tc.check(s)
        except tc.TcompError:
            counts["refused by tc.check"] += 1
            return
        try:
            ptx_report(tc.lower(s))
        except Exception as err:  # NOTE: every failure here is a bug: the schedule is legal
            failures.append(f"{name} {wl.shape}: {type(err).__name__}: {err}\n{repro_source(wl, s)}")
            return
        counts["compiled"] += 1

    compile_one()
    print(", ".join(f"{n} {what}" for what, n in sorted(counts.items())), flush=True)
    for f in failures:
        print(f"FAILED {f}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
