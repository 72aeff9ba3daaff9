"""The protocol of a lowered kernel's TMA rings, checked by running it on the slots.

A TMA ring (``tcomp.lower.tensor_copies``) is correct when every tile is read only after
its bytes have landed and been waited for, and no slot is refilled while a reader of the
tile in it may still run. The copies, waits and releases that make it so are ordinary
statements of the lowered kernel, so a wrong distance, parity, guard or release shows in
them; :func:`ring_protocol_problems` finds it by executing those statements for every
iteration of the ring's loop, on a model of the slots:

- a copy (``TileCopy``) puts the next tile of each ring it fills in its slot (the tiles
  of a ring are numbered in the order they are copied) and arrives once on the slot's
  barrier; the barrier's phase completes when the arrivals its ``BarrierInit`` counts
  have come (a release barrier counts one arrival per consumer warp: one release here);
- a wait (``BarrierWait``) for a phase of parity p returns once the barrier has
  completed a number of phases of the other parity (a fresh barrier: parity 1 at once);
  waiting on a "landed" barrier makes the slots' tiles visible to the waiters;
- a wgmma (``WarpgroupMma``) of iteration ko of the loop must read tile ko of each ring,
  landed and waited for; it belongs to the open chain, which ``WarpgroupWait(d)``
  closes, retiring all chains but the last d;
- a release (``BarrierArrive``) says the consumers are done with a slot: no open or
  unretired chain may still read it.

A warp-specialized kernel's producer runs in parallel with its consumers; the model lets
it run as far ahead as its own waits allow before each step of the consumers, which is
the order that refills slots the earliest: a refill of a slot whose tile some chain may
still read, or that no consumer has read yet, is a problem, as is a wait that nothing will
ever complete (a hang). The kernel's blocks and threads are not told apart (one block's
consumers act together: their barriers and their collective instructions keep them in
step), and expressions of the block's and threads' indices are taken at 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.expr import And, Binary, Compare, Expr, IntImm, Var
from ..ir.stmt import (Allocate, BarrierArrive, BarrierInit, BarrierWait, For, Kernel, Seq, Specialized, TileCopy, WarpgroupMma,
                       WarpgroupWait)
from ..ir.visitor import walk

#: the statements the model executes
_EVENTS = (TileCopy, BarrierWait, BarrierArrive, WarpgroupMma, WarpgroupWait)


class ProtocolError(Exception):
    """A broken ring protocol, with what breaks it."""


def ring_protocol_problems(kernel: Kernel) -> list:
    """What breaks the protocol of ``kernel``'s TMA rings (module docstring), in words;
    empty where nothing does or the kernel has none."""
    copies = [n for n in walk(kernel.body) if isinstance(n, TileCopy)]
    if not copies:
        return []
    rings = tuple(dict.fromkeys(box.buffer for c in copies for box in c.boxes))  # in the order of their copies
    roles = next((n for n in walk(kernel.body) if isinstance(n, Specialized)), None)
    consumers = roles.consumers if roles is not None else kernel.body
    producer = _events(roles.producer, {}, rings) if roles is not None else iter(())
    landed = {box_copy.barriers for box_copy in copies}
    # NOTE: a release barrier counts one arrival per consumer warp; one BarrierArrive here stands for them all
    expected = {n.barriers: n.count for n in walk(kernel.body) if isinstance(n, BarrierInit) and n.barriers in landed}
    try:
        _SlotModel(rings, copies, expected).run(_events(consumers, {}, rings), producer)
    except ProtocolError as err:
        return [f"kernel {kernel.name}: {err}"]
    return []


@dataclass
class _Barrier:
    expected: int  # arrivals a phase
    arrived: int = 0
    phases: int = 0  # completed

    def arrive(self) -> bool:
        self.arrived += 1
        if self.arrived == self.expected:
            self.arrived, self.phases = 0, self.phases + 1
            return True
        return False

    def done(self, parity: int) -> bool:
        """Does a wait for ``parity`` return?"""
        return self.phases % 2 != parity % 2


@dataclass
class _Slot:
    tile: int | None = None
    landed: bool = False  # its tile's phase has completed
    seen: bool = False  # ... and a consumer waited for it
    read: bool = False  # a wgmma read it


@dataclass
class _SlotModel:
    """The slots of a kernel's TMA rings and the barriers they complete on, as the
    protocol's statements change them."""

    rings: tuple
    copies: list
    expected: dict  # a landed barrier -> arrivals a phase (its BarrierInit's count); others: 1
    slots: dict = field(default_factory=dict)  # (ring, slot) -> _Slot
    filled: dict = field(default_factory=dict)  # ring -> tiles copied so far
    barriers: dict = field(default_factory=dict)  # (barrier buffer, slot) -> _Barrier
    chains: list = field(default_factory=list)  # unretired chains: sets of (ring, slot)
    chain: set = field(default_factory=set)  # the open chain's reads

    def __post_init__(self):
        self.arrivals = {}  # a landed barrier -> the rings copying onto it
        for c in self.copies:
            self.arrivals.setdefault(c.barriers, set()).update(box.buffer for box in c.boxes)

    def barrier(self, buffer, slot: int) -> _Barrier:
        key = (buffer, slot)
        if key not in self.barriers:
            self.barriers[key] = _Barrier(self.expected.get(buffer, 1))
        return self.barriers[key]

    def run(self, consumers, producer) -> None:
        producer = _Producer(producer, self)
        for node, env in consumers:
            producer.advance()
            if isinstance(node, BarrierWait) and not self.ready(node, env):
                producer.advance()
                if not self.ready(node, env):
                    raise ProtocolError(f"{_where(env)}: the wait on {node.barriers.name}[{_value(node.slot, env)}] "
                                        "for a phase that no copy or release before it completes never returns")
            self.apply(node, env)
        producer.advance()
        if producer.pending is not None:
            node, env = producer.pending
            raise ProtocolError(f"the producer's wait on {node.barriers.name}[{_value(node.slot, env)}] "
                                f"({_where(env)}) never returns: the consumers release that slot too few times")

    def ready(self, node: BarrierWait, env: dict) -> bool:
        return self.barrier(node.barriers, _value(node.slot, env)).done(_value(node.parity, env))

    def apply(self, node, env: dict) -> None:
        if isinstance(node, TileCopy):
            self.copy(node, env)
        elif isinstance(node, BarrierWait):
            slot = _value(node.slot, env)
            for key, state in self.slots.items():
                if key[1] == slot and state.landed and node.barriers in self.arrivals:
                    state.seen = True
        elif isinstance(node, BarrierArrive):
            self.release(node, env)
        elif isinstance(node, WarpgroupMma):
            self.read(node, env)
        elif isinstance(node, WarpgroupWait):
            if node.commit:
                self.chains.append(self.chain)
                self.chain = set()
            self.chains = self.chains[len(self.chains) - node.pending:] if node.pending else []

    def copy(self, node: TileCopy, env: dict) -> None:
        if node.predicate is not None and not _value(node.predicate, env):
            return
        slot = _value(node.slot, env)
        for ring in dict.fromkeys(box.buffer for box in node.boxes):
            state = self.slots.setdefault((ring, slot), _Slot())
            tile = self.filled.get(ring, 0)
            if state.tile is not None and not state.read:
                raise ProtocolError(f"tile {tile} of {ring.name} is copied into slot {slot} ({_where(env)}) before "
                                    f"any reader has read tile {state.tile} there")
            if any((ring, slot) in chain for chain in self.chains + [self.chain]):
                raise ProtocolError(f"tile {tile} of {ring.name} is copied into slot {slot} ({_where(env)}) while a "
                                    f"wgmma chain that reads tile {state.tile} there may still run")
            self.slots[(ring, slot)] = _Slot(tile)
            self.filled[ring] = tile + 1
        if self.barrier(node.barriers, slot).arrive():
            for (ring, at), state in self.slots.items():
                if at == slot and ring in self.arrivals.get(node.barriers, ()):
                    state.landed = True

    def read(self, node: WarpgroupMma, env: dict) -> None:
        iteration = env.get(_RING_LOOP)
        for buffer, start in ((node.a, node.a_start), (node.b, node.b_start)):
            if buffer not in self.rings:
                continue
            slot = _value(start, env) // (buffer.size // buffer.shape[0])
            state = self.slots.get((buffer, slot), _Slot())
            if state.tile != iteration or not state.seen:
                held = "nothing" if state.tile is None else f"tile {state.tile}"
                what = "" if state.tile != iteration else ", before a wait for its copy"
                raise ProtocolError(f"{_where(env)} reads slot {slot} of {buffer.name}, which holds {held}{what}, for "
                                    f"tile {iteration}")
            state.read = True
            self.chain.add((buffer, slot))

    def release(self, node: BarrierArrive, env: dict) -> None:
        if node.predicate is not None and not _value(node.predicate, env):
            return
        slot = _value(node.slot, env)
        for ring in self.rings:
            if any((ring, slot) in chain for chain in self.chains + [self.chain]):
                raise ProtocolError(f"{_where(env)} releases slot {slot} of {ring.name} while a wgmma chain reading "
                                    "it may still run")
        self.barrier(node.barriers, slot).arrive()


class _Producer:
    """A warp-specialized producer's events, run as far as its waits allow."""

    def __init__(self, events, ring: _SlotModel):
        self.events, self.ring = events, ring
        self.pending = None  # the wait it is blocked on

    def advance(self) -> None:
        while True:
            if self.pending is None:
                self.pending = next(self.events, None)
                if self.pending is None:
                    return
            node, env = self.pending
            if isinstance(node, BarrierWait) and not self.ring.ready(node, env):
                return
            self.pending = None
            self.ring.apply(node, env)


#: the environment key of the ring's iteration: the iterations of the innermost serial
#: loops around the events so far, counted across the runs of the loops around them
_RING_LOOP = "iteration"


def _events(stmt, env: dict, rings: tuple, counter: list | None = None):
    """``(node, environment)`` of the protocol's statements under ``stmt`` in the order
    one thread runs them: serial and unrolled loops that hold some run each iteration
    (each iteration of an innermost serial one is the ring's next iteration); other loops
    once. ``counter``: the ring's iterations so far (one list for the whole walk)."""
    counter = [0] if counter is None else counter
    if isinstance(stmt, _EVENTS):
        if not isinstance(stmt, WarpgroupMma) or stmt.a in rings or stmt.b in rings:
            yield stmt, env
    elif isinstance(stmt, Seq):
        for child in stmt.stmts:
            yield from _events(child, env, rings, counter)
    elif isinstance(stmt, Allocate):
        yield from _events(stmt.body, env, rings, counter)
    elif isinstance(stmt, For):
        if not any(isinstance(n, _EVENTS) for n in walk(stmt.body)):
            return
        if stmt.kind not in ("serial", "unroll"):
            yield from _events(stmt.body, env, rings, counter)
            return
        innermost = stmt.kind == "serial" and not any(
            isinstance(n, For) and n.kind == "serial" and any(isinstance(m, _EVENTS) for m in walk(n.body))
            for n in walk(stmt.body))
        for value in range(stmt.extent):
            inner = {**env, stmt.var: value}
            if innermost:
                inner[_RING_LOOP] = counter[0]
                counter[0] += 1
            yield from _events(stmt.body, inner, rings, counter)


def _where(env: dict) -> str:
    return f"iteration {env[_RING_LOOP]}" if _RING_LOOP in env else "before the loop"


def _value(e: Expr, env: dict) -> int:
    """``e`` at the loop values of ``env`` (other variables: 0)."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env.get(e, 0)
    if isinstance(e, And):
        return int(bool(_value(e.a, env)) and bool(_value(e.b, env)))
    if isinstance(e, Compare):
        return int(_COMPARISONS[e.op](_value(e.a, env), _value(e.b, env)))
    if isinstance(e, Binary) and e.op in _ARITHMETIC:
        return _ARITHMETIC[e.op](_value(e.a, env), _value(e.b, env))
    raise ProtocolError(f"cannot evaluate {e} in the ring protocol's model")


_ARITHMETIC = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
               "//": lambda a, b: a // b, "%": lambda a, b: a % b, "min": min, "max": max, "^": lambda a, b: a ^ b}
_COMPARISONS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
                ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


__all__ = ["ProtocolError", "ring_protocol_problems"]
