"""Counting instead of set algebra: how many instances a scheduled statement has, and
the proof by counting that an access reaches every point of a box.

isl counts and subtracts sets exactly, but either can take seconds where indices
divide fused thread indices; the loop extents give the count of an unguarded
statement at once, and an injective access of as many points as a box, into that box,
reaches all of it.
"""

from __future__ import annotations

import math

import islpy as isl

from .scheduled import Instances

#: above this many points a count is estimated from the loop extents instead of counted
COUNT_LIMIT = 2_000_000


def instance_count(inst: Instances) -> tuple:
    """``(count, exact)``: how many instances, counted by isl when there are few, else
    the product of the loop extents (exact when no guard cuts partial tiles)."""
    if not inst.guarded:
        return inst.box_size, True
    if inst.box_size <= COUNT_LIMIT:
        return inst.domain.count_val().to_python(), True
    return inst.box_size, False


def maps_onto_box(w, access: isl.Map, target: isl.Set, size: int) -> bool:
    """Does ``access`` map the instances of ``w`` onto ``target`` (a box of ``size``
    points)? Yes when its instances are the whole box of its loops, as many as
    ``target`` has points, ``access`` is injective on them and its image lies inside
    ``target``: an injective image of ``size`` points inside ``size`` points is all of
    them. No subtraction of a set whose indices divide (a fused thread index) is needed."""
    extents = [loop.extent for loop in w.loops]
    if math.prod(extents) != size:
        return False
    box = box_set(w.domain.get_tuple_name(), extents)
    if not box.is_subset(w.domain):  # a guard removes instances: count them no more
        return False
    image = access.intersect_domain(w.domain)
    return image.is_injective() and image.range().is_subset(target)


def box_set(name: str, extents) -> isl.Set:
    """``{ name[x0, ...] : 0 <= x_n < extents[n] }``."""
    dims = [f"x{n}" for n in range(len(extents))]
    bounds = " and ".join(f"0 <= {d} < {e}" for d, e in zip(dims, extents)) or "true"
    return isl.Set(f"{{ {name}[{', '.join(dims)}] : {bounds} }}")

