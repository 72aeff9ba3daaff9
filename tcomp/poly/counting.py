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
    points)? Yes when there are as many instances as ``target`` has points
    (:func:`exact_count`), ``access`` is injective on them and its image lies inside
    ``target``: an injective image of ``size`` points inside ``size`` points is all of
    them. No subtraction of a set whose indices divide (a fused thread index) is needed."""
    if exact_count(w) != size:
        return False
    image = access.intersect_domain(w.domain)
    return image.is_injective() and image.range().is_subset(target)


#: the isl operations that :func:`exact_count` may spend before it gives up
COUNT_STEPS = 20_000


def exact_count(w) -> int | None:
    """The instances of ``w``, counted without enumerating them one by one: the product
    of its loop extents where no guard removes any; else, loop by loop from the
    outermost, each value's instances counted alike (a whole box at once, or the points
    of a few outer loops times the extents of the inner loops that no guard touches: the
    rounds of persistent blocks past the last tile, the rows of a partial tile). None
    where that takes more than ``COUNT_STEPS`` isl operations."""
    extents = [loop.extent for loop in w.loops]
    box = box_set(w.domain.get_tuple_name(), extents)
    if not w.domain.is_subset(box):
        return None
    steps = [COUNT_STEPS]
    try:
        return _count(w.domain, box, extents, 0, steps)
    except _OutOfSteps:
        return None


class _OutOfSteps(Exception):
    pass


def _count(domain: isl.Set, box: isl.Set, extents: list, fixed: int, steps: list) -> int:
    """Points of ``domain`` (inside ``box``, whose first ``fixed`` dimensions hold one
    value each)."""
    steps[0] -= 1
    if steps[0] < 0:
        raise _OutOfSteps
    if domain.is_empty():
        return 0
    inner = math.prod(extents[fixed:])
    if box.is_subset(domain):
        return inner
    dims = len(extents)
    for outer in range(fixed + 1, dims):  # the guards touch the first `outer` dimensions only
        if math.prod(extents[fixed:outer]) > 64:
            break
        prefix = domain.project_out(isl.dim_type.set, outer, dims - outer)
        rest = prefix.insert_dims(isl.dim_type.set, outer, dims - outer).set_tuple_name(domain.get_tuple_name())
        if rest.intersect(box).is_equal(domain):
            return prefix.count_val().to_python() * math.prod(extents[outer:])
    total = 0
    for value in range(extents[fixed]):
        one = isl.Set(f"{{ {domain.get_tuple_name()}[{', '.join(f'x{d}' for d in range(dims))}] : x{fixed} = {value} }}")
        total += _count(domain.intersect(one), box.intersect(one), extents, fixed + 1, steps)
    return total


def box_set(name: str, extents) -> isl.Set:
    """``{ name[x0, ...] : 0 <= x_n < extents[n] }``."""
    dims = [f"x{n}" for n in range(len(extents))]
    bounds = " and ".join(f"0 <= {d} < {e}" for d, e in zip(dims, extents)) or "true"
    return isl.Set(f"{{ {name}[{', '.join(dims)}] : {bounds} }}")

