"""Races: no two instances that touch the same shared or global location, one of them
writing, run in different threads of a block without a barrier between them, or in
different blocks of one kernel at all.

Loops bound to blocks and threads carry no dependence. Elementwise stores of one value
to one global location are exempt (:func:`_identical_values`); a reduction into global
memory that every block repeats races too (:func:`_repeated_by_every_block`).
"""

from __future__ import annotations

import islpy as isl

from ..ir.stmt import BLOCK_TAGS, THREAD_TAGS
from . import explain as ex
from .algorithm import union_of
from .blamed_call import call_site, call_text
from .scheduled import TAGS, Instances, ScheduledProgram
from .violation import Violation


def race_violations(s, prog: ScheduledProgram) -> list:
    """Conflicting accesses to a shared or global location by different threads of a
    block with no barrier between them, or by different blocks of one kernel."""
    for k in range(len(prog.kernels)):
        stmts = [st for st in prog.statements if st.kernel == k]
        barriers = [b for b in prog.barriers if b.kernel == k]
        last_barrier = None
        for tensor, store in prog.storage.items():
            if store.scope == "local":
                continue
            writes = [st for st in stmts if st.stage.tensor is tensor]
            if not writes:
                continue
            reads = [(st, m) for st in stmts for t, m in st.reads if t is tensor]
            w_union = union_of(st.write for st in writes)
            conflicts = w_union.apply_range(w_union.union(union_of(m for _, m in reads)).reverse())
            involved = list({id(st): st for st in writes + [st for st, _ in reads]}.values())
            blocks = union_of(_coordinates(st, BLOCK_TAGS, prog.launch[k]) for st in involved)
            threads = union_of(_coordinates(st, THREAD_TAGS, prog.launch[k]) for st in involved)
            same_block = blocks.apply_range(blocks.reverse())
            same_thread = threads.apply_range(threads.reverse())
            if store.scope == "global":
                conflicts = conflicts.subtract(_identical_values(writes, reads, prog.launch[k]))
            if store.scope == "shared":
                # one buffer per block: the location names the block (an instance that every
                # block runs alike writes each block's copy from within that block)
                cross = conflicts.subtract(same_thread)
            else:
                cross_block = conflicts.subtract(same_block)
                if not cross_block.is_empty():
                    return [_race_violation(s, prog, tensor, cross_block, "block")]
                repeated = _repeated_by_every_block(s, prog, tensor, writes, prog.launch[k])
                if repeated:
                    return [repeated]
                cross = conflicts.intersect(same_block).subtract(same_thread)
            if cross.is_empty():
                continue
            if barriers:
                if last_barrier is None:
                    last_barrier = _last_barrier(stmts, barriers)
                cross = cross.subtract(_separated(cross, involved, last_barrier))
            if not cross.is_empty():
                return [_race_violation(s, prog, tensor, cross, "thread")]
    return []


def _repeated_by_every_block(s, prog, tensor, writes, launch: dict):
    """A reduction into a global tensor that no loop bound to some block index encloses,
    in a grid of several blocks along it: every block runs the same read-modify-writes
    of the same locations at once, and they lose each other's updates. (Threads of a
    block do not: lowering leaves such a store to a single thread.) The instances carry
    coordinate -1 there, which the pairwise conflicts cannot tell apart."""
    for w in sorted(writes, key=lambda st: st.kind != "update"):
        if w.kind == "compute":
            continue
        coords = ex.point(w.coords.range().lexmin())
        tags = [t for n, t in enumerate(TAGS) if t in BLOCK_TAGS and coords[n] == -1 and launch[t] > 1]
        if not tags:
            continue
        first = w.domain.lexmin()
        where = f"global {tensor.name}{ex.location(prog.storage[tensor], ex.point(first.apply(w.write)))}"
        blocks = 1
        for t in tags:
            blocks *= launch[t]
        ce = (f"{ex.instance(w, ex.point(first), _verb(w, tensor))} {where} in every block: no loop bound to "
              f"{' or '.join(tags)} encloses it, so all {blocks} blocks run this read-modify-write of one "
              f"location at once and lose each other's updates")
        words = ("a reduction into global memory must be run by one block per element: blocks of one kernel "
                 "never wait for each other")
        return Violation("race", w.stage, None, call_text(s, w.stage), call_site(s, w.stage), w.stage.name,
                         w.stage.name, tensor.name, words, f"{ex.relation(w.domain)}, in every block", ce)
    return None


def _identical_values(writes, reads, launch: dict) -> isl.UnionMap:
    """The conflicting pairs ``w -> a`` on a global tensor that cannot change a result.

    A global location holds one element of the tensor, and an elementwise (not
    reduction) statement only ever writes the algorithm's value of that element there
    (the flow check sees to its inputs): two such writes from different threads or
    blocks store the same bits, and a read is safe from them when its own thread
    (or every thread, the reader's included) wrote the location before it. Lowering
    relies on this on purpose: a store that does not depend on a loop bound to
    threads is run by every thread (``guard_bound_loops``). A reduction's updates are
    read-modify-writes of partial values and are never exempt."""
    computes = [w for w in writes if w.kind == "compute"]
    if not computes:
        return isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    written = union_of(w.write for w in computes)
    same_value = written.apply_range(written.reverse())
    supplied = union_of(_self_supplied(reader, read, computes, launch) for reader, read in reads)
    return same_value.union(written.apply_range(supplied.reverse()))


def _self_supplied(reader: Instances, read: isl.Map, computes, launch: dict) -> isl.Map:
    """The part of ``read`` (instance -> location) whose location the reader's own
    thread wrote earlier, through one of the elementwise statements ``computes``."""
    out = read.subtract(read)
    for w in computes:
        pairs = read.apply_range(w.write.reverse())  # reader -> writer of the same location
        own = _covering(reader, w, launch).intersect(reader.order.lex_gt_map(w.order))
        out = out.union(read.intersect(pairs.intersect(own).apply_range(w.write)))
    return out


def _covering(reader: Instances, writer: Instances, launch: dict) -> isl.Map:
    """``reader -> writer`` pairs where the writer runs in the reader's block and
    thread: for every index the kernel launches more than one of, the writer has the
    reader's coordinate, or -1 (every block or thread runs it)."""
    n = len(TAGS)
    rs, ws = [f"r{d}" for d in range(n)], [f"w{d}" for d in range(n)]
    cons = [f"({w} = -1 or {w} = {r})" for tag, r, w in zip(TAGS, rs, ws) if launch[tag] > 1]
    same = isl.Map(f"{{ [{', '.join(rs)}] -> [{', '.join(ws)}] : {' and '.join(cons) or 'true'} }}")
    return reader.coords.apply_range(same).apply_range(writer.coords.reverse())


def _coordinates(inst: Instances, tags, launch: dict) -> isl.Map:
    """``inst``'s coordinates among ``tags`` (block or thread indices), leaving out the
    indices the kernel launches only one of: an instance that every thread runs alike
    (coordinate -1) and one bound to thread 0 are then the same thread of a one-thread
    block."""
    coords = inst.coords
    for n in reversed(range(len(TAGS))):
        if TAGS[n] not in tags or launch[TAGS[n]] == 1:
            coords = coords.project_out(isl.dim_type.out, n, 1)
    return coords


def _last_barrier(stmts, barriers) -> dict:
    """For every statement: instance -> serial time of the last barrier before it (where
    there is one). All threads of a block pass the same barriers."""
    times = None
    for b in barriers:
        r = b.order.range()
        times = r if times is None else times.union(r)
    times = times.coalesce()
    before = isl.Map.lex_gt(times.get_space()).intersect_range(times)  # t -> barrier time before t
    return {id(st): st.order.apply_range(before).lexmax() for st in stmts}


def _separated(cross: isl.UnionMap, involved, last: dict) -> isl.UnionMap:
    """The pairs ``a -> b`` of ``cross`` with a barrier between them: the last barrier
    before the later of the two comes after the earlier one."""
    sep = isl.UnionMap.empty(cross.get_space())
    for a in involved:
        for b in involved:
            pairs = cross.intersect_domain(isl.UnionSet(a.domain)).intersect_range(isl.UnionSet(b.domain))
            if pairs.is_empty():
                continue
            fwd = a.order.lex_lt_map(last[id(b)])  # a before the last barrier before b
            bwd = last[id(a)].lex_gt_map(b.order)  # b before the last barrier before a
            sep = sep.union(pairs.intersect(isl.UnionMap.from_map(fwd).union(isl.UnionMap.from_map(bwd))))
    return sep


def _race_pair(rel: isl.UnionMap) -> isl.Map:
    """One racing pair, preferring two instances of one statement (two threads updating
    one accumulator) over an initialization or a pair of different statements."""
    maps = rel.get_map_list()
    maps = [maps.get_at(n) for n in range(maps.n_map())]
    maps.sort(key=lambda m: (m.get_tuple_name(isl.dim_type.in_) != m.get_tuple_name(isl.dim_type.out),
                             "_init" in (m.get_tuple_name(isl.dim_type.in_) or "")))
    return maps[0].wrap().lexmin().unwrap()


def _verb(inst: Instances, tensor) -> str:
    if inst.stage.tensor is tensor:
        return "updates" if inst.kind == "update" else "writes"
    return "reads"


def _race_violation(s, prog, tensor, rel: isl.UnionMap, level: str) -> Violation:
    pair = _race_pair(rel)
    a_set, b_set = pair.domain(), pair.range()
    a, b = prog.statement(a_set.get_tuple_name()), prog.statement(b_set.get_tuple_name())
    av, bv = ex.point(a_set), ex.point(b_set)
    ac, bc = ex.coords_of(a, av), ex.coords_of(b, bv)
    tags = BLOCK_TAGS if level == "block" else THREAD_TAGS
    offset = 0 if level == "block" else 3
    diff = [t for n, t in enumerate(tags) if ac[offset + n] != bc[offset + n]]
    tag = diff[0] if diff else tags[0]
    n = TAGS.index(tag)
    loc = ex.point(a_set.apply(a.write))
    store = prog.storage[tensor]
    ce = (f"{ex.instance(a, av, _verb(a, tensor))}, and {ex.instance(b, bv, _verb(b, tensor))}, the same "
          f"location of {store.scope} {tensor.name}{ex.location(store, loc)}, from different "
          f"{level}s ({ex.coord(tag, ac[n])} and {ex.coord(tag, bc[n])})")
    if level == "block":
        words = ("a loop bound to blockIdx must not carry a dependence: blocks of one kernel never wait "
                 "for each other, so no two blocks may touch one location where either writes")
    else:
        words = ("a loop bound to threadIdx must not carry a dependence: two threads of a block that touch "
                 "one location, either writing, need a barrier (syncthreads) between the two accesses; "
                 "the updates of one reduction element must come from one thread")
    if b.kind == "update" and b.stage is a.stage and any(lp.tag == tag for lp in b.own_loops
                                                         if lp.var.kind == "reduce"):
        words += f" (the reduction loop of {b.stage.name} bound to {tag} is run by different {level}s)"
    blame, bound = _blame_race(a, b, tag)
    return Violation("race", blame, bound, call_text(s, blame, bound), call_site(s, blame, bound),
                     b.stage.name, a.stage.name, tensor.name, words, ex.relation(rel, limit=500), ce)


def _blame_race(a: Instances, b: Instances, tag: str):
    """The stage, and the loop if a bind() is to blame, for a race between ``a`` and ``b``."""
    for inst in (a, b):
        for lp in inst.own_loops:
            if lp.tag == tag and lp.var.kind == "reduce":
                return inst.stage, lp.var
    if a.stage is b.stage:
        for lp in reversed(a.loops):
            if lp.tag == tag and lp.stage is a.stage:
                return a.stage, lp.var
    for inst in (b, a):
        if inst.stage.attach.kind == "at" and inst.stage.scope == "shared":
            return inst.stage, None
    for inst in (b, a):
        if inst.stage.attach.kind in ("at", "reverse_at"):
            return inst.stage, None
    for inst in (a, b):
        for lp in inst.loops:
            if lp.tag == tag:
                return lp.stage, lp.var
    return a.stage, None

