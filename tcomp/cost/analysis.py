"""Counting what one kernel of a lowered program does, per thread block.

``analyze_kernel(kernel)`` walks the loop-nest IR of one kernel (what ``tc.lower``
returns) and returns a :class:`KernelCounts`: the work of one block, with no
hardware figure involved. The cost model (``tcomp.cost.model``) divides these by a
target's rates.

How each figure is counted:

- *Executions.* Block loops are the grid; thread loops are the block's threads (a
  statement under a thread loop of extent e runs on the e threads below it, one
  outside every loop bound to ``threadIdx.y`` runs on all of them). Serial loops
  multiply. A loop marked ``unroll``/``vectorize`` is expanded: each of its
  iterations is a separate instruction, except that a load whose index does not
  depend on the unrolled variable is one load (the compiler keeps the value).
- *Loads hoisted out of loops.* A load is repeated for each iteration of the
  innermost serial loop that its index depends on, or that stores to the same
  buffer, or (for shared memory) that holds a barrier; loops inside that one do not
  repeat it. So a shared tile filled inside ``k_o`` is read from global memory once
  per ``k_o`` iteration: each tile reads its own inputs.
- *Bytes at the device-memory interface* (``dram``): for each warp instruction that
  touches a global buffer, the distinct elements of its 32 lanes (a broadcast is one
  element), times the element size of the buffer's dtype. Caches between the SM and
  device memory (L1, L2) are not credited here: this counts the bytes crossing
  between a block's working buffers and device memory. What the counts
  keep for the model's L2 credit is which grid dimensions each tensor's reads depend on,
  and what reads in runs of fewer than 128 contiguous bytes (the block's warps together)
  cost beyond their bytes (:func:`run_efficiency`).
- *L1 / shared-memory wavefronts*: a shared access costs as many cycles as its
  worst bank holds distinct 4-byte words (a bank conflict), except that an access of 8
  or 16 bytes a lane (LDS.64/128, a cp.async copy) is served 128 bytes of lanes at a
  time (each phase's conflicts summed: four for a warp on consecutive 16-byte vectors);
  a global access costs
  one wavefront per distinct 128-byte line its lanes touch (an uncoalesced load of 32
  rows costs 32). Addresses are evaluated for the real lanes of each warp.
- *Instructions*: one per shared/global load or store, one per floating-point
  operation (a multiply feeding an add is one FMA), conversions, and two per serial
  loop iteration. Registers (``local`` buffers) cost no instruction.
- *Latency rounds*: the global round trips one thread waits for in sequence. Loads
  between two barriers are in flight together; a serial loop repeats its body's
  rounds, an unrolled loop does not. A copy into registers that is read only later
  (a double buffer's prefetch) is a prefetch round, a cp.async copy an asynchronous
  round; a ring's copies are issued ``ahead`` k steps before they are read (the
  ``cp.async.wait_group`` of the loop leaves ``ahead - 1`` groups in flight).
- *Chain drains*: the executions of a ``wgmma.wait_group 0`` inside a serial loop,
  where the warpgroup waits for its whole chain of matrix instructions before it goes
  on (``pipeline(stages, reader_lag=0)``: no chain is left running into the next step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..dtypes import FLOAT_TYPES, itemsize
from ..ir.expr import And, Binary, Call, Cast, Compare, Expr, IntImm, Load, Select, Var, WarpShuffle
from ..ir.functions import scalar_function
from ..ir.stmt import (BLOCK_TAGS, THREAD_TAGS, Allocate, AsyncWait, Barrier, BarrierWait, Buffer, For, FragmentLoad,
                       Kernel, RegisterPairLoad, Seq, Specialized, TileCopy,
                       Store, WarpgroupMma, WarpgroupWait, WarpMma)
from ..ir.visitor import free_vars, walk
from ..target.storage import kernel_shared_bytes
from .block_tiles import block_origin

#: registers a thread needs besides its local buffers: indices, pointers, loop counters
BASE_REGISTERS = 14
SECTOR = 32  # bytes
LINE = 128  # bytes
#: runs of contiguous bytes shorter than this (a block's read of a row) cost device memory more
#: than their bytes (``run_efficiency``)
FULL_RUN = 128
BANKS = 32
BANK_WIDTH = 4  # bytes

_UNROLLED = ("unroll", "vectorize")


@dataclass
class TensorTraffic:
    """Bytes of one global tensor that cross the device-memory interface, per block, and
    the grid dimensions (0, 1, 2 for ``blockIdx.x/y/z``) that its reads depend on: blocks
    that differ only in the others read the same elements (the cost model credits the L2
    with those re-reads)."""

    read: float = 0.0
    write: float = 0.0
    read_block_dims: set = field(default_factory=set)
    short_run_read: float = 0.0  # the bytes device memory loses to reads in short runs (run_efficiency)
    #: the blocks' origins of the reads (``block_tiles.block_origin``) by their text; None
    #: once a read's origin could not be evaluated (then ``read_block_dims`` decides)
    read_origins: dict | None = field(default_factory=dict)

    def add_read_origins(self, indices, loops) -> None:
        """Record the blocks' origins of a read at ``indices`` inside ``loops``."""
        for index in indices:
            origin = block_origin(index, loops)
            if origin is None or self.read_origins is None:
                self.read_origins = None
                return
            self.read_origins.setdefault(repr(origin), origin)


@dataclass
class KernelCounts:
    """The work of one thread block of a kernel (see the module docstring)."""

    name: str
    grid: tuple
    block: tuple
    threads_per_block: int
    warps_per_block: int
    flops: float  # per block; 2 per multiply-add
    matrix_flops: float  # the part that 16/8-bit matrix instructions can do
    traffic: dict  # global buffer name -> TensorTraffic (per block)
    dtypes: dict  # global buffer name -> dtype
    smem_bytes: int  # shared memory of one block
    local_registers: int  # registers the thread's local buffers need
    regs_in_flight: int  # registers of the loaded values a thread holds between a load and its store
    warp_instructions: float  # per block
    thread_instructions: float  # per thread (the longest a warp issues)
    l1_wavefronts: float  # per block, shared memory and L1 data stage
    global_load_instructions: float  # warp instructions per block
    global_load_bytes_per_lane: float  # average bytes one lane fetches per global load
    latency_rounds: float  # per thread: round trips it waits for
    prefetch_rounds: float  # per thread: round trips into registers that overlap later work
    barriers: float  # per thread
    has_barrier: bool
    notes: list = field(default_factory=list)
    mma_sync_flops: float = 0.0  # the part of matrix_flops done by warp-level mma.sync
    async_rounds: float = 0.0  # per thread: rounds of cp.async copies (global to shared)
    async_ahead: int = 1  # k steps between a ring's copies and their first reader
    warpgroup_instructions: float = 0.0  # per thread: wgmma instructions its warpgroup issues
    chain_drains: float = 0.0  # per thread: waits for a whole wgmma chain inside a serial loop

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def dram_read_bytes(self) -> float:
        return sum(t.read for t in self.traffic.values())

    @property
    def dram_write_bytes(self) -> float:
        return sum(t.write for t in self.traffic.values())


# ---------------------------------------------------------------------------- helpers


def _compile_int(e: Expr):
    """A Python function of an environment dict evaluating an integer index expression."""
    names: dict = {}

    def emit(x) -> str:
        if isinstance(x, IntImm):
            return str(x.value)
        if isinstance(x, Var):
            if x not in names:
                names[x] = f"v{len(names)}"
            return f"e[{names[x]!r}]"
        if isinstance(x, Binary):
            a, b = emit(x.a), emit(x.b)
            if x.op in ("max", "min"):
                return f"{x.op}({a}, {b})"
            if x.op == "/":
                return f"({a} // {b})"
            return f"({a} {x.op} {b})"
        if isinstance(x, Compare):
            return f"({emit(x.a)} {x.op} {emit(x.b)})"
        if isinstance(x, And):
            return f"({emit(x.a)} and {emit(x.b)})"
        if isinstance(x, Cast):
            return emit(x.value)
        raise ValueError(f"cannot evaluate {x}")

    body = emit(e)
    code = compile(f"lambda e: {body}", "<index>", "eval")
    fn = eval(code, {"max": max, "min": min})
    return fn, dict(names)


class _Evaluator:
    """Evaluates an index expression with Var keys mapped to values (unknown vars: 0)."""

    def __init__(self, e: Expr):
        self.ok = True
        try:
            self.fn, self.names = _compile_int(e)
        except (ValueError, SyntaxError):
            self.ok = False

    def __call__(self, env: dict):
        if not self.ok:
            return None
        values = {name: env.get(var, 0) for var, name in self.names.items()}
        try:
            return self.fn(values)
        except (ZeroDivisionError, TypeError):
            return None


def _loads(e) -> list:
    return [n for n in walk(e) if isinstance(n, Load)]


def _is_float(dtype: str) -> bool:
    return dtype in FLOAT_TYPES


def _arith(e: Expr) -> tuple[float, float]:
    """(instructions, flops) of the arithmetic in a value expression."""
    instr = flops = 0.0
    fused = set()
    for n in walk(e):
        if isinstance(n, Binary) and _is_float(n.dtype):
            flops += 1
            if id(n) in fused:
                continue
            instr += 1
            if n.op in ("+", "-"):
                for child in (n.a, n.b):
                    if isinstance(child, Binary) and child.op == "*" and _is_float(child.dtype):
                        fused.add(id(child))
                        break
        elif isinstance(n, Call):
            instr += scalar_function(n.name).instructions
        elif isinstance(n, WarpShuffle):
            instr += 1  # shfl.sync
        elif isinstance(n, (Compare, Select)) and _is_float(getattr(n.a, "dtype", "")):
            instr += 1
        elif isinstance(n, Cast):
            instr += 1
    return instr, flops


def _narrow_operand(e: Expr) -> bool:
    """An operand that a 16/8-bit matrix instruction could take: a (cast of a) narrow float value."""
    while True:
        if _is_float(e.dtype) and itemsize(e.dtype) <= 2:
            return True
        if not isinstance(e, Cast):
            return False
        e = e.value


def _matrix_flops_of(store: Store) -> float:
    """2 when the store is ``acc = acc + a * b`` with 16/8-bit float a and b, else 0."""
    v = store.value
    if not (isinstance(v, Binary) and v.op == "+"):
        return 0.0
    for acc, prod in ((v.a, v.b), (v.b, v.a)):
        if isinstance(acc, Load) and acc.buffer is store.buffer and isinstance(prod, Binary) and prod.op == "*":
            if _narrow_operand(prod.a) and _narrow_operand(prod.b):
                return 2.0
    return 0.0


# ---------------------------------------------------------------------------- the walk


class _KernelWalk:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.bdim = {tag: d for tag, d in zip(THREAD_TAGS, kernel.block)}
        self.threads = kernel.block[0] * kernel.block[1] * kernel.block[2]
        self.warps = -(-self.threads // 32)
        self.stores_in: dict = {}  # id(For) -> set of buffers stored under it
        self.barrier_in: dict = {}  # id(For) -> bool
        self.flops = 0.0
        self.matrix_flops = 0.0
        self.mma_sync_flops = 0.0
        self.traffic: dict = {}
        self.dtypes: dict = {}
        self.local_regs = 0
        self.warp_instr = 0.0
        self.thread_instr = 0.0
        self.wavefronts = 0.0
        self.gload_instr = 0.0
        self.gload_lane_bytes = 0.0
        self.barriers = 0.0
        self.has_barrier = False
        self.warpgroup_instructions = 0.0
        self.chain_drains = 0.0
        self.async_ahead: int | None = None
        #: the rings TMA copies fill (their reader lags shorten how far ahead the copies run)
        self.tma_rings = {box.buffer for node in walk(kernel.body) if isinstance(node, TileCopy) for box in node.boxes}
        self.notes: list = []
        self._lanes_cache: dict = {}
        self._allocated: set = set()
        self._index_stmt(kernel.body)

    # -------------------------------------------------------------- preliminary facts

    def _index_stmt(self, s) -> tuple[set, bool]:
        if isinstance(s, For):
            bufs, bar = self._index_stmt(s.body)
            self.stores_in[id(s)] = bufs
            self.barrier_in[id(s)] = bar
            return bufs, bar
        if isinstance(s, Seq):
            bufs, bar = set(), False
            for x in s.stmts:
                b, r = self._index_stmt(x)
                bufs |= b
                bar = bar or r
            return bufs, bar
        if isinstance(s, Allocate):
            return self._index_stmt(s.body)
        if isinstance(s, Store):
            return {s.buffer}, False
        if isinstance(s, (WarpMma, WarpgroupMma)):
            return {s.acc}, False
        if isinstance(s, (FragmentLoad, RegisterPairLoad)):
            return {s.dst}, False
        if isinstance(s, Barrier):
            return set(), True
        return set(), False

    # -------------------------------------------------------------- lanes

    def _active_threads(self, loops, predicate) -> list:
        """Per warp, the list of lane environments (thread loop vars -> thread index)."""
        limit = dict(self.bdim)
        tag_vars: dict = {tag: [] for tag in THREAD_TAGS}
        for f in loops:
            if f.kind in THREAD_TAGS:
                limit[f.kind] = min(limit[f.kind], f.extent)
                tag_vars[f.kind].append(f.var)
        key = (tuple(limit[t] for t in THREAD_TAGS), tuple(tuple(id(v) for v in tag_vars[t]) for t in THREAD_TAGS),
               id(predicate))
        if key in self._lanes_cache:
            return self._lanes_cache[key]
        pred = _Evaluator(predicate) if predicate is not None else None
        bx, by = self.bdim["threadIdx.x"], self.bdim["threadIdx.y"]
        warps: dict = {}
        for t in range(self.threads):
            tx, ty, tz = t % bx, (t // bx) % by, t // (bx * by)
            if tx >= limit["threadIdx.x"] or ty >= limit["threadIdx.y"] or tz >= limit["threadIdx.z"]:
                continue
            env = {}
            for tag, val in zip(THREAD_TAGS, (tx, ty, tz)):
                for v in tag_vars[tag]:
                    env[v] = val
            if pred is not None and pred.ok:
                ok = pred(env)
                if ok is not None and not ok:
                    continue
            warps.setdefault(t // 32, []).append(env)
        result = list(warps.values())
        self._lanes_cache[key] = result
        return result

    # -------------------------------------------------------------- counting

    def run(self) -> None:
        self._stmt(self.kernel.body, ())

    def _stmt(self, s, loops) -> None:
        if isinstance(s, For):
            if s.kind == "serial":
                iters = _serial_product(loops) * s.extent * _unrolled_product(loops)
                self.thread_instr += 2 * iters
                self.warp_instr += 2 * iters * self.warps
            self._stmt(s.body, loops + (s,))
        elif isinstance(s, Seq):
            for x in s.stmts:
                self._stmt(x, loops)
        elif isinstance(s, Allocate):
            b = s.buffer
            if b not in self._allocated:  # NOTE: a partitioned loop allocates once per part
                self._allocated.add(b)
                if b.scope == "local":
                    self.local_regs += b.size * max(1, -(-itemsize(b.dtype) // 4))
            self._stmt(s.body, loops)
        elif isinstance(s, Store):
            self._store(s, loops)
        elif isinstance(s, WarpMma):
            self._warp_mma(s, loops)
        elif isinstance(s, WarpgroupMma):
            self._warpgroup_mma(s, loops)
        elif isinstance(s, FragmentLoad):
            self._fragment_load(s, loops)
        elif isinstance(s, RegisterPairLoad):
            self._stmt(_as_copies(s), loops)
        elif isinstance(s, AsyncWait):
            ahead = s.pending + 1
            self.async_ahead = ahead if self.async_ahead is None else min(self.async_ahead, ahead)
        elif isinstance(s, BarrierWait):  # a TMA ring: its copies run ahead by all its slots but the lagging ones
            ahead = s.barriers.size - 1 - max((r.reader_lag for r in self.tma_rings), default=0)
            self.async_ahead = ahead if self.async_ahead is None else min(self.async_ahead, ahead)
        elif isinstance(s, TileCopy):
            self._tile_copy(s, loops)
        elif isinstance(s, Specialized):  # the producer's copies, and the consumers' work
            self._stmt(s.producer, loops)
            self._stmt(s.consumers, loops)
        elif isinstance(s, WarpgroupWait):
            if s.pending == 0 and any(f.kind == "serial" for f in loops):
                self.chain_drains += _serial_product(loops) * _unrolled_product(loops)
        elif isinstance(s, Barrier):
            n = _serial_product(loops) * _unrolled_product(loops)
            self.barriers += n
            self.has_barrier = True
            self.thread_instr += n
            self.warp_instr += n * self.warps

    def _tile_copy(self, s: TileCopy, loops) -> None:
        """TMA copies of a ring slot: one thread announces the bytes and issues a copy per
        box (a few instructions); the copy engine reads each box from device memory once
        for the block and writes it to shared memory (128 bytes a wavefront), with no
        load instruction of the threads."""
        share = _predicate_share(s.predicate, loops)
        execs = _serial_product(loops) * _unrolled_product(loops) * share
        self.thread_instr += execs * (1 + len(s.boxes))
        self.warp_instr += execs * (1 + len(s.boxes))
        for box in s.boxes:
            tensor, tmap = box.tensor_map.tensor, box.tensor_map
            nbytes = tmap.box_rows * tmap.box_cols * itemsize(tensor.dtype)
            self.wavefronts += execs * nbytes / LINE
            t = self.traffic.setdefault(tensor.name, TensorTraffic())
            self.dtypes[tensor.name] = tensor.dtype
            t.read += execs * nbytes
            deps = set().union(*(free_vars(c) for c in box.coords))
            t.read_block_dims |= {BLOCK_TAGS.index(f.kind) for f in loops if f.kind in BLOCK_TAGS and f.var in deps}
            t.add_read_origins(box.coords, loops)

    def _warp_mma(self, s: WarpMma, loops) -> None:
        """One mma.sync per warp: 2 * 16 * 8 * 16 matrix flops; per lane, the instruction,
        and for an operand not loaded by ldmatrix a pack of each of its registers and the
        loads of its halves."""
        warps = self._active_threads(loops, None)
        execs = _serial_product(loops) * _unrolled_product(loops)
        flops = 2.0 * 16 * 8 * 16 * len(warps)
        self.flops += execs * flops
        self.matrix_flops += execs * flops
        self.mma_sync_flops += execs * flops
        element_loaded = (() if s.a_registers else s.a_values) + (() if s.b_registers else s.b_values)
        instr = len(element_loaded) // 2 + 1
        self.thread_instr += execs * instr
        self.warp_instr += execs * instr * len(warps)
        seen = set()
        for value in element_loaded:
            for ld in _loads(value):
                key = (ld.buffer.name, str(ld.index))
                if ld.buffer.scope != "local" and key not in seen:
                    seen.add(key)
                    self._access(ld.buffer, ld.index, loops, warps, is_store=False)

    def _warpgroup_mma(self, s: WarpgroupMma, loops) -> None:
        """One wgmma per warpgroup: 2 * 64 * N * 16 matrix flops; per thread the
        instruction and its two descriptors (about 8 instructions); the instruction reads
        its 64 x 16 A and 16 x N B from shared memory, whole 128-byte blocks, so that each
        128 bytes is one wavefront."""
        threads = sum(len(w) for w in self._active_threads(loops, None))
        groups = threads / 128
        execs = _serial_product(loops) * _unrolled_product(loops)
        flops = 2.0 * 64 * s.width * 16 * groups
        self.flops += execs * flops
        self.matrix_flops += execs * flops
        instr = 8
        self.warpgroup_instructions += execs
        self.thread_instr += execs * instr
        self.warp_instr += execs * instr * 4 * groups
        self.wavefronts += execs * groups * (64 * 16 + 16 * s.width) * itemsize(s.dtype) / 128

    def _fragment_load(self, s: FragmentLoad, loops) -> None:
        """One ldmatrix per warp: ``count`` phases of eight 16-byte rows, each as many
        shared-memory cycles as its rows put distinct words in one bank."""
        warps = self._active_threads(loops, None)
        execs = _serial_product(loops) * _unrolled_product(loops)
        evaluator = _Evaluator(s.src_index)
        width = itemsize(s.src.dtype)
        wavefronts = 0.0
        for lanes in warps:
            starts = [evaluator(env) for env in lanes]
            for m in range(s.count):
                rows = starts[8 * m:8 * m + 8]
                if len(rows) < 8 or any(a is None for a in rows):
                    wavefronts += 1
                    continue
                wavefronts += _bank_wavefronts({a + e for a in rows for e in range(16 // width)}, width)
        self.thread_instr += execs
        self.warp_instr += execs * len(warps)
        self.wavefronts += execs * wavefronts

    def _store(self, s: Store, loops) -> None:
        warps = self._active_threads(loops, s.predicate)
        n_threads = sum(len(w) for w in warps)
        n_warps = len(warps)
        if n_threads == 0:
            return
        share = _predicate_share(s.predicate, loops)
        execs = _serial_product(loops) * _unrolled_product(loops) * share
        instr, flops = _arith(s.value)
        matrix = _matrix_flops_of(s)
        if matrix:
            # a multiply-accumulate of narrow floats: matrix instructions, each doing
            # thousands of flops, instead of a conversion and an FMA per element
            instr = 0.0
        self.flops += execs * flops * n_threads
        self.matrix_flops += execs * matrix * n_threads
        self.thread_instr += execs * instr
        self.warp_instr += execs * instr * n_warps
        # the store itself
        if s.buffer.scope != "local":
            self._access(s.buffer, s.index, loops, warps, is_store=True, share=share,
                         cp_async=s.asynchronous)
        # its loads (value, index and predicate)
        seen = set()
        for e in (s.value, s.index, s.predicate):
            if e is None:
                continue
            for ld in _loads(e):
                if ld.buffer.scope == "local":
                    continue
                key = (ld.buffer.name, str(ld.index))
                if key in seen:  # the same load twice in one statement is one load
                    continue
                seen.add(key)
                self._access(ld.buffer, ld.index, loops, warps, is_store=False, share=share)

    def _access(self, buf: Buffer, index: Expr, loops, warps, is_store: bool, share: float = 1.0,
                cp_async: bool = False) -> None:
        deps = free_vars(index)
        evaluator = _Evaluator(index)
        # an innermost vectorized loop along which the index moves by one element: one
        # 64/128-bit access per thread instead of several
        vec = 1
        if loops and loops[-1].kind == "vectorize" and loops[-1].var in deps:
            lane = loops[-1].var
            a0, a1 = evaluator({lane: 0}), evaluator({lane: 1})
            if a0 is not None and a1 is not None and a1 - a0 == 1:
                vec = max(1, min(loops[-1].extent, 16 // itemsize(buf.dtype)))
        instances = 1
        for f in loops:
            if f.kind in _UNROLLED and (is_store or f.var in deps):
                instances *= f.extent
        instances = instances / vec
        execs = self._repeats(buf, deps, loops, is_store)
        count = execs * instances * share  # per thread
        width = itemsize(buf.dtype)
        vec_offsets = range(vec)
        lane_bytes = width * vec
        per_warp_bytes = 0.0
        block_elements: set | None = set() if buf.scope == "global" and not is_store else None
        per_warp_wavefronts = 0.0
        for lanes in warps:
            base = [evaluator(env) for env in lanes]
            if any(a is None for a in base):  # cannot evaluate: assume distinct, coalesced
                distinct = len(lanes) * vec
                wave = max(1, -(-distinct * width // LINE))
                block_elements = None
            else:
                elements = {a + o for a in base for o in vec_offsets}
                distinct = len(elements)
                if block_elements is not None:
                    block_elements |= elements
                if buf.scope == "shared" and vec * width > BANK_WIDTH:
                    # an access of 8 or 16 bytes a lane (LDS.64/128, a cp.async copy) is served
                    # a 128-byte phase of lanes at a time (16 or 8 lanes), each phase as many
                    # cycles as its worst bank: lanes on consecutive 16-byte vectors take four,
                    # as do lanes that share a vector (a broadcast)
                    group = max(1, LINE // (vec * width))
                    wave = sum(_bank_wavefronts({a + o for a in base[g:g + group] for o in vec_offsets}, width)
                               for g in range(0, len(base), group))
                elif buf.scope == "shared":
                    # a 4-byte word a lane, or narrower elements, the 32 lanes at once
                    per_word = max(1, min(vec, BANK_WIDTH // width))
                    wave = sum(_bank_wavefronts({(a + o) * width // BANK_WIDTH for a in base}, BANK_WIDTH)
                               for o in range(0, vec, per_word)) if per_word > 1 else \
                        sum(_bank_wavefronts({a + o for a in base}, width) for o in vec_offsets)
                else:
                    wave = len({((a + o) * width) // LINE for a in base for o in vec_offsets})
            per_warp_bytes += distinct * width
            per_warp_wavefronts += max(1, wave)
        self.thread_instr += count
        self.warp_instr += count * len(warps)
        self.wavefronts += count * per_warp_wavefronts
        if buf.scope == "global":
            t = self.traffic.setdefault(buf.name, TensorTraffic())
            self.dtypes[buf.name] = buf.dtype
            if is_store:
                t.write += count * per_warp_bytes
            else:
                t.read += count * per_warp_bytes
                # the runs of the block's warps together (a warp's 64 bytes beside the next
                # warp's are one run)
                if block_elements:
                    t.short_run_read += count * short_run_bytes(block_elements, width)
                t.read_block_dims |= {BLOCK_TAGS.index(f.kind) for f in loops if f.kind in BLOCK_TAGS and f.var in deps}
                t.add_read_origins((index,), loops)
                self.gload_instr += count * len(warps)
                self.gload_lane_bytes += count * len(warps) * lane_bytes

    def _repeat_loop(self, buf: Buffer, deps: set, loops):
        """The innermost serial loop that a load of ``buf`` cannot be hoisted out of:
        one whose variable its index uses, that stores to ``buf``, or (for shared
        memory) that holds a barrier. None when it can leave every serial loop."""
        found = None
        for f in loops:
            if f.kind != "serial":
                continue
            if f.var in deps or buf in self.stores_in.get(id(f), ()) or \
                    (buf.scope == "shared" and self.barrier_in.get(id(f), False)):
                found = f
        return found

    def _repeats(self, buf: Buffer, deps: set, loops, is_store: bool) -> float:
        """How many times one thread executes an access: the serial loops down to the
        innermost one that it cannot be hoisted out of."""
        serial = [f for f in loops if f.kind == "serial"]
        if is_store:
            return _product(f.extent for f in serial)
        target = self._repeat_loop(buf, deps, loops)
        if target is None:
            return 1.0
        return _product(f.extent for f in serial[: serial.index(target) + 1])


def run_efficiency(run_bytes: int) -> float:
    """The share of device memory's bandwidth that reads in runs of ``run_bytes`` contiguous
    bytes get: 1 from ``FULL_RUN`` (128) bytes, falling linearly to 0.7 towards none. Fitted
    to the H100 (2026-12-06): one decode row of the down projection read W in 64-byte runs
    of its rows (128 blocks of 32 columns) in 44.0 us, where 512-byte runs took 36.3-37.2
    us for the same bytes (``benchmarks/decode_rows.py``, ``benchmarks/gemv_split.py``):
    0.85; 16 x 48 mma blocks (96-byte runs) took 44.6 us where 16 x 96 blocks took 40.4."""
    return 0.7 + 0.3 * min(run_bytes, FULL_RUN) / FULL_RUN


def short_run_bytes(elements: set, width: int) -> float:
    """What a block's read of ``elements`` (element indices, ``width`` bytes each) costs
    device memory beyond its bytes: each maximal run of consecutive elements at
    :func:`run_efficiency` of its length."""
    ordered = sorted(elements)
    breaks = [0] + [i for i in range(1, len(ordered)) if ordered[i] != ordered[i - 1] + 1] + [len(ordered)]
    runs = [(end - start) * width for start, end in zip(breaks, breaks[1:])]
    return sum(run * (1.0 / run_efficiency(run) - 1.0) for run in runs)


def _predicate_share(predicate, loops, limit: int = 4096) -> float:
    """The share of iterations of the serial, unrolled and block loops for which a store's
    guard holds (``k_o + 1 < n`` of a prefetch skips the last iteration; a ragged edge
    tile skips some rows). Thread variables are taken at 0; their guards are the lanes'
    business (``_active_threads``)."""
    if predicate is None:
        return 1.0
    names = free_vars(predicate)
    loops_in = [f for f in loops if f.var in names and f.kind not in THREAD_TAGS]
    if not loops_in:
        return 1.0
    evaluator = _Evaluator(predicate)
    if not evaluator.ok:
        return 1.0
    total = _product(f.extent for f in loops_in)
    step = max(1, int(round((total / limit) ** (1.0 / len(loops_in)))))
    hits = count = 0
    ranges = [range(0, f.extent, step if f.extent > step else 1) for f in loops_in]
    for values in _grid(ranges):
        ok = evaluator({f.var: v for f, v in zip(loops_in, values)})
        count += 1
        hits += 1 if (ok is None or ok) else 0
    return hits / count if count else 1.0


def _grid(ranges):
    if not ranges:
        yield ()
        return
    for v in ranges[0]:
        for rest in _grid(ranges[1:]):
            yield (v,) + rest


def _product(values) -> float:
    p = 1.0
    for v in values:
        p *= v
    return p


def _serial_product(loops) -> float:
    return _product(f.extent for f in loops if f.kind == "serial")


def _unrolled_product(loops) -> float:
    return _product(f.extent for f in loops if f.kind in _UNROLLED)


def _bank_wavefronts(words_addrs: set, width: int) -> int:
    """Cycles a shared-memory access takes: the most distinct 4-byte words in one bank,
    and at least one cycle per 128 bytes moved."""
    per_bank: dict = {}
    total = 0
    for a in words_addrs:
        for byte in range(a * width, a * width + width, BANK_WIDTH):
            word = byte // BANK_WIDTH
            per_bank.setdefault(word % BANKS, set()).add(word)
        total += width
    worst = max((len(w) for w in per_bank.values()), default=1)
    return max(worst, -(-total // LINE))


# ---------------------------------------------------------------------------- latency rounds


@dataclass
class _Rounds:
    """Global-memory round trips of one execution of a statement, for one thread."""

    sync: float = 0.0  # the thread waits for these before it can go on
    prefetch: float = 0.0  # loads into registers whose values are only used later
    asynchronous: float = 0.0  # cp.async copies into shared memory, waited for later
    in_flight: float = 0.0  # registers of loaded values a thread holds together in the largest round

    def then(self, other: "_Rounds") -> "_Rounds":
        """These rounds, then ``other``'s (one after the other)."""
        return _Rounds(self.sync + other.sync, self.prefetch + other.prefetch,
                       self.asynchronous + other.asynchronous, max(self.in_flight, other.in_flight))

    def overlapped(self, other: "_Rounds") -> "_Rounds":
        """Single round trips issued together: in flight at once."""
        return _Rounds(max(self.sync, other.sync), max(self.prefetch, other.prefetch),
                       max(self.asynchronous, other.asynchronous), self.in_flight + other.in_flight)

    def times(self, n: int) -> "_Rounds":
        return _Rounds(self.sync * n, self.prefetch * n, self.asynchronous * n, self.in_flight)

    def is_loop(self) -> bool:
        return self.sync > 1 or self.prefetch > 1 or self.asynchronous > 1


def _is_prefetch(s: Store) -> bool:
    """``R[..] = G[..]``: a plain copy from global memory into registers (a staged fill);
    the thread does not wait for it until it reads ``R``."""
    return s.buffer.scope == "local" and isinstance(s.value, Load) and s.value.buffer.scope == "global"


class _RoundCounter:
    """The global round trips one thread makes. Loads between two barriers are in flight
    together; a serial loop repeats its body's rounds, an unrolled loop does not; a load
    hoisted out of inner loops (see ``_KernelWalk._repeat_loop``) makes its round once per
    iteration of the loop it repeats with."""

    def __init__(self, walk: _KernelWalk):
        self.walk = walk
        self.hoisted: dict = {}  # id(For) or None -> _Rounds made once per iteration of that loop

    def count(self, body) -> _Rounds:
        r = self._rounds(body, ())
        top = self.hoisted.get(None)
        return r.then(top) if top is not None else r

    def _rounds(self, s, loops) -> _Rounds:
        if isinstance(s, RegisterPairLoad):
            return self._rounds(_as_copies(s), loops)
        if isinstance(s, For):
            inner = loops + (s,)
            r = self._rounds(s.body, inner)
            if s.kind == "serial":
                h = self.hoisted.pop(id(s), None)
                if h is not None:
                    r = r.then(h)
                return r.times(s.extent)
            return r
        if isinstance(s, Allocate):
            return self._rounds(s.body, loops)
        if isinstance(s, Store):
            return self._store(s, loops)
        if isinstance(s, Seq):
            total = _Rounds()
            seg = _Rounds()
            for x in list(s.stmts) + [Barrier()]:
                if isinstance(x, Barrier):
                    total = total.then(seg)
                    seg = _Rounds()
                    continue
                r = self._rounds(x, loops)
                if r.is_loop() or seg.is_loop():
                    seg = seg.then(r)  # a loop of round trips runs after what came before it
                else:
                    seg = seg.overlapped(r)  # single round trips between two barriers overlap
            return total
        if isinstance(s, TileCopy):  # TMA: global to shared, waited for on a barrier later
            return _Rounds(asynchronous=1.0)
        if isinstance(s, Specialized):  # the consumers wait for the producer's copies as for their own
            return self._rounds(s.producer, loops).overlapped(self._rounds(s.consumers, loops))
        return _Rounds()

    def _store(self, s: Store, loops) -> _Rounds:
        serial = [f for f in loops if f.kind == "serial"]
        innermost = serial[-1] if serial else None
        # unrolled loops inside the innermost serial loop: their copies of a load are in flight together
        inner = loops[loops.index(innermost) + 1:] if innermost is not None else loops
        here = 0.0
        for e in (s.value, s.index, s.predicate):
            if e is None:
                continue
            for ld in _loads(e):
                if ld.buffer.scope != "global":
                    continue
                deps = free_vars(ld.index)
                target = self.walk._repeat_loop(ld.buffer, deps, loops)
                registers = _registers_per_value(ld.buffer.dtype)
                if target is innermost:
                    here += registers * _product(f.extent for f in inner if f.kind in _UNROLLED and f.var in deps)
                    continue
                # hoisted: one round per iteration of the loop it repeats with, its
                # unrolled copies in flight together
                copies = registers * _product(f.extent for f in loops if f.kind in _UNROLLED and f.var in deps)
                key = id(target) if target is not None else None
                h = self.hoisted.setdefault(key, _Rounds())
                h.sync = 1.0
                h.in_flight += 0.0 if s.asynchronous else copies
        if not here:
            return _Rounds()
        if s.asynchronous:  # cp.async: global to shared, waited for later, through no register
            return _Rounds(asynchronous=1.0)
        if _is_prefetch(s):
            return _Rounds(prefetch=1.0, in_flight=here)
        return _Rounds(sync=1.0, in_flight=here)


def _registers_per_value(dtype: str) -> float:
    """32-bit registers one loaded value of ``dtype`` takes in flight: a vector load of
    8 bfloat16 fills 4 registers, not 8."""
    return itemsize(dtype) / 4


# ---------------------------------------------------------------------------- entry point


def _as_copies(load: RegisterPairLoad) -> Seq:
    """The two vectorized loads a :class:`RegisterPairLoad` makes, as copies into registers:
    the walks above count them as they count any load."""
    staging = Buffer(f"{load.src.name}_pairs", load.src.dtype, (2 * load.width,), "local")
    copies = []
    for n, start in enumerate((load.low_index, load.high_index)):
        lane = Var(f"{load.src.name}_pair_lane{n}")
        copies.append(For(lane, load.width, "vectorize",
                          Store(staging, Binary("+", IntImm(n * load.width), lane),
                                Load(load.src, Binary("+", start, lane)))))
    return Seq(tuple(copies))


def analyze_kernel(kernel: Kernel) -> KernelCounts:
    """What one block of ``kernel`` does: see the module docstring."""
    w = _KernelWalk(kernel)
    w.run()
    rounds = _RoundCounter(w).count(kernel.body)
    n_gl = w.gload_instr
    order = {b.name: n for n, b in enumerate(kernel.params)}  # the kernel's argument order
    traffic = dict(sorted(w.traffic.items(), key=lambda item: order.get(item[0], len(order))))
    return KernelCounts(
        name=kernel.name,
        grid=tuple(kernel.grid),
        block=tuple(kernel.block),
        threads_per_block=w.threads,
        warps_per_block=w.warps,
        flops=w.flops,
        matrix_flops=w.matrix_flops,
        traffic=traffic,
        dtypes=w.dtypes,
        smem_bytes=kernel_shared_bytes(kernel),  # as the code generator lays it out
        local_registers=w.local_regs,
        regs_in_flight=math.ceil(rounds.in_flight),
        warp_instructions=w.warp_instr,
        thread_instructions=w.thread_instr,
        l1_wavefronts=w.wavefronts,
        global_load_instructions=n_gl,
        global_load_bytes_per_lane=(w.gload_lane_bytes / n_gl) if n_gl else 0.0,
        latency_rounds=rounds.sync,
        prefetch_rounds=rounds.prefetch,
        async_rounds=rounds.asynchronous,
        async_ahead=w.async_ahead or 1,
        warpgroup_instructions=w.warpgroup_instructions,
        chain_drains=w.chain_drains,
        barriers=w.barriers,
        has_barrier=w.has_barrier,
        notes=w.notes,
        mma_sync_flops=w.mma_sync_flops,
    )


__all__ = ["KernelCounts", "TensorTraffic", "analyze_kernel", "BASE_REGISTERS"]
