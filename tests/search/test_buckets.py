"""Shape buckets (``tcomp.search.buckets``): the chapter's Example 5-12 (a group of ten FFN
calls: 8 of 256 rows, one of 1536, one of 2048), its crossovers computed as the chapter
computes them, and the sets of bucket kernels for two call mixes that pick different sets."""

import pytest

import tcomp as tc
from tcomp.search.buckets import (KernelSet, bucket_of, cheapest, cheapest_ranges, group_time, kernel_sets,
                                  parse_calls)

H, F = 4096, 12288
FLOPS_PER_ROW = 6 * H * F  # the FFN's three projections


def test_the_chapters_example_crosses_over_at_65_and_90_groups():
    """General-purpose (100 ms to prepare, 5632 rows at 100 TFLOP/s), two buckets (400 ms,
    8192 padded rows at 200 TFLOP/s), one kernel per shape (900 ms, 5632 rows at 250):
    the chapter's 17.0, 12.4 and 6.8 ms a group, and general-purpose cheapest for 1-64
    groups, bucketed for 65-89, specialized from 90 on."""
    general = KernelSet(("general",), 0.100, 5632 * FLOPS_PER_ROW / 100e12)
    bucketed = KernelSet((512, 2048), 0.400, 8192 * FLOPS_PER_ROW / 200e12)
    specialized = KernelSet((256, 1536, 2048), 0.900, 5632 * FLOPS_PER_ROW / 250e12)
    assert [round(s.per_group * 1e3, 1) for s in (general, bucketed, specialized)] == [17.0, 12.4, 6.8]
    ranges = cheapest_ranges([general, bucketed, specialized])
    assert ranges == [(1, 64, general), (65, 89, bucketed), (90, None, specialized)]
    # 70 groups: about 1.29, 1.27 and 1.38 s
    assert [round(s.total(70), 2) for s in (general, bucketed, specialized)] == [1.29, 1.27, 1.38]
    assert cheapest([general, bucketed, specialized], 70) is bucketed


def test_calls_are_padded_to_the_smallest_bucket_that_holds_them():
    calls = {256: 8, 1536: 1, 2048: 1}
    assert [bucket_of(e, (512, 2048)) for e in calls] == [512, 2048, 2048]
    rows = group_time(calls, (512, 2048), lambda e: e)  # a kernel's time: its rows
    assert rows == 8192  # the chapter's padded total
    with pytest.raises(tc.TcompError, match="no bucket holds an extent of 4096: the largest is 2048"):
        bucket_of(4096, (512, 2048))


def test_two_call_mixes_pick_different_kernel_sets():
    """Decode steps and a prefill (the chapter's 5.6.3: 1,116 one-row calls a request, 36 of
    7,239 rows), kernels that take a fixed 20 us plus their rows' work, 2 s to prepare
    each: with 1,116 one-row calls a request, padding them to the prefill's kernel costs
    seconds a request, so a kernel for one row pays for itself in the first; with two,
    padding costs 7 ms a request and the second kernel pays off only after hundreds."""
    def time_at(rows):
        return 20e-6 + rows * FLOPS_PER_ROW / 600e12

    def preparation_at(rows):
        return 2.0

    decode_heavy = kernel_sets({1: 1116, 7239: 36}, [], preparation_at, time_at)
    assert sorted(s.extents for s in decode_heavy) == [(1, 7239), (7239,)]
    assert cheapest_ranges(decode_heavy) == [(1, None, cheapest(decode_heavy, 1))]
    assert cheapest(decode_heavy, 1).extents == (1, 7239)
    few_decodes = kernel_sets({1: 2, 7239: 36}, [], preparation_at, time_at)
    (first, end, one), (start, _, both) = cheapest_ranges(few_decodes)
    assert one.extents == (7239,) and both.extents == (1, 7239) and start == end + 1
    # the crossover as the chapter computes it: extra preparation over the time saved per group
    saved = one.per_group - both.per_group
    assert end < 2.0 / saved <= start and start > 100
    assert cheapest(few_decodes, 10).extents == (7239,) and first == 1


def test_a_candidate_bucket_that_no_call_needs_is_left_out():
    sets = kernel_sets({256: 8, 2048: 1}, [512, 1024], lambda e: 1.0, lambda e: e * 1e-6)
    assert (512, 1024, 2048) not in [s.extents for s in sets]  # 1024 would run nothing
    assert {(2048,), (256, 2048), (512, 2048)} <= {s.extents for s in sets}


def test_call_mixes_are_parsed_or_refused_by_name():
    assert parse_calls("M=1:1116,M=7239:36") == ("M", {1: 1116, 7239: 36})
    assert parse_calls("M=512:0, M=256:8") == ("M", {512: 0, 256: 8})
    with pytest.raises(tc.TcompError, match="buckets one axis; got M and N"):
        parse_calls("M=1:3,N=2:4")
    with pytest.raises(tc.TcompError, match="AXIS=EXTENT:CALLS"):
        parse_calls("M=1")
    with pytest.raises(tc.TcompError, match="no extent is called"):
        kernel_sets({512: 0}, [], lambda e: 1.0, lambda e: 1.0)
