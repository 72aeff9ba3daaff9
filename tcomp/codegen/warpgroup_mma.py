"""Hopper's warpgroup matrix instructions (``wgmma``) for generated kernels, and Python
models of them that Numba's CUDA simulator runs.

A warpgroup is four consecutive warps (128 threads, the first a multiple of 128 in the
block's linear thread order). One ``wgmma.mma_async.m64nNk16`` multiplies a 64 x 16 A by a
16 x N B, both read from shared memory through 64-bit descriptors, and adds the product to
a 64 x N float32 accumulator that lives in the 128 threads' registers, N / 2 of them each.
The encodings are those verified on the H200 (docs/hardware.md, "Matrix instructions").

Shared operands are stored in 8 x 8 blocks of 16-bit values ("core matrices", 128
contiguous bytes each; ``s[T].storage_blocks(8, 8)``). A descriptor gives the address of
the operand's first element and two strides in bytes: ``leading`` (LBO) and ``stride``
(SBO). For A (row-major, its k contiguous in a block row) element (r, k) is at

    start + (r // 8) * SBO + (k // 8) * LBO + (r % 8) * 16 + (k % 8) * 2        bytes

and for B with ``trans_b`` (a row-major K x N tile, n contiguous in a block row) element
(k, n) is at ``start + (n // 8) * SBO + (k // 8) * LBO + (k % 8) * 16 + (n % 8) * 2``.

Accumulator register i of thread t (0..127) of the warpgroup
(``tcomp.target.wgmma_layout.accumulator_element``):

    row = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 2) % 2),  col = 8 * (i // 4) + 2 * (t % 4) + i % 2

Instructions, as generated code calls them (each built once per variant by the factories
below, the GPU intrinsic or its model):

    wgmma_descriptor(smem, index, leading, stride, mode)  -> uint64 descriptor of smem[index]
    shared_alignment_shift(smem, alignment)  elements of smem before an aligned address
    wgmma(N, kind, trans_b, offsets)(desc_a, desc_b, acc, base)
        one wgmma.mma_async; register i is acc[base + offsets[i]] (in and out)
    wgmma_fence_tied(count)(acc)   wgmma.fence, with acc[0 .. count) passed through it as
                                   tied operands, so that no access of them moves across it
    wgmma_wait_tied(n, count)(acc) wgmma.wait_group n, the same way
    accumulator_hold(count)(acc)   the same with no instruction (for a second accumulator)
    wgmma_commit()                 wgmma.commit_group
    fence_proxy_async()            fence.proxy.async.shared::cta: shared stores of this
                                   thread (st.shared, cp.async) become visible to wgmma

The simulator's ``wgmma`` reads its operands and updates the accumulators when it is
issued (the warpgroup's 128 threads meet at it); on the GPU the instruction runs until a
``wait_group`` retires it, which lowering places before any other access (``tcomp.lower.
warpgroup``). Fences and waits are no-ops in the simulator.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from llvmlite import ir
from numba import types
from numba.cuda.extending import intrinsic

from .narrow_floats import _asm
from .vector_access import _data_pointer, _offset_pointer
from .warp_mma import _exchange, _make_plain, _shared_address
from ..target.wgmma_layout import WARPGROUP, WGMMA_WIDTHS, a_address, accumulator_element, b_address

_I32, _I64, _F32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
_KIND = {"bfloat16": "bf16", "float16": "f16"}
_NARROW = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


# ---------------------------------------------------------------------------- GPU intrinsics


@intrinsic
def wgmma_descriptor(typingctx, smem, index, leading, stride, mode):
    """The 64-bit shared-memory matrix descriptor of ``smem[index]`` with byte strides
    ``leading`` and ``stride`` and layout ``mode`` (0 none, 1 the 128-byte swizzle; base
    offset 0)."""

    def codegen(context, builder, signature, args):
        address = builder.zext(_shared_address(context, builder, signature.args[0], args[0], args[1]), _I64)
        lbo, sbo, layout = (context.cast(builder, v, t, types.uint64) for v, t in zip(args[2:], signature.args[2:]))
        mask, four = ir.Constant(_I64, 0x3FFFF), ir.Constant(_I64, 4)

        def field(v, shift):
            return builder.shl(builder.lshr(builder.and_(v, mask), four), ir.Constant(_I64, shift))

        descriptor = builder.or_(builder.or_(field(address, 0), field(lbo, 16)), field(sbo, 32))
        return builder.or_(descriptor, builder.shl(builder.and_(layout, ir.Constant(_I64, 3)), ir.Constant(_I64, 62)))

    return types.uint64(smem, index, leading, stride, mode), codegen


@intrinsic
def shared_alignment_shift(typingctx, smem, alignment):
    """Elements of ``smem`` to skip so that the rest starts on an ``alignment``-byte
    boundary of shared memory (a power of two)."""

    def codegen(context, builder, signature, args):
        zero = ir.Constant(_I32, 0)
        address = _shared_address(context, builder, signature.args[0], args[0], zero)
        align = context.cast(builder, args[1], signature.args[1], types.uint32)
        below = builder.sub(align, ir.Constant(_I32, 1))
        gap = builder.and_(builder.sub(align, builder.and_(address, below)), below)
        size = ir.Constant(_I32, context.get_abi_sizeof(context.get_data_type(signature.args[0].dtype)))
        return builder.udiv(gap, size)

    return types.uint32(smem, alignment), codegen


def _accumulator_pointers(context, builder, array_type, array, base, offsets):
    base = context.cast(builder, base[0], base[1], types.uint32)
    data = _data_pointer(context, builder, array_type, array)
    return [_offset_pointer(builder, data, builder.add(base, ir.Constant(_I32, off))) for off in offsets]


_WGMMA_CACHE: dict = {}


def wgmma(n: int, kind: str, trans_b: bool, offsets: tuple):
    """The intrinsic ``(desc_a, desc_b, acc, base)`` of one ``wgmma.mma_async.m64n{n}k16``
    (f32 accumulators, ``kind`` operands bf16 or f16) whose register i is
    ``acc[base + offsets[i]]``."""
    key = (n, kind, trans_b, tuple(offsets))
    if key not in _WGMMA_CACHE:
        _WGMMA_CACHE[key] = _make_wgmma(*key)
    return _WGMMA_CACHE[key]


def _make_wgmma(n: int, kind: str, trans_b: bool, offsets: tuple):
    count = n // 2
    if n not in WGMMA_WIDTHS or len(offsets) != count:
        raise ValueError(f"wgmma m64n{n}k16 has {count} accumulator registers a thread; {len(offsets)} offsets given")
    regs = ", ".join(f"${i}" for i in range(count))
    text = (f"{{ .reg .pred p; setp.ne.b32 p, ${count + 2}, 0; "
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{kind}.{kind} {{{regs}}}, ${count}, ${count + 1}, "
            f"p, 1, 1, 0, {int(trans_b)}; }}")
    constraints = ",".join(["=f"] * count + ["l", "l", "r"] + [str(i) for i in range(count)]) + ",~{memory}"

    def mma(typingctx, desc_a, desc_b, acc, base):
        def codegen(context, builder, signature, args):
            pointers = _accumulator_pointers(context, builder, signature.args[2], args[2],
                                             (args[3], signature.args[3]), offsets)
            descs = [context.cast(builder, v, t, types.uint64) for v, t in zip(args[:2], signature.args[:2])]
            values = [builder.load(p) for p in pointers]
            out = _asm(builder, ir.LiteralStructType([_F32] * count), descs + [ir.Constant(_I32, 1)] + values,
                       text, constraints, side_effect=True)
            for i, p in enumerate(pointers):
                builder.store(builder.extract_value(out, i), p)
            return context.get_dummy_value()

        return types.void(desc_a, desc_b, acc, base), codegen

    mma.__name__ = f"wgmma_m64n{n}k16_{kind}{'_tb' if trans_b else ''}"
    return intrinsic(mma)


_TIED_CACHE: dict = {}


def accumulator_asm(text: str, count: int):
    """The intrinsic ``(acc)``: the asm ``text`` (empty, or a fence or wait) with
    ``acc[0 .. count)`` passed through it as tied operands, so that no access of the
    accumulators moves across it."""
    key = (text, count)
    if key not in _TIED_CACHE:
        constraints = ",".join(["=f"] * count + [str(i) for i in range(count)]) + ",~{memory}"

        def tied(typingctx, acc):
            def codegen(context, builder, signature, args):
                zero = ir.Constant(_I32, 0)
                pointers = _accumulator_pointers(context, builder, signature.args[0], args[0],
                                                 (zero, types.uint32), range(count))
                out = _asm(builder, ir.LiteralStructType([_F32] * count), [builder.load(p) for p in pointers],
                           text, constraints, side_effect=True)
                for i, p in enumerate(pointers):
                    builder.store(builder.extract_value(out, i), p)
                return context.get_dummy_value()

            return types.void(acc), codegen

        tied.__name__ = f"tied_{count}"
        _TIED_CACHE[key] = intrinsic(tied)
    return _TIED_CACHE[key]


def accumulator_hold(count: int):
    """:func:`accumulator_asm` with no instruction: orders the accumulators' accesses."""
    return accumulator_asm("", count)


def wgmma_fence_tied(count: int):
    """``wgmma.fence`` with ``acc[0 .. count)`` tied through it."""
    return accumulator_asm("wgmma.fence.sync.aligned;", count)


def wgmma_wait_tied(pending: int, count: int):
    """``wgmma.wait_group pending`` with ``acc[0 .. count)`` tied through it."""
    return accumulator_asm(f"wgmma.wait_group.sync.aligned {pending};", count)


wgmma_commit = _make_plain("wgmma.commit_group.sync.aligned;", "wgmma_commit")
fence_proxy_async = _make_plain("fence.proxy.async.shared::cta;", "fence_proxy_async")

# ---------------------------------------------------------------------------- simulator models


def sim_wgmma_descriptor(smem, index, leading, stride, mode):
    """The simulator's descriptor: what the instruction's model needs to read the operand
    (the simulated shared array stands for a 1024-byte aligned one)."""
    return smem, int(index), int(leading), int(stride), int(mode)


def sim_shared_alignment_shift(smem, alignment):
    return 0


def _operand(descriptor, rows: int, cols: int, kind: str, address) -> np.ndarray:
    """A rows x cols operand read through ``descriptor``, ``address(start, r, c, leading,
    stride, mode)`` giving the byte addresses of arrays of rows and columns."""
    smem, start, leading, stride, mode = descriptor
    flat = np.asarray(smem).reshape(-1).view(np.uint16)
    index = address(2 * start, np.arange(rows)[:, None], np.arange(cols)[None, :], leading, stride, mode) // 2
    return flat[index].view(_NARROW[kind]).astype(np.float64)


def _accumulator_places(n: int) -> tuple:
    """Rows and columns (128 x n/2 arrays) of every thread's accumulator registers."""
    places = np.array([[accumulator_element(t, i) for i in range(n // 2)] for t in range(WARPGROUP)])
    return places[..., 0], places[..., 1]


def _key(descriptor) -> tuple:
    """What tells a model's descriptor (shared array, start, strides, mode) from another."""
    smem, *fields = descriptor
    return (np.asarray(smem).__array_interface__["data"][0], *(int(f) for f in fields))  # NOTE: each thread's own view


def sim_wgmma(n: int, kind: str, trans_b: bool, offsets: tuple):
    """The model of :func:`wgmma`: the warpgroup's 128 threads meet and post their
    descriptors and accumulators; one of them reads the operands from shared memory and
    computes the 64 x n product while the others wait (so that no lane's reads outlast
    another's next step), and each takes its registers of it back."""
    rows, cols = _accumulator_places(n)
    name = f"wgmma_m64n{n}k16"

    def product(everyone):
        descriptors = {(_key(desc_a), _key(desc_b)) for desc_a, desc_b, _ in everyone}
        if len(descriptors) > 1:
            raise RuntimeError(f"{name}: the warpgroup's threads passed {len(descriptors)} different pairs of "
                               f"operand descriptors; the instruction takes one")
        desc_a, desc_b, _ = everyone[0]
        A = _operand(desc_a, 64, 16, kind, a_address)
        B = _operand(desc_b, 16, n, kind,
                     lambda start, k, c, lbo, sbo, mode: b_address(start, k, c, lbo, sbo, trans_b, mode))
        # NOTE: every thread waits while the operands are read: on the GPU a wait_group
        # retires the whole warpgroup's reads, so one lane may release the slot (an
        # mbarrier arrival) while another's model would still be reading it
        C = np.zeros((64, n))
        C[rows, cols] = np.array([values for _, _, values in everyone])
        return (A @ B + C).astype(np.float32)  # NOTE: exact products, float64 sums, one rounding

    def mma(desc_a, desc_b, acc, base):
        slots = [int(base) + off for off in offsets]
        thread, D = _exchange(name, (desc_a, desc_b, [float(acc[s]) for s in slots]), size=WARPGROUP,
                              combine=product)
        for i, s in enumerate(slots):
            acc[s] = D[rows[thread, i], cols[thread, i]]

    return mma


def sim_accumulator_asm(text: str, count: int):
    """The simulator's :func:`accumulator_asm` (and its three uses): nothing to do, since
    the model of :func:`wgmma` completes when it is issued."""
    def tied(acc):
        return None

    return tied


def sim_accumulator_hold(count: int):
    return sim_accumulator_asm("", count)


def sim_wgmma_fence_tied(count: int):
    return sim_accumulator_asm("wgmma.fence", count)


def sim_wgmma_wait_tied(pending: int, count: int):
    return sim_accumulator_asm("wgmma.wait_group", count)


def _sim_plain():
    return None


sim_wgmma_commit = sim_fence_proxy_async = _sim_plain


def instruction_kind(dtype: str) -> str:
    """The PTX type name of a 16-bit float dtype (``bf16``, ``f16``)."""
    return _KIND[dtype]


__all__ = ["shared_alignment_shift", "sim_shared_alignment_shift", "accumulator_asm", "accumulator_hold", "fence_proxy_async", "instruction_kind", "sim_accumulator_hold", "sim_fence_proxy_async",
           "sim_wgmma", "sim_wgmma_commit", "sim_wgmma_descriptor", "sim_wgmma_fence_tied", "sim_wgmma_wait_tied",
           "wgmma", "wgmma_commit", "wgmma_descriptor", "wgmma_fence_tied", "wgmma_wait_tied"]
