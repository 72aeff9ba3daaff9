"""Instruments for Numba's CUDA simulator that make a wrong schedule show.

The simulator runs the blocks of a launch one after the other and the threads of a
block as Python threads that mostly run one after the other too; uninitialized memory
is whatever numpy left there. A schedule that reads a value before it is written, or
that races between threads or blocks, then often computes the right result anyway.
:func:`simulator_chaos` changes that for the duration of a ``with`` block:

- blocks run, and threads start, in a shuffled order;
- uninitialized local and shared memory holds NaN (or an integer sentinel), and every
  block gets fresh shared memory;
- *isolation*: blocks (threads) see memory as it was when the launch began (at the
  last barrier), plus their own writes, as if all ran at once;
- *preemption*: every thread of every block of a launch takes turns with all the
  others, one running at a time, each preempted after a random number of memory
  accesses (a deterministic, seeded interleaving): a read-modify-write that several
  threads or blocks repeat on one location interleaves with the others' and loses
  updates, which neither the sequential order nor isolation shows.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading

import numpy as np

#: the mean number of memory accesses a thread makes before it is preempted
MEAN_RUN = 5


@contextlib.contextmanager
def simulator_chaos(seed: int | None = None, isolate_blocks: bool = False,
                    isolate_threads: bool = False, preempt: bool = False):
    """Instrument Numba's CUDA simulator for the duration (a no-op on a real GPU).

    - with a ``seed``: blocks run, and the threads of a block start, in a shuffled order
      (the simulator runs them in index order);
    - uninitialized ``cuda.local.array`` / ``cuda.shared.array`` storage holds NaN (an
      integer sentinel for integer arrays), and every block gets fresh shared memory
      (the simulator keeps one per launch);
    - ``isolate_blocks``: every block of a launch sees global memory as it was when the
      launch began (plus its own writes), and the writes of all blocks are merged at the
      end, as if all blocks ran at once;
    - ``isolate_threads``: likewise for the threads of a block between two barriers:
      each thread sees global and shared memory as it was at the last barrier (plus its
      own writes); the writes are merged at the next barrier (the last writer in the
      shuffled order wins a location written by several);
    - ``preempt``: all threads of all blocks of a launch take turns, one running at a
      time, each preempted after a random number (about :data:`MEAN_RUN`) of accesses
      to global or shared memory; the next one is drawn at random (:class:`_Turns`).
      Needs a ``seed``; excludes the isolations.

    A race-free kernel computes the same under all of these. One whose threads or
    blocks read what others write without a barrier in between (which the simulator's
    one-at-a-time order otherwise hides, or shows only by chance) does not; the
    isolation shows it deterministically. Threads or blocks that all repeat one
    read-modify-write (a reduction that no loop bound to them splits) agree with each
    other under isolation; the preemption makes them lose each other's updates.
    """
    if preempt and (isolate_blocks or isolate_threads or seed is None):
        raise ValueError("simulator_chaos: preempt needs a seed and excludes isolate_blocks/isolate_threads")
    from tcomp.codegen import simulator_enabled

    if not simulator_enabled():
        yield
        return
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi as sim_api
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray, FakeWithinKernelCUDAArray

    rng = np.random.default_rng(seed) if seed is not None else None

    class _Numpy:
        """numpy, with a shuffled ``ndindex`` and a poisoned ``empty``."""

        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def ndindex(*shape):
            points = list(np.ndindex(*shape))
            if rng is not None:
                rng.shuffle(points)
            return iter(points)

        @staticmethod
        def empty(shape, dtype=float, *args, **kwargs):
            return np.full(shape, poison_value(np.dtype(dtype)), dtype=dtype)

    orig_run = sim_kernel.BlockManager.run
    orig_shared_array = sim_api.FakeCUDAShared.array  # NOTE: restored on exit; never called through
    launch: dict = {}

    def run_threads_isolated(manager, grid_point, args, arrays):
        """BlockManager.run, with every thread on its own copy of memory between barriers."""
        memory = _ThreadMemory()
        globals_ = {n: memory.add(a) for n, a in enumerate(arrays) if a is not None}
        threads = []
        for block_point in sim_kernel.np.ndindex(*manager._block_dim):
            slot = len(threads)
            targs = list(args)
            for n, index in globals_.items():
                targs[n] = FakeWithinKernelCUDAArray(FakeCUDAArray(memory.copy_for(slot, index)))
            t = sim_kernel.BlockThread(functools.partial(manager._f, *targs), manager, grid_point,
                                       block_point, manager._debug)
            t.tcomp_memory, t.tcomp_slot = memory, slot
            threads.append(t)
        for t in threads:
            t.start()
        live, blocked = set(threads), set()
        while live:
            for t in live:
                if t.syncthreads_blocked:
                    blocked.add(t)
                elif t.exception:
                    for other in threads:
                        other.abort = True
                        other.syncthreads_blocked = False
                        other.syncthreads_event.set()
                    raise t.exception[0].with_traceback(t.exception[1])
            if live == blocked:  # every live thread waits at the barrier: the interval ends
                memory.merge()
                for t in blocked:
                    t.syncthreads_blocked = False
                    t.syncthreads_event.set()
                blocked = set()
            live = {t for t in live if t.is_alive()}
        for t in threads:
            if t.exception:
                raise t.exception[0].with_traceback(t.exception[1])
        memory.merge()

    def run_preempted(manager, grid_point, args):
        """BlockManager.run for one block of a launch: the blocks are collected, and when
        the last one arrives, the threads of all of them run, taking turns."""
        if launch.get("context") is not sim_kernel._kernel_context:  # the first block of a launch
            launch["context"] = sim_kernel._kernel_context
            launch["blocks"] = []
        launch["blocks"].append((manager, grid_point, args))
        if len(launch["blocks"]) == int(np.prod(manager._grid_dim)):
            _run_taking_turns(sim_kernel, launch.pop("blocks"), _Turns(rng))

    def shared_array(self, shape, dtype, alignment=None):
        thread = threading.current_thread()
        memory = getattr(thread, "tcomp_memory", None)
        turns = getattr(thread, "tcomp_turns", None)
        if (memory is None and turns is None) or shape == 0:
            raise NotImplementedError("simulator_chaos(isolate_threads=True or preempt=True) handles static "
                                      "shared arrays allocated by the threads of a simulated block only")
        from numba.cuda import types
        from numba.cuda.np import numpy_support

        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)  # as the simulator tells allocations apart
        if turns is not None:  # the block's own array; its accesses are preemption points
            if key not in thread.tcomp_shared:
                fresh = np.full(shape, poison_value(np.dtype(dtype)), dtype=dtype)
                thread.tcomp_shared[key] = _Preemptible(fresh, turns)
            return thread.tcomp_shared[key]
        if key not in memory.shared:
            memory.shared[key] = memory.add(np.full(shape, poison_value(np.dtype(dtype)), dtype=dtype))
        return memory.copy_for(thread.tcomp_slot, memory.shared[key])

    def run_block(self, grid_point, *args):
        fake = self._f.__globals__.get("cuda")
        allocations = getattr(getattr(fake, "shared", None), "_allocations", None)
        if isinstance(allocations, dict):
            allocations.clear()
        if preempt:
            return run_preempted(self, grid_point, args)
        if not (isolate_blocks or isolate_threads):
            return orig_run(self, grid_point, *args)
        arrays = [_simulated_array(a) for a in args]
        if isolate_blocks:
            if launch.get("context") is not sim_kernel._kernel_context:  # the first block of a launch
                launch["context"] = sim_kernel._kernel_context
                launch["initial"] = [None if a is None else a.copy() for a in arrays]
            merged = [None if a is None else a.copy() for a in arrays]
            for a, first in zip(arrays, launch["initial"]):
                if a is not None:
                    a[...] = first
        try:
            if isolate_threads:
                return run_threads_isolated(self, grid_point, args, arrays)
            return orig_run(self, grid_point, *args)
        finally:
            if isolate_blocks:
                for a, first, m in zip(arrays, launch["initial"], merged):
                    if a is not None:
                        written = _bits(a) != _bits(first)
                        m[written] = a[written]
                        a[...] = m

    old_np = (sim_kernel.np, sim_api.np)
    sim_kernel.np = sim_api.np = _Numpy()
    sim_kernel.BlockManager.run = run_block
    if isolate_threads or preempt:
        # NOTE: only then: the simulator tells shared allocations apart by the line of
        # their caller, which a wrapper would make the same for all of them
        sim_api.FakeCUDAShared.array = shared_array
    try:
        yield
    finally:
        sim_kernel.np, sim_api.np = old_np
        sim_kernel.BlockManager.run = orig_run
        sim_api.FakeCUDAShared.array = orig_shared_array


class _Turns:
    """Simulated threads that take turns: exactly one runs at a time. The one running
    keeps the turn for a random number of memory accesses (:meth:`access`), then goes
    to the ready list and a random ready thread gets the turn; one that reaches a
    barrier waits there until every live thread of its block has, one that ends gives
    the turn away. Every choice comes from the seeded generator, and the state only
    changes while a thread holds the turn, so an interleaving is reproducible."""

    def __init__(self, rng):
        self.rng = rng
        self.lock = threading.Lock()
        self.turn: dict = {}  # thread -> the Event that gives it the turn
        self.running = None
        self.ready: list = []
        self.budget: dict = {}
        self.live: dict = {}  # block -> its threads that have not ended
        self.waiting: dict = {}  # block -> its threads at the barrier

    def add(self, thread, block) -> None:
        """Before the threads start: ``thread`` belongs to ``block``."""
        self.turn[thread] = threading.Event()
        self.budget[thread] = self._run_length()
        self.live.setdefault(block, []).append(thread)
        self.waiting.setdefault(block, [])

    def start(self) -> None:
        """Every thread is ready, in a shuffled order; one gets the turn."""
        with self.lock:
            self.ready = [t for threads in self.live.values() for t in threads]
            self.rng.shuffle(self.ready)
            self._pass()

    def access(self) -> None:
        """A memory access by the running thread: maybe the end of its turn."""
        me = threading.current_thread()
        with self.lock:
            self.budget[me] -= 1
            if self.budget[me] > 0:
                return
            self.budget[me] = self._run_length()
            self.ready.append(me)
            self._pass()
        self.wait_turn()

    def barrier(self) -> None:
        me = threading.current_thread()
        with self.lock:
            self.waiting[me.tcomp_block].append(me)
            self._release(me.tcomp_block)
            self._pass()
        self.wait_turn()

    def wait_turn(self) -> None:
        event = self.turn[threading.current_thread()]
        event.wait()
        event.clear()

    def end(self) -> None:
        me = threading.current_thread()
        with self.lock:
            self.live[me.tcomp_block].remove(me)
            self._release(me.tcomp_block)
            if self.running is me:
                self._pass()

    def _release(self, block) -> None:
        waiting = self.waiting[block]
        if waiting and len(waiting) == len(self.live[block]):
            self.ready += sorted(waiting, key=lambda t: t.thread_id)
            self.waiting[block] = []

    def _pass(self) -> None:
        self.running = self.ready.pop(int(self.rng.integers(len(self.ready)))) if self.ready else None
        if self.running is not None:
            self.turn[self.running].set()

    def _run_length(self) -> int:
        return int(self.rng.integers(1, 2 * MEAN_RUN))


class _Preemptible:
    """An array (a kernel's global argument or a block's shared array) whose element
    reads and writes are preemption points of :class:`_Turns`."""

    def __init__(self, array, turns: _Turns):
        self.__dict__["_array"], self.__dict__["_turns"] = array, turns

    def __getitem__(self, index):
        self._turns.access()
        return self._array[index]

    def __setitem__(self, index, value):
        self._turns.access()
        self._array[index] = value

    def __getattr__(self, name):
        return getattr(self._array, name)

    def __len__(self):
        return len(self._array)


def _run_taking_turns(sim_kernel, blocks, turns: _Turns) -> None:
    """Run the threads of all ``blocks`` ((manager, grid point, args) each) of a launch
    at once under ``turns``; raise the first exception one of them raised."""

    class TurnThread(sim_kernel.BlockThread):
        def syncthreads(self):
            turns.barrier()

    def body(f, args):
        try:
            turns.wait_turn()
            f(*args)
        finally:
            turns.end()

    threads = []
    for n, (manager, grid_point, args) in enumerate(blocks):
        args = [_Preemptible(a, turns) if _simulated_array(a) is not None else a for a in args]
        shared: dict = {}
        for block_point in np.ndindex(*manager._block_dim):
            t = TurnThread(functools.partial(body, manager._f, args), manager, grid_point, block_point,
                           manager._debug)
            t.tcomp_block, t.tcomp_turns, t.tcomp_shared = n, turns, shared
            turns.add(t, n)
            threads.append(t)
    for t in threads:
        t.start()
    turns.start()
    for t in threads:
        t.join()
    for t in threads:
        if t.exception:
            raise t.exception[0].with_traceback(t.exception[1])


class _ThreadMemory:
    """The memory of one simulated block under ``isolate_threads``: each array (a global
    argument or a shared allocation) as of the last barrier, and each thread's copy."""

    def __init__(self):
        self.bases: list = []  # the block's arrays
        self.start: list = []  # their values at the last barrier
        self.copies: dict = {}  # thread slot -> {array index: the thread's copy}
        self.shared: dict = {}  # allocation site -> array index

    def add(self, base: np.ndarray) -> int:
        self.bases.append(base)
        self.start.append(base.copy())
        return len(self.bases) - 1

    def copy_for(self, slot: int, index: int) -> np.ndarray:
        mine = self.copies.setdefault(slot, {})
        if index not in mine:
            mine[index] = self.start[index].copy()
        return mine[index]

    def merge(self) -> None:
        """The barrier: every thread's writes since the last one, into every copy."""
        for index, base in enumerate(self.bases):
            start = self.start[index]
            merged = start.copy()
            for slot in sorted(self.copies):
                mine = self.copies[slot].get(index)
                if mine is not None:
                    written = _bits(mine) != _bits(start)
                    merged[written] = mine[written]
            base[...] = merged
            self.start[index] = merged
            for mine in self.copies.values():
                if index in mine:
                    mine[index][...] = merged


def _simulated_array(arg):
    """The numpy array behind a kernel argument in the simulator, or None."""
    item = getattr(arg, "__dict__", {}).get("_item", arg)
    ary = getattr(item, "_ary", None)
    return ary if isinstance(ary, np.ndarray) else None


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else a


def poison_value(dtype: np.dtype):
    """What uninitialized storage of ``dtype`` holds under :func:`simulator_chaos`."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.nan
    if dtype == np.uint16:  # a bfloat16 / float16 on the device: a NaN of either
        return 0x7FC1
    if dtype == np.uint8:  # float8_e4m3: NaN
        return 0x7F
    if dtype.kind in "iu":
        return np.iinfo(dtype).min + 7 if dtype.kind == "i" else np.iinfo(dtype).max - 7
    return 0


