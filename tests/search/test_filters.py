"""The screen (``tcomp/search/filters.py``) checks each point for the target the search
runs for: a tiling that fits the H200's shared memory is over capacity on a target with
less, refused by ``tc.check``'s own count (issue 30: the check stayed sized for the H200
while the estimate and the rules followed ``target``)."""

import sys
from pathlib import Path

import tcomp as tc
from tcomp.search.filters import screen
from tcomp.search.space import Point, Space
from tcomp.target import H200

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import sgemm_ladder  # noqa: E402

#: a block tiling with 32 KB of shared tiles (double buffered: 64 KB)
LARGE = dict(BM=128, BN=128, BK=32, TM=8, TN=8, transpose_a=False, vector=4, double_buffer=True, pipeline=0,
             k_unroll=1, fragment_k=1, split_k=1)
SMALL_SHARED = H200.replace(name="h200_16k", smem_per_block=16 * 1024)


def _point():
    return Point((), (("C", "block_tiling", tuple(sorted(LARGE.items()))),))


def test_the_point_fits_the_h200():
    space = Space(sgemm_ladder.algorithm(256, 256, 256), target=H200)
    screened = screen(space, _point(), target=H200)
    assert screened.status == "ok", screened.error


def test_on_a_smaller_target_the_check_refuses_it():
    space = Space(sgemm_ladder.algorithm(256, 256, 256), target=H200)
    screened = screen(space, _point(), target=SMALL_SHARED)
    assert screened.status == "over capacity"
    assert "bytes of shared memory per block" in screened.error and "the limit is 16384 bytes" in screened.error


def test_check_and_estimate_agree_on_the_target():
    s = Space(sgemm_ladder.algorithm(256, 256, 256), target=H200).schedule(_point())
    tc.check(s, target=H200)
    try:
        tc.check(s, target=SMALL_SHARED)
    except tc.CapacityError as err:
        assert "16384" in str(err)
    else:
        raise AssertionError("tc.check accepted 64 KB of shared memory on a 16 KB target")
