"""The sixteen-row mma.sync schedule with W's fragments loaded straight from global memory
(``tcomp.search.tiling.mma_rows``) at drawn sizes: n8 tiles a warp (a lane's columns of
a k row one vector of 2, 4 or 8 elements), warps a block (slices of k added through
shared memory), k steps a loop iteration, and the column blocks and k steps of the shape;
each checked, built, run in the simulator on a NaN-poisoned output and held to
``tc.evaluate`` within the bound of a float32 sum.

The fast suite draws a few; ``pytest -m long`` draws more from the same seed.
"""

import pytest

hypothesis = pytest.importorskip("hypothesis")

import numpy as np  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tcomp as tc  # noqa: E402
from tcomp.search.tiling import mma_rows  # noqa: E402
from workloads import check_product, product_16_bit, run_drawn  # noqa: E402

pytestmark = pytest.mark.timeout(0)

FAST_EXAMPLES = 2
LONG_EXAMPLES = 12


def _draw_and_check(data) -> None:
    tiles = data.draw(st.sampled_from([2, 4, 8]), label="n8 tiles a warp")
    slices = data.draw(st.sampled_from([2, 4]), label="warps a block")
    unroll = data.draw(st.sampled_from([1, 2]), label="k steps an iteration")
    N = 8 * tiles * data.draw(st.integers(1, 2), label="column blocks")
    K = 16 * slices * unroll * data.draw(st.integers(1, 2), label="iterations a slice")
    A, W, C = product_16_bit(16, N, K)
    s = tc.create_schedule(C)
    mma_rows(s, C, "C", "A", "W", tiles=tiles, slices=slices, unroll=unroll)
    assert tc.check(s).legal
    check_product(s, A, W, C, np.random.default_rng(tiles * 10007 + N * 101 + K))


def test_mma_rows_at_drawn_sizes_match_the_reference(fuzz_seed):
    run_drawn(_draw_and_check, FAST_EXAMPLES, fuzz_seed)


@pytest.mark.long
def test_a_long_run_of_mma_rows_sizes(fuzz_seed):
    run_drawn(_draw_and_check, LONG_EXAMPLES, fuzz_seed)
