"""Legality: does the scheduled program compute the algorithm?

A schedule is legal when every read sees the value that it sees in the original
order (value-based flow: a consumer of a reduction reads its *last* update, or, when
the schedule reorders the reduction's terms, the last of a copy that has added all of
them), no two instances that touch the same shared or global location, one of them
writing, run in different threads of a block without a barrier between them, or in
different blocks of one kernel at all (loops bound to blocks and threads carry no
dependence; elementwise stores of one value to one global location are exempt, see
:func:`_identical_values`), every element of an output is computed, and no access
leaves its tensor. Five checks, each a pure function returning :class:`Violation`
records:

- :func:`placement_violations`: a producer computed at a loop (``compute_at``) gets
  storage local to that loop; every reader must be inside that loop;
- :func:`flow_violations`: for every read of a computed tensor, the last write of its
  location before it (isl's dataflow analysis over the scheduled order) must be the
  write that the algorithm's own order makes it read (in a thread whose local copy of
  the reader's result nothing reads, a wrong read is harmless and not counted);
- :func:`race_violations`: conflicting accesses from different threads or blocks;
- :func:`coverage_violations`: output elements (or reduction terms) nothing computes;
- :func:`~tcomp.poly.access_bounds.bounds_violations`: reads and writes outside a
  tensor's shape, at the instances the schedule executes.

:func:`reassociations` and :func:`recomputation` describe what a legal schedule
changes: the order in which a reduction accumulates, and how often a producer placed
at a consumer's loop computes each element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import islpy as isl

from ..ir.stmt import BLOCK_TAGS, THREAD_TAGS
from ..ir.visitor import walk
from ..lang.tensor import TensorRead
from . import explain as ex
from .access_bounds import bounds_violations
from .algorithm import Algorithm, algorithm, statement_name, value_flow, writes_of
from .scheduled import TAGS, Instances, ScheduledProgram, scheduled_program

#: above this many points a count is estimated from the loop extents instead of counted
COUNT_LIMIT = 2_000_000


# ---------------------------------------------------------------------- records


@dataclass(frozen=True)
class Violation:
    """One way in which a schedule computes something other than its algorithm."""

    kind: str  # "placement" | "flow" | "race" | "coverage" | "bounds"
    stage: object  # the stage whose schedule call is to blame
    bound: object  # the loop whose bind() is to blame, or None (then: the stage's placement)
    call: str  # that call, as source text
    site: object  # its CallSite (file:line), or None
    consumer: str  # the stages and the tensor involved
    producer: str
    tensor: str
    dependence: str  # the violated dependence, in words
    relation: str  # ... and as an isl relation
    counterexample: str  # one concrete violating pair of iterations
    hidden: str = ""  # why the final result happens to be right anyway ("" if it is not)
    alternatives: tuple = ()  # schedule calls that would be legal instead
    alternatives_of: str = ""  # what the alternatives replace

    def message(self) -> str:
        where = f" at {self.site}" if self.site is not None else ""
        if self.kind == "coverage":
            stages = f"  stage: {self.producer}, tensor {self.tensor} (an output)"
        elif self.kind == "bounds":
            stages = f"  stage: {self.producer}, tensor {self.tensor}"
        elif self.kind == "race" and self.consumer == self.producer:
            stages = f"  stages: {self.producer} (two of its instances), tensor {self.tensor}"
        elif self.kind == "race":
            stages = f"  stages: {self.producer} and {self.consumer}, tensor {self.tensor}"
        else:
            stages = f"  stages: {self.consumer} reads tensor {self.tensor}, computed by {self.producer}"
        lines = [f"{self.call}{where} is illegal: {self.headline()}", stages,
                 f"  violated {'bound' if self.kind == 'bounds' else 'dependence'}: {self.dependence}",
                 f"    as an isl relation: {self.relation}",
                 f"  counterexample: {self.counterexample}"]
        if self.hidden:
            lines.append(f"  note: {self.hidden}")
        if self.alternatives_of:
            alts = "; ".join(self.alternatives) if self.alternatives else "none found"
            lines.append(f"  legal alternatives{self.alternatives_of}: {alts}")
        return "\n".join(lines)

    def headline(self) -> str:
        if self.kind == "placement":
            return f"{self.consumer} reads {self.tensor} outside the loop where {self.producer} is computed"
        if self.kind == "race":
            return f"a data race on {self.tensor}"
        if self.kind == "coverage":
            return f"{self.producer} leaves part of the output {self.tensor} uncomputed"
        if self.kind == "bounds":
            return f"{self.producer} accesses {self.tensor} outside its shape"
        return f"{self.consumer} reads {self.tensor} before {self.producer} has finished computing it"


@dataclass(frozen=True)
class Reassociation:
    """A reduction that the schedule accumulates in another order than the algorithm."""

    stage: str
    combiner: str
    exact: bool  # max/min: the order does not change the result
    description: str

    def __str__(self) -> str:
        return self.description


@dataclass(frozen=True)
class Recomputation:
    """How many times a stage placed at another stage's loop computes each element."""

    stage: str
    at: str  # "Q.j_o"
    factor: float
    exact: bool

    def __str__(self) -> str:
        approx = "" if self.exact else "about "
        return (f"{self.stage} computed at {self.at}: each element computed {approx}"
                f"{ex.factor(self.factor)} time{'' if self.factor == 1 else 's'}")


@dataclass(frozen=True)
class Legality:
    """What :func:`legality` found."""

    violations: tuple
    reassociations: tuple = ()
    recomputation: tuple = ()
    program: ScheduledProgram | None = field(default=None, repr=False, compare=False)

    @property
    def legal(self) -> bool:
        return not self.violations


# ---------------------------------------------------------------------- entry points


def legality(s, alternatives: bool = True, describe: bool = True) -> Legality:
    """Check schedule ``s`` against its algorithm.

    Returns the most telling violation (a misplaced producer; else a read of a wrong
    value that reaches the result; else a race; else a wrong read that a later
    recomputation hides), with the legal alternatives of the blamed call when
    ``alternatives``; for a legal schedule, its reassociations and recomputation
    factors when ``describe``. The ScheduleErrors of placements that cannot be
    lowered at all propagate.
    """
    _check_attach_loops(s)
    alg = algorithm(s)
    found = placement_violations(s, alg)
    prog = None
    if not found:
        prog = scheduled_program(s)
        flows = flow_violations(s, alg, prog, first_only=not alternatives)
        visible = [v for v in flows if not v.hidden]
        found = (bounds_violations(s, alg, prog) or visible or race_violations(s, prog)
                 or coverage_violations(s, alg, prog) or flows)
    if found:
        v = found[0]
        return Legality((_with_alternatives(s, v) if alternatives else v,), program=prog)
    if not describe:
        return Legality((), program=prog)
    return Legality((), reassociations(s, prog), recomputation(s, prog), prog)


def is_legal(s) -> bool:
    """True when ``s`` has no violation and can be lowered."""
    from ..errors import TcompError

    try:
        return legality(s, alternatives=False, describe=False).legal
    except TcompError:
        return False


# ---------------------------------------------------------------------- placements


def _check_attach_loops(s) -> None:
    """A stage placed at a loop that a later split or fuse replaced has no place at all."""
    from ..errors import ScheduleError

    for st in s.stages:
        att = st.attach
        if att.kind in ("at", "reverse_at") and att.axis not in att.stage.leaf_vars:
            verb = "computed at" if att.kind == "at" else "placed (reverse_compute_at) at"
            where = f" at {att.site}" if att.site is not None else ""
            raise ScheduleError(
                f"{st.name} is {verb} {att.stage.name}.{att.axis.name}{where}, but that loop was split or "
                f"fused afterwards; {att.stage.name}'s loops now are "
                f"{', '.join(v.name for v in att.stage.leaf_vars)}: place {st.name} at one of them")


def readers(s, stage) -> list:
    """The stages (not inlined) whose expression, inlined stages substituted, reads ``stage``."""
    from ..lower.inline import expand_inline

    out = []
    for st in s.stages:
        if st is stage or st.attach.kind == "inline":
            continue
        body = expand_inline(st.op.body, s)
        if any(isinstance(n, TensorRead) and n.tensor is stage.tensor for n in walk(body)):
            out.append(st)
    return out


def _inside(reader, target, axis) -> bool:
    """Whether ``reader`` runs inside loop ``axis`` of ``target`` (or is ``target``)."""
    st, seen = reader, set()
    while st is not target:
        if st.attach.kind not in ("at", "reverse_at") or st in seen:
            return False
        seen.add(st)
        parent = st.attach.stage
        if parent is target:
            return target.leaf_vars.index(st.attach.axis) >= target.leaf_vars.index(axis)
        st = parent
    return True


def placement_violations(s, alg: Algorithm) -> list:
    """Producers placed with ``compute_at`` at a loop that does not enclose all their
    readers (the producer's storage lives in that loop)."""
    out = []
    for p in s.stages:
        if p.attach.kind != "at" or p.attach.stage.attach.kind == "inline":
            continue
        target, axis = p.attach.stage, p.attach.axis
        if axis not in target.leaf_vars:
            continue
        for r in readers(s, p):
            if _inside(r, target, axis):
                continue
            stmt = next(st for st in alg.of_stage(r) if st.kind != "init")
            read = next(m for t, m in stmt.reads if t is p.tensor)
            pair = read.lexmin()
            inst, elem = ex.point(pair.domain()), ex.point(pair.range())
            ce = (f"{r.name}[{ex.join(inst[:len(r.root_axes)])}] reads {p.name}[{ex.join(elem)}], but "
                  f"{p.name} is only computed inside loop {axis.name} of {target.name}, into storage "
                  f"that lives in that loop, and {r.name} {_where(r)}")
            flow = value_flow(alg, p.tensor).intersect_range(isl.UnionSet(stmt.domain))
            out.append(Violation(
                "placement", p, None, _call_text(s, p), _site(s, p), r.name, p.name, p.tensor.name,
                dependence=(f"flow (read after write): every {r.name} that reads {p.name} must run after "
                            f"{p.name} has computed that element, inside the loop that holds it"),
                relation=ex.relation(flow), counterexample=ce))
    return out


def _where(stage) -> str:
    if stage.attach.kind == "root":
        return f"is computed in its own kernel k_{stage.name}, outside that loop"
    verb = "computed at" if stage.attach.kind == "at" else "placed at"
    return f"is {verb} {stage.attach.stage.name}.{stage.attach.axis.name}, outside that loop"


# ---------------------------------------------------------------------- flow


def _union(items) -> isl.UnionMap:
    out = isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    for m in items:
        out = out.union(m if isinstance(m, isl.UnionMap) else isl.UnionMap.from_map(m))
    return out


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
        sources = _union(w.write for w in writers)
        origins = _union(w.origin for w in writers)
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
                flow = info.set_schedule_map(_union([x.time] + [w.time for w in writers])).compute_flow()
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
    (:func:`_maps_onto_box`); else the subtraction of the written locations, which is
    exact but slow where the writes' indices divide fused thread indices (400 s for
    SwiGLU's Z at 1024 x 12288)."""
    locations = read.range()
    if store.scope == "global":
        box, size = _box(locations.get_tuple_name(), store.tensor.shape), math.prod(store.tensor.shape)
        if locations.is_subset(box) and any(_maps_onto_box(w, w.write, box, size) for w in writers):
            return True
    written = _union(w.write for w in writers).range()
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
    writers = _union(w.time for w in prog.of_stage(producer))
    info = isl.UnionAccessInfo.from_sink(isl.UnionMap.from_map(read.range_map())).set_must_source(sources)
    flow = info.set_schedule_map(writers.union(isl.UnionMap.from_map(when))).compute_flow()
    seen = flow.get_must_dependence().reverse().intersect_range(isl.UnionSet(update.domain))
    element = update.origin.apply_range(alg.statement(update.name).write)  # instance -> C[i, j]
    copy = (update.write.apply_range(update.write.reverse()).intersect(_same_context(update))
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
    schedule = _union(w.time for w in writers).union(isl.UnionMap.from_map(when))
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
    read_results = isl.UnionMap.from_map(x.write).intersect_range(_union(reads).range())
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
    return Violation("flow", blame, bound, _call_text(s, blame, bound), _site(s, blame, bound), x.stage.name,
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
    f = _count(x) / elements
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


# ---------------------------------------------------------------------- races


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
            w_union = _union(st.write for st in writes)
            conflicts = w_union.apply_range(w_union.union(_union(m for _, m in reads)).reverse())
            involved = list({id(st): st for st in writes + [st for st, _ in reads]}.values())
            blocks = _union(_coordinates(st, BLOCK_TAGS, prog.launch[k]) for st in involved)
            threads = _union(_coordinates(st, THREAD_TAGS, prog.launch[k]) for st in involved)
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
        return Violation("race", w.stage, None, _call_text(s, w.stage), _site(s, w.stage), w.stage.name,
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
    written = _union(w.write for w in computes)
    same_value = written.apply_range(written.reverse())
    supplied = _union(_self_supplied(reader, read, computes, launch) for reader, read in reads)
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
    return Violation("race", blame, bound, _call_text(s, blame, bound), _site(s, blame, bound),
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


# ---------------------------------------------------------------------- coverage


def coverage_violations(s, alg: Algorithm, prog: ScheduledProgram) -> list:
    """Elements of an output that no instance of the scheduled program computes (or
    reduction terms it never adds). An intermediate element that nobody computes but
    somebody reads is a flow violation already; one of an output has no reader."""
    for stage in s.stages:
        if stage.tensor not in s.outputs or stage.attach.kind == "inline":
            continue
        for stmt in alg.of_stage(stage):
            writers = [w for w in prog.of_stage(stage) if w.name == stmt.name]
            if _covered_by_count(stmt, writers):
                continue
            missing = stmt.domain
            for w in writers:
                missing = missing.subtract(w.origin.range())
            if missing.is_empty():
                continue
            point = ex.point(missing.lexmin())
            nsp = len(stage.root_axes)
            what = f"{stage.name}[{ex.join(point[:nsp])}]"
            if stmt.kind == "update":
                what = (f"the term {ex.assign([ax.name for ax in stage.reduce_axes], point[nsp:])} "
                        f"of {what}")
            elif stmt.kind == "init":
                what = f"the initialization of {what}"
            return [Violation(
                "coverage", stage, None, f"the schedule of {stage.name}", stage.attach.site, stage.name,
                stage.name, stage.tensor.name,
                dependence=f"every element of the output {stage.tensor.name} must be computed, every term "
                           f"of a reduction added",
                relation=f"missing: {ex.relation(missing)}",
                counterexample=f"no instance of the scheduled program computes {what}")]
    return []


def _covered_by_count(stmt, writers) -> bool:
    """A cheap proof that ``writers`` compute every instance of ``stmt``: one scheduled
    statement that maps onto its domain (:func:`_maps_onto_box`).
    (The subtraction that proves it otherwise took two seconds on the warptiled nest,
    whose indices are full of divisions.)"""
    if len(writers) != 1:
        return False
    return _maps_onto_box(writers[0], writers[0].origin, stmt.domain, math.prod(ax.extent for ax in stmt.axes))


def _maps_onto_box(w, access: isl.Map, target: isl.Set, size: int) -> bool:
    """Does ``access`` map the instances of ``w`` onto ``target`` (a box of ``size``
    points)? Yes when its instances are the whole box of its loops, as many as
    ``target`` has points, ``access`` is injective on them and its image lies inside
    ``target``: an injective image of ``size`` points inside ``size`` points is all of
    them. No subtraction of a set whose indices divide (a fused thread index) is needed."""
    extents = [loop.extent for loop in w.loops]
    if math.prod(extents) != size:
        return False
    box = _box(w.domain.get_tuple_name(), extents)
    if not box.is_subset(w.domain):  # a guard removes instances: count them no more
        return False
    image = access.intersect_domain(w.domain)
    return image.is_injective() and image.range().is_subset(target)


def _box(name: str, extents) -> isl.Set:
    """``{ name[x0, ...] : 0 <= x_n < extents[n] }``."""
    dims = [f"x{n}" for n in range(len(extents))]
    bounds = " and ".join(f"0 <= {d} < {e}" for d, e in zip(dims, extents)) or "true"
    return isl.Set(f"{{ {name}[{', '.join(dims)}] : {bounds} }}")


# ---------------------------------------------------------------------- reports


def reassociations(s, prog: ScheduledProgram) -> tuple:
    """Reductions whose scheduled order of accumulation differs from the algorithm's:
    two updates of one element (in one copy) in the other order."""
    out = []
    for stage in s.stages:
        red = stage.op.reduction
        if red is None or stage.attach.kind == "inline":
            continue
        if stage.rfactor_parts:
            exact = red.combiner in ("max", "min")
            partial = red.source.tensor.name
            out.append(Reassociation(stage.name, red.combiner, exact, (
                f"{stage.name}: rfactor splits the {red.combiner} into {stage.rfactor_parts} partial results "
                f"({partial}), combined afterwards; "
                + ("exact for max and min: the result is the same" if exact else
                   "a floating-point sum may differ from the algorithm's in the last bits"))))
        tensorized = [(v.name, kind) for v, kind in stage.annotations.items() if kind.startswith("tensorize")]
        if tensorized:
            name, kind = tensorized[0]
            intrinsic = kind.partition(".")[2] or "mma_m16n8k16"
            out.append(Reassociation(stage.name, red.combiner, False, (
                f"{stage.name}: tensorize({name}, {intrinsic!r}) adds each k step's 16 products inside "
                f"one {'wgmma' if kind != 'tensorize' else 'mma.sync'} instruction, in the hardware's order; a "
                f"floating-point sum may differ from the algorithm's in the last bits")))
            continue
        upd = next((st for st in prog.of_stage(stage) if st.kind == "update"), None)
        if upd is None:
            continue
        nsp, nred = len(stage.root_axes), len(stage.reduce_axes)
        el = [f"e{d}" for d in range(nsp)]
        k1 = [f"k{d}" for d in range(nred)]
        k2 = [f"q{d}" for d in range(nred)]
        lex = " or ".join("(" + " and ".join([f"{k1[m]} = {k2[m]}" for m in range(d)] + [f"{k1[d]} < {k2[d]}"])
                          + ")" for d in range(nred))
        name = statement_name(stage, "update")
        before = isl.Map(f"{{ {name}[{', '.join(el + k1)}] -> {name}[{', '.join(el + k2)}] : {lex} }}")
        same_copy = upd.write.apply_range(upd.write.reverse()).intersect(_same_context(upd))
        order = upd.origin.apply_range(before).apply_range(upd.origin.reverse())
        swapped = same_copy.intersect(order).intersect(upd.time.lex_gt_map(upd.time))
        if swapped.is_empty():
            continue
        pair = swapped.lexmin()
        first, second = ex.point(pair.domain().apply(upd.origin)), ex.point(pair.range().apply(upd.origin))
        names = [ax.name for ax in stage.reduce_axes]
        exact = red.combiner in ("max", "min")
        effect = ("exact for max and min: the result is the same" if exact else
                  "a floating-point sum may differ from the algorithm's in the last bits")
        out.append(Reassociation(stage.name, red.combiner, exact, (
            f"{stage.name}: the schedule changes the order in which the {red.combiner} over "
            f"{', '.join(names)} accumulates ({stage.name}[{ex.join(first[:nsp])}] adds "
            f"{ex.assign(names, second[nsp:])} before {ex.assign(names, first[nsp:])}; loops "
            f"{', '.join(v.name for v in stage.leaf_vars)}); {effect}")))
    return tuple(out)


def _same_context(inst: Instances) -> isl.Map:
    """``{ x1 -> x2 }``: instances in one iteration of every loop outside the stage's own
    (one copy of a producer computed at a consumer's loop) and in the same thread."""
    dims = [lp.dim for lp in inst.loops]
    ctx = dims[:len(dims) - inst.own]
    name = inst.domain.get_tuple_name()
    proj = isl.Map(f"{{ {name}[{', '.join(dims)}] -> [{', '.join(ctx)}] }}").intersect_domain(inst.domain)
    return proj.apply_range(proj.reverse()).intersect(inst.coords.apply_range(inst.coords.reverse()))


def recomputation(s, prog: ScheduledProgram) -> tuple:
    """For every stage placed with compute_at: how many times each element is computed
    (a stage in registers inside a thread loop that it does not depend on is computed by
    every one of those threads, for its own copy)."""
    out = []
    for stage in s.stages:
        if stage.attach.kind != "at":
            continue
        main = next((st for st in prog.of_stage(stage) if st.kind in ("init", "compute")), None)
        if main is None:
            continue
        n, exact = _count_exact(main)
        if prog.storage[stage.tensor].scope == "local":
            for lp in main.idle:
                n *= lp.extent
        elements = 1
        for d in stage.tensor.shape:
            elements *= d
        out.append(Recomputation(stage.name, f"{stage.attach.stage.name}.{stage.attach.axis.name}",
                                 n / elements, exact))
    return tuple(out)


def _count(inst: Instances) -> int:
    return _count_exact(inst)[0]


def _count_exact(inst: Instances):
    """How many instances: counted by isl when there are few, else the product of the
    loop extents (exact when no guard cuts partial tiles)."""
    if not inst.guarded:
        return inst.box_size, True
    if inst.box_size <= COUNT_LIMIT:
        return inst.domain.count_val().to_python(), True
    return inst.box_size, False


# ---------------------------------------------------------------------- alternatives


def _with_alternatives(s, v: Violation) -> Violation:
    stage = v.stage
    if stage is None:
        return v
    if v.bound is not None:
        alts, what = _binding_alternatives(s, stage, v.bound)
    elif stage.attach.kind in ("at", "reverse_at"):
        alts, what = _placement_alternatives(s, stage)
    else:
        return v
    return replace(v, alternatives=tuple(alts), alternatives_of=what)


def _placement_alternatives(s, stage):
    from ..schedule.stage import Attach

    old = stage.attach
    candidates = []
    if old.kind == "at":
        for st in [old.stage] + [r for r in readers(s, stage) if r is not old.stage]:
            candidates += [("at", st, v) for v in st.leaf_vars]
        if stage.op.reduction is None:
            candidates.append(("inline", None, None))
    else:
        candidates += [("reverse_at", old.stage, v) for v in old.stage.leaf_vars]
    candidates.append(("root", None, None))
    legal = []
    try:
        for kind, st, v in candidates:
            if kind == old.kind and st is old.stage and v is old.axis:
                continue
            stage.attach = Attach(kind, st, v, old.site)
            if is_legal(s):
                legal.append(_placement_text(stage, kind, st, v))
    finally:
        stage.attach = old
    verb = {"at": "compute_at", "reverse_at": "reverse_compute_at"}[old.kind]
    return legal, f" (instead of this {verb})"


def _placement_text(stage, kind, st, v) -> str:
    if kind == "root":
        return f"s[{stage.name!r}].compute_root()"
    if kind == "inline":
        return f"s[{stage.name!r}].compute_inline()"
    verb = "compute_at" if kind == "at" else "reverse_compute_at"
    return f"s[{stage.name!r}].{verb}(s[{st.name!r}], {v.name})"


def _binding_alternatives(s, stage, var):
    tag = stage.bindings.get(var)
    if tag is None:
        return [], ""
    saved_bindings, saved_scope = dict(stage.bindings), stage.scope
    legal = []
    try:
        stage.bindings = {k: t for k, t in saved_bindings.items() if k is not var}
        if is_legal(s):
            legal.append(f"leave {var.name} unbound (a serial loop)")
        for v in stage.leaf_vars:
            if v is var or v in saved_bindings or v in stage.annotations:
                continue
            stage.bindings = {k: t for k, t in saved_bindings.items() if k is not var}
            stage.bindings[v] = tag
            if is_legal(s):
                legal.append(f"s[{stage.name!r}].bind({v.name}, {tag!r})")
        stage.bindings = saved_bindings
        if stage.attach.kind == "at" and (stage.scope or "local") == "local":
            stage.scope = "shared"
            if is_legal(s):
                legal.append(f"s[{stage.name!r}].set_scope('shared') (one copy that all threads share)")
    finally:
        stage.bindings, stage.scope = saved_bindings, saved_scope
    extra = "; a reduction loop runs in parallel only through an explicit split-K (rfactor)" \
        if var.kind == "reduce" else ""
    return legal, f" (instead of binding {var.name} to {tag}{extra})"


# ---------------------------------------------------------------------- call sites


def _entry(s, stage, bound):
    for entry in reversed(s.trace):
        if entry.target is not stage:
            continue
        if bound is not None and entry.method == "bind" and entry.args and entry.args[0] is bound:
            return entry
        if bound is None and entry.method in ("compute_at", "reverse_compute_at", "compute_root",
                                              "compute_inline"):
            return entry
    return None


def _call_text(s, stage, bound=None) -> str:
    entry = _entry(s, stage, bound)
    if entry is None:
        if bound is not None:
            return f"s[{stage.name!r}].bind({bound.name}, {stage.bindings.get(bound)!r})"
        return f"the placement of {stage.name}"
    args = ", ".join(_arg_text(a) for a in entry.args)
    return f"s[{stage.name!r}].{entry.method}({args})"


def _site(s, stage, bound=None):
    entry = _entry(s, stage, bound)
    if entry is not None:
        return entry.site
    return stage.attach.site


def _arg_text(a) -> str:
    from ..lang.tensor import IterVar

    if isinstance(a, IterVar):
        return a.name
    if hasattr(a, "schedule") and hasattr(a, "name"):
        return f"s[{a.name!r}]"
    if hasattr(a, "name") and hasattr(a, "shape"):
        return a.name
    return repr(a)
