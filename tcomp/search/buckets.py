"""Which kernels to prepare for the extents one axis takes at run time (shape buckets).

A model calls one operator at several extents of one axis (the rows: 1 in a decode step,
7,239 in a prefill), each some number of times per *group* of calls (a request). tcomp
kernels have static shapes, so a set of kernels is a set of *bucket* extents: a call runs
the kernel of the smallest bucket at least as large as its extent, its inputs padded to
it (a kernel of its own extent: a specialized kernel). Preparing a kernel (searching its
schedule and building it) costs time once; running a group costs, per call, the time of
the bucket's kernel. Over ``r`` groups a set costs ``P + r T`` (preparation P, one group's
time T), so a set that prepares more pays off only after enough groups: the crossover of
two sets is where their lines meet, ``(P2 - P1) / (T1 - T2)`` groups.

:func:`kernel_sets` lists every set of candidate extents that covers the largest called
extent, :func:`cheapest` picks the one of least total time for a number of groups, and
:func:`cheapest_ranges` says over which numbers of groups each set is the cheapest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Callable

from ..errors import TcompError


@dataclass(frozen=True)
class KernelSet:
    """Kernels for the bucket ``extents``: ``preparation`` seconds once, ``per_group``
    seconds for one group of calls (each call padded to its bucket)."""

    extents: tuple
    preparation: float
    per_group: float

    def total(self, groups: int) -> float:
        """Seconds for ``groups`` groups, preparation included."""
        return self.preparation + groups * self.per_group

    @property
    def name(self) -> str:
        return "buckets " + ", ".join(str(e) for e in self.extents)


def bucket_of(extent: int, extents) -> int:
    """The smallest of ``extents`` at least ``extent``; a TcompError where none is."""
    fits = [e for e in extents if e >= extent]
    if not fits:
        raise TcompError(f"no bucket holds an extent of {extent}: the largest is {max(extents)}")
    return min(fits)


def group_time(calls: dict, extents, time_at: Callable[[int], float]) -> float:
    """Seconds of one group: ``calls`` (extent -> calls in a group), each call running the
    kernel of its bucket among ``extents``, which takes ``time_at(bucket)`` seconds."""
    return sum(n * time_at(bucket_of(extent, extents)) for extent, n in calls.items())


def kernel_sets(calls: dict, candidates, preparation_at: Callable[[int], float],
                time_at: Callable[[int], float]) -> list:
    """Every set of ``candidates`` (bucket extents, the called ones among them or not)
    that holds the largest called extent, with its preparation (the sum of
    ``preparation_at`` over its kernels) and one group's time."""
    called = [e for e, n in calls.items() if n > 0]
    if not called:
        raise TcompError("no extent is called: give each extent its calls per group (EXTENT:CALLS)")
    largest = max(called)
    candidates = sorted(set(candidates) | set(called))
    sets = []
    for size in range(1, len(candidates) + 1):
        for extents in combinations(candidates, size):
            if extents[-1] < largest:
                continue
            used = tuple(e for e in extents if any(bucket_of(c, extents) == e for c in called))
            if used != extents:
                continue  # a kernel that no call runs only adds preparation
            sets.append(KernelSet(extents, sum(preparation_at(e) for e in extents),
                                  group_time(calls, extents, time_at)))
    return sets


def cheapest(sets: list, groups: int) -> KernelSet:
    """The set of least total time over ``groups`` groups (the fewer kernels on a tie)."""
    return min(sets, key=lambda s: (s.total(groups), len(s.extents)))


def cheapest_ranges(sets: list, limit: int = 10 ** 9) -> list:
    """``[(first group count, last group count or None, set)]``: over which numbers of
    groups (1 up to ``limit``) each set is the cheapest, in order; the last range is open."""
    ranges, groups = [], 1
    while groups <= limit:
        best = cheapest(sets, groups)
        # the next count at which another set is cheaper: where its line crosses best's
        ahead = [math.floor((other.preparation - best.preparation) / (best.per_group - other.per_group)) + 1
                 for other in sets if other.per_group < best.per_group]
        ahead = [g for g in ahead if g > groups]
        end = min(ahead) - 1 if ahead else None
        if ranges and ranges[-1][2] == best:
            ranges[-1] = (ranges[-1][0], end, best)
        else:
            ranges.append((groups, end, best))
        if end is None:
            break
        groups = end + 1
    return ranges


def parse_calls(text: str) -> tuple:
    """``"M=1:1116,M=7239:36"`` -> ``("M", {1: 1116, 7239: 36})``: one axis, each extent
    with its calls per group (0: a bucket that no call has exactly)."""
    axis, calls = None, {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, rest = item.partition("=")
        extent, colon, count = rest.partition(":")
        if not (sep and colon and name.isidentifier() and extent.isdigit() and count.isdigit()) or int(extent) < 1:
            raise TcompError(f"--shapes takes AXIS=EXTENT:CALLS items separated by commas (M=1:1116,M=7239:36); "
                             f"got {item!r}")
        if axis not in (None, name):
            raise TcompError(f"--shapes buckets one axis; got {axis} and {name}")
        axis = name
        calls[int(extent)] = calls.get(int(extent), 0) + int(count)
    if axis is None:
        raise TcompError("--shapes is empty: give AXIS=EXTENT:CALLS items (M=1:1116,M=7239:36)")
    return axis, calls


__all__ = ["KernelSet", "bucket_of", "cheapest", "cheapest_ranges", "group_time", "kernel_sets", "parse_calls"]
