"""Hopper's tensor memory accelerator (TMA) and shared-memory barriers (mbarrier) for
generated kernels: the instructions of warp-specialized rings.

A TMA copy (``cp.async.bulk.tensor``) moves a whole box of a tensor from global to shared
memory in one instruction issued by one thread. The box is described by a *tensor map*
(128 bytes made on the host by the driver's ``cuTensorMapEncodeTiled``, see
``tcomp.codegen.tensor_maps``) that the kernel reads from global memory. Elements of a box
beyond the tensor's edge land as zeros, and with the 128-byte swizzle a box of 64 bf16
columns lands in the layout that ``wgmma`` reads in its 128-byte swizzle mode
(``tcomp.target.wgmma_layout.swizzle128``).

The copy completes on an mbarrier (a 64-bit word of shared memory) through a transaction
count: the thread that issues it first announces the bytes to come
(``mbarrier_arrive_expect``), and the barrier's phase completes once the expected arrivals
have arrived and all the bytes have landed. A reader waits for a phase by its parity
(``mbarrier_wait``): slot s of a ring of S slots is in its n-th use at phase parity
``(n // S) % 2``. A fresh barrier counts as having completed the phase before its first,
so a wait for parity 1 returns at once (how a producer finds every slot empty at the start).

Instructions, as kernels call them:

    mbarrier_init(bars, i, count)           bars[i] expects ``count`` arrivals a phase
    fence_barrier_init()                    makes the inits visible (then a block barrier)
    tensor_map_acquire(tmap)                before the first copy through ``tmap``
    mbarrier_arrive_expect(bars, i, nbytes) one arrival, and ``nbytes`` more to land
    mbarrier_arrive(bars, i)                one arrival
    mbarrier_wait(bars, i, parity)          spins until that phase completes
    tma_load_2d(smem, index, tmap, x, y, bars, i)
        the box at column x, row y (elements) of the 2-D tensor of ``tmap`` into
        ``smem[index]`` (1024-byte aligned for the swizzle), completing on ``bars[i]``
    tma_load_3d(smem, index, tmap, x, y, z, bars, i)
        the same at index z of a 3-D tensor's first dimension
    set_max_registers(count, grow)          ``setmaxnreg``: this warpgroup's register budget
    named_barrier(index, count)             ``bar.sync``: the first ``count`` threads meet

Lowering emits them for TMA rings (``tcomp.lower.tensor_copies``, ``tcomp.lower.warp_roles``);
``benchmarks/tma_gemm_probe.py`` writes kernels with them by hand. The ``sim_`` models below run them in Numba's CUDA simulator: a barrier's state
lives in a table whose key ``mbarrier_init`` writes into the simulated shared word; a copy
lands at once, in the box's swizzled layout with zeros past the tensor's edge, and
completes its bytes; a wait spins until the phase flips. A simulated tensor map (:func:`sim_tensor_map`) names the
simulated device array it reads.
"""

from __future__ import annotations

import itertools
import threading
import time

import numpy as np
from llvmlite import ir
from numba import types
from numba.cuda.extending import intrinsic

from .narrow_floats import _asm
from .warp_mma import _as_u32, _global_address, _shared_address

_I32, _I64 = ir.IntType(32), ir.IntType(64)
_VOID = ir.VoidType()


def _barrier(context, builder, signature, args, at: int = 0):
    """The shared address of ``bars[i]`` from the intrinsic's arguments ``at``, ``at + 1``."""
    return _shared_address(context, builder, signature.args[at], args[at], args[at + 1])


def _u32(context, builder, signature, args, at: int):
    return _as_u32(context, builder, args[at], signature.args[at])


def _barrier_instruction(name: str, text: str, doc: str):
    """The intrinsic ``(bars, index, value)`` of the one-instruction asm ``text`` on the
    shared address of ``bars[index]`` ($0) and a 32-bit ``value`` ($1)."""

    def instruction(typingctx, bars, index, value):
        def codegen(context, builder, signature, args):
            operands = [_barrier(context, builder, signature, args), _u32(context, builder, signature, args, 2)]
            _asm(builder, _VOID, operands, text, "r,r,~{memory}", side_effect=True)
            return context.get_dummy_value()

        return types.void(bars, index, value), codegen

    instruction.__name__, instruction.__doc__ = name, doc
    return intrinsic(instruction)


mbarrier_init = _barrier_instruction(
    "mbarrier_init", "mbarrier.init.shared::cta.b64 [$0], $1;",
    "``mbarrier.init``: ``bars[index]`` (uint64) expects ``count`` arrivals a phase.")
mbarrier_arrive_expect = _barrier_instruction(
    "mbarrier_arrive_expect", "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
    "One arrival on ``bars[index]`` that also raises the bytes its phase waits for by ``nbytes``.")
mbarrier_wait = _barrier_instruction(
    "mbarrier_wait", "{ .reg .pred done; WAIT: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; "
    "@!done bra WAIT; }",
    "Spins (in PTX: its label is local to the braces) until the phase of ``bars[index]`` of parity "
    "``parity`` has completed.")


@intrinsic
def fence_barrier_init(typingctx):
    """Makes this thread's ``mbarrier_init``s visible to the other threads and to the copy
    engine (a block barrier must follow before anyone uses them)."""

    def codegen(context, builder, signature, args):
        _asm(builder, _VOID, [], "fence.mbarrier_init.release.cluster; fence.proxy.async.shared::cta;",
             "~{memory}", side_effect=True)
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def tensor_map_acquire(typingctx, tmap):
    """``fence.proxy.tensormap``: the 128-byte tensor map in global memory ``tmap`` is
    read by the copy engine only after the host's writes of it."""

    def codegen(context, builder, signature, args):
        address = _global_address(context, builder, signature.args[0], args[0], ir.Constant(_I64, 0))
        _asm(builder, _VOID, [address], "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l,~{memory}",
             side_effect=True)
        return context.get_dummy_value()

    return types.void(tmap), codegen


@intrinsic
def mbarrier_arrive(typingctx, bars, index):
    """One arrival on ``bars[index]``."""

    def codegen(context, builder, signature, args):
        _asm(builder, _VOID, [_barrier(context, builder, signature, args)],
             "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", side_effect=True)
        return context.get_dummy_value()

    return types.void(bars, index), codegen


def _tma_load(rank: int):
    """The codegen of ``cp.async.bulk.tensor.{rank}d``: arguments (smem, index, tmap, the
    box's ``rank`` coordinates innermost first, bars, bar_index)."""
    coordinates = ", ".join(f"${2 + d}" for d in range(rank))
    text = (f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            f" [$0], [$1, {{{coordinates}}}], [${2 + rank}];")

    def codegen(context, builder, signature, args):
        sig = signature.args
        destination = _shared_address(context, builder, sig[0], args[0], args[1])
        source = _global_address(context, builder, sig[2], args[2], ir.Constant(_I64, 0))
        barrier = _shared_address(context, builder, sig[-2], args[-2], args[-1])
        at = [_u32(context, builder, signature, args, 3 + d) for d in range(rank)]
        _asm(builder, _VOID, [destination, source, *at, barrier], text, "r,l," + "r," * rank + "r,~{memory}",
             side_effect=True)
        return context.get_dummy_value()

    return codegen


@intrinsic
def tma_load_2d(typingctx, smem, index, tmap, x, y, bars, bar_index):
    """``cp.async.bulk.tensor.2d``: the box of ``tmap`` at column ``x`` and row ``y`` into
    ``smem[index]``, its bytes completing on ``bars[bar_index]``."""
    return types.void(smem, index, tmap, x, y, bars, bar_index), _tma_load(2)


@intrinsic
def tma_load_3d(typingctx, smem, index, tmap, x, y, z, bars, bar_index):
    """``cp.async.bulk.tensor.3d``: the box of ``tmap`` at column ``x`` and row ``y`` of
    index ``z`` of the tensor's first dimension into ``smem[index]``, completing on
    ``bars[bar_index]``."""
    return types.void(smem, index, tmap, x, y, z, bars, bar_index), _tma_load(3)


@intrinsic
def named_barrier(typingctx, index, count):
    """``bar.sync index, count``: waits until ``count`` threads (a multiple of 32) have
    reached barrier ``index`` (1 to 15; 0 is ``__syncthreads``'s): the consumer
    warpgroups of a warp-specialized kernel, which the producer's warpgroup never joins."""

    def codegen(context, builder, signature, args):
        _asm(builder, _VOID, [_u32(context, builder, signature, args, 0), _u32(context, builder, signature, args, 1)],
             "bar.sync $0, $1;", "r,r,~{memory}", side_effect=True)
        return context.get_dummy_value()

    return types.void(index, count), codegen


_REGISTER_CACHE: dict = {}


def set_max_registers(count: int, grow: bool):
    """The intrinsic ``()`` of ``setmaxnreg.{inc,dec}.sync.aligned.u32 count``: every
    thread of the warpgroup runs it, and the warpgroup's registers a thread become
    ``count`` (a multiple of 8 in 24 .. 256)."""
    if count % 8 or not 24 <= count <= 256:
        raise ValueError(f"setmaxnreg takes a multiple of 8 in 24..256 registers, not {count}")
    key = (count, grow)
    if key not in _REGISTER_CACHE:
        text = f"setmaxnreg.{'inc' if grow else 'dec'}.sync.aligned.u32 {count};"

        def registers(typingctx):
            def codegen(context, builder, signature, args):
                _asm(builder, _VOID, [], text, "~{memory}", side_effect=True)
                return context.get_dummy_value()

            return types.void(), codegen

        registers.__name__ = f"setmaxnreg_{'inc' if grow else 'dec'}_{count}"
        _REGISTER_CACHE[key] = intrinsic(registers)
    return _REGISTER_CACHE[key]


# ---------------------------------------------------------------------------- simulator models

_SIM_LOCK = threading.Lock()
#: notified whenever a simulated barrier's phase completes (the waiting threads sleep on it)
_SIM_PHASE = threading.Condition(_SIM_LOCK)
_SIM_BARRIERS: dict = {}  # the key a barrier's word holds -> its state
_SIM_TENSORS: dict = {}   # simulated tensor map id -> (array, rows, cols, box rows, box cols, swizzle)
_SIM_IDS = itertools.count(1)
#: seconds a simulated wait may last before it reports a barrier that never completes
SIM_WAIT_LIMIT = 120.0


class _SimBarrier:
    """An mbarrier's phase: its parity, the arrivals a phase expects, those still missing,
    and the bytes still to land."""

    def __init__(self, count: int):
        self.parity, self.expected, self.missing, self.bytes = 0, count, count, 0

    def settle(self) -> None:
        """Complete the phase if nothing is missing, and wake the waiting threads (the
        caller holds ``_SIM_LOCK``)."""
        if self.missing == 0 and self.bytes == 0:
            self.parity ^= 1
            self.missing = self.expected
            _SIM_PHASE.notify_all()


def _sim_barrier(bars, index) -> _SimBarrier:
    key = int(bars[int(index)])
    if key not in _SIM_BARRIERS:
        raise RuntimeError("an mbarrier was used before mbarrier_init")
    return _SIM_BARRIERS[key]


def sim_mbarrier_init(bars, index, count):
    with _SIM_LOCK:
        key = next(_SIM_IDS)
        bars[int(index)] = key
        _SIM_BARRIERS[key] = _SimBarrier(int(count))


def sim_fence_barrier_init():
    return None


def sim_tensor_map_acquire(tmap):
    return None


def _sim_arrive(bars, index, nbytes: int = 0) -> None:
    """One arrival on the simulated barrier, ``nbytes`` more to land first."""
    with _SIM_LOCK:
        barrier = _sim_barrier(bars, index)
        if barrier.missing == 0:
            raise RuntimeError("more arrivals on an mbarrier than its phase expects")
        barrier.bytes += nbytes
        barrier.missing -= 1
        barrier.settle()


def sim_mbarrier_arrive_expect(bars, index, nbytes):
    _sim_arrive(bars, index, int(nbytes))


def sim_mbarrier_arrive(bars, index):
    _sim_arrive(bars, index)


def sim_mbarrier_wait(bars, index, parity):
    deadline = time.monotonic() + SIM_WAIT_LIMIT
    with _SIM_PHASE:
        while _sim_barrier(bars, index).parity == int(parity) & 1:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"mbarrier_wait: the phase of parity {int(parity) & 1} never completed "
                                   f"(a ring's protocol is broken: an arrival or a copy is missing)")
            _SIM_PHASE.wait(left)


def sim_tensor_map(array, shape: tuple, box_rows: int, box_cols: int, swizzle: int = 128) -> np.ndarray:
    """The simulator's stand-in for ``tensor_maps.tensor_map``: a 16-element uint64
    array naming ``array`` (the flat simulated device array a kernel reads), its shape
    and the box."""
    key = next(_SIM_IDS)
    _SIM_TENSORS[key] = (array, tuple(int(e) for e in shape), int(box_rows), int(box_cols), int(swizzle))
    return np.array([key] + [0] * 15, dtype=np.uint64)


def _box_bytes(box_rows: int, box_cols: int, item: int, swizzle: int) -> np.ndarray:
    """Byte offset of every element (r, c) of a box as it lands in shared memory."""
    r, c = np.arange(box_rows)[:, None], np.arange(box_cols)[None, :]
    offset = r * box_cols * item + c * item
    if swizzle == 128:
        offset = r * 128 + (((c * item) // 16) ^ (r % 8)) * 16 + (c * item) % 16
    return offset


def _sim_tma_load(smem, index, tmap, coordinates, bars, bar_index) -> None:
    """A box lands at once (zeros past the tensor's edge) and completes its bytes."""
    array, shape, box_rows, box_cols, swizzle = _SIM_TENSORS[int(np.asarray(tmap).reshape(-1)[0])]
    source = np.asarray(array).reshape(shape)
    x, y, *outer = (int(c) for c in coordinates)
    box = np.zeros((box_rows, box_cols), dtype=source.dtype)
    lead = tuple(reversed(outer))
    if all(0 <= i < e for i, e in zip(lead, shape[:-2])):
        inside = source[lead][y:y + box_rows, x:x + box_cols]
        box[:inside.shape[0], :inside.shape[1]] = inside
    item = source.dtype.itemsize
    target = np.asarray(smem).reshape(-1).view(np.uint8)
    start = int(index) * np.asarray(smem).dtype.itemsize
    places = start + _box_bytes(box_rows, box_cols, item, swizzle)
    target[places[..., None] + np.arange(item)] = box.view(np.uint8).reshape(box_rows, box_cols, item)
    with _SIM_LOCK:
        barrier = _sim_barrier(bars, bar_index)
        barrier.bytes -= box.nbytes
        if barrier.bytes < 0:
            raise RuntimeError("a copy landed more bytes than its mbarrier was told to expect")
        barrier.settle()


def sim_tma_load_2d(smem, index, tmap, x, y, bars, bar_index):
    _sim_tma_load(smem, index, tmap, (x, y), bars, bar_index)


def sim_tma_load_3d(smem, index, tmap, x, y, z, bars, bar_index):
    _sim_tma_load(smem, index, tmap, (x, y, z), bars, bar_index)


_SIM_NAMED: dict = {}  # (simulated launch, block, barrier index) -> the threads' meeting point


def sim_named_barrier(index, count):
    thread = threading.current_thread()
    manager = getattr(thread, "_manager", None)
    if manager is None:
        raise RuntimeError("a named barrier's model runs only inside a simulated kernel")
    key = (id(manager), tuple(thread.blockIdx), int(index))
    with _SIM_LOCK:
        meeting = _SIM_NAMED.setdefault(key, threading.Barrier(int(count), timeout=SIM_WAIT_LIMIT))
    if meeting.parties != int(count):
        raise RuntimeError(f"named barrier {int(index)} met with {int(count)} threads and with {meeting.parties}")
    try:
        meeting.wait()
    except threading.BrokenBarrierError:
        raise RuntimeError(f"named barrier {int(index)}: fewer than {int(count)} threads reached it") from None


def sim_set_max_registers(count: int, grow: bool):
    def registers():
        return None

    return registers
