"""Loop-nest IR -> Numba CUDA Python source.

Conventions (docs/hardware.md, "Numba CUDA code generation"): index arithmetic in unsigned 32-bit integers,
float literals wrapped in ``float32(...)``, per-thread buffers as
``cuda.local.array`` with constant shapes (registers once loops over them are
unrolled), and every global buffer passed as a flat 1-D array. ``unroll`` and
``vectorize`` loops stay ``for`` loops of constant trip count in the source, flagged in
the module's ``UNROLL_LOOPS`` table (kernel -> one flag per ``for`` statement, in source
order), and NVVM unrolls them fully (``nvvm_unroll``): unrolling in the Python source
made basic blocks that numba-cuda's front end takes minutes over. 16-bit floats travel as their
bit patterns (uint16) in global memory and are float32 in registers.

A ``vectorize`` loop over 2, 4, 8 or 16 lanes whose accesses are consecutive and aligned
becomes one load or store of up to 128 bits per buffer (``vector_access``); the module
then lists the global arguments it accesses that way in ``VECTOR_ALIGNMENT``
(argument name -> bytes), which the runtime checks. Other lanes stay scalar.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import replace

import numpy as np

from ..dtypes import host_dtype, is_float
from ..errors import CodegenError, InternalError
from ..ir.expr import (And, Binary, Call, Cast, Compare, Expr, FloatImm, IntImm, Load, Select, Var, WarpShuffle,
                       binary)
from ..ir.functions import SCALAR_FUNCTIONS, scalar_function
from ..ir.lanes import is_multiple, lane_form, uniform_condition
from ..ir.simplify import simplify
from ..ir.stmt import (BLOCK_TAGS, THREAD_TAGS, Allocate, AsyncCommit, AsyncWait, Barrier, BarrierArrive, BarrierInit,
                       BarrierWait, For, FragmentLoad, Kernel, Program, ProxyFence, RegisterPairLoad, Seq, Specialized,
                       Store, TileCopy, WarpgroupFence, WarpgroupMma, WarpgroupWait, WarpMma)
from ..ir.visitor import free_vars, rewrite, substitute, walk
from ..target import get_target
from ..target.storage import (NARROW_FLOATS, REGISTER_TYPE, STORAGE_TYPE, SWIZZLE_ALIGNMENT, VECTOR_BYTES,
                              VECTOR_WIDTHS, allocated_buffers, element_bytes, shared_layout, storage_type,
                              stored_as_bits)
from . import nvvm_unroll
from .exact_division import correction_is_exact
from .module_text import (ASYNC_IMPORTS, BULK_COPY_IMPORTS, INDEX_CONSTANTS_COMMENT, MMA_IMPORTS, NARROW_IMPORTS, PRELUDE_GPU,
                          PRELUDE_SIM, VECTOR_IMPORTS, ZERO_FILL_IMPORTS, warpgroup_definitions)
from .names import BUILTIN_NAMES, Namer, module_level_names
from .value_patterns import clamped_within, constant_divisor, exact_reciprocal, rounded_and_clamped

#: elements a 32-bit index can address; larger buffers get 64-bit index arithmetic
UINT32_ELEMENTS = 2**32



class KernelWriter:
    def __init__(self, kernel: Kernel, simulator: bool, target=None, reserved=BUILTIN_NAMES):
        self.kernel = kernel
        self.simulator = simulator
        self.target = get_target(target)
        self.name = Namer(reserved)
        self.lines: list[str] = []
        self.uses_narrow = False
        self.uses_async = False  # cp.async copies, commits, waits
        self.uses_zero_fill = False  # cp.async copies that may read nothing and zero-fill
        self.uses_bulk_copy = False  # TMA copies and mbarriers
        self.producing = False  # writing a warp-specialized kernel's producer part
        self.uses_mma = False  # warp-wide matrix instructions and their operand packing
        #: warpgroup instructions this kernel calls: module-level name -> the factory call
        #: of ``tcomp.codegen.warpgroup_mma`` that builds it
        self.warpgroup_intrinsics: dict = {}
        self.dynamic_shared = 0  # bytes of dynamic shared memory the kernel declares
        self.dynamic_bases: set = set()
        self.lane_values: dict = {}  # placeholder Var -> name of a lane of a vector load
        self.vector_alignment: dict = {}  # global buffer name -> bytes its vector accesses need
        self.uses_vector = False
        self.unroll_flags: list[bool] = []  # per emitted ``for`` statement: NVVM unrolls it
        self.index_constants: dict = {}  # ``_u32_N`` / ``_u64_N`` -> (its type, N), the ones the kernel uses

    # ------------------------------------------------------------------ expressions

    def index(self, e: Expr, wide: bool = False) -> str:
        """An integer index expression, computed in uint32 (in uint64 when ``wide``)."""
        if isinstance(e, IntImm):
            return self.constant(e.value, wide)
        if isinstance(e, Var):
            return f"uint64({self.name(e, e.name)})" if wide else self.name(e, e.name)
        if isinstance(e, Binary) and e.op in ("+", "-", "*", "//", "%"):
            return f"({self.index(e.a, wide)} {e.op} {self.index(e.b, wide)})"
        if isinstance(e, Binary) and e.op == "^":  # NOTE: numba widens bitwise results; keep the index's type
            return f"{'uint64' if wide else 'uint32'}({self.index(e.a, wide)} ^ {self.index(e.b, wide)})"
        if isinstance(e, Binary) and e.op in ("max", "min"):
            return f"{e.op}({self.index(e.a, wide)}, {self.index(e.b, wide)})"
        if isinstance(e, Load) and not is_float(e.dtype):
            return f"{'uint64' if wide else 'uint32'}({self.value(e)})"
        raise CodegenError(f"unsupported index expression {e}")

    def constant(self, value: int, wide: bool = False) -> str:
        """The module-level name of an index constant (see ``index_constants``)."""
        typ, value = ("uint64", value) if wide else ("uint32", value & 0xFFFFFFFF)
        name = f"_u{typ[4:]}_{value}"
        self.index_constants[name] = (typ, value)
        return name

    def flat_index(self, buf, e: Expr) -> str:
        """The index of an element of ``buf``: 32-bit arithmetic, or 64-bit where the
        buffer has more elements than a uint32 can count."""
        return self.index(e, wide=buf.size > UINT32_ELEMENTS)

    def cond(self, e: Expr) -> str:
        if isinstance(e, And):
            return f"{self.cond(e.a)} and {self.cond(e.b)}"
        if isinstance(e, Compare):
            if is_float(e.a.dtype):
                return f"({self.value(e.a)} {e.op} {self.value(e.b)})"
            return f"({self.index(e.a)} {e.op} {self.index(e.b)})"
        raise CodegenError(f"unsupported condition {e}")

    def value(self, e: Expr) -> str:
        """A data value, in its register type."""
        if isinstance(e, FloatImm):
            # a literal of a 16- or 8-bit float holds that dtype's value (0.01 in bf16 is
            # 0.010009765625), as tc.evaluate has it
            value = float(np.asarray(e.value).astype(host_dtype(e.dtype))) if e.dtype in NARROW_FLOATS else e.value
            if math.isinf(value):
                return "float32(math.inf)" if value > 0 else "float32(-math.inf)"
            return f"float32({value!r})"
        if isinstance(e, IntImm):
            return f"{REGISTER_TYPE[e.dtype]}({e.value})"
        if isinstance(e, Var):
            if e in self.lane_values:
                return self.lane_values[e]
            return f"int32({self.name(e, e.name)})"
        if isinstance(e, Load):
            return self.load(e)
        if isinstance(e, Binary):
            return self.binary(e)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Cast):
            return self.cast(e)
        if isinstance(e, Select):
            return f"({self.value(e.a)} if {self.cond(e.cond)} else {self.value(e.b)})"
        if isinstance(e, WarpShuffle):
            scratch = f", {self.name(('shuffle scratch',), SHUFFLE_SCRATCH)}" if self.simulator else ""
            return f"_shfl({self.value(e.value)}, {self.index(e.lane)}{scratch})"
        raise CodegenError(f"unsupported expression {type(e).__name__}: {e}")

    def load(self, e: Load) -> str:
        buf = e.buffer
        return self.register_value(buf, f"{self.name(buf, buf.name)}[{self.flat_index(buf, e.index)}]")

    def load_bits(self, e: Load) -> str:
        """The stored bits of element ``e`` (a copy between two buffers that both hold bits)."""
        return f"{self.name(e.buffer, e.buffer.name)}[{self.flat_index(e.buffer, e.index)}]"

    def register_value(self, buf, stored: str) -> str:
        """An element of ``buf`` as read from memory (``stored``), in its register type:
        a 16/8-bit float in global or shared memory arrives as its bits (``_load_bfloat16``
        etc.)."""
        if stored_as_bits(buf):
            self.uses_narrow = True
            return f"_load_{buf.dtype}({stored})"
        return stored

    def binary(self, e: Binary) -> str:
        dtype = e.a.dtype
        a, b = self.value(e.a), self.value(e.b)
        reciprocal = exact_reciprocal(e)
        if reciprocal is not None:
            return f"({a} * float32({reciprocal!r}))"
        if e.op in ("max", "min"):
            text = f"{e.op}({a}, {b})"
        elif e.op == "/" and not is_float(dtype):
            text = f"(float32({a}) / float32({b}))"
        elif e.op == "//" :
            text = f"({a} // {b})"
        else:
            text = f"({a} {e.op} {b})"
        if not is_float(dtype) and e.op in ("+", "-", "*", "//", "%"):
            text = f"{REGISTER_TYPE[dtype]}{text}" if text.startswith("(") else f"{REGISTER_TYPE[dtype]}({text})"
        return self.round_to(text, dtype)

    def round_to(self, text: str, dtype: str) -> str:
        if dtype in NARROW_FLOATS:
            self.uses_narrow = True
            return f"_round_{dtype}({text})"
        return text

    def call(self, e: Call) -> str:
        """A scalar function's device code (``tcomp.ir.functions``), rounded to its dtype."""
        try:
            fn = scalar_function(e.name)
        except KeyError as err:
            raise CodegenError(str(err.args[0])) from None
        return self.round_to(fn.device_code(*(self.value(a) for a in e.args)), e.dtype)

    def cast(self, e: Cast) -> str:
        src, dst = e.value.dtype, e.dtype
        if dst == "int8" and is_float(src):
            quantized = self.int8_quantize(e.value)
            if quantized is not None:
                return quantized
        x = self.value(e.value)
        if is_float(dst):
            if not is_float(src):
                return self.round_to(f"float32({x})", dst)
            return self.round_to(x, dst) if dst != src else x
        if is_float(src):
            if dst == "int8":
                if clamped_within(e.value, -128.0, 127.0):
                    return f"int8({x})"
                return f"int8(min(max({x}, float32(-128.0)), float32(127.0)))"
            return f"_to_int32({x})"
        return f"{REGISTER_TYPE[dst]}({x})"

    def int8_quantize(self, e: Expr) -> str | None:
        """``tc.quantize``'s int8 (``e`` rounded and clamped already) on the FMA pipe, by a
        constant scale through the corrected reciprocal; None when ``e`` is not that."""
        rounded = rounded_and_clamped(e, -128.0, 127.0)
        if rounded is None:
            return None
        value, lo, hi = rounded
        bounds = f"float32({lo!r}), float32({hi!r})"
        if exact_reciprocal(value) is not None:
            return f"_round_clamp_int8({self.value(value)}, {bounds})"  # a multiplication: see binary()
        divisor = constant_divisor(value)
        if divisor is not None and correction_is_exact(divisor):
            reciprocal = float(np.float32(1.0) / np.float32(divisor))
            return (f"_divide_round_clamp_int8({self.value(value.a)}, float32({divisor!r}), "
                    f"float32({reciprocal!r}), {bounds})")
        return f"_round_clamp_int8({self.value(value)}, {bounds})"

    # ------------------------------------------------------------------ statements

    def emit(self, line: str, depth: int) -> None:
        self.lines.append("    " * depth + line)

    def stmt(self, s, depth: int) -> None:
        if isinstance(s, Seq):
            for x in s.stmts:
                self.stmt(x, depth)
        elif isinstance(s, For):
            self.loop(s, depth)
        elif isinstance(s, Store):
            self.store(s, depth)
        elif isinstance(s, Allocate):
            self.stmt(s.body, depth)  # storage is declared at the top of the kernel
        elif isinstance(s, Barrier) and s.threads is not None:
            self.emit(f"_named_barrier({self.constant(CONSUMER_BARRIER)}, {self.constant(s.threads)})", depth)
        elif isinstance(s, Barrier):
            self.emit("cuda.syncthreads()", depth)
        elif isinstance(s, AsyncCommit):
            self.uses_async = True
            self.emit("_cp_async_commit()", depth)
        elif isinstance(s, AsyncWait):
            self.uses_async = True
            self.emit(f"_cp_async_wait_{s.pending}()", depth)
        elif isinstance(s, WarpMma):
            self.warp_mma(s, depth)
        elif isinstance(s, FragmentLoad):
            self.fragment_load(s, depth)
        elif isinstance(s, RegisterPairLoad):
            self.register_pair_load(s, depth)
        elif isinstance(s, WarpgroupMma):
            self.warpgroup_mma(s, depth)
        elif isinstance(s, WarpgroupFence):
            self.accumulators_through("wgmma_fence_tied", (), s.accumulators, depth)
        elif isinstance(s, WarpgroupWait):
            if s.commit:
                self.emit(f"{self.warpgroup_intrinsic('_wgmma_commit', 'wgmma_commit', None)}()", depth)
            self.accumulators_through("wgmma_wait_tied", (s.pending,), s.accumulators, depth)
        elif isinstance(s, ProxyFence):
            self.emit(f"{self.warpgroup_intrinsic('_fence_proxy_async', 'fence_proxy_async', None)}()", depth)
        elif isinstance(s, BarrierInit):
            self.barrier_init(s, depth)
        elif isinstance(s, BarrierWait):
            bars = self.name(s.barriers, s.barriers.name)
            self.emit(f"_mbarrier_wait({bars}, {self.index(s.slot)}, {self.index(s.parity)})", depth)
        elif isinstance(s, TileCopy):
            self.tile_copy(s, depth)
        elif isinstance(s, BarrierArrive):
            lane0 = f"cuda.threadIdx.x % {self.constant(32)} == {self.constant(0)}"
            guard = lane0 if s.predicate is None else f"{lane0} and {self.cond(s.predicate)}"
            self.emit(f"if {guard}:", depth)
            self.emit(f"_mbarrier_arrive({self.name(s.barriers, s.barriers.name)}, {self.index(s.slot)})", depth + 1)
        elif isinstance(s, Specialized):
            self.specialized(s, depth)
        else:
            raise InternalError(f"cannot emit {type(s).__name__}")

    def barrier_init(self, s: BarrierInit, depth: int) -> None:
        """The block's first thread readies the barriers and fences the inits (a block
        barrier follows in the IR)."""
        bars = self.name(s.barriers, s.barriers.name)
        self.emit(f"if {self.name(FIRST_THREAD, '_first_thread')}:", depth)
        for slot in range(s.barriers.size):
            self.emit(f"_mbarrier_init({bars}, {self.constant(slot)}, {self.constant(s.count)})", depth + 1)
        self.emit("_fence_barrier_init()", depth + 1)

    def specialized(self, s: Specialized, depth: int) -> None:
        """The producer warpgroup's part (its first thread's), else the consumers'."""
        self.emit(f"if cuda.threadIdx.y == {self.constant(s.consumer_warpgroups)}:", depth)
        self.emit(f"if cuda.threadIdx.x == {self.constant(0)}:", depth + 1)
        self.producing = True
        self.stmt(s.producer, depth + 2)
        self.producing = False
        self.emit("else:", depth)
        self.stmt(s.consumers, depth + 1)

    def tile_copy(self, s: TileCopy, depth: int) -> None:
        """The block's first thread announces a slot's bytes and issues its TMA boxes."""
        # NOTE: in a producer warpgroup's part only its first thread runs at all
        guards = ([] if self.producing else [self.name(FIRST_THREAD, "_first_thread")]) + \
            ([] if s.predicate is None else [self.cond(s.predicate)])
        bars, slot = self.name(s.barriers, s.barriers.name), self.index(s.slot)
        if guards:
            self.emit(f"if {' and '.join(guards)}:", depth)
            depth += 1
        self.emit(f"_mbarrier_arrive_expect({bars}, {slot}, {self.constant(s.nbytes)})", depth)
        for box in s.boxes:
            at = ", ".join(self.index(c) for c in box.coords)
            self.emit(f"_tma_load_{len(box.coords)}d({self.name(box.buffer, box.buffer.name)}, {self.index(box.index)}, "
                      f"{self.name(box.tensor_map, box.tensor_map.name)}, {at}, {bars}, {slot})", depth)

    def warp_mma(self, s: WarpMma, depth: int) -> None:
        """One ``mma.sync``: this lane's operand halves packed two to a register, its four
        accumulators in and out (``tcomp.lower.tensorize`` gives the layout)."""
        self.uses_mma = True
        kind = {"bfloat16": "bf16", "float16": "f16"}[s.dtype]
        regs = []
        for name, values, loaded in (("a", s.a_values, s.a_registers), ("b", s.b_values, s.b_registers)):
            if loaded:
                regs.extend(self.value(r) for r in loaded)
                continue
            for r in range(len(values) // 2):
                reg = self.name(object(), f"_mma_{name}{r}")
                self.emit(f"{reg} = {self.operand_register(values[2 * r], values[2 * r + 1], s.dtype, kind)}", depth)
                regs.append(reg)
        acc = self.name(s.acc, s.acc.name)
        slots = [f"{acc}[{self.flat_index(s.acc, i)}]" for i in s.acc_index]
        out = [self.name(object(), f"_mma_d{r}") for r in range(4)]
        self.emit(f"{', '.join(out)} = _{s.intrinsic}_{kind}({', '.join(regs + slots)})", depth)
        for slot, value in zip(slots, out):
            self.emit(f"{slot} = {value}", depth)

    def warpgroup_intrinsic(self, name: str, factory: str, args) -> str:
        """``name``, bound at module level to ``factory(*args)`` of ``tcomp.codegen.
        warpgroup_mma`` (or to ``factory`` itself where ``args`` is None)."""
        self.warpgroup_intrinsics[name] = (factory, args)
        return name

    def warpgroup_mma(self, s: WarpgroupMma, depth: int) -> None:
        """One ``wgmma.mma_async``: two descriptors, and the accumulators in and out of the
        local buffer at the instruction's constant offsets from the first."""
        kind = {"bfloat16": "bf16", "float16": "f16"}[s.dtype]
        first = self.flat_index(s.acc, s.acc_index[0])
        offsets = tuple(int(simplify(binary("-", i, s.acc_index[0])).value) for i in s.acc_index)
        tag = zlib.crc32(repr(offsets).encode())
        mma = self.warpgroup_intrinsic(f"_wgmma_n{s.width}_{kind}_{'t' if s.trans_b else 'k'}_{tag:08x}", "wgmma",
                                       (s.width, kind, s.trans_b, offsets))
        describe = self.warpgroup_intrinsic("_wgmma_descriptor", "wgmma_descriptor", None)
        descs = [f"{describe}({self.name(buf, buf.name)}, {self.flat_index(buf, start)}, {self.constant(lbo)}, "
                 f"{self.constant(sbo)}, {self.constant(mode)})"
                 for buf, start, (lbo, sbo), mode in ((s.a, s.a_start, s.a_strides, s.modes[0]),
                                                      (s.b, s.b_start, s.b_strides, s.modes[1]))]
        self.emit(f"{mma}({descs[0]}, {descs[1]}, {self.name(s.acc, s.acc.name)}, {first})", depth)

    def accumulators_through(self, factory: str, args: tuple, accumulators: tuple, depth: int) -> None:
        """A fence or wait with the first accumulator buffer tied through it, the others
        through empty asm after it (so that no access of them crosses it)."""
        for n, acc in enumerate(accumulators):
            verb, verb_args = (factory, args) if n == 0 else ("accumulator_hold", ())
            name = self.warpgroup_intrinsic(f"_{verb}_{'_'.join(map(str, verb_args + (acc.size,)))}", verb,
                                            verb_args + (acc.size,))
            self.emit(f"{name}({self.name(acc, acc.name)})", depth)

    def fragment_load(self, s: FragmentLoad, depth: int) -> None:
        """One ``ldmatrix``: this lane's ``count`` registers into the fragment buffer."""
        self.uses_mma = True
        out = [self.name(object(), f"_frag{m}") for m in range(s.count)]
        src = self.name(s.src, s.src.name)
        self.emit(f"{', '.join(out)}{',' if s.count == 1 else ''} = "
                  f"_ldmatrix_x{s.count}{'_trans' if s.trans else ''}({src}, {self.flat_index(s.src, s.src_index)})", depth)
        dst = self.name(s.dst, s.dst.name)
        for value, index in zip(out, s.dst_index):
            self.emit(f"{dst}[{self.flat_index(s.dst, index)}] = int32({value})", depth)

    def register_pair_load(self, s: RegisterPairLoad, depth: int) -> None:
        """Two vector loads of 16-bit bit patterns, packed lane by lane into operand registers."""
        self.uses_mma = self.uses_vector = True
        nbytes = element_bytes(s.src) * s.width
        self.vector_alignment[s.src.name] = max(self.vector_alignment.get(s.src.name, 0), nbytes)
        src = self.name(s.src, s.src.name)
        runs = []
        for which, index in (("lo", s.low_index), ("hi", s.high_index)):
            names = [self.name(object(), f"{s.src.name}_{which}{c}") for c in range(s.width)]
            self.emit(f"{', '.join(names)} = _load{s.width}({src}, {self.flat_index(s.src, index)})", depth)
            runs.append(names)
        dst = self.name(s.dst, s.dst.name)
        for low, high, index in zip(*runs, s.dst_index):
            self.emit(f"{dst}[{self.flat_index(s.dst, index)}] = "
                      f"int32((uint32({high}) << {self.constant(16)}) | uint32({low}))", depth)

    def operand_register(self, lo: Expr, hi: Expr, dtype: str, kind: str) -> str:
        """One 32-bit operand register of two 16-bit values (``lo`` in the low half): a
        single load where both are consecutive elements of a buffer of their bits, the two
        bit patterns side by side where they are elements of such buffers, else the two
        float32 values rounded and packed (``cvt.rn``; exact for values of ``dtype``)."""
        loads = [e.value if isinstance(e, Cast) and e.dtype == "float32" else e for e in (lo, hi)]
        if all(isinstance(e, Load) and e.dtype == dtype and stored_as_bits(e.buffer) for e in loads):
            low, high = loads
            if low.buffer is high.buffer and is_multiple(low.index, 2) and \
                    str(simplify(binary("-", high.index, low.index))) == "1":
                return f"_load_pair({self.name(low.buffer, low.buffer.name)}, {self.flat_index(low.buffer, low.index)})"
            return f"((uint32({self.load_bits(high)}) << {self.constant(16)}) | uint32({self.load_bits(low)}))"
        return f"_pack_{kind}x2({self.value(hi)}, {self.value(lo)})"

    def loop(self, s: For, depth: int) -> None:
        var = self.name(s.var, s.var.name)
        if s.kind in BLOCK_TAGS + THREAD_TAGS:
            self.emit(f"{var} = uint32(cuda.{s.kind})", depth)
            self.stmt(s.body, depth)
        elif s.kind == "vectorize" and self.vector_loop(s, depth):
            return
        else:
            guard = _invariant_guard(s)
            if guard is not None:  # tested once, not in every iteration (see _invariant_guard)
                self.emit(f"if {self.cond(guard)}:", depth)
                depth += 1
                s = replace(s, body=_unguarded(s.body))
            self.unroll_flags.append(s.kind in ("unroll", "vectorize"))
            self.emit(f"for {var} in range({self.constant(s.extent)}):", depth)
            self.stmt(s.body, depth + 1)

    def store(self, s: Store, depth: int) -> None:
        buf = s.buffer
        if s.asynchronous:
            line = self.async_copy(element_bytes(buf), buf, s.index, s.value.buffer, s.value.index, s.in_bounds)
        else:
            value = self.load_bits(s.value) if _bit_copy(s) else self.storage_value(buf, self.value(s.value))
            if s.in_bounds is not None:  # the padding past a tensor's edge: a zero, nothing read
                value = f"({value} if {self.cond(s.in_bounds)} else {storage_type(buf)}(0))"
            line = f"{self.name(buf, buf.name)}[{self.flat_index(buf, s.index)}] = {value}"
        if s.predicate is not None:
            self.emit(f"if {self.cond(s.predicate)}:", depth)
            self.emit(line, depth + 1)
        else:
            self.emit(line, depth)

    def async_copy(self, nbytes: int, dst, dst_index: Expr, src, src_index: Expr, in_bounds=None) -> str:
        """A cp.async of ``nbytes`` from element ``src_index`` of global ``src`` to element
        ``dst_index`` of shared ``dst``; where ``in_bounds`` is given and false, one that
        reads nothing (from the start of ``src``) and zero-fills its ``nbytes``."""
        if nbytes not in (4, 8, 16):
            raise CodegenError(f"cp.async into {dst.name} would copy {nbytes} bytes; it copies 4, 8 or 16: the "
                               f"lanes of its fill are not consecutive on both sides, so they cannot move together")
        self.uses_async = True
        head = f"{self.name(dst, dst.name)}, {self.flat_index(dst, dst_index)}, {self.name(src, src.name)}"
        source = self.flat_index(src, src_index)
        if in_bounds is None:
            return f"_cp_async{nbytes}({head}, {source})"
        self.uses_zero_fill = True
        cond = self.cond(in_bounds)
        start = self.constant(0, wide=src.size > UINT32_ELEMENTS)
        return (f"_cp_async_zfill{nbytes}({head}, ({source} if {cond} else {start}), "
                f"({self.constant(nbytes)} if {cond} else {self.constant(0)}))")

    def async_vector_copy(self, loop: For, store: Store, depth: int) -> bool:
        """One 4-, 8- or 16-byte cp.async for the lanes of ``loop`` where they are consecutive
        and aligned on both sides; False (nothing emitted) elsewhere."""
        nbytes = element_bytes(store.buffer) * loop.extent
        uniform, predicate = _lane_uniform(store.predicate, loop)
        in_bounds_uniform, in_bounds = _lane_uniform(store.in_bounds, loop)
        if not uniform or not in_bounds_uniform or nbytes not in (4, 8, 16):
            return False
        dst_base = self._vector_base(store.buffer, store.index, loop)
        src_base = self._vector_base(store.value.buffer, store.value.index, loop)
        if dst_base is None or src_base is None:
            return False
        if predicate is not None:
            self.emit(f"if {self.cond(predicate)}:", depth)
            depth += 1
        self.emit(self.async_copy(nbytes, store.buffer, dst_base, store.value.buffer, src_base, in_bounds), depth)
        return True

    def storage_value(self, buf, value: str) -> str:
        """``value`` as ``buf`` stores it: a 16/8-bit float in global or shared memory
        travels as its bits (``_store_bfloat16`` etc.)."""
        if stored_as_bits(buf):
            self.uses_narrow = True
            return f"_store_{buf.dtype}({value})"
        return value

    def vector_loop(self, loop: For, depth: int) -> bool:
        """Emit a vectorized loop with vector loads/stores where its lanes allow; False
        (nothing emitted) when no access of it can be a vector."""
        store = loop.body.stmts[0] if isinstance(loop.body, Seq) and len(loop.body.stmts) == 1 else loop.body
        width, lane = loop.extent, loop.var
        if not isinstance(store, Store) or width not in VECTOR_WIDTHS:
            return False
        if store.asynchronous:
            return self.async_vector_copy(loop, store, depth)
        uniform, predicate = _lane_uniform(store.predicate, loop)
        in_bounds_uniform, in_bounds = _lane_uniform(store.in_bounds, loop)
        if not uniform or not in_bounds_uniform:
            return False
        loads = []  # (load, its first element) of the loads that become vectors
        for node in walk(store.value):
            if not isinstance(node, Load) or node.buffer.scope == "local" or any(node is seen for seen, _ in loads):
                continue  # registers are read one by one: a vector read could move them to local memory
            base = self._vector_base(node.buffer, node.index, loop)
            if base is not None:
                loads.append((node, base))
        store_base = self._vector_base(store.buffer, store.index, loop)
        if store.buffer.scope == "local":
            store_base = None  # registers: scalar stores are free
        if not loads and store_base is None:
            return False
        self.uses_vector = True
        if predicate is not None:
            self.emit(f"if {self.cond(predicate)}:", depth)
            depth += 1
        if in_bounds is not None:  # the padding past a tensor's edge: zeros, nothing read
            self.emit(f"if not ({self.cond(in_bounds)}):", depth)
            self.vector_of_zeros(store, store_base, width, lane, depth + 1)
            self.emit("else:", depth)
            depth += 1
        lane_vars = {}
        for load, base in loads:
            names = [self.name(object(), f"{load.buffer.name}_v{n}") for n in range(width)]
            self.emit(f"{', '.join(names)} = _load{width}({self.name(load.buffer, load.buffer.name)}, "
                      f"{self.flat_index(load.buffer, base)})", depth)
            lane_vars[load] = [Var(n, load.dtype) for n in names]
            self.lane_values.update({v: self.register_value(load.buffer, v.name) for v in lane_vars[load]})
        buf = self.name(store.buffer, store.buffer.name)
        if _bit_copy(store) and store.value in lane_vars:  # the loaded bits, stored as they are
            stored = [v.name for v in lane_vars[store.value]]
        else:
            values = []
            for n in range(width):
                value = rewrite(store.value, lambda e: lane_vars[e][n] if e in lane_vars else None)
                values.append(self.value(_fold_indices(substitute(value, {lane: IntImm(n)}))))
            stored = [self.storage_value(store.buffer, v) for v in values]
        if store_base is not None:
            self.emit(f"_store{width}({buf}, {self.flat_index(store.buffer, store_base)}, ({', '.join(stored)}))",
                      depth)
        else:
            for n in range(width):
                index = simplify(substitute(store.index, {lane: IntImm(n)}))
                self.emit(f"{buf}[{self.flat_index(store.buffer, index)}] = {stored[n]}", depth)
        return True

    def vector_of_zeros(self, store: Store, store_base, width: int, lane: Var, depth: int) -> None:
        """Zeros in the ``width`` elements that ``store`` writes (one vector store where
        ``store_base`` is its first element)."""
        buf = self.name(store.buffer, store.buffer.name)
        zero = f"{storage_type(store.buffer)}(0)"
        if store_base is not None:
            self.emit(f"_store{width}({buf}, {self.flat_index(store.buffer, store_base)}, "
                      f"({', '.join([zero] * width)}))", depth)
            return
        for n in range(width):
            index = simplify(substitute(store.index, {lane: IntImm(n)}))
            self.emit(f"{buf}[{self.flat_index(store.buffer, index)}] = {zero}", depth)

    def _vector_base(self, buffer, index: Expr, loop: For):
        """The first element of a vector access of ``buffer`` by ``loop``'s lanes, or None
        when the lanes are not consecutive and aligned."""
        nbytes = element_bytes(buffer) * loop.extent
        if nbytes > VECTOR_BYTES:
            return None
        form = lane_form(index, loop.var, loop.extent)
        if form is None or form[1] != 1 or not is_multiple(form[0], loop.extent):
            return None
        if buffer.scope == "global":
            self.vector_alignment[buffer.name] = max(self.vector_alignment.get(buffer.name, 0), nbytes)
        return form[0]

    # ------------------------------------------------------------------ kernel

    def write(self) -> str:
        k = self.kernel
        params = [self.name(b, b.name) for b in k.params] + [self.name(m, m.name) for m in k.tensor_maps]
        body_lines_start = len(self.lines)
        if k.tensor_maps or any(isinstance(n, BarrierInit) for n in walk(k.body)):
            self.uses_bulk_copy = True
            first = self.name(FIRST_THREAD, "_first_thread")
            self.emit(f"{first} = cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0 and cuda.threadIdx.z == 0", 1)
            if k.tensor_maps:
                self.emit(f"if {first}:", 1)
                for m in k.tensor_maps:  # the host wrote the maps: the copy engine reads them after
                    self.emit(f"_tensor_map_acquire({self.name(m, m.name)})", 2)
        declared = allocated_buffers(k)
        shared = [b for b in declared if b.scope == "shared"]
        layout = shared_layout(shared, k.shared_reuse)
        if self.simulator and any(isinstance(n, WarpShuffle) for n in walk(k.body)):
            threads = k.block[0] * k.block[1] * k.block[2]
            scratch = self.name(("shuffle scratch",), SHUFFLE_SCRATCH)
            self.emit(f"{scratch} = cuda.shared.array({threads}, float32)  # the simulator's shuffles", 1)
        if self.simulator and k.shared_reuse:
            self.declare_simulated_shared(shared, layout)
        elif not self.simulator and (layout.total_bytes > self.target.max_static_shared_bytes or layout.swizzled
                                     or k.shared_reuse):
            self.declare_dynamic_shared(shared, layout)
        for b in declared:
            if b.scope == "shared" and self.dynamic_shared:
                continue
            kind = "shared" if b.scope == "shared" else "local"
            align = ", alignment=16" if b.scope == "shared" and not self.simulator else ""
            self.emit(f"{self.name(b, b.name)} = cuda.{kind}.array({b.size}, {storage_type(b)}{align})", 1)
        self.stmt(k.body, 1)
        if len(self.lines) == body_lines_start:
            self.emit("pass", 1)
        bounds = launch_bounds(k)
        options = f", launch_bounds={bounds}" if bounds and not self.simulator else ""
        head = [f"@cuda.jit(cache={not self.simulator}{options})", f"def {k.name}({', '.join(params)}):"]
        return "\n".join(head + self.lines) + "\n"

    def declare_dynamic_shared(self, shared: list, layout) -> None:
        """The shared buffers as slices of the block's dynamic shared memory, where
        ``layout`` (``tcomp.target.storage.shared_layout``) places them: a block may have
        more than the target's ``max_static_shared_bytes`` of it (the module sets the
        function's limit and passes the size at every launch). With a swizzled buffer
        among them the slices start after the first 1024-byte boundary of the block's
        shared memory, found at run time."""
        aligned = layout.swizzled
        for b, offset in zip(shared, layout.offsets):
            elem = element_bytes(b)
            storage = storage_type(b)
            base = self.name(("dynamic shared", storage), f"_dynamic_shared_{storage}")
            base_shift = self.name(("dynamic shared shift", storage), f"{base}_shift")
            if base not in self.dynamic_bases:
                self.dynamic_bases.add(base)
                self.emit(f"{base} = cuda.shared.array(0, {storage})", 1)
                if aligned:
                    shift = self.warpgroup_intrinsic("_shared_alignment_shift", "shared_alignment_shift", None)
                    self.emit(f"{base_shift} = {shift}({base}, {self.constant(SWIZZLE_ALIGNMENT)})", 1)
            start = offset // elem
            first = f"{base_shift} + {self.constant(start)}" if aligned else f"{start}"
            last = f"{base_shift} + {self.constant(start + b.size)}" if aligned else f"{start + b.size}"
            self.emit(f"{self.name(b, b.name)} = {base}[{first}:{last}]", 1)
        self.dynamic_shared = layout.total_bytes

    def declare_simulated_shared(self, shared: list, layout) -> None:
        """In the simulator, shared buffers that reuse others' bytes (``Kernel.shared_reuse``)
        as views of one byte array at ``layout``'s offsets: the simulator has no dynamic
        shared memory to alias."""
        base = self.name(("simulated shared",), "_shared_bytes")
        self.emit(f"{base} = cuda.shared.array({layout.total_bytes}, uint8)", 1)
        for b, offset in zip(shared, layout.offsets):
            nbytes = b.size * element_bytes(b)
            view = f"np.{storage_type(b)}"  # numpy's type: the simulator's arrays are numpy arrays
            self.emit(f"{self.name(b, b.name)} = {base}[{offset}:{offset + nbytes}].view({view})", 1)
        self.dynamic_shared = layout.total_bytes


#: the named barrier of a warp-specialized kernel's consumer threads (0 is __syncthreads')
CONSUMER_BARRIER = 1

#: the key of the kernel's flag: this thread is the block's first (it readies barriers,
#: issues TMA copies)
FIRST_THREAD = ("first thread",)

#: the simulator's stand-in for the lanes' registers that a shuffle reads (``_shfl``)
SHUFFLE_SCRATCH = "_shuffle_scratch"


def _bit_copy(store: Store) -> bool:
    """Is ``store`` a copy of a 16/8-bit float between two buffers that hold its bits?"""
    value = store.value
    return (isinstance(value, Load) and value.dtype == store.buffer.dtype and stored_as_bits(store.buffer)
            and stored_as_bits(value.buffer))


def _invariant_guard(loop: For):
    """The predicate of a serial loop whose body is stores that all carry it and that the
    loop's variable does not enter (a thread's guard, ``threadIdx.x < 32``, on the slices
    it adds), or None. Tested inside the loop, it is a branch between every two
    iterations, which keeps the compiler from issuing the next iteration's loads before
    the last one's arithmetic: 32 slices added one load latency after another."""
    stores = loop.body.stmts if isinstance(loop.body, Seq) else (loop.body,)
    if not stores or not all(isinstance(st, Store) and st.predicate is not None and not st.asynchronous
                             for st in stores):
        return None
    first = stores[0].predicate
    if any(str(st.predicate) != str(first) for st in stores[1:]) or loop.var in free_vars(first) \
            or any(isinstance(node, Load) for node in walk(first)):  # a value the loop may store to
        return None
    return first


def _unguarded(body):
    """``body`` (the stores of :func:`_invariant_guard`) without their predicate."""
    if isinstance(body, Seq):
        return Seq(tuple(replace(st, predicate=None) for st in body.stmts))
    return replace(body, predicate=None)


def _lane_uniform(condition, loop: For) -> tuple:
    """``(True, condition for all of the loop's lanes at once)`` (None: no condition), or
    ``(False, None)`` when it differs between lanes."""
    if condition is None or loop.var not in free_vars(condition):
        return True, condition
    condition = uniform_condition(condition, loop.var, loop.extent)
    return condition is not None, condition


def _fold_indices(e):
    """Simplify the indices of the loads in ``e`` after a substitution."""
    return rewrite(e, lambda n: Load(n.buffer, simplify(n.index)) if isinstance(n, Load) else None)


def launch_bounds(kernel: Kernel) -> tuple | None:
    """``(threads a block, 1)`` for ptxas where the kernel must fit its register budget to
    that many threads (a warp-specialized kernel: three or more warpgroups, 170 registers
    a thread at most for 384), else None (ptxas's choice)."""
    if any(isinstance(n, Specialized) for n in walk(kernel.body)):
        return (kernel.block[0] * kernel.block[1] * kernel.block[2], 1)
    return None


def kernel_signature(kernel: Kernel) -> tuple:
    """The numba signature of a generated kernel: a 1-D C-contiguous array per parameter,
    of its buffer's storage type, then one of 16 uint64 per tensor map."""
    from numba import types

    return (tuple(getattr(types, STORAGE_TYPE[b.dtype])[::1] for b in kernel.params)
            + (types.uint64[::1],) * len(kernel.tensor_maps))


def program_source(program: Program, simulator: bool, target=None) -> str:
    """The Python source of a module holding one ``@cuda.jit`` function per kernel, for
    ``target`` (default ``tcomp.target.DEFAULT_TARGET``).

    The kernels' variables avoid every name the module binds around them: where one of
    them took such a name (a tensor named ``_ldmatrix_x4``, say), the kernels are
    written again with the module's names reserved, which changes only their variables."""
    reserved = BUILTIN_NAMES
    while True:
        head, kernels, names = _module_parts(program, simulator, target, reserved)
        module_names = module_level_names(head) | {k.name for k in program.kernels}
        if not names & module_names:
            return head + "\n\n" + "\n\n".join(kernels)
        if module_names <= reserved:
            raise InternalError(f"kernel variables {sorted(names & module_names)} take module-level names")
        reserved = reserved | module_names


def _module_parts(program: Program, simulator: bool, target, reserved: frozenset) -> tuple:
    """(the module's text before its kernels, the kernels' texts, the names of the
    kernels' variables), the variables avoiding ``reserved``."""
    writers = [KernelWriter(k, simulator, target, reserved) for k in program.kernels]
    kernels = [w.write() for w in writers]
    variables = frozenset(name for w in writers for name in w.name.names.values())
    parts = [PRELUDE_SIM if simulator else PRELUDE_GPU]
    inline = "" if simulator else ', inline="always"'
    parts.extend(fn.helper.format(inline=inline) for fn in SCALAR_FUNCTIONS.values() if fn.helper)
    if any(w.uses_narrow for w in writers):
        parts.append(NARROW_IMPORTS.format(p="sim_" if simulator else ""))
    if any(w.uses_async for w in writers):
        parts.append(ASYNC_IMPORTS.format(p="sim_" if simulator else "", P="SIM_" if simulator else ""))
    if any(w.uses_zero_fill for w in writers):
        parts.append(ZERO_FILL_IMPORTS.format(p="sim_" if simulator else ""))
    if any(w.uses_bulk_copy for w in writers):
        parts.append(BULK_COPY_IMPORTS.format(p="sim_" if simulator else ""))
    if any(w.uses_mma for w in writers):
        parts.append(MMA_IMPORTS.format(p="sim_" if simulator else ""))
    if any(w.uses_vector for w in writers):
        parts.append(VECTOR_IMPORTS.format(prefix="sim_" if simulator else ""))
    warpgroup = {name: call for w in writers for name, call in w.warpgroup_intrinsics.items()}
    if warpgroup:
        parts.append(warpgroup_definitions(warpgroup, simulator))
    alignment: dict = {}
    for w in writers:
        for name, nbytes in w.vector_alignment.items():
            alignment[name] = max(alignment.get(name, 0), nbytes)
    parts.append(f"VECTOR_ALIGNMENT = {dict(sorted(alignment.items()))!r}")
    dynamic = {k.name: w.dynamic_shared for k, w in zip(program.kernels, writers) if w.dynamic_shared}
    parts.append(f"# bytes of dynamic shared memory per block, by kernel\nDYNAMIC_SHARED = {dynamic!r}")
    constants = {name: typed for w in writers for name, typed in w.index_constants.items()}
    definitions = "".join(f"{name} = {typ}({value})\n"
                          for name, (typ, value) in sorted(constants.items(), key=lambda item: item[1]))
    parts.append(INDEX_CONSTANTS_COMMENT + definitions)
    unroll = {k.name: tuple(w.unroll_flags) for k, w in zip(program.kernels, writers)}
    parts.append(f"# unroll pragmas: nvvm_unroll version {nvvm_unroll.REWRITE_VERSION}\nUNROLL_LOOPS = {unroll!r}")
    return "\n".join(parts), kernels, variables
