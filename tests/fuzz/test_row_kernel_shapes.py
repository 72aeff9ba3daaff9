"""Row kernels at drawn shapes (issue 32): softmax and a two-statistic row norm in float32,
rows of a length no block pass divides (odd ones included), each drawn as a point of the
search's one-kernel partition (the ``row_kernel`` rule: threads, vector width, how the
slices are added, a tree across the threads among them; or, with fewer rows than SMs, ``split_rows``: the statistics in
segments of the row on blocks of their own, segments and slices padded where they do
not divide the row; or a warp a row whose lanes add the slices through shuffles), run in
the simulator on NaN-poisoned outputs and held to
``tc.evaluate`` within the bound of a reassociated float32 sum.

The fast suite draws a few; ``pytest -m long`` draws more from the same seed.
"""

import random
import sys
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")

import numpy as np  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tcomp as tc  # noqa: E402
from tcomp.ir.expr import WarpShuffle  # noqa: E402
from tcomp.ir.visitor import walk  # noqa: E402
from tcomp.search.space import Point, Space  # noqa: E402
from tcomp.search.tiling import ROW_KERNEL  # noqa: E402
from tcomp.testing import algorithms  # noqa: E402
from workloads import run, run_drawn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import softmax  # noqa: E402

pytestmark = pytest.mark.timeout(0)

FAST_EXAMPLES = 3
LONG_EXAMPLES = 16


def _draw_and_check(data, warps: bool = False, tree: bool = False) -> None:
    """A drawn point of the one-kernel partition; with ``warps``, a row kernel of a warp a
    row whose every thread adds the slices (through warp shuffles), 1 to 4 rows a block;
    with ``tree``, a row kernel whose threads add the slices together
    (``reduce_across_threads``)."""
    kind = data.draw(st.sampled_from(["softmax", "row_norm"]), label="operator")
    M = data.draw(st.sampled_from([1, 2, 4]) if warps else st.integers(1, 3), label="M")
    N = data.draw(st.integers(33, 300), label="N")
    out = softmax.algorithm(M, N) if kind == "softmax" else algorithms.row_norm(M, N)[-1]
    space = Space(out)
    (fusion,) = [f for f in space.tileable_fusions() if len(space.groups(f)) == 1]
    draws = random.Random(data.draw(st.integers(0, 2 ** 16), label="point seed"))
    if warps or tree:
        (group,) = space.groups(fusion)
        wanted = ((lambda p: p["combine"] == "tree") if tree else
                  (lambda p: p["threads"] == 32 and p["combine"] == "every_thread"))
        valid = [p for p in space.valid_params(ROW_KERNEL, group) if wanted(dict(p))]
        point = Point(fusion, ((group.anchor, ROW_KERNEL.name, draws.choice(valid)),))
    else:
        point = space.sample(draws, fusion)
    s = space.schedule(point)
    ((_, rule, _),) = point.tilings
    kernels = tc.lower(s).kernels
    assert (len(kernels) == 1) == (rule == "row_kernel"), point.describe()
    if warps or tree:
        assert any(isinstance(n, WarpShuffle) for n in walk(kernels[0])), point.describe()
    assert tc.check(s).legal
    x = (np.random.default_rng(M * 1009 + N).standard_normal((M, N)) * 3.0).astype(np.float32)
    want = tc.evaluate(out, {tc.inputs(out)[0]: x})
    got = run(s, [x])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=point.describe())


def _run(examples: int, seed, warps: bool = False, tree: bool = False) -> None:
    run_drawn(lambda data: _draw_and_check(data, warps, tree), examples, seed)


def test_row_kernels_at_drawn_lengths_match_the_reference(fuzz_seed):
    _run(FAST_EXAMPLES, fuzz_seed)


def test_warp_rows_at_drawn_lengths_match_the_reference(fuzz_seed):
    _run(FAST_EXAMPLES, fuzz_seed, warps=True)


def test_trees_at_drawn_lengths_match_the_reference(fuzz_seed):
    _run(FAST_EXAMPLES, fuzz_seed, tree=True)


@pytest.mark.long
def test_a_long_run_of_row_kernels_at_drawn_lengths(fuzz_seed):
    _run(LONG_EXAMPLES, fuzz_seed)
    _run(LONG_EXAMPLES, fuzz_seed, warps=True)
