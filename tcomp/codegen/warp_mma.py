"""Warp-level matrix instructions for generated kernels, and Python models of them that
Numba's CUDA simulator runs.

On the GPU each function is a Numba intrinsic around one PTX instruction (the encodings
are those verified on the H200, docs/hardware.md, "Matrix instructions"):

    mma_m16n8k16_bf16(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3) -> (d0, d1, d2, d3)
    mma_m16n8k16_f16(...)                  mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}
    ldmatrix_x1/_x2/_x4(smem, index)       ldmatrix.sync.aligned.m8n8.xN.shared.b16
    ldmatrix_x1_trans/_x2_trans/_x4_trans  ... .trans
    cp_async4/8/16(smem, index, src, index) cp.async.{ca,ca,cg}.shared.global, 4/8/16 bytes
    cp_async_zfill4/8/16(.., read_bytes)   the same reading only read_bytes, zero-filling the rest
    cp_async_commit()                      cp.async.commit_group
    cp_async_wait(n) (n = 0..7, a constant) cp.async.wait_group n
    pack_bf16x2(hi, lo), pack_f16x2(hi, lo) cvt.rn.{bf16x2,f16x2}.f32: two floats, one register
    load_pair(array, index)                one 32-bit load of elements index and index + 1 of
                                           an array of 16-bit bit patterns (index even): an
                                           operand register as it is stored

``a*`` and ``b*`` are 32-bit registers holding two 16-bit values (the lower-numbered
element in the low half), ``c*``/``d*`` float32; ``smem`` is a shared array of 16-bit bit
patterns (uint16) and ``index`` an element of it; ``src`` a global array.

Fragment layouts of m16n8k16 (lane = 4 * group + t, the PTX ISA's tables), given by
:func:`a_element`, :func:`b_element` and :func:`c_element`:

    A 16x16, row-major: register r holds (row, col) = (group + 8 * (r % 2), 2t + 8 * (r // 2) + h)
    B 16x8,  "col":     register r holds (k, n)     = (2t + 8 * r + h, group)
    C 16x8:             register r is  (row, col)   = (group + 8 * (r // 2), 2t + r % 2)

(``h`` the half: 0 low, 1 high). ``ldmatrix_xN``: lanes 8m .. 8m+7 give the addresses of the
8 rows of matrix m (8 x 8 16-bit elements, a row 16 contiguous bytes); register m of lane
l receives row ``l // 4``, elements ``2 (l % 4)`` and ``2 (l % 4) + 1`` of matrix m; with
``.trans`` it receives column ``l // 4``, rows ``2 (l % 4)`` and ``2 (l % 4) + 1``.

The models (``sim_*``) exchange the lanes' operands through a per-warp rendezvous: every
lane of the warp must call the same instruction, as on the GPU. ``sim_cp_async*`` copies
land only when a ``sim_cp_async_wait`` releases their group (the latest moment the PTX
memory model allows), so a kernel that reads a destination too early reads stale data in
the simulator too.
"""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
from llvmlite import ir
from numba import types
from numba.cuda.extending import intrinsic

from .narrow_floats import _asm
from .vector_access import _element_pointer

_I32, _I64, _F32 = ir.IntType(32), ir.IntType(64), ir.FloatType()

# ---------------------------------------------------------------------------- layouts


def a_element(lane: int, reg: int, half: int) -> tuple:
    """(row, col) of A (16x16) held by ``half`` of register ``reg`` of ``lane``."""
    group, t = divmod(lane, 4)
    return group + 8 * (reg % 2), 2 * t + 8 * (reg // 2) + half


def b_element(lane: int, reg: int, half: int) -> tuple:
    """(k, n) of B (16x8) held by ``half`` of register ``reg`` of ``lane``."""
    group, t = divmod(lane, 4)
    return 2 * t + 8 * reg + half, group


def c_element(lane: int, reg: int) -> tuple:
    """(row, col) of C and D (16x8) in register ``reg`` of ``lane``."""
    group, t = divmod(lane, 4)
    return group + 8 * (reg // 2), 2 * t + reg % 2


# ---------------------------------------------------------------------------- GPU intrinsics


def _shared_address(context, builder, array_type, array, index):
    """The 32-bit shared-window address of ``array[index]`` (ldmatrix and cp.async take it)."""
    ptr = builder.bitcast(_element_pointer(context, builder, array_type, array, index), ir.IntType(8).as_pointer())
    return builder.ptrtoint(builder.addrspacecast(ptr, ir.IntType(8).as_pointer(3)), _I32)


def _global_address(context, builder, array_type, array, index):
    return builder.ptrtoint(_element_pointer(context, builder, array_type, array, index), _I64)


def _as_u32(context, builder, value, typ):
    return context.cast(builder, value, typ, types.uint32)


def _make_mma(kind: str):
    text = (f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 "
            "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};")

    def mma(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        sig = types.UniTuple(types.float32, 4)(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)

        def codegen(context, builder, signature, args):
            regs = [_as_u32(context, builder, v, t) for v, t in zip(args[:6], signature.args[:6])]
            accs = [context.cast(builder, v, t, types.float32) for v, t in zip(args[6:], signature.args[6:])]
            ret = ir.LiteralStructType([_F32] * 4)
            out = _asm(builder, ret, regs + accs, text, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f")
            lanes = [builder.extract_value(out, n) for n in range(4)]
            return context.make_tuple(builder, signature.return_type, lanes)

        return sig, codegen

    mma.__name__ = f"mma_m16n8k16_{kind}"
    return intrinsic(mma)


def _make_ldmatrix(count: int, trans: bool):
    regs = ", ".join(f"${n}" for n in range(count))
    text = f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 {{{regs}}}, [${count}];"
    constraints = ",".join(["=r"] * count + ["r"])

    def ldmatrix(typingctx, smem, index):
        ret_type = types.uint32 if count == 1 else types.UniTuple(types.uint32, count)
        sig = ret_type(smem, index)

        def codegen(context, builder, signature, args):
            address = _shared_address(context, builder, signature.args[0], args[0], args[1])
            ret = _I32 if count == 1 else ir.LiteralStructType([_I32] * count)
            out = _asm(builder, ret, [address], text, constraints + ",~{memory}", side_effect=True)
            if count == 1:
                return out
            return context.make_tuple(builder, signature.return_type,
                                      [builder.extract_value(out, n) for n in range(count)])

        return sig, codegen

    ldmatrix.__name__ = f"ldmatrix_x{count}{'_trans' if trans else ''}"
    return intrinsic(ldmatrix)


def _make_cp_async(nbytes: int, zero_fill: bool = False):
    cache = "cg" if nbytes == 16 else "ca"  # NOTE: .cg (L2 only) takes 16-byte copies only
    src_size = ", $2" if zero_fill else ""  # bytes read; the rest of the copy is zero-filled
    text = (f"{{ .reg .u64 g; cvta.to.global.u64 g, $1; "
            f"cp.async.{cache}.shared.global [$0], [g], {nbytes}{src_size}; }}")

    def codegen(context, builder, signature, args):
        dst = _shared_address(context, builder, signature.args[0], args[0], args[1])
        source = _global_address(context, builder, signature.args[2], args[2], args[3])
        operands, constraints = [dst, source], "r,l"
        if zero_fill:
            operands.append(context.cast(builder, args[4], signature.args[4], types.uint32))
            constraints += ",r"
        _asm(builder, ir.VoidType(), operands, text, constraints + ",~{memory}", side_effect=True)
        return context.get_dummy_value()

    if zero_fill:
        def cp_async(typingctx, smem, smem_index, src, src_index, read_bytes):
            return types.void(smem, smem_index, src, src_index, read_bytes), codegen
    else:
        def cp_async(typingctx, smem, smem_index, src, src_index):
            return types.void(smem, smem_index, src, src_index), codegen

    cp_async.__name__ = f"cp_async{'_zfill' if zero_fill else ''}{nbytes}"
    return intrinsic(cp_async)


def _make_plain(text: str, name: str):
    def plain(typingctx):
        def codegen(context, builder, signature, args):
            _asm(builder, ir.VoidType(), [], text, "~{memory}", side_effect=True)
            return context.get_dummy_value()

        return types.void(), codegen

    plain.__name__ = name
    return intrinsic(plain)


@intrinsic
def load_pair(typingctx, array, index):
    """Elements ``index`` (low half) and ``index + 1`` of a uint16 array as one uint32."""

    def codegen(context, builder, signature, args):
        ptr = _element_pointer(context, builder, signature.args[0], args[0], args[1])
        return builder.load(builder.bitcast(ptr, _I32.as_pointer()), align=4)

    return types.uint32(array, index), codegen


def sim_load_pair(array, index):
    """The simulator's ``load_pair``."""
    return np.uint32(int(array[index]) | (int(array[index + 1]) << 16))


def _make_pack(kind: str):
    text = f"cvt.rn.{kind}x2.f32 $0, $1, $2;"

    def pack(typingctx, hi, lo):
        def codegen(context, builder, signature, args):
            values = [context.cast(builder, v, t, types.float32) for v, t in zip(args, signature.args)]
            return _asm(builder, _I32, values, text, "=r,f,f")

        return types.uint32(hi, lo), codegen

    pack.__name__ = f"pack_{kind}x2"
    return intrinsic(pack)


mma_m16n8k16_bf16 = _make_mma("bf16")
mma_m16n8k16_f16 = _make_mma("f16")
ldmatrix_x1, ldmatrix_x2, ldmatrix_x4 = (_make_ldmatrix(n, False) for n in (1, 2, 4))
ldmatrix_x1_trans, ldmatrix_x2_trans, ldmatrix_x4_trans = (_make_ldmatrix(n, True) for n in (1, 2, 4))
cp_async4, cp_async8, cp_async16 = (_make_cp_async(n) for n in (4, 8, 16))
#: ``cp_async_zfill{n}(smem, i, src, j, read_bytes)``: copies ``read_bytes`` (0 or n) and
#: zero-fills the rest of the n bytes (cp.async's ``src-size``): a tile's padding
cp_async_zfill4, cp_async_zfill8, cp_async_zfill16 = (_make_cp_async(n, zero_fill=True) for n in (4, 8, 16))
cp_async_commit = _make_plain("cp.async.commit_group;", "cp_async_commit")
#: ``cp_async_wait[n]``: wait until at most ``n`` committed groups are still in flight
CP_ASYNC_WAIT = tuple(_make_plain(f"cp.async.wait_group {n};", f"cp_async_wait_{n}") for n in range(8))
pack_bf16x2 = _make_pack("bf16")
pack_f16x2 = _make_pack("f16")

# ---------------------------------------------------------------------------- simulator models

_NARROW = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


class _WarpRendezvous:
    """Where the 32 lanes of one simulated warp meet to exchange one instruction's operands."""

    TIMEOUT = 120.0  # seconds; a lane that never arrives is a kernel bug (divergent warp)

    def __init__(self, size: int):
        self.barrier = threading.Barrier(size, timeout=self.TIMEOUT)
        self.slots: dict = {}


_RENDEZVOUS: dict = {}
_RENDEZVOUS_LOCK = threading.Lock()


def _lane_and_warp(size: int = 32):
    """This simulated thread's place in its group of ``size`` consecutive threads (a warp,
    or a warpgroup of 128), and the group's rendezvous."""
    thread = threading.current_thread()
    manager = getattr(thread, "_manager", None)
    if manager is None:
        raise RuntimeError("a warp-level instruction's model runs only inside a simulated kernel")
    lane = thread.thread_id % size
    key = (id(manager), tuple(thread.blockIdx), size, thread.thread_id // size)
    with _RENDEZVOUS_LOCK:
        warp = _RENDEZVOUS.setdefault(key, _WarpRendezvous(size))
    return lane, warp


def _exchange(name: str, value, size: int = 32, combine=None):
    """Every lane's ``value`` for this instruction, indexed by lane (all ``size`` lanes of
    the warp, or of the warpgroup, must call). With ``combine``, the first lane instead
    computes ``combine(values)`` once for the whole group, while the others wait, and every
    lane gets that back: an instruction's result computed once, not once per lane (32 or
    128 times the work in the simulator)."""
    lane, warp = _lane_and_warp(size)
    warp.slots[lane] = value
    try:
        warp.barrier.wait()
        if combine is None:
            result = [warp.slots[n] for n in range(size)]
        elif lane == 0:
            try:
                warp.combined = combine([warp.slots[n] for n in range(size)])
            except Exception as error:  # NOTE: raised in every lane below, not left to the barrier's timeout
                warp.combined = error
        warp.barrier.wait()  # NOTE: nobody overwrites a slot (or the result) before every lane has read
    except threading.BrokenBarrierError:
        raise RuntimeError(f"{name}: not every lane of the warp executed it (warp-level instructions need all "
                           f"{size} lanes of a {'warp' if size == 32 else 'warpgroup'}, in the same order)") from None
    if combine is not None:
        result = warp.combined
        if isinstance(result, Exception):
            raise result
    return lane, result


def _halves(regs, kind: str) -> np.ndarray:
    """The two 16-bit floats (low half first) of each 32-bit register of ``regs`` (ints,
    signed or not), as float64."""
    regs = np.asarray(regs, dtype=np.int64).astype(np.uint32)  # NOTE: wraps a signed register's value
    bits = np.stack([regs & 0xFFFF, regs >> 16], axis=-1).astype(np.uint16)
    return bits.view(_NARROW[kind]).astype(np.float64)


def _places(element, regs: int, halves: int | None) -> tuple:
    """Row and column arrays of ``element(lane, reg[, half])`` for every lane of a warp."""
    if halves is None:
        places = np.array([[element(n, r) for r in range(regs)] for n in range(32)])
    else:
        places = np.array([[[element(n, r, h) for h in range(halves)] for r in range(regs)] for n in range(32)])
    return places[..., 0], places[..., 1]


_A_PLACES, _B_PLACES, _C_PLACES = _places(a_element, 4, 2), _places(b_element, 2, 2), _places(c_element, 4, None)


def _sim_mma(kind: str):
    def product(lanes):
        A, B, C = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
        A[_A_PLACES] = _halves([a for a, _, _ in lanes], kind)
        B[_B_PLACES] = _halves([b for _, b, _ in lanes], kind)
        C[_C_PLACES] = [c for _, _, c in lanes]
        return (A @ B + C).astype(np.float32)  # NOTE: exact products, float64 sums, one rounding

    def mma(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        lane, D = _exchange(f"mma_m16n8k16_{kind}", ((int(a0), int(a1), int(a2), int(a3)), (int(b0), int(b1)),
                                                     (float(c0), float(c1), float(c2), float(c3))), combine=product)
        return tuple(D[_C_PLACES[0][lane], _C_PLACES[1][lane]])

    return mma


_LANES = np.arange(32)


def _sim_ldmatrix(count: int, trans: bool):
    def load(lanes):
        regs = np.empty((32, count), np.uint32)
        group, t = _LANES // 4, _LANES % 4
        for m in range(count):
            rows = [lanes[8 * m + r] for r in range(8)]
            misaligned = [start for _, start in rows if start % 8]
            if misaligned:
                raise RuntimeError(f"ldmatrix_x{count}: a row starts at element {misaligned[0]}, not at a multiple "
                                   "of 8 (its 16 bytes must be 16-byte aligned)")
            matrix = np.array([np.asarray(array[start:start + 8]).view(np.uint16) for array, start in rows])
            pairs = matrix[2 * t[:, None] + [0, 1], group[:, None]] if trans else matrix[group[:, None],
                                                                                        2 * t[:, None] + [0, 1]]
            regs[:, m] = pairs[:, 0].astype(np.uint32) | (pairs[:, 1].astype(np.uint32) << 16)
        return regs

    def ldmatrix(smem, index):
        lane, regs = _exchange(f"ldmatrix_x{count}", (smem, int(index)), combine=load)
        return regs[lane, 0] if count == 1 else tuple(regs[lane])

    return ldmatrix


_COPIES = threading.local()  # per simulated thread: copies not committed, committed groups


def _copies():
    if not hasattr(_COPIES, "open"):
        _COPIES.open, _COPIES.groups = [], []
    return _COPIES


def _sim_cp_async(nbytes: int):
    def cp_async(smem, smem_index, src, src_index):
        count = nbytes // np.asarray(src).itemsize
        data = np.array(src[src_index:src_index + count])  # NOTE: read at issue
        _copies().open.append((smem, int(smem_index), data))

    return cp_async


def _sim_cp_async_zfill(nbytes: int):
    def cp_async(smem, smem_index, src, src_index, read_bytes):
        count = nbytes // np.asarray(src).itemsize
        data = np.zeros(count, np.asarray(src).dtype)
        read = int(read_bytes) // np.asarray(src).itemsize
        data[:read] = src[src_index:src_index + read]  # NOTE: read at issue
        _copies().open.append((smem, int(smem_index), data))

    return cp_async


def sim_cp_async_commit():
    state = _copies()
    state.groups.append(state.open)
    state.open = []


def _sim_cp_async_wait(n: int):
    def wait():
        state = _copies()
        while len(state.groups) > n:
            for smem, start, data in state.groups.pop(0):
                smem[start:start + len(data)] = data

    return wait


def _sim_pack(kind: str):
    def pack(hi, lo):
        with np.errstate(over="ignore"):  # NOTE: beyond the narrow type's range: inf, as cvt.rn gives
            bits = np.array([lo, hi], dtype=np.float32).astype(_NARROW[kind]).view(np.uint16)
        return np.uint32(int(bits[0]) | (int(bits[1]) << 16))

    return pack


sim_mma_m16n8k16_bf16, sim_mma_m16n8k16_f16 = _sim_mma("bf16"), _sim_mma("f16")
sim_ldmatrix_x1, sim_ldmatrix_x2, sim_ldmatrix_x4 = (_sim_ldmatrix(n, False) for n in (1, 2, 4))
sim_ldmatrix_x1_trans, sim_ldmatrix_x2_trans, sim_ldmatrix_x4_trans = (_sim_ldmatrix(n, True) for n in (1, 2, 4))
sim_cp_async4, sim_cp_async8, sim_cp_async16 = (_sim_cp_async(n) for n in (4, 8, 16))
sim_cp_async_zfill4, sim_cp_async_zfill8, sim_cp_async_zfill16 = (_sim_cp_async_zfill(n) for n in (4, 8, 16))
SIM_CP_ASYNC_WAIT = tuple(_sim_cp_async_wait(n) for n in range(8))
sim_pack_bf16x2, sim_pack_f16x2 = _sim_pack("bf16"), _sim_pack("f16")

#: the names above, for generated code: ``name -> (GPU intrinsic, simulator model)``
INSTRUCTIONS = {
    "mma_m16n8k16_bf16": (mma_m16n8k16_bf16, sim_mma_m16n8k16_bf16),
    "mma_m16n8k16_f16": (mma_m16n8k16_f16, sim_mma_m16n8k16_f16),
    **{f"ldmatrix_x{n}{s}": (globals()[f"ldmatrix_x{n}{s}"], globals()[f"sim_ldmatrix_x{n}{s}"])
       for n in (1, 2, 4) for s in ("", "_trans")},
    **{f"cp_async{n}": (globals()[f"cp_async{n}"], globals()[f"sim_cp_async{n}"]) for n in (4, 8, 16)},
    **{f"cp_async_zfill{n}": (globals()[f"cp_async_zfill{n}"], globals()[f"sim_cp_async_zfill{n}"])
       for n in (4, 8, 16)},
    "cp_async_commit": (cp_async_commit, sim_cp_async_commit),
    **{f"cp_async_wait_{n}": (CP_ASYNC_WAIT[n], SIM_CP_ASYNC_WAIT[n]) for n in range(8)},
    "pack_bf16x2": (pack_bf16x2, sim_pack_bf16x2),
    "load_pair": (load_pair, sim_load_pair),
    "pack_f16x2": (pack_f16x2, sim_pack_f16x2),
}


def instructions(simulator: bool) -> dict:
    """``name -> function`` for kernels that run on the GPU or in the simulator."""
    return {name: pair[1 if simulator else 0] for name, pair in INSTRUCTIONS.items()}
