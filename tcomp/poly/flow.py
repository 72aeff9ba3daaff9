"""Value-based flow: every read sees the value that it sees in the algorithm's order.

For every read of a computed tensor, the last write of its location before it (isl's
dataflow analysis over the scheduled order) must be the write that the algorithm's
own order makes it read: a consumer of a reduction reads its *last* update, or, when
the schedule reorders the reduction's terms, the last of a copy that has added all of
them (:func:`_complete_reduction`). In a thread whose local copy of the reader's
result nothing reads, a wrong read is harmless and not counted (:func:`_read_later`);
a wrong read that a later recomputation overwrites is reported with a note that says
so (:func:`_hidden`).
"""

from __future__ import annotations

import math

import islpy as isl

from ..ir.stmt import THREAD_TAGS
from . import explain as ex
from .algorithm import Algorithm, statement_name, union_of, writes_of
from .blamed_call import call_site, call_text
from .counting import box_set, instance_count, maps_onto_box
from .scheduled import TAGS, Instances, ScheduledProgram, same_context
from .violation import Violation


def flow_violations(s, alg: Algorithm, prog: ScheduledProgram, first_only: bool = False) -> list:
    """Reads whose last preceding write (in the scheduled order) is not the write the
    algorithm makes them read: a partial reduction, a value not yet computed, a value
    overwritten in between, a copy that another thread filled. Each read of each
    statement is checked on its own; at most one violation per read."""
    out = []
    for producer in s.stages:
        if producer.attach.kind == "inline":
            continue
        tensor = producer.tensor
        writers = prog.of_stage(producer)
        if not writers:
            continue
        sources = union_of(w.write for w in writers)
        origins = union_of(w.origin for w in writers)
        alg_writes = writes_of(alg, tensor)
        for x in prog.statements:
            if x.stage is producer:
                continue
            x_alg = alg.statement(x.name)
            earlier_kernels = all(w.kernel < x.kernel for w in writers)
            for n, (t, read) in enumerate(x.reads):
                if t is not tensor:
                    continue
                if earlier_kernels and _written_before(read, writers, prog.storage[tensor]):
                    continue
                info = isl.UnionAccessInfo.from_sink(isl.UnionMap.from_map(x_alg.reads[n][1]))
                info = info.set_must_source(alg_writes).set_schedule_map(alg.order)
                expected_flow = info.compute_flow().get_must_dependence()  # source -> reader
                expected = isl.UnionMap.from_map(x.origin).apply_range(expected_flow.reverse())
                info = isl.UnionAccessInfo.from_sink(isl.UnionMap.from_map(read)).set_must_source(sources)
                flow = info.set_schedule_map(union_of([x.time] + [w.time for w in writers])).compute_flow()
                source = flow.get_must_dependence().reverse()  # reader -> the write it sees
                actual = source.apply_range(origins)
                bad = actual.subtract(expected).domain()
                if producer.op.reduction is not None and not bad.is_empty():
                    bad = bad.subtract(_complete_reduction(alg, prog, producer, x, read, sources, expected))
                bad = bad.union(flow.get_must_no_source().domain())
                if bad.is_empty():
                    continue
                pairs = seen = None
                if prog.storage[tensor].scope != "global":
                    pairs, seen = _bad_pairs(x, read, writers, sources, origins, expected, bad)
                    if prog.storage[tensor].scope == "local" and prog.storage[x.stage.tensor].scope == "local":
                        pairs = _read_later(prog, x, pairs)
                    if pairs.is_empty():
                        continue
                    bad = pairs.unwrap().domain()
                out.append(_flow_violation(s, prog, x, read, producer, ex.only_set(bad), actual, expected,
                                           expected_flow, pairs, seen))
                if first_only:
                    return out
    return out


def _written_before(read: isl.Map, writers, store) -> bool:
    """Does a reader in a later kernel than every write of a tensor read only locations
    that those kernels write? Then it sees their final values: a kernel boundary orders
    all of a kernel's writes before the next kernel, and whether each final value is the
    algorithm's is checked where the producer computes it. (The flow analysis gives the
    same answer; on some tilings it takes minutes inside one isl call.)

    First a cheap proof that one writer writes every location of the tensor
    (:func:`~tcomp.poly.counting.maps_onto_box`); else the subtraction of the written locations, which is
    exact but slow where the writes' indices divide fused thread indices (400 s for
    SwiGLU's Z at 1024 x 12288)."""
    locations = read.range()
    if store.scope == "global":
        box, size = box_set(locations.get_tuple_name(), store.tensor.shape), math.prod(store.tensor.shape)
        if locations.is_subset(box) and any(maps_onto_box(w, w.write, box, size) for w in writers):
            return True
    written = union_of(w.write for w in writers).range()
    return isl.UnionSet.from_set(locations).subtract(written).is_empty()


def _complete_reduction(alg: Algorithm, prog: ScheduledProgram, producer, x: Instances, read: isl.Map,
                        sources: isl.UnionMap, expected: isl.UnionMap) -> isl.UnionSet:
    """The instances of reader ``x`` that see a reduction's complete result although its
    last update is not the algorithm's last one (the schedule reassociates it: a split
    with a guarded tail then reordered runs ``k = 0, 3, 1, 2``). Such a read is right
    when, at every location it reads (a reader that every thread runs reads each
    thread's copy), the update it sees belongs to a copy of the element that has run
    every update of it (``k`` over its whole range) and none after the read."""
    update = next((w for w in prog.of_stage(producer) if w.kind == "update"), None)
    if update is None:
        return isl.UnionSet.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    # one sink per (reader, location) pair, at the reader's time
    when = read.domain_map().apply_range(x.time)  # [x -> location] -> time
    writers = union_of(w.time for w in prog.of_stage(producer))
    info = isl.UnionAccessInfo.from_sink(isl.UnionMap.from_map(read.range_map())).set_must_source(sources)
    flow = info.set_schedule_map(writers.union(isl.UnionMap.from_map(when))).compute_flow()
    seen = flow.get_must_dependence().reverse().intersect_range(isl.UnionSet(update.domain))
    element = update.origin.apply_range(alg.statement(update.name).write)  # instance -> C[i, j]
    copy = (update.write.apply_range(update.write.reverse()).intersect(same_context(update))
            .intersect(element.apply_range(element.reverse())))  # the updates of one copy
    peers = seen.apply_range(isl.UnionMap.from_map(copy))  # pair -> every update of that copy
    late = peers.intersect(isl.UnionMap.from_map(when.lex_lt_map(update.time))).domain()
    alg_update = alg.statement(update.name)
    needed = isl.UnionMap.from_map(read.domain_map()).apply_range(expected).apply_range(
        isl.UnionMap.from_map(alg_update.write.apply_range(alg_update.write.reverse())))  # pair -> all terms
    missing = needed.subtract(peers.apply_range(isl.UnionMap.from_map(update.origin))).domain()
    complete = seen.domain().subtract(late).subtract(missing)
    incomplete = isl.UnionSet(read.wrap()).subtract(complete).unwrap().domain()
    return isl.UnionSet(x.domain).subtract(incomplete)


def _bad_pairs(x: Instances, read: isl.Map, writers, sources, origins, expected, bad) -> tuple:
    """``(wrong, seen)``: the wrong reads of the ``bad`` instances of ``x`` from a shared or
    local buffer, as ``[instance -> location]`` pairs (a reader that no loop bound to
    threads encloses reads every thread's copy, and may be wrong in some copies only), and
    ``{ pair -> the origin of the write it sees }``."""
    pairs = read.intersect_domain(ex.only_set(bad))
    when = pairs.domain_map().apply_range(x.time)  # [x -> location] -> time
    info = isl.UnionAccessInfo.from_sink(isl.UnionMap.from_map(pairs.range_map())).set_must_source(sources)
    schedule = union_of(w.time for w in writers).union(isl.UnionMap.from_map(when))
    flow = info.set_schedule_map(schedule).compute_flow()
    seen = flow.get_must_dependence().reverse().apply_range(origins)  # pair -> the origin it sees
    wanted = isl.UnionMap.from_map(pairs.domain_map()).apply_range(expected)
    wrong = seen.subtract(wanted).domain().union(flow.get_must_no_source().domain())
    return (ex.only_set(wrong) if not wrong.is_empty() else isl.Set.empty(pairs.wrap().get_space())), seen


def _read_later(prog, x: Instances, pairs: isl.Set) -> isl.Set:
    """Those of ``pairs`` (wrong reads of local memory by ``x``, whose own result is
    local too) made in a thread whose copy of the element ``x`` computes there is read
    by some stage. A stage that every thread runs (no loop bound to threads encloses
    it) computes all of its elements in every thread, each from that thread's copy of
    its inputs; where a thread filled only part of that copy, the elements computed from
    the rest are garbage, harmless when no reader in that thread ever reads them."""
    if pairs.is_empty():
        return pairs
    tensor = x.stage.tensor
    reads = [r for st in prog.statements if st.stage is not x.stage for t, r in st.reads if t is tensor]
    if not reads:
        return isl.Set.empty(pairs.get_space())
    wrong = pairs.unwrap()  # x -> location of the input
    thread_of_input = _copy_map(wrong.range(), len(TAGS))
    thread_of_result = _copy_map(x.write.range(), len(TAGS))
    read_results = isl.UnionMap.from_map(x.write).intersect_range(union_of(reads).range())
    live = read_results.apply_range(isl.UnionMap.from_map(thread_of_result))  # x -> thread reading it
    kept = isl.UnionMap.from_map(wrong).intersect(
        live.apply_range(isl.UnionMap.from_map(thread_of_input.reverse())))
    return kept.wrap().extract_set(pairs.get_space()) if not kept.is_empty() else isl.Set.empty(pairs.get_space())


def _copy_map(locations: isl.Set, n: int) -> isl.Map:
    """``{ location -> [its first n coordinates] }``: the block and thread whose copy of a
    local buffer a location is in."""
    name, dims = locations.get_tuple_name(), locations.dim(isl.dim_type.set)
    names = [f"d{d}" for d in range(dims)]
    return isl.Map(f"{{ {name}[{', '.join(names)}] -> [{', '.join(names[:n])}] }}")


def _flow_violation(s, prog, x: Instances, read: isl.Map, producer, bad: isl.Set, actual, expected,
                    expected_flow, pairs: isl.Set | None = None, seen=None) -> Violation:
    """The violation of ``x``'s read of ``producer`` at its first ``bad`` instance; with
    ``pairs`` and ``seen`` (:func:`_bad_pairs`) the counterexample names the copy that
    is wrong."""
    tensor = producer.tensor
    store = prog.storage[tensor]
    x0 = bad.lexmin()
    xv = ex.point(x0)
    consumer_elem = ex.point(x0.apply(x.origin))
    exp_src = isl.UnionSet(x0).apply(expected)
    exp_pt = ex.point(exp_src) if not exp_src.is_empty() else None
    if pairs is None:
        loc = read.intersect_domain(x0).range().lexmin()
    else:
        loc = pairs.unwrap().intersect_domain(x0).range().lexmin()
    elem = exp_pt[:tensor.ndim] if exp_pt else ex.point(loc)[-tensor.ndim:]
    if pairs is None:
        got = isl.UnionSet(x0).apply(actual)
    else:  # what the read sees at that one location
        got = isl.UnionSet(isl.Map.from_domain_and_range(x0, loc).wrap()).apply(seen)
    x_time = x0.apply(x.time)
    later = isl.Map.lex_gt(x_time.get_space()).intersect_range(x_time).domain()
    pending = []
    for w in prog.of_stage(producer):
        if not w.write.range().get_space().is_equal(loc.get_space()):
            continue
        p = w.write.intersect_range(loc).domain().intersect(w.time.intersect_range(later).domain())
        if not p.is_empty():
            pending.append((w, p))
    pending.sort(key=lambda wp: wp[0].kind != "update")
    nsp = len(x.stage.root_axes)
    head = (f"{x.stage.name}[{ex.join(consumer_elem[:nsp])}]{ex.context(x, xv, pending)} reads "
            f"{tensor.name}[{ex.join(elem)}]")
    reduce_names = [ax.name for ax in producer.reduce_axes]
    if got.is_empty():
        if pending and pending[0][0].kernel > x.kernel:
            w = pending[0][0]
            ce = (f"{head}, which {producer.name} computes only later, in kernel "
                  f"k_{prog.kernels[w.kernel].name} (launched after k_{prog.kernels[x.kernel].name})")
        elif pending:
            w, p = pending[0]
            ce = f"{head}, which {producer.name} computes only later{ex.pending_range(w, p, x, xv)}"
        else:
            ce = (f"{head}, but no instance of {producer.name} writes that value where {x.stage.name} "
                  f"reads it ({store.scope} memory{ex.copy_of(ex.point(loc), store.scope, prog.launch[x.kernel])})")
    else:
        src_set = ex.only_set(got)
        src, src_name = ex.point(src_set), src_set.get_tuple_name()
        same_elem = exp_pt is not None and src[:tensor.ndim] == exp_pt[:tensor.ndim]
        if pending and src_name.endswith("_update") and pending[0][0].kind == "update":
            w, p = pending[0]
            ce = f"{head}, which {producer.name} still updates{ex.pending_range(w, p, x, xv)}"
        elif same_elem and src_name.endswith("_update"):
            ce = (f"{head}, but the last write of it there (in {store.scope} memory"
                  f"{ex.copy_of(ex.point(loc), store.scope, prog.launch[x.kernel])}) is {producer.name}'s update "
                  f"{ex.assign(reduce_names, src[tensor.ndim:])}, not its last update "
                  f"{ex.assign(reduce_names, exp_pt[tensor.ndim:])}")
        elif same_elem and src_name.endswith("_init"):
            ce = f"{head}, but finds only {producer.name}'s initial value there"
        else:
            want = statement_name(producer, "update" if producer.op.reduction is not None else "compute")
            ce = (f"{head} but finds the value of {src_name}[{ex.join(src)}] there, stored in the same "
                  f"place (the algorithm makes it read {want}[{ex.join(exp_pt or [])}])")
    if producer.op.reduction is not None:
        last = ", ".join(f"{ax.name} = {ax.extent - 1}" for ax in producer.op.reduce_axis)
        words = (f"flow (read after write) of the reduction's result: {x.stage.name} must read "
                 f"{tensor.name} after {producer.name}'s last update ({last}), never a partial "
                 f"{producer.op.reduction.combiner}")
    else:
        words = (f"flow (read after write): {x.stage.name} must read {tensor.name} after "
                 f"{producer.name} has computed it, and before anything overwrites it")
    blame, bound = _blame_flow(x.stage, producer)
    return Violation("flow", blame, bound, call_text(s, blame, bound), call_site(s, blame, bound), x.stage.name,
                     producer.name, tensor.name, words, ex.relation(expected_flow), ce, _hidden(x, bad))


def _hidden(x: Instances, bad: isl.Set) -> str:
    """When every wrong instance of ``x`` is later computed again, right, into the same
    place (an epilogue placed inside a reduction loop), the final result is right: say
    so, with the wasted-work factor."""
    good = x.domain.subtract(bad)
    if good.is_empty():
        return ""
    same = x.origin.apply_range(x.origin.reverse()).intersect(x.write.apply_range(x.write.reverse()))
    later = x.time.lex_lt_map(x.time)  # x1 -> x2 with time(x1) < time(x2)
    covered = same.intersect(later).intersect_domain(bad).intersect_range(good).domain()
    if not bad.is_subset(covered):
        return ""
    elements = 1
    for d in x.stage.tensor.shape:
        elements *= d
    count, _ = instance_count(x)
    f = count / elements
    return (f"the final result happens to match: every {x.stage.name} element is computed "
            f"{ex.factor(f)} times (wasted-work factor {ex.factor(f)}x) and the last computation reads "
            f"the final value, but every earlier one computes a different function (of a partial "
            f"result), so the placement is rejected")


def _blame_flow(consumer, producer):
    """The (stage, bound loop or None) whose schedule call a wrong read is blamed on."""
    from ..lower.bounds import storage_scope

    if producer.attach.kind == "at" and storage_scope(producer) == "local":
        for v, tag in producer.bindings.items():
            if v.kind == "reduce":
                return producer, v  # each thread accumulates a part into its own copy
    st, seen = consumer, set()
    while st.attach.kind in ("at", "reverse_at") and st not in seen:
        seen.add(st)
        if st.attach.kind == "reverse_at":
            return st, None
        st = st.attach.stage
    if producer.attach.kind == "at":
        if storage_scope(producer) == "local":
            for v in producer.leaf_vars:
                if producer.bindings.get(v, "") in THREAD_TAGS:
                    return producer, v  # filled cooperatively, but each thread has its own copy
        return producer, None
    if consumer.attach.kind != "root":
        return consumer, None
    return producer, None

