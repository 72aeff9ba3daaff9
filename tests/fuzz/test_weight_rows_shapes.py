"""The weight-rows schedule (``tcomp.search.tiling.weight_rows``: a decode step's product
with W stored [N, K]) at drawn sizes: rows, columns, threads a column (under a warp, a
warp, two warps: their totals through shared memory), columns a block (a count of
``threadIdx.y`` rows that need not be a power of two), vector width and loads in flight;
each checked, built, run in the simulator on NaN-poisoned outputs and held to
``tc.evaluate`` within the bound of a float32 sum. A block is whole warps (the tree's
shuffles need every lane), so under 32 threads a column the columns a block make them up.

The fast suite draws a few; ``pytest -m long`` draws more from the same seed.
"""

import pytest

hypothesis = pytest.importorskip("hypothesis")

import numpy as np  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tcomp as tc  # noqa: E402
from tcomp.search.tiling import stream_weight_rows  # noqa: E402
from workloads import check_product, product_16_bit, run_drawn  # noqa: E402

pytestmark = pytest.mark.timeout(0)

FAST_EXAMPLES = 3
LONG_EXAMPLES = 20


def _draw_and_check(data) -> None:
    threads = data.draw(st.sampled_from([8, 16, 32, 64]), label="threads a column")
    columns = data.draw(st.integers(1, 3), label="columns a block") * max(1, 32 // threads)
    vector = data.draw(st.sampled_from([2, 4, 8]), label="vector")
    unroll = data.draw(st.sampled_from([1, 2]), label="unroll")
    M = data.draw(st.integers(1, 5), label="M")
    N = columns * data.draw(st.integers(1, 3), label="column blocks")
    K = threads * vector * unroll * data.draw(st.integers(1, 2), label="k steps")
    A, W, C = product_16_bit(M, N, K, "nk")
    s = tc.create_schedule(C)
    stream_weight_rows(s, C, "C", "A", "W", threads=threads, columns=columns, vector=vector, unroll=unroll)
    assert tc.check(s).legal
    check_product(s, A, W, C, np.random.default_rng(M * 10007 + N * 101 + K))


def test_weight_rows_at_drawn_sizes_match_the_reference(fuzz_seed):
    run_drawn(_draw_and_check, FAST_EXAMPLES, fuzz_seed)


@pytest.mark.long
def test_a_long_run_of_weight_rows_sizes(fuzz_seed):
    run_drawn(_draw_and_check, LONG_EXAMPLES, fuzz_seed)
