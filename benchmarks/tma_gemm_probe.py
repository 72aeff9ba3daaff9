"""Probe for issue 33: does Hopper's data movement pay for a bf16 GEMM, and how much?

Hand-written kernels of C = A @ W (A [M, K], W [K, N] row-major bf16, C [M, N] float32,
as ``examples/gemm_bf16.py``), 128 x 256 output tiles of two consumer warpgroups of
``wgmma.m64n256k16``, k steps of 64 in rings of shared-memory slots filled by TMA copies
(``tcomp.codegen.bulk_copy``) in the 128-byte swizzle, each slot with a "full" mbarrier
(the copies' bytes complete it) and an "empty" one (the consumers' warps arrive when their
instructions that read the slot have retired). Variants:

    tma          256 threads; thread 0 refills a slot once every warp has released it
                 (TMA copies, no producer of their own)
    ws           384 threads: warpgroup 0 produces (one thread issues every copy, its
                 registers cut to 40 by setmaxnreg), warpgroups 1-2 consume (232)
    ws-noreg     the same without setmaxnreg
    ws-persist   ws with one block an SM, each looping over output tiles, the producer
                 filling the next tile's slots during the consumers' epilogue
    ws-pingpong  ws with one block an SM and a 128 x 128 tile a consumer warpgroup: the two
                 consumers take the block's tiles in turn, so that one's epilogue runs while
                 the other's k loop keeps the tensor cores busy (CUTLASS's ping-pong kernel;
                 fp32 C or --no-store only)
    ws-mc        ws in clusters of two blocks (row tiles tm, tm + 1 of one tile column),
                 W's tile multicast: each block copies half of it into both, so the
                 pair reads W from the L2 once (``cluster_copies.py``; GPU only; no
                 setmaxnreg: its producer spills at 40 registers)

against cuBLAS (torch.matmul, bf16 out) and tcomp's kernel today (the example's
schedule: every thread issues cp.async copies, block-wide barriers each k step), in one
run, on fresh random inputs, each output poisoned and compared with a float64 product.
Tiles are launched a column of tiles first, or in groups of ``--group`` tile rows.
``--ffn`` runs the FFN's epilogue instead (examples/ffn_bf16.py: bf16, SiLU, bf16, int8,
gathered by shuffles into 16-byte stores) against that example's kernel;
``--no-store`` the k loop alone (C unwritten, unchecked).

    python benchmarks/tma_gemm_probe.py [--shapes 4096,4096,4096;8192,8192,8192] [--variants ws,ws-persist]
    python benchmarks/tma_gemm_probe.py --ffn --shapes "1024,12288,4096;7239,12288,4096"
    python benchmarks/tma_gemm_probe.py --ptx-only    # compile and ptxas -v here, no GPU
    python benchmarks/tma_gemm_probe.py --simulate    # each variant in Numba's CUDA simulator
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # timing.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

BM, BN, BK = 128, 256, 64
A_ELEMS = BM * BK  # bf16 elements of one slot's A tile


def tile_columns(variant: str) -> int:
    """The columns of a variant's output tile (128 rows in every variant)."""
    return PINGPONG_BN if variant == "ws-pingpong" else BN


def stage_bytes(variant: str) -> int:
    """Bytes of one ring slot: a k step's A and W tiles."""
    return 2 * (A_ELEMS + BK * tile_columns(variant))
VARIANTS = ("tma", "ws", "ws-noreg", "ws-persist", "ws-pingpong", "ws-mc")
#: the ping-pong variant's tile: one consumer warpgroup's, two m64n128k16 a k16 step
PINGPONG_BN = 128
#: blocks of a cluster in the ``ws-mc`` variant: two row tiles of one tile column share W's tiles
CLUSTER = 2
FFN_SCALE = 0.05  # examples/ffn_bf16.SCALE

_HEADER = '''
import tcomp.codegen.bulk_copy as _bulk_module
import tcomp.codegen.warpgroup_mma as _warpgroup
from tcomp.codegen.vector_access import {p}store2 as _store2, {p}store4 as _store4


_mbarrier_init = _bulk_module.{p}mbarrier_init
_fence_barrier_init = _bulk_module.{p}fence_barrier_init
_tensor_map_acquire = _bulk_module.{p}tensor_map_acquire
_mbarrier_arrive_expect = _bulk_module.{p}mbarrier_arrive_expect
_mbarrier_arrive = _bulk_module.{p}mbarrier_arrive
_mbarrier_wait = _bulk_module.{p}mbarrier_wait
_tma_load_2d = _bulk_module.{p}tma_load_2d

_wgmma = _warpgroup.{p}wgmma(256, "bf16", True, tuple(range(128)))
_fence = _warpgroup.{p}wgmma_fence_tied(128)
_wait1 = _warpgroup.{p}wgmma_wait_tied(1, 128)
_wait0 = _warpgroup.{p}wgmma_wait_tied(0, 128)
_commit = _warpgroup.{p}wgmma_commit
_desc = _warpgroup.{p}wgmma_descriptor
_shift = _warpgroup.{p}shared_alignment_shift
_fewer = _bulk_module.{p}set_max_registers(40, False)
_release = _mbarrier_arrive
_wait_empty = _mbarrier_wait
_more = _bulk_module.{p}set_max_registers(232, True)

M, N = uint32({M}), uint32({N})
S = uint32({S})
KSTEPS = uint32({KSTEPS})
TILES_M = uint32({TILES_M})
TILES = uint32({TILES})
STAGE_ELEMS = uint32({STAGE_ELEMS})
A_ELEMS = uint32({A_ELEMS})
STAGE_BYTES = uint32({STAGE_BYTES})
_0, _1, _2, _4, _8, _16, _32, _64, _128 = (uint32(v) for v in (0, 1, 2, 4, 8, 16, 32, 64, 128))
_255, _256, _1024, _8192 = uint32(255), uint32(256), uint32(1024), uint32(8192)
BM, BN, BK = uint32({BM}), uint32({BN}), uint32({BK})
GROUP_TILES = uint32({GROUP} * {TILES_N})


@cuda.jit(device=True{inline})
def _place(tile):
    # output tile number -> (tile row, tile column): groups of GROUP tile rows, in each the
    # rows of a tile column first, then the next column
    first = (tile // GROUP_TILES) * uint32({GROUP})
    rows = min(TILES_M - first, uint32({GROUP}))
    return first + (tile % GROUP_TILES) % rows, (tile % GROUP_TILES) // rows
'''

# the consumer's part, shared by every variant: one k step of one warpgroup (c: which
# consumer), then the epilogue of a tile; {release} arrives on the previous slot's empty
_CONSUME = '''
            s = it % S
            _mbarrier_wait(bars, s, (it // S) & _1)
            a_at = base + s * STAGE_ELEMS + c * _64 * BK
            b_at = base + s * STAGE_ELEMS + A_ELEMS
            _fence(acc)
            for j in range(4):
                _wgmma(_desc(smem, a_at + uint32(j) * _16, _16, _1024, _1),
                       _desc(smem, b_at + uint32(j) * _1024, _8192, _1024, _1), acc, _0)
            _commit()
            _wait1(acc)
            if kk > _0 and t % _32 == _0:
                _release(bars, S + (it - _1) % S)
'''

# the end of a tile: the last slot released, then every thread's accumulators stored
# ({STORE}: as float32, or the FFN's epilogue)
_EPILOGUE = '''
        _wait0(acc)
        if t % _32 == _0:
            _release(bars, S + (it - _1) % S)
        row = tm * BM + c * _64 + _16 * (t // _32) + (t % _32) // _4
        col = tn * BN + _2 * (t % _4)
        for q in range(32):
            for h in range(2):
                r = row + _8 * uint32(h)
                if r < M:
                    _store2(C, r * N + col + _8 * uint32(q),
                            ({STORE}(acc[4 * q + 2 * h]), {STORE}(acc[4 * q + 2 * h + 1])))
'''

# the k loop alone: the accumulators summed, stored only if the sum is NaN (never, for
# finite inputs), so that nothing is optimized away and C stays unwritten
_NO_STORE = '''
        _wait0(acc)
        if t % _32 == _0:
            _release(bars, S + (it - _1) % S)
        total = float32(0.0)
        for q in range(128):
            total += acc[q]
        if total != total:
            C[t] = total
'''

# the FFN's int8 values in 16-byte stores: a thread's two values of a row and an 8-column
# group make 2 bytes; two shuffles gather the quad's 8 bytes in its first lane, which
# stores two groups (16 columns) at once (C is the int8 output seen as uint32 words)
_EPILOGUE_FFN = '''
        _wait0(acc)
        if t % _32 == _0:
            _release(bars, S + (it - _1) % S)
        row = tm * BM + c * _64 + _16 * (t // _32) + (t % _32) // _4
        for qq in range(16):
            for h in range(2):
                r = row + _8 * uint32(h)
                words = cuda.local.array(4, uint32)
                for half in range(2):
                    q = 2 * qq + half
                    x = ((uint32(int32(_ffn(acc[4 * q + 2 * h]))) & _255)
                         | ((uint32(int32(_ffn(acc[4 * q + 2 * h + 1]))) & _255) << _8))
                    w = x | (uint32(_shfl_down(x, 1)) << _16)
                    words[2 * half] = w
                    words[2 * half + 1] = uint32(_shfl_down(w, 2))
                if t % _4 == _0 and r < M:
                    _store4(C, (r * N + tn * BN + _16 * uint32(qq)) // _4, (words[0], words[1], words[2], words[3]))
'''

_SHUFFLE_GPU = '''
@cuda.jit(device=True, inline="always")
def _shfl_down(x, n):
    return uint32(cuda.shfl_down_sync(0xFFFFFFFF, int32(x), n))
'''

_SHUFFLE_SIM = '''
from tcomp.codegen.warp_mma import _exchange


def _shfl_down(x, n):
    lane, everyone = _exchange("shfl_down", x)
    return everyone[lane + n] if lane + n < 32 else x
'''

_STORE_FFN = '''
@cuda.jit(device=True{inline})
def _ffn(x):
    # examples/ffn_bf16.py's epilogue: C rounded to bf16, SiLU, rounded to bf16, int8
    return _round_clamp_int8(_round_bfloat16(_silu(_round_bfloat16(x))) * float32({inverse_scale}),
                             float32(-128.0), float32(127.0))
'''

_LOAD = '''
                _mbarrier_arrive_expect(bars, s, STAGE_BYTES)
                a_at = base + s * STAGE_ELEMS
                _tma_load_2d(smem, a_at, map_a, ks * BK, tm * BM, bars, s)
                for p in range(4):
                    _tma_load_2d(smem, a_at + A_ELEMS + uint32(p) * _64 * BK, map_w, tn * BN + uint32(p) * _64,
                                      ks * BK, bars, s)
'''

# ws-mc: the pair of blocks of a cluster (row tiles tm and tm + 1 of one tile column) share
# W's tile: each block's producer copies two of its four 64-column panels into both blocks
# (multicast), completing both blocks' "full" barriers; a slot is free once the consumers
# of both blocks have released it, so each consumer warp arrives on both blocks' "empty"
_CLUSTER_HEADER = '''
import cluster_copies as _cluster_copies

_cluster_rank = _cluster_copies.cluster_rank
_cluster_sync = _cluster_copies.cluster_sync
_tma_load_2d_mc = _cluster_copies.tma_load_2d_multicast
_wait_empty = _cluster_copies.mbarrier_wait_cluster


@cuda.jit(device=True, inline="always")
def _release(bars, index):
    _cluster_copies.cluster_arrive(bars, index, uint32(0))
    _cluster_copies.cluster_arrive(bars, index, uint32(1))
'''

_LOAD_MC = '''
                _mbarrier_arrive_expect(bars, s, STAGE_BYTES)
                a_at = base + s * STAGE_ELEMS
                _tma_load_2d(smem, a_at, map_a, ks * BK, tm * BM, bars, s)
                for p in range(2):
                    q = rank * _2 + uint32(p)
                    _tma_load_2d_mc(smem, a_at + A_ELEMS + q * _64 * BK, map_w, tn * BN + q * _64, ks * BK, bars, s,
                                    uint32(3))
'''

# every kernel's start: the ring's "full" barriers (one arrival: the producer's, and the
# copies' bytes) and "empty" ones (one arrival by each of the 8 consumer warps)
_SETUP = '''@cuda.jit{JIT}
def gemm(A, W, C, map_a, map_w):
    smem = cuda.shared.array({SMEM}, uint16)
    base = _shift(smem, _1024)
    bars = cuda.shared.array(2 * {S} + 2, uint64)
    tid = uint32(cuda.threadIdx.x)
    if tid == _0:
        for s in range({S}):
            _mbarrier_init(bars, s, 1)
            _mbarrier_init(bars, {S} + s, {EMPTY})
        for s in range(2):
            _mbarrier_init(bars, 2 * {S} + s, 1)
        _fence_barrier_init()
    {SYNC}
'''

# the producer warpgroup's part of the warp-specialized variants: its first thread fills
# the ring with every k step of the block's tiles, in order (``it`` counts them)
_PRODUCER = '''
    if wg == _0:
        {FEWER}
        if tid == _0:
            _tensor_map_acquire(map_a)
            _tensor_map_acquire(map_w)
            for tile in range(uint32(cuda.blockIdx.x), TILES, uint32(cuda.gridDim.x)):
                tm, tn = _place(tile)
                for kk in range(KSTEPS):
                    s = it % S
                    _wait_empty(bars, S + s, ((it // S) & _1) ^ _1)
                    ks = kk
{LOAD}
                    it += _1
'''

_SPECIALIZED = '''
{SETUP}    wg = tid // _128
    it = _0
    rank = {RANK}''' + _PRODUCER + '''    else:
        {MORE}
        acc = cuda.local.array(128, float32)
        c = wg - _1
        t = tid % _128
        for tile in range(uint32(cuda.blockIdx.x), TILES, uint32(cuda.gridDim.x)):
            tm, tn = _place(tile)
            for i in range(128):
                acc[i] = float32(0.0)
            for kk in range(KSTEPS):
{CONSUME}
                it += _1
{EPILOGUE}
    {END}

UNROLL_LOOPS = {{"gemm": (False, False, False, False, True, False, True, False, True, {EPILOGUE_LOOPS})}}
'''

_UNSPECIALIZED = '''
{SETUP}    tile = uint32(cuda.blockIdx.x)
    tm, tn = _place(tile)
    if tid == _0:
        _tensor_map_acquire(map_a)
        _tensor_map_acquire(map_w)
        for kk in range(min({S}, {KSTEPS})):
            s = uint32(kk)
            ks = uint32(kk)
{LOAD}
    c = tid // _128
    t = tid % _128
    acc = cuda.local.array(128, float32)
    for i in range(128):
        acc[i] = float32(0.0)
    it = _0
    for kk in range(KSTEPS):
{CONSUME}
        if tid == _0 and kk > _0 and kk - _1 + S < KSTEPS:
            s = (kk - _1) % S
            _mbarrier_wait(bars, S + s, ((kk - _1) // S) & _1)
            ks = kk - _1 + S
{LOAD}
        it += _1
{EPILOGUE}

UNROLL_LOOPS = {{"gemm": (False, False, False, True, True, False, True, True, {EPILOGUE_LOOPS})}}
'''


# ws-pingpong: each consumer warpgroup computes a whole 128 x 128 tile (two m64n128k16 a k16
# step, rows 0-63 into acc[0:64], 64-127 into acc[64:128]); the producer fills the ring with
# the block's tiles in order, consumer c takes the block's tiles c, c + 2, ..., so its ring
# position at a tile's first k step is the tile's place in the block's sequence x KSTEPS.
# A wait on a slot's "full" barrier only tells the phase of its parity from the one before,
# so a consumer starts a tile's k loop only once the other has passed every wait of the
# tile before (barriers 2S + c, one arrival each: CUTLASS's order barrier); the tensor
# cores then serve the two consumers' k loops in turn
_CONSUME_PINGPONG = '''
            s = it % S
            _mbarrier_wait(bars, s, (it // S) & _1)
            a_at = base + s * STAGE_ELEMS
            b_at = a_at + A_ELEMS
            _fence(acc)
            for j in range(4):
                for h in range(2):
                    _wgmma_half(_desc(smem, a_at + uint32(h) * _64 * BK + uint32(j) * _16, _16, _1024, _1),
                                _desc(smem, b_at + uint32(j) * _1024, _8192, _1024, _1), acc, uint32(h) * _64)
            _commit()
            _wait1(acc)
            if kk > _0 and t % _32 == _0:
                _release(bars, S + (it - _1) % S)
'''

_EPILOGUE_PINGPONG = '''
        _wait0(acc)
        if t % _32 == _0:
            _release(bars, S + (it - _1) % S)
        col = tn * BN + _2 * (t % _4)
        for half in range(2):
            row = tm * BM + uint32(half) * _64 + _16 * (t // _32) + (t % _32) // _4
            for q in range(16):
                for h in range(2):
                    r = row + _8 * uint32(h)
                    if r < M:
                        _store2(C, r * N + col + _8 * uint32(q),
                                (acc[64 * half + 4 * q + 2 * h], acc[64 * half + 4 * q + 2 * h + 1]))
'''

_PINGPONG = '''
{SETUP}    wg = tid // _128
    it = _0''' + _PRODUCER + '''    else:
        {MORE}
        acc = cuda.local.array(128, float32)
        c = wg - _1
        t = tid % _128
        step = uint32(cuda.gridDim.x)
        for tile in range(uint32(cuda.blockIdx.x) + c * step, TILES, _2 * step):
            place = (tile - uint32(cuda.blockIdx.x)) // step  # in the block's sequence of tiles
            it = place * KSTEPS
            tm, tn = _place(tile)
            for i in range(128):
                acc[i] = float32(0.0)
            if place > _0:  # the other consumer has seen every slot of the tile before land
                _mbarrier_wait(bars, _2 * S + c, ((place - _1) // _2) & _1)
            for kk in range(KSTEPS):
{CONSUME}
                it += _1
            if t == _0:
                _mbarrier_arrive(bars, _2 * S + _1 - c)
{EPILOGUE}

UNROLL_LOOPS = {{"gemm": (False, False, False, False, True, False, True, False, True, True, {EPILOGUE_LOOPS})}}
'''


def _indent(text: str, spaces: int) -> str:
    """``text`` moved to start at ``spaces`` columns."""
    return textwrap.indent(textwrap.dedent(text.strip("\n")), " " * spaces)


def kernel_source(variant: str, M: int, N: int, K: int, stages: int, simulator: bool = False,
                  ffn: bool = False, group: int = 0, store: bool = True) -> str:
    """The generated module of one variant for an M x N x K product (for Numba's CUDA
    simulator: the instructions' models, a static shared array); ``ffn``: the FFN's
    epilogue (SiLU, int8) instead of the float32 store."""
    from tcomp.codegen.module_text import NARROW_IMPORTS, PRELUDE_GPU, PRELUDE_SIM
    from tcomp.ir.functions import SCALAR_FUNCTIONS

    tiles_m, bn = -(-M // BM), tile_columns(variant)
    pingpong = variant == "ws-pingpong"
    if pingpong and ffn:
        raise SystemExit("ws-pingpong has only the float32 store (and --no-store)")
    inline = "" if simulator else ', inline="always"'
    values = dict(M=M, N=N, S=stages, KSTEPS=K // BK, TILES_M=tiles_m, TILES=tiles_m * (N // bn),
                  TILES_N=N // bn, GROUP=group or tiles_m, inline=inline, STAGE_ELEMS=stage_bytes(variant) // 2,
                  A_ELEMS=A_ELEMS, STAGE_BYTES=stage_bytes(variant), BM=BM, BN=bn, BK=BK)
    prefix = "sim_" if simulator else ""
    prelude = [PRELUDE_SIM if simulator else PRELUDE_GPU, NARROW_IMPORTS.format(p=prefix)]
    prelude += [fn.helper.format(inline=inline) for fn in SCALAR_FUNCTIONS.values() if fn.helper]
    header = "\n".join(prelude) + _HEADER.format(p=prefix, **values)
    if ffn:
        header += _STORE_FFN.format(inline=inline, inverse_scale=repr(1.0 / FFN_SCALE))
        header += _SHUFFLE_SIM if simulator else _SHUFFLE_GPU
    if pingpong:
        header += "_wgmma_half = _warpgroup.{p}wgmma(128, \"bf16\", True, tuple(range(64)))\n".format(p=prefix)
        epilogue = _EPILOGUE_PINGPONG if store else _NO_STORE
        epilogue_loops = "True, True, True" if store else "True"
    else:
        epilogue = (_EPILOGUE_FFN if ffn else _EPILOGUE.replace("{STORE}", "")) if store else _NO_STORE
        epilogue_loops = ("True, True, True" if ffn else "True, True") if store else "True"
    multicast = variant == "ws-mc"
    if multicast:
        if simulator:
            raise SystemExit("ws-mc has no simulator models (clusters); run it on the GPU or with --ptx-only")
        if tiles_m % CLUSTER or (group or tiles_m) % CLUSTER:
            raise SystemExit(f"ws-mc pairs row tiles: M's {tiles_m} tiles (and --group) must be even")
        header += _CLUSTER_HEADER
    setup = _SETUP.format(JIT="" if simulator else f"(launch_bounds=({threads(variant)}, 1))",
                          SMEM=shared_bytes(stages, variant) // 2 if simulator else 0, S=stages,
                          EMPTY=8 * CLUSTER if multicast else 4 if pingpong else 8,
                          SYNC="_cluster_sync()" if multicast else "cuda.syncthreads()")
    parts = dict(SETUP=setup, EPILOGUE_LOOPS=epilogue_loops, S=stages)
    if variant == "tma":
        return header + _UNSPECIALIZED.format(**parts, KSTEPS=K // BK, LOAD=_indent(_LOAD, 12),
                                              CONSUME=_indent(_CONSUME, 8), EPILOGUE=_indent(epilogue, 4))
    regs = variant not in ("ws-noreg", "ws-mc")  # ws-mc: its producer spills at 40 registers
    if pingpong:
        return header + _PINGPONG.format(**parts, FEWER="_fewer()", MORE="_more()",
                                         LOAD=_indent(_LOAD.replace("range(4)", f"range({bn // 64})"), 20),
                                         CONSUME=_indent(_CONSUME_PINGPONG, 16), EPILOGUE=_indent(epilogue, 12))
    return header + _SPECIALIZED.format(**parts, FEWER="_fewer()" if regs else "pass",
                                        MORE="_more()" if regs else "pass",
                                        LOAD=_indent(_LOAD_MC if multicast else _LOAD, 20),
                                        CONSUME=_indent(_CONSUME, 16), EPILOGUE=_indent(epilogue, 12),
                                        RANK="_cluster_rank()" if multicast else "_0",
                                        END="_cluster_sync()" if multicast else "")


def threads(variant: str) -> int:
    return 256 if variant == "tma" else 384


def shared_bytes(stages: int, variant: str) -> int:
    return stages * stage_bytes(variant) + 1024  # room to align the ring to 1024 bytes


def grid(variant: str, M: int, N: int, sms: int) -> int:
    tiles = -(-M // BM) * (N // tile_columns(variant))
    return min(tiles, sms) if variant in ("ws-persist", "ws-pingpong") else tiles


def _kernel(source: str):
    from tcomp.codegen.runtime import import_source

    module, _ = import_source(source)
    return module.gemm


def _signature(ffn: bool = False):
    from numba import types

    u16 = types.Array(types.uint16, 1, "C")
    return (u16, u16, types.Array(types.uint32 if ffn else types.float32, 1, "C"), types.Array(types.uint64, 1, "C"),
            types.Array(types.uint64, 1, "C"))


def ptx_statistics(variant: str, stages: int, ffn: bool = False) -> dict:
    """ptxas's registers and spill bytes (sm_90a) of a variant at 4096^3, and its PTX."""
    from numba import cuda

    from tcomp.codegen import nvvm_unroll
    from tcomp.codegen.ptx import assemble

    kernel = _kernel(kernel_source(variant, 4096, 4096, 4096, stages, ffn=ffn))
    nvvm_unroll.install()
    ptx, _ = cuda.compile_ptx(kernel.py_func, _signature(ffn), cc=(9, 0, "a"), launch_bounds=(threads(variant), 1))
    report = assemble(variant, ptx)
    return dict(registers=report.registers, spill_bytes=report.spill_stores + report.spill_loads, ptx=ptx)


def ptx_only(variants, stages: int, ffn: bool = False) -> int:
    """Compile each variant for sm_90a and print ptxas's registers and spills."""
    for variant in variants:
        stats = ptx_statistics(variant, stages, ffn)
        print(f"{variant:12s} {stats['registers']} registers, {stats['spill_bytes']} bytes of spills")
    return 0


def simulate(variants, ffn: bool = False, group: int = 0) -> int:
    """Run each variant in the simulator on a 200 x 2n x 192 product, n its tile's columns
    (two row tiles, the second past M's edge, and two columns; three k steps through two
    slots; the persistent kernels on one block) and compare with numpy."""
    import ml_dtypes
    import numpy as np
    from numba import cuda

    from tcomp.codegen.bulk_copy import sim_tensor_map

    M, K, stages = 200, 192, 2
    rng = np.random.default_rng(33)
    failures = 0
    for variant in variants:
        N = 2 * tile_columns(variant)
        a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
        w = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
        ref = a.astype(np.float64) @ w.astype(np.float64)
        a_bits, w_bits = a.view(np.uint16).reshape(-1), w.view(np.uint16).reshape(-1)
        map_a = sim_tensor_map(a_bits, (M, K), BM, BK)
        map_w = sim_tensor_map(w_bits, (K, N), BK, 64)
        if ffn:
            silu = ref.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
            silu = (silu / (1 + np.exp(-silu))).astype(ml_dtypes.bfloat16).astype(np.float64)
            ref = np.clip(np.rint(silu / FFN_SCALE), -128, 127)
        kernel = _kernel(kernel_source(variant, M, N, K, stages, simulator=True, ffn=ffn, group=group))
        c = np.full(M * N, -99, dtype=np.int8).view(np.uint32) if ffn else np.full(M * N, np.nan, dtype=np.float32)
        d_c = cuda.to_device(c)
        kernel[grid(variant, M, N, 1), threads(variant)](a_bits, w_bits, d_c, map_a, map_w)
        got = d_c.copy_to_host().view(np.int8) if ffn else d_c.copy_to_host()
        diff = np.abs(got.reshape(M, N).astype(np.float64) - ref)
        err = diff.max() if ffn else diff.max() / np.abs(ref).max()
        ok = err <= 1 and (diff > 0).mean() < 1e-2 if ffn else err < 1e-5
        failures += not ok
        print(f"{variant:12s} simulated {M} x {N} x {K}: {'max |diff|' if ffn else 'max rel err'} {err:.1e} "
              f"{'ok' if ok else 'WRONG'}", flush=True)
    return 1 if failures else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes",
                        default="4096,4096,4096;8192,8192,8192;1024,12288,4096;7239,12288,4096;333,12288,4096",
                        help="M,N,K;M,N,K;... (N a multiple of 256, K of 64)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    parser.add_argument("--stages", type=int, default=4)
    parser.add_argument("--group", type=int, default=0,
                        help="tile rows per group of the launch order (0: a whole column of tiles first)")
    parser.add_argument("--no-store", action="store_true", help="the k loop alone: C is not written (not checked)")
    parser.add_argument("--ffn", action="store_true", help="the FFN's epilogue (bf16, SiLU, int8) instead of fp32 C")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--ptx-only", action="store_true", help="compile and assemble here; no GPU needed")
    parser.add_argument("--simulate", action="store_true", help="run tiny products in Numba's CUDA simulator")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {', '.join(VARIANTS)}")
    if args.simulate:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # NOTE: before numba is first imported
        return simulate(variants, args.ffn, args.group)
    if args.ptx_only:
        return ptx_only(variants, args.stages, args.ffn)
    return measure(args, variants)


def measure(args, variants) -> int:
    import torch

    import ffn_bf16
    import gemm_bf16
    import tcomp as tc
    from cluster_copies import cluster_launcher
    from tcomp.codegen.launch import DriverKernel, DriverLaunch
    from tcomp.codegen.tensor_maps import TensorMapTable
    from timing import time_cuda_batched

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    epilogue = "FFN epilogue (SiLU, int8)" if args.ffn else "fp32 C"
    print(f"device: {torch.cuda.get_device_name(0)}, {sms} SMs; {epilogue}")
    failures = 0
    for text in args.shapes.split(";"):
        M, N, K = (int(x) for x in text.split(","))
        if N % BN or K % BK:
            raise SystemExit(f"the probe's kernels take N a multiple of {BN} and K of {BK}; got {M} x {N} x {K}")
        torch.manual_seed(M + N + K)
        a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        w = torch.randn(K, N, device="cuda").to(torch.bfloat16)
        ref = a.double() @ w.double()
        if args.ffn:  # the algorithm's rounding points: C and SiLU(C) in bf16, the quantization in fp32
            silu = torch.nn.functional.silu(ref.to(torch.bfloat16).float()).to(torch.bfloat16).float()
            ref = torch.clamp(torch.round(silu / FFN_SCALE), -128, 127)
        scale = ref.abs().max().item()
        flops = 2.0 * M * N * K
        rows = []

        def check(name, c):
            diff = (c.double() - ref).abs()
            if args.ffn:  # float32 sums in another order may move a value across a rounding point
                worst, share = diff.max().item(), (diff > 0).double().mean().item()
                return name, worst, worst <= 1 and share < 1e-3
            err = diff.max().item() / scale
            return name, err, err < 1e-4  # float32 sums of K bf16 products against float64

        def output():
            if args.ffn:
                return torch.full((M, N), -99, dtype=torch.int8, device="cuda")
            return torch.full((M, N), float("nan"), device="cuda")

        t_cublas = time_cuda_batched(lambda: torch.matmul(a, w), calls=10, repeat=args.repeat)
        print(f"  {M} x {N} x {K}: tcomp today: building and running", flush=True)
        example = ffn_bf16 if args.ffn else gemm_bf16
        Q = example.algorithm(M, N, K)
        s = tc.create_schedule(Q)
        example.schedule(s, Q)
        mod = tc.build(s)
        c = output()
        mod(a, w, c)
        torch.cuda.synchronize()
        rows.append((*check("tcomp today (cp.async, barriers)", c),
                     time_cuda_batched(lambda: mod(a, w, c), calls=10, repeat=args.repeat)))
        tables = TensorMapTable("bfloat16", (M, K), BM, BK), TensorMapTable("bfloat16", (K, N), BK, 64)
        map_a, map_w = (table.device_pointer(x.data_ptr()) for table, x in zip(tables, (a, w)))
        for variant in variants:
            print(f"  {variant}: building and running", flush=True)  # NOTE: names the variant that hangs, if one does
            try:
                kernel = _kernel(kernel_source(variant, M, N, K, args.stages, ffn=args.ffn, group=args.group,
                                               store=not args.no_store))
                driver_kernel = DriverKernel(kernel, _signature(args.ffn), (grid(variant, M, N, sms), 1, 1),
                                             (threads(variant), 1, 1),
                                             [(M * K, 2), (K * N, 2), (M * N // 4 if args.ffn else M * N, 4), (16, 8),
                                              (16, 8)], shared_bytes(args.stages, variant))
                c = output()
                pointers = [a.data_ptr(), w.data_ptr(), c.data_ptr(), map_a, map_w]
                stream = torch.cuda.current_stream().cuda_stream
                if variant == "ws-mc":
                    for slot, pointer in zip(driver_kernel.data_slots, pointers):
                        slot.value = pointer
                    in_clusters = cluster_launcher(driver_kernel, CLUSTER)

                    def run():
                        in_clusters(stream)
                else:
                    launch = DriverLaunch([driver_kernel], [[slot] for slot in driver_kernel.data_slots], [])

                    def run():
                        launch(pointers, stream)

                run()
                torch.cuda.synchronize()
                verdict = (variant + " (no store)", float("nan"), True) if args.no_store else check(variant, c)
                rows.append((*verdict, time_cuda_batched(run, calls=10, repeat=args.repeat)))
            except Exception as err:  # a probe reports every variant, failed or not
                print(f"  {variant}: FAILED {type(err).__name__}: {str(err)[:400]}")
                failures += 1
        print(f"\n{M} x {N} x {K}: cuBLAS bf16 (torch.matmul, alone) {t_cublas * 1e3:.4f} ms, "
              f"{flops / t_cublas / 1e12:.0f} TFLOP/s")
        for name, err, ok, t in rows:
            print(f"  {name:34s} {t * 1e3:8.4f} ms {flops / t / 1e12:6.0f} TFLOP/s  {t_cublas / t:5.3f}x cuBLAS "
                  f"({t / t_cublas:5.3f} of its time)  {'max |diff|' if args.ffn else 'max rel err'} {err:.1e} "
                  f"{'ok' if ok else 'WRONG'}", flush=True)
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
