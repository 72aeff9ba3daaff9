"""The text of a generated module around its kernels: the preludes (imports and the
helpers every module defines, once for the GPU and once for the simulator), the imports of
the intrinsics a kernel uses, and the warpgroup instructions' module-level names.
``cuda_source.program_source`` puts them together."""

PRELUDE_GPU = '''\
import math
from numba import cuda, float32, int8, int32, uint8, uint16, uint32, uint64
from numba.cuda import libdevice

from tcomp.codegen.approximate_division import reciprocal as _reciprocal


@cuda.jit(device=True, inline="always")
def _rint(x):
    return libdevice.rintf(x)


@cuda.jit(device=True, inline="always")
def _shfl(x, lane):
    return cuda.shfl_sync(0xFFFFFFFF, x, lane)  # this warp's lane ``lane``'s x


@cuda.jit(device=True, inline="always")
def _exp(x):
    return math.exp(x)


@cuda.jit(device=True, inline="always")
def _to_int32(x):
    return int32(x)  # cvt.rzi.s32.f32: saturating, NaN -> 0


@cuda.jit(device=True, inline="always")
def _round_clamp_int8(x, lo, hi):
    # int8(min(max(rint(x), lo), hi)) without the conversion unit (a quarter of the FMA
    # rate): adding 1.5 * 2^23 rounds x to an integer, to nearest even, in the sum's low
    # mantissa bits (exactly for |x| < 2^22; beyond, the clamp decides either way), the
    # clamp runs on the sum, and the sum's bits less those of 1.5 * 2^23 are the integer.
    # NaN gives lo, as max.f32 does in the plain expression.
    r = min(max(x + float32(12582912.0), lo + float32(12582912.0)), hi + float32(12582912.0))
    return int8(libdevice.float_as_int(r) - int32(0x4B400000))


@cuda.jit(device=True, inline="always")
def _divide_round_clamp_int8(x, c, r, lo, hi):
    # _round_clamp_int8(x / c) for a constant c whose reciprocal r passes
    # exact_division.correction_is_exact: the correctly rounded quotient from one
    # multiplication and two FMAs instead of div.rn.f32. q0 is clamped to 2^23 first, so
    # that a huge x cannot make inf - inf (the int8 clamp decides those anyway).
    q0 = min(max(x * r, float32(-8388608.0)), float32(8388608.0))
    return _round_clamp_int8(libdevice.fmaf(libdevice.fmaf(-q0, c, x), r, q0), lo, hi)
'''

#: the GPU's float32 math functions behind scalar functions of tcomp.ir.functions: helper name ->
#: the call (Numba's math.sqrt is sqrt.rn.f32, correctly rounded; the others are libdevice's)
GPU_MATH = {"_sqrt": "math.sqrt(x)", "_rsqrt": "libdevice.rsqrtf(x)", "_tanh": "math.tanh(x)",
            "_erf": "math.erf(x)", "_log": "math.log(x)"}
PRELUDE_GPU += "".join(f'''

@cuda.jit(device=True, inline="always")
def {name}(x):
    return {call}
''' for name, call in GPU_MATH.items())

PRELUDE_SIM = '''\
import math
import numpy as np
from numba import cuda, float32, int8, int32, uint8, uint16, uint32, uint64

from tcomp.codegen.approximate_division import sim_reciprocal as _reciprocal


def _rint(x):
    return float32(np.rint(x))


def _shfl(x, lane, scratch):
    # shfl.sync in the simulator: every thread of the block posts its x, a barrier, each
    # reads its warp's lane ``lane`` (a warp: 32 consecutive threads of the block's linear
    # order, threadIdx.x fastest), a barrier
    me = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
    scratch[me] = x
    cuda.syncthreads()
    value = scratch[me - me % 32 + lane]
    cuda.syncthreads()
    return float32(value)


def _exp(x):
    with np.errstate(over="ignore"):
        return float32(np.exp(np.float32(x)))


def _sqrt(x):
    with np.errstate(invalid="ignore"):
        return float32(np.sqrt(np.float32(x)))


def _rsqrt(x):
    with np.errstate(invalid="ignore", divide="ignore"):
        return float32(1.0 / np.sqrt(np.float64(x)))


def _tanh(x):
    return float32(np.tanh(np.float32(x)))


def _erf(x):
    return float32(math.erf(float(x)))


def _log(x):
    with np.errstate(invalid="ignore", divide="ignore"):
        return float32(np.log(np.float32(x)))


def _to_int32(x):
    # the GPU's cvt.rzi.s32.f32: toward zero, saturating, NaN -> 0
    if x != x:
        return int32(0)
    return int32(min(max(np.trunc(np.float64(x)), -2147483648.0), 2147483647.0))


def _round_clamp_int8(x, lo, hi):
    return int8(min(max(_rint(x), lo), hi))


def _divide_round_clamp_int8(x, c, r, lo, hi):
    return _round_clamp_int8(float32(np.float32(x) / np.float32(c)), lo, hi)
'''

NARROW_IMPORTS = """
from tcomp.codegen.narrow_floats import (
    {p}round_bfloat16 as _round_bfloat16, {p}round_float16 as _round_float16,
    {p}round_float8_e4m3 as _round_float8_e4m3, {p}load_bfloat16 as _load_bfloat16,
    {p}store_bfloat16 as _store_bfloat16, {p}load_float16 as _load_float16,
    {p}store_float16 as _store_float16, {p}load_float8_e4m3 as _load_float8_e4m3,
    {p}store_float8_e4m3 as _store_float8_e4m3)
"""


#: index constants are module-level globals: numba freezes a global's value into the
#: kernel as a typed constant, where ``uint32(4)`` in the kernel is a call it must type
#: (a quarter of the front-end time of a tensor-core kernel, hundreds of constants)
INDEX_CONSTANTS_COMMENT = "# index constants, frozen into the kernels at compile time\n"


ASYNC_IMPORTS = """
from tcomp.codegen.warp_mma import (
    {p}cp_async4 as _cp_async4, {p}cp_async8 as _cp_async8, {p}cp_async16 as _cp_async16,
    {p}cp_async_commit as _cp_async_commit, {P}CP_ASYNC_WAIT as _CP_ASYNC_WAIT)
""" + "".join(f"_cp_async_wait_{n} = _CP_ASYNC_WAIT[{n}]\n" for n in range(8))

#: the copies that zero-fill a tile's padding past a tensor's edge (``Store.in_bounds``)
ZERO_FILL_IMPORTS = """
from tcomp.codegen.warp_mma import (
    {p}cp_async_zfill4 as _cp_async_zfill4, {p}cp_async_zfill8 as _cp_async_zfill8,
    {p}cp_async_zfill16 as _cp_async_zfill16)
"""

MMA_IMPORTS = """
from tcomp.codegen.warp_mma import (
    {p}mma_m16n8k16_bf16 as _mma_m16n8k16_bf16, {p}mma_m16n8k16_f16 as _mma_m16n8k16_f16,
    {p}pack_bf16x2 as _pack_bf16x2, {p}pack_f16x2 as _pack_f16x2, {p}load_pair as _load_pair,
    {p}ldmatrix_x1 as _ldmatrix_x1, {p}ldmatrix_x2 as _ldmatrix_x2, {p}ldmatrix_x4 as _ldmatrix_x4,
    {p}ldmatrix_x1_trans as _ldmatrix_x1_trans, {p}ldmatrix_x2_trans as _ldmatrix_x2_trans,
    {p}ldmatrix_x4_trans as _ldmatrix_x4_trans)
"""

#: TMA copies and the mbarriers they complete on (``tcomp.codegen.bulk_copy``)
BULK_COPY_IMPORTS = """
from tcomp.codegen.bulk_copy import (
    {p}mbarrier_init as _mbarrier_init, {p}fence_barrier_init as _fence_barrier_init,
    {p}mbarrier_arrive_expect as _mbarrier_arrive_expect, {p}mbarrier_wait as _mbarrier_wait,
    {p}tensor_map_acquire as _tensor_map_acquire, {p}tma_load_2d as _tma_load_2d, {p}tma_load_3d as _tma_load_3d,
    {p}mbarrier_arrive as _mbarrier_arrive, {p}named_barrier as _named_barrier)
"""


def warpgroup_definitions(intrinsics: dict, simulator: bool) -> str:
    """Module-level names of the warpgroup instructions the kernels call."""
    p = "sim_" if simulator else ""
    lines = ["", "import tcomp.codegen.warpgroup_mma as _warpgroup"]
    for name, (factory, args) in sorted(intrinsics.items()):
        call = "" if args is None else f"(*{args!r})"
        lines.append(f"{name} = _warpgroup.{p}{factory}{call}")
    return "\n".join(lines) + "\n"


VECTOR_IMPORTS = """
from tcomp.codegen.vector_access import (
    {prefix}load2 as _load2, {prefix}load4 as _load4, {prefix}load8 as _load8, {prefix}load16 as _load16,
    {prefix}store2 as _store2, {prefix}store4 as _store4, {prefix}store8 as _store8, {prefix}store16 as _store16)
"""


__all__ = ["ASYNC_IMPORTS", "BULK_COPY_IMPORTS", "ZERO_FILL_IMPORTS", "INDEX_CONSTANTS_COMMENT", "MMA_IMPORTS", "NARROW_IMPORTS", "PRELUDE_GPU", "PRELUDE_SIM",
           "VECTOR_IMPORTS", "warpgroup_definitions"]
