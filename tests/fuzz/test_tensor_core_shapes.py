"""Tensor-core tilings at drawn shapes (issue 31): M, N and K that no block, warp tile or k
step divides (K odd included), W stored as [K, N] or [N, K], mma.sync or wgmma, with or
without cp.async rings; each built, run in the simulator on NaN-poisoned outputs and held
to ``tc.evaluate`` within the bound of a float32 sum.

The fast suite draws a few (each run takes seconds in the simulator); ``pytest -m long``
draws more from the same seed.
"""

import pytest

hypothesis = pytest.importorskip("hypothesis")

import numpy as np  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tcomp as tc  # noqa: E402
from tcomp.search.tiling import mma_warp_tiles, wgmma_tiles  # noqa: E402
from workloads import check_product, product_16_bit, run_drawn  # noqa: E402

pytestmark = pytest.mark.timeout(0)

FAST_EXAMPLES = 4
LONG_EXAMPLES = 24


def _draw_and_check(data) -> None:
    kind = data.draw(st.sampled_from(["mma", "wgmma"]), label="instruction")
    layout = data.draw(st.sampled_from(["kn", "nk"]), label="W's layout")
    stages = data.draw(st.sampled_from([0, 3]), label="stages")
    if kind == "mma":
        tiles = dict(BM=32, BN=32, BK=data.draw(st.sampled_from([16, 32]), label="BK"), WM=16, WN=16)
        M, N = (data.draw(st.integers(32, 44), label=axis) for axis in "MN")
    else:
        tiles = dict(BM=64, BN=64, BK=64)
        M, N = (data.draw(st.integers(64, 72), label=axis) for axis in "MN")
    K = data.draw(st.integers(tiles["BK"], tiles["BK"] + 40), label="K")
    A, W, C = product_16_bit(M, N, K, layout)
    s = tc.create_schedule(C)
    if kind == "mma":
        mma_warp_tiles(s, C, "C", "A", "W", **tiles, stages=stages)
    else:
        wgmma_tiles(s, C, "C", "A", "W", **tiles, stages=stages)
    check_product(s, A, W, C, np.random.default_rng(M * 10007 + N * 101 + K))


def _run(examples: int, seed) -> None:
    run_drawn(_draw_and_check, examples, seed)


def test_tensor_core_tilings_at_ragged_shapes_match_the_reference(fuzz_seed):
    _run(FAST_EXAMPLES, fuzz_seed)


@pytest.mark.long
def test_a_long_run_of_ragged_tensor_core_shapes(fuzz_seed):
    _run(LONG_EXAMPLES, fuzz_seed)
