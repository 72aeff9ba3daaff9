"""What the body of one loop of the nest holds, and in which order.

The body of loop ``var`` of ``stage`` is:

- the producers computed there (``compute_at``), each followed by a barrier when its
  storage is shared, since other threads read what it writes;
- the loop's inner part: the next loop of the stage (behind the reduction's
  initialization when that loop is the first reduction loop), or the store;
- the epilogues placed there (``reverse_compute_at``), behind a barrier when threads
  of the block wrote what they read in the inner part;
- a trailing barrier when a shared tile filled there will be refilled (the next
  iteration of this loop, or of a loop around it that runs this one again), so that
  no thread overwrites what another still reads.

A double-buffered producer (``double_buffer()``) changes the order: its tile is
committed from registers at the start of the iteration, between two barriers, and
the next iteration's sources are prefetched into registers before the inner part.
A pipelined one (``pipeline(stages)``) has the same barriers: its tile *lands* where a
double-buffered one is committed (the wait for its asynchronous copies), and the copies
of a later tile are *issued* where a double-buffered one is prefetched
(``tcomp.lower.pipeline``).

:func:`loop_body` gives that order as :class:`BodyStep` records. Lowering
(``nest.py``) turns them into statements and the polyhedral model
(``tcomp.poly.scheduled``) into instances, so that the two describe one program.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.stmt import BLOCK_TAGS, THREAD_TAGS
from ..schedule.stage import Stage


@dataclass(frozen=True)
class BodyStep:
    """One step of a loop body."""

    kind: str  # "fill" | "commit" | "prefetch" | "land" | "issue" | "barrier" | "inner" | "epilogue"
    stage: Stage | None = None  # the producer (fill, commit, prefetch) or epilogue
    why: str = ""  # for a barrier: what it separates
    #: for the two barriers of staged tiles: "refill" (every thread is done with the slot
    #: or tile about to be refilled) or "landed" (every thread's share has landed)
    staging: str = ""


def placements(schedule) -> tuple[dict, dict]:
    """``(attached_at, reverse_at)``: ``(stage, loop var)`` -> the stages computed there
    with ``compute_at``, and those placed there with ``reverse_compute_at``, in the
    schedule's stage order."""
    attached_at: dict = {}
    reverse_at: dict = {}
    for st in schedule.stages:
        key = (st.attach.stage, st.attach.axis)
        if st.attach.kind == "at":
            attached_at.setdefault(key, []).append(st)
        elif st.attach.kind == "reverse_at":
            reverse_at.setdefault(key, []).append(st)
    return attached_at, reverse_at


def loop_body(stage: Stage, var, layouts: dict, attached_at: dict, reverse_at: dict) -> tuple:
    """The steps of the body of ``stage``'s loop ``var``, in order (module docstring).
    ``attached_at`` and ``reverse_at`` are :func:`placements`'s."""
    extent = layouts[stage].extents[var]
    fills, staged, shared = [], [], False
    for p in attached_at.get((stage, var), []):
        if (p.double_buffered or p.pipeline_stages) and extent > 1:
            staged.append(p)
            continue
        fills.append(BodyStep("fill", p))
        if layouts[p].scope == "shared":
            fills.append(BodyStep("barrier", why=f"after {p.name} is computed"))
            shared = True
    post = reverse_at.get((stage, var), [])
    epilogue = [BodyStep("epilogue", c) for c in post]
    inner_loops = stage.leaf_vars[stage.leaf_vars.index(var) + 1:]
    if post and any(stage.bindings.get(v, "").startswith("threadIdx") for v in inner_loops):
        # the epilogue reads what other threads of the block just wrote
        epilogue.insert(0, BodyStep("barrier", why=f"before {', '.join(c.name for c in post)}"))
    inner = BodyStep("inner")
    if staged:
        # one barrier before the commit protects the tile that the last iteration read
        names = ", ".join(p.name for p in staged)
        return (BodyStep("barrier", why=f"before {names} is refilled", staging="refill"),
                *[BodyStep("land" if p.pipeline_stages else "commit", p) for p in staged],
                *[f for f in fills if f.kind != "barrier"],
                BodyStep("barrier", why=f"after {names} is committed", staging="landed"),
                *[BodyStep("issue" if p.pipeline_stages else "prefetch", p) for p in staged],
                inner, *epilogue)
    trailing = []
    if shared and (extent > 1 or runs_again(stage, var, layouts)):
        trailing.append(BodyStep("barrier", why=f"at the end of loop {var.name}"))
    return (*fills, inner, *epilogue, *trailing)


def runs_again(stage: Stage, var, layouts: dict) -> bool:
    """Whether a loop that iterates sequentially (not bound to blocks or threads) encloses
    loop ``var`` of ``stage``, so that the body of ``var`` runs more than once per thread."""
    return bool(enclosing_serial_loops(stage, var, layouts))


def enclosing_serial_loops(stage: Stage, var, layouts: dict) -> list:
    """The loops of more than one iteration, neither bound to blocks or threads, that
    enclose loop ``var`` of ``stage`` (through the stages it is computed at), as
    ``(variable, extent)`` pairs from the outermost in."""
    loops = []
    while True:
        outer = stage.leaf_vars[:stage.leaf_vars.index(var)]
        loops[:0] = [(v, layouts[stage].extents[v]) for v in outer
                     if loop_kind(stage, v) not in BLOCK_TAGS + THREAD_TAGS and layouts[stage].extents[v] > 1]
        if stage.attach.kind not in ("at", "reverse_at"):
            return loops
        stage, var = stage.attach.stage, stage.attach.axis
        if loop_kind(stage, var) not in BLOCK_TAGS + THREAD_TAGS and layouts[stage].extents[var] > 1:
            loops.insert(0, (var, layouts[stage].extents[var]))


def loop_kind(stage: Stage, var) -> str:
    """``blockIdx.x`` ... ``threadIdx.z`` for a bound loop, ``unroll`` / ``vectorize``
    for an annotated one, else ``serial``."""
    return stage.bindings.get(var) or stage.annotations.get(var) or "serial"
