"""The cost model's rank accuracy on measured sweeps, recomputed without a GPU: the
Kendall tau between ``tc.estimate`` of each measured point of a ``tile_sweep.py`` (or
``overlap_variants.py``) result file and the time the H200 measured for it, so that a
change to the model can be judged on recorded data.

    python benchmarks/rerank_sweeps.py benchmarks/results/tile_sweep_pipelines_1000.txt ...

A file's shapes come from its header lines ("N points at MxNxK", or the command with
``--shape M,N,K``), else from ``--shape``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

_ROW = re.compile(r"^\s*([\d.]+)(?: us)?\s+(?:[\d.]+\s+)?(?:C: )?(block_tiling|warp_tiling) (.*?)(?:: (.*))?$")


def _value(text: str):
    if text in ("True", "False"):
        return text == "True"
    return int(text)


def measured_points(path: str, shape=None):
    """{shape: [(rule, params, measured seconds)]} of a result file: a header line
    ("N points at MxNxK", or a command with "--shape M,N,K") sets the shape of the rows
    after it."""
    by_shape: dict = {}
    for line in open(path):
        m = re.search(r"points at (\d+)x(\d+)x(\d+)", line) or re.search(r"--shape (\d+),(\d+),(\d+)", line)
        if m:
            shape = tuple(int(v) for v in m.groups())
        m = _ROW.match(line)
        if not m:
            continue
        seconds, rule, params, variant = float(m.group(1)) * 1e-6, m.group(2), m.group(3), m.group(4)
        p = {k: _value(v) for k, v in (kv.split("=") for kv in params.split())}
        p.setdefault("double_buffer", False)
        p.setdefault("pipeline", 0)
        if variant:  # overlap_variants.py: the overlap is named after the tiling
            stages = re.search(r"(\d)$", variant)
            p["double_buffer"] = "double buffer" in variant
            p["pipeline"] = int(stages.group(1)) if "pipeline" in variant else 0
        by_shape.setdefault(shape, []).append((rule, p, seconds))
    return by_shape


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--shape", default=None, help="M,N,K for files without a header")
    args = parser.parse_args(argv)
    import sgemm_ladder
    from tcomp.cost import estimate
    from tcomp.search.search import kendall_tau
    from tcomp.search.space import Point, Space

    default = tuple(int(v) for v in args.shape.split(",")) if args.shape else None
    for path in args.files:
        for shape, rows in measured_points(path, default).items():
            space = Space(sgemm_ladder.algorithm(*shape))
            (fusion,) = space.tileable_fusions()
            pairs = []
            for rule, p, seconds in rows:
                point = Point(fusion, (("C", rule, tuple(sorted(p.items()))),))
                pairs.append((estimate(space.schedule(point)).predicted_seconds, seconds))
            print(f"{os.path.basename(path)}: {len(pairs)} points at {'x'.join(map(str, shape))}, "
                  f"kendall tau {kendall_tau(pairs):.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
