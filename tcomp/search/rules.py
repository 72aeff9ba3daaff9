"""The built-in tiling rules of the search space (``tcomp.search.space.Rule``).

- :class:`BlockTiling`: a kernel around one matrix product (a float sum of products
  ``a[i, k] * b[k, j]``, fused epilogue or not): block tiles staged through shared memory,
  a thread tile accumulated in registers from register fragments (the SGEMM ladder's
  kernels 5 and 6, docs/references.md), with the A tile stored transposed or not, vector loads, the tiles'
  loads overlapped with the computation (double buffering through registers, cp.async
  pipelines of 3 or 4 tiles, or A double buffered and B pipelined), and the k loop
  unrolled in steps.
- :class:`WarpTiling`: the same kernel with the block tile split over warps and each
  thread's tile strided over the warp's sub-tiles (the SGEMM ladder's kernel 10).

  Both may split k (``split_k`` of 2 or 4) where the output's tiles give the SMs fewer
  than two blocks each: the product's partial sums over slices of k on ``blockIdx.z``
  (``s.rfactor``), each slice tiled as above, then a flat kernel adding the slices.
- :class:`MmaTiling`: a product of 16-bit floats on the tensor cores: block tiles of warp
  tiles of ``mma.sync`` tiles (``tensorize``), k steps in cp.async rings.
- :class:`SplitK`: a matrix product whose output tiles cannot fill the GPU, its k axis
  cut into slices that run on their own blocks (``s.rfactor``), then added.
- :class:`RowReduction`: a reduction along rows that is not a matrix product (a row's
  max for a per-row quantization scale): a block per row, its threads on interleaved
  slices of the row, the slices combined through shared memory.
- :class:`FlatTiling`: any other kernel (elementwise chains, and reductions not
  matched above): its output flattened and split over blocks, threads and vector lanes.

Each rule's ``apply`` is a sequence of schedule primitives, so what it does reads as the
trace it leaves in a saved schedule.
"""

from __future__ import annotations

from ..errors import ScheduleError
from ..ir.expr import Binary, Cast
from ..lang.tensor import Reduce, TensorRead
from .space import Group, Rule, register_rule

#: bytes of fp32 shared memory a block may hold (above 48 KB, dynamic shared memory)
SHARED_BYTES = 227 * 1024
#: the tile of ``mma.sync.m16n8k16``: rows, columns, k
MMA_M, MMA_N, MMA_K = 16, 8, 16
#: elements of padding after each row of the shared tiles that ldmatrix reads (16 bytes)
MMA_PAD = 8
#: rows of one wgmma tile, and the threads of the warpgroup that computes it
WGMMA_M, WARPGROUP_THREADS = 64, 128
#: registers a wgmma thread needs besides its accumulators (ptxas: 118 with 64 of them)
WGMMA_OTHER_REGISTERS = 56
#: 32-bit registers of an SM
REGISTERS_PER_SM = 65536


def matrix_product_operands(op) -> tuple | None:
    """``(a, b)``, the tensor names of a compute ``C[i, j] = sum(a[i, k] * b[k, j], k)``
    (each read may be wrapped in a cast), or None when ``op`` is not one."""
    body = op.body
    if not isinstance(body, Reduce) or body.combiner != "sum" or len(op.axis) != 2 or len(body.axes) != 1:
        return None
    if not isinstance(body.source, Binary) or body.source.op != "*":
        return None
    i, j = op.axis
    (k,) = body.axes
    reads = [_read_of(factor) for factor in (body.source.a, body.source.b)]
    if None in reads:
        return None
    by_index = {tuple(r.indices): r.tensor.name for r in reads}
    a, b = by_index.get((i, k)), by_index.get((k, j))
    if a is None or b is None or a == b:
        return None
    return a, b


def _copied_by_cp_async(group: Group, operands=(0, 1)) -> bool:
    """Can these of the product's operand tiles (0: a, 1: b) be pipelined: are they float32
    tensors read unchanged (no cast, not staged), so that their fills are byte copies?"""
    body = group.stages[group.reductions[0]].op.body
    factors = (body.source.a, body.source.b)
    return all(isinstance(factors[n], TensorRead) and factors[n].tensor.dtype == "float32"
               and factors[n].tensor.name not in group.staged for n in operands)


def _read_of(e):
    while isinstance(e, Cast):
        e = e.value
    return e if isinstance(e, TensorRead) else None


def _product_stage(group: Group):
    """The one matrix product of ``group`` and its operands, or None."""
    if len(group.reductions) != 1:
        return None
    name = group.reductions[0]
    operands = matrix_product_operands(group.stages[name].op)
    return (name, *operands) if operands else None


def _accumulator(s, group: Group, product: str):
    """The stage that accumulates the product in registers: the fused reduction itself,
    or, when the product is the kernel's own output, a local copy (``cache_write``)."""
    if product == group.anchor:
        return s.cache_write(product, "local")
    return s[product].op.output


def _operand_caches(s, group: Group, a, b, acc) -> tuple:
    """Shared tiles of the operands and register fragments of those, read by ``acc``. An
    operand the group stages (an elementwise stage, ``"staged"``) is inlined into its
    tile's fill: computed there, once per element of the tile."""
    a_shared = s.cache_read(a, "shared", [acc])
    b_shared = s.cache_read(b, "shared", [acc])
    for operand in (a, b):
        if operand in group.staged:
            s[operand].compute_inline()
    return a_shared, b_shared, s.cache_read(a_shared, "local", [acc]), s.cache_read(b_shared, "local", [acc])


def _block_and_thread_tiles(s, out, lead: tuple, BM: int, BN: int, TM: int, TN: int):
    """``out``'s last two axes in BM x BN block tiles of TM x TN thread tiles, bound to
    blocks and threads, the thread tile unrolled; ``lead``, axes kept outside (already
    bound). Returns the thread loop the accumulator is computed at."""
    i, j = s[out].axis[-2:]
    bi, bj, ii, jj = s[out].tile(i, j, BM, BN)
    ty, ri = s[out].split(ii, TM)
    tx, rj = s[out].split(jj, TN)
    s[out].reorder(*lead, bi, bj, ty, tx, ri, rj)
    s[out].bind(bi, "blockIdx.y")
    s[out].bind(bj, "blockIdx.x")
    s[out].bind(ty, "threadIdx.y")
    s[out].bind(tx, "threadIdx.x")
    s[out].unroll(ri)
    s[out].unroll(rj)
    return tx


def _over_the_threads(s, cache, flat, threads_y: int, threads_x: int) -> None:
    """The fill's loop ``flat`` spread over the block's threads (``threadIdx.y`` x
    ``threadIdx.x``), what is left of it unrolled in each thread."""
    rest, thread = s[cache].split(flat, threads_y * threads_x)
    ty, tx = s[cache].split(thread, threads_x)
    s[cache].bind(ty, "threadIdx.y")
    s[cache].bind(tx, "threadIdx.x")
    s[cache].unroll(rest)


def _cooperative_fill(s, cache, threads_y: int, threads_x: int, vector: int) -> None:
    """Spread a shared tile's fill over the block's threads: consecutive threads on
    consecutive elements of a row (coalesced), ``vector`` elements per thread and load."""
    first, *rest = s[cache].axis
    flat = first
    for axis in rest:
        flat = s[cache].fuse(flat, axis)
    if vector > 1:
        flat, lanes = s[cache].split(flat, vector)
        s[cache].vectorize(lanes)
    _over_the_threads(s, cache, flat, threads_y, threads_x)


def _k_loop(s, acc, a_shared, b_shared, a_frag, b_frag, BK: int, k_unroll: int, fragment_k: int = 1) -> None:
    """Inside a thread: k steps of BK (the shared tiles filled at each), each k of a
    step (the register fragments loaded at each), then the thread's outputs, unrolled
    so that they stay in registers; the k of a step unrolled by ``k_unroll``. With
    ``fragment_k`` > 1 the fragments hold that many k at once, A's read as vectors along
    k (A's tile must then be stored row by row, not transposed)."""
    *_, ci, cj = s[acc].axis  # NOTE: a split-K accumulator leads with its slice axis
    (k,) = s[acc].reduce_axis
    ko, ki = s[acc].split(k, BK)
    inner = ()
    if fragment_k > 1:
        ki, kk = s[acc].split(ki, fragment_k)
        inner = (kk,)
    s[acc].reorder(ko, ki, *inner, ci, cj)
    for ax in (*inner, ci, cj):
        s[acc].unroll(ax)
    if k_unroll > 1:
        _, ki = s[acc].split(ki, k_unroll)
        s[acc].unroll(ki)
    s[a_shared].compute_at(s[acc], ko)
    s[b_shared].compute_at(s[acc], ko)
    s[a_frag].compute_at(s[acc], ki)
    s[b_frag].compute_at(s[acc], ki)
    for frag in (a_frag, b_frag):
        for ax in s[frag].axis:
            s[frag].unroll(ax)
    if fragment_k > 1:
        s[a_frag].vectorize(s[a_frag].axis[1])


def _fits_problem(tile: int, extent: int) -> bool:
    """A tile no larger than the extent rounded up to a power of two (at least 16)."""
    bound = 16
    while bound < extent:
        bound *= 2
    return tile <= bound


def _overlaps(p) -> tuple:
    """How the a and b tiles overlap their loads with the computation: ``double_buffer``
    alone, both double buffered (through registers); ``pipeline`` alone, both pipelined
    (cp.async rings of that many tiles); both, a double buffered (it can be transposed on
    its way through registers, which cp.async cannot do) and b pipelined."""
    db, stages = p.get("double_buffer", False), p.get("pipeline", 0)
    if db and stages:
        return ("double_buffer", 1), ("pipeline", stages)
    if stages:
        return ("pipeline", stages), ("pipeline", stages)
    return (("double_buffer", 1),) * 2 if db else ((None, 1),) * 2


def _shared_bytes(BM: int, BN: int, BK: int, p=None) -> int:
    """Shared bytes of the a (BM x BK) and b (BK x BN) tiles, rings included."""
    (_, a_tiles), (_, b_tiles) = _overlaps(p or {})
    return (BM * a_tiles + BN * b_tiles) * BK * 4


def _overlap_valid(group: Group, p) -> bool:
    """A pipelined tile's fill must be a copy."""
    pipelined = tuple(n for n, (how, _) in enumerate(_overlaps(p)) if how == "pipeline")
    return not pipelined or _copied_by_cp_async(group, pipelined)


def _overlap(s, a_shared, b_shared, p) -> None:
    """The operand tiles' loads overlapped with the computation, as ``p`` says."""
    for tile, (how, stages) in zip((a_shared, b_shared), _overlaps(p)):
        if how == "double_buffer":
            s[tile].double_buffer()
        elif how == "pipeline":
            s[tile].pipeline(stages)


def _tiles(M: int, N: int, p) -> int:
    """How many BM x BN block tiles cover the M x N output."""
    return -(-M // p["BM"]) * -(-N // p["BN"])


def _split_k_valid(group: Group, space, p, tiles: int) -> bool:
    """``split_k`` slices (``p["split_k"]``, 1 for none) are possible where the product is
    the kernel's own unfused output, the slices divide k, and the output's ``tiles`` alone
    give the SMs fewer than two blocks each (at most four slices' blocks per SM)."""
    parts = p.get("split_k", 1)
    if parts == 1:
        return True
    product = _product_stage(group)
    if product[0] != group.anchor or group.fused:
        return False
    K = space.stages[product[0]].op.reduce_axis[0].extent
    return K % parts == 0 and tiles < 2 * SplitK.SMS and tiles * parts <= 4 * SplitK.SMS


def _tiled_stage(s, group: Group, product: str, parts: int) -> tuple:
    """``(stage, lead, acc)``: the stage whose last two axes the rule tiles, the axes kept
    outside its tiles (already bound) and the accumulator. With ``parts`` > 1 that stage is
    the product's split-K partial results (``s.rfactor``, the slice on ``blockIdx.z``), and
    the product itself adds the slices, one thread per output (:func:`_combine_slices`)."""
    if parts == 1:
        return s[group.anchor].op.output, (), _accumulator(s, group, product)
    partial = s.rfactor(product, parts)
    acc = s.cache_write(partial, "local")
    part = s[partial].axis[0]
    s[partial].bind(part, "blockIdx.z")
    _combine_slices(s, product, 256)
    return partial, (part,), acc


def _combine_slices(s, product: str, threads: int) -> None:
    """The split-K sum of the slices, its outputs flattened over blocks of ``threads``."""
    combine = s[product]
    flat = combine.fuse(*combine.axis)
    block, thread = combine.split(flat, threads)
    combine.bind(block, "blockIdx.x")
    combine.bind(thread, "threadIdx.x")


class BlockTiling(Rule):
    """Block tiles BM x BN, k steps of BK in shared memory, TM x TN outputs per thread."""

    name = "block_tiling"

    def applies(self, group, space):
        return _product_stage(group) is not None

    def choices(self, group, space):
        return {"BM": [16, 32, 64, 128, 256], "BN": [16, 32, 64, 128, 256], "BK": [8, 16, 32],
                "TM": [2, 4, 8], "TN": [2, 4, 8], "transpose_a": [False, True], "vector": [1, 2, 4],
                "double_buffer": [False, True], "pipeline": [0, 3, 4], "k_unroll": [1, 2, 4], "fragment_k": [1, 4],
                "split_k": [1, 2, 4]}

    def valid(self, group, space, p):
        M, N = space.stages[group.anchor].shape
        if p["BM"] % p["TM"] or p["BN"] % p["TN"]:
            return False
        threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
        per_fill = threads * p["vector"]
        return (64 <= threads <= 1024 and (p["BM"] * p["BK"]) % per_fill == 0 and (p["BN"] * p["BK"]) % per_fill == 0
                and p["BK"] % p["vector"] == 0 and p["BN"] % p["vector"] == 0
                and p["BK"] % (p["k_unroll"] * p.get("fragment_k", 1)) == 0
                and (p.get("fragment_k", 1) == 1 or not p["transpose_a"]) and _overlap_valid(group, p)
                and _shared_bytes(p["BM"], p["BN"], p["BK"], p) <= SHARED_BYTES
                and _fits_problem(p["BM"], M) and _fits_problem(p["BN"], N)
                and _split_k_valid(group, space, p, _tiles(M, N, p)))

    def apply(self, s, group, p):
        product, a, b = _product_stage(group)
        out, lead, acc = _tiled_stage(s, group, product, p.get("split_k", 1))
        a_shared, b_shared, a_frag, b_frag = _operand_caches(s, group, a, b, acc)
        tx = _block_and_thread_tiles(s, out, lead, p["BM"], p["BN"], p["TM"], p["TN"])
        s[acc].compute_at(s[out], tx)
        _k_loop(s, acc, a_shared, b_shared, a_frag, b_frag, p["BK"], p["k_unroll"], p.get("fragment_k", 1))
        if p["transpose_a"]:
            row, kk = s[a_shared].axis
            s[a_shared].storage_order(kk, row)
        threads_y, threads_x = p["BM"] // p["TM"], p["BN"] // p["TN"]
        _cooperative_fill(s, a_shared, threads_y, threads_x, p["vector"])
        _cooperative_fill(s, b_shared, threads_y, threads_x, p["vector"])
        _overlap(s, a_shared, b_shared, p)


class WarpTiling(Rule):
    """Block tiles split over warps of WM x WN; each thread computes TM x TN outputs at
    each of the warp's WNITER column sub-tiles (and as many row sub-tiles as it takes
    for the warp's 32 threads to cover WM x WN). A transposed, vectorized A tile."""

    name = "warp_tiling"

    def applies(self, group, space):
        return _product_stage(group) is not None

    def choices(self, group, space):
        return {"BM": [64, 128, 256], "BN": [64, 128, 256], "BK": [8, 16, 32], "WM": [32, 64, 128],
                "WN": [32, 64, 128], "WNITER": [1, 2, 4], "TM": [4, 8], "TN": [4, 8], "k_unroll": [1, 2, 4, 8],
                "double_buffer": [False, True], "pipeline": [0, 3, 4], "split_k": [1, 2, 4]}

    @staticmethod
    def _layout(p) -> tuple | None:
        """(warps, row sub-tiles per warp) of ``p``, or None when its tiles do not nest."""
        if p["BM"] % p["WM"] or p["BN"] % p["WN"] or p["WN"] % p["WNITER"]:
            return None
        per_thread = 32 * p["TM"] * p["TN"] * p["WNITER"]
        if (p["WM"] * p["WN"]) % per_thread:
            return None
        wmiter = p["WM"] * p["WN"] // per_thread
        if wmiter < 1 or p["WM"] % wmiter:
            return None
        wsubm, wsubn = p["WM"] // wmiter, p["WN"] // p["WNITER"]
        if wsubm % p["TM"] or wsubn % p["TN"] or (wsubm // p["TM"]) * (wsubn // p["TN"]) != 32:
            return None
        return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]), wmiter

    def valid(self, group, space, p):
        layout = self._layout(p)
        if layout is None:
            return False
        M, N = space.stages[group.anchor].shape
        threads = layout[0] * 32
        per_fill = threads * 4
        return (threads <= 1024 and (p["BM"] * p["BK"]) % per_fill == 0 and (p["BN"] * p["BK"]) % per_fill == 0
                and p["BK"] % p["k_unroll"] == 0 and _overlap_valid(group, p)
                and _shared_bytes(p["BM"], p["BN"], p["BK"], p) <= SHARED_BYTES
                and _fits_problem(p["BM"], M) and _fits_problem(p["BN"], N)
                and _split_k_valid(group, space, p, _tiles(M, N, p)))

    def apply(self, s, group, p):
        product, a, b = _product_stage(group)
        warps, wmiter = self._layout(p)
        out, lead, acc = _tiled_stage(s, group, product, p.get("split_k", 1))
        a_shared, b_shared, a_frag, b_frag = _operand_caches(s, group, a, b, acc)
        wsubm, wsubn = p["WM"] // wmiter, p["WN"] // p["WNITER"]
        i, j = s[out].axis[-2:]
        bi, bj, ii, jj = s[out].tile(i, j, p["BM"], p["BN"])
        wi, iw = s[out].split(ii, p["WM"])
        wj, jw = s[out].split(jj, p["WN"])
        wsi, isub = s[out].split(iw, wsubm)
        wsj, jsub = s[out].split(jw, wsubn)
        ti, ri = s[out].split(isub, p["TM"])
        tj, rj = s[out].split(jsub, p["TN"])
        s[out].reorder(*lead, bi, bj, wi, wj, ti, tj, wsi, wsj, ri, rj)
        warp = s[out].fuse(wi, wj)
        lane = s[out].fuse(ti, tj)
        s[out].bind(bi, "blockIdx.y")
        s[out].bind(bj, "blockIdx.x")
        s[out].bind(warp, "threadIdx.y")
        s[out].bind(lane, "threadIdx.x")
        for ax in (wsi, wsj, ri, rj):
            s[out].unroll(ax)
        s[acc].compute_at(s[out], lane)
        _k_loop(s, acc, a_shared, b_shared, a_frag, b_frag, p["BK"], p["k_unroll"])
        row, kk = s[a_shared].axis
        s[a_shared].storage_order(kk, row)
        _cooperative_fill(s, a_shared, warps, 32, 4)
        _cooperative_fill(s, b_shared, warps, 32, 4)
        _overlap(s, a_shared, b_shared, p)


def _staged_blocks(s, out, product, a, b, BM: int, BN: int) -> tuple:
    """The product's accumulator (a local cache of it where ``out`` is the product), shared
    caches of ``a`` and ``b`` read by it, and ``out`` in BM x BN blocks (a leading axis
    bound to ``blockIdx.z``): ``(acc, a_shared, b_shared, (bi, bj, ii, jj))``."""
    acc = s.cache_write(product, "local") if product == out.name else s[product].op.output
    a_shared = s.cache_read(a, "shared", [acc])
    b_shared = s.cache_read(b, "shared", [acc])
    *slices, i, j = s[out].axis
    for axis in slices:
        s[out].bind(axis, "blockIdx.z")
    return acc, a_shared, b_shared, s[out].tile(i, j, BM, BN)


def mma_warp_tiles(s, out, product, a, b, BM=128, BN=128, BK=32, WM=64, WN=32, vector=8, stages=0, pad=MMA_PAD,
                   rows_fastest=False):
    """``out`` (the product itself or an elementwise consumer of it) in BM x BN blocks of
    WM x WN warp tiles, each a grid of 16 x 8 ``mma_m16n8k16`` tiles: lane ``l`` of a warp
    holds rows ``8 * r + l // 4`` and columns ``2 * (l % 4) + c`` of each (r, c in 0, 1),
    accumulated in registers over k steps of 16. ``a`` and ``b`` are staged in shared
    tiles of BM x BK and BK x BN, filled by all the block's threads ``vector`` elements
    (16 bytes) at a time; with ``stages`` (3 or more) the tiles are cp.async rings of
    that many k steps. A product with axes ahead of its rows and columns (``P[h, i, j] =
    sum_k A[i, k] W[h, k, j]``, the gate and up projections of SwiGLU over one stacked
    weight) computes every h of a lane's tile in the same k loop, from one tile of A.
    Each tile's rows are padded by ``pad`` elements (``storage_pad``):
    with 8, the eight 16-byte rows that one ldmatrix phase reads (lowering loads the
    operand fragments by ldmatrix, ``tcomp.lower.fragments``) fall in eight different
    groups of four banks, where unpadded 64- or 256-byte rows share banks 4 or 8 ways.

    ``out`` may have one axis ahead of its rows and columns, bound to ``blockIdx.z``: the
    slices of a split-K product (``s.rfactor``), each block reducing one slice of k.

    The blocks of a row of blocks are neighbours in launch order (``blockIdx.x`` runs over
    the columns); with ``rows_fastest`` those of a column are, so that the blocks running at
    once share columns of ``b`` (a wide ``b``, such as an FFN's weights, then crosses HBM
    about once instead of once per wave)."""
    *lead, M, N = out.shape
    if len(lead) > 1:
        raise ScheduleError(f"mma_warp_tiles tiles the last two axes of {out.name} and binds one axis ahead of "
                            f"them to blockIdx.z; {out.name} has {len(out.shape)} axes")
    K = s[product].op.reduce_axis[0].extent
    if M < BM or N < BN or K % BK or BK % MMA_K:
        raise ScheduleError(f"the mma tiles need M >= BM = {BM}, N >= BN = {BN} (a last block that does not fit "
                               f"is shifted inwards) and K a multiple of BK = {BK}, itself a multiple of {MMA_K}; "
                               f"the shape is {M} x {N} x {K}")
    acc, a_shared, b_shared, (bi, bj, ii, jj) = _staged_blocks(s, out, product, a, b, BM, BN)
    wi, ii = s[out].split(ii, WM)
    wj, jj = s[out].split(jj, WN)
    mi, ii = s[out].split(ii, MMA_M)
    nj, jj = s[out].split(jj, MMA_N)
    row_half, group = s[out].split(ii, 8)
    t, col_half = s[out].split(jj, 2)
    s[out].reorder(bi, bj, wi, wj, group, t, mi, nj, row_half, col_half)
    warp = s[out].fuse(wi, wj)
    lane = s[out].fuse(group, t)
    s[out].bind(bi, "blockIdx.x" if rows_fastest else "blockIdx.y")
    s[out].bind(bj, "blockIdx.y" if rows_fastest else "blockIdx.x")
    s[out].bind(warp, "threadIdx.y")
    s[out].bind(lane, "threadIdx.x")
    for ax in (mi, nj, row_half, col_half):
        s[out].unroll(ax)
    s[acc].compute_at(s[out], lane)
    (k,) = s[acc].reduce_axis
    ko, ki = s[acc].split(k, BK)
    kt, ki = s[acc].split(ki, MMA_K)
    *stacked, ci, cj = s[acc].axis
    tile_i, reg_i = s[acc].split(ci, 2)
    tile_j, reg_j = s[acc].split(cj, 2)
    s[acc].reorder(ko, kt, *stacked, tile_i, tile_j, ki, reg_i, reg_j)
    for ax in (kt, *stacked, tile_i, tile_j, reg_i, reg_j):
        s[acc].unroll(ax)
    warps = (BM // WM) * (BN // WN)
    for cache in (a_shared, b_shared):
        s[cache].compute_at(s[acc], ko)
        if pad:
            s[cache].storage_pad(s[cache].axis[-1], pad)
        _cooperative_fill(s, cache, warps, 32, vector)
        if stages:
            s[cache].pipeline(stages)
    s[acc].tensorize(ki, "mma_m16n8k16")



def _blocked_fill(s, cache, threads_y: int, threads_x: int) -> None:
    """Spread the fill of a shared tile stored in 8 x 8 blocks over the block's threads,
    16 bytes (8 values of a block row) per thread and copy: eight consecutive threads
    fill the eight rows of one block (its 128 contiguous bytes, every bank once), the
    next eight the block to its right, so that a warp reads 64 contiguous bytes of each
    of eight rows of the operand."""
    *lead, rows, cols = s[cache].axis
    row_block, row = s[cache].split(rows, 8)
    col_block, lanes = s[cache].split(cols, 8)
    s[cache].reorder(*lead, row_block, col_block, row, lanes)
    flat, *rest = (*lead, row_block, col_block, row)
    for axis in rest:
        flat = s[cache].fuse(flat, axis)
    s[cache].vectorize(lanes)
    _over_the_threads(s, cache, flat, threads_y, threads_x)


def wgmma_tiles(s, out, product, a, b, BM=128, BN=128, BK=64, stages=4, rows_fastest=False, swizzle=True,
                in_flight=1):
    """``out`` (the product itself or an elementwise consumer of it) in BM x BN blocks,
    each a column of BM / 64 warpgroups (``threadIdx.y``) that compute 64 x BN tiles with
    Hopper's ``wgmma.mma_async.m64n{BN}k16``: thread t of a warpgroup holds rows
    ``16 * (t // 32) + (t % 32) // 4 + 8 * rh`` and columns ``8 * nj + 2 * (t % 4) + c``
    of its tile (rh, c in 0, 1), BN / 2 float32 accumulators. ``a`` and ``b`` are staged
    in shared tiles of BM x BK and BK x BN stored in 8 x 8 blocks, the layout the
    instruction reads through its descriptors: with ``swizzle`` the 128-byte swizzle
    (``storage_swizzle``; BK and BN multiples of 64), filled row by row 16 bytes a thread,
    else 8 x 8 blocks (``storage_blocks``) filled as :func:`_blocked_fill` says; with
    ``stages`` (2 or more) they are cp.async rings of that many k steps, and each k step's
    chain of instructions may run on while the next one is issued: ``in_flight`` chains
    (at most ``stages - 2``) are left running at the end of a k step, the copies going
    that many slots further behind (``pipeline(stages, reader_lag)``). A leading axis of the product (SwiGLU's stacked projections) is
    computed in the same k loop, one instruction per k step and slice; a leading axis of
    ``out`` is bound to ``blockIdx.z`` (split-K slices). ``rows_fastest`` as in
    :func:`mma_warp_tiles`."""
    *lead, M, N = out.shape
    if len(lead) > 1:
        raise ScheduleError(f"wgmma_tiles tiles the last two axes of {out.name} and binds one axis ahead of them "
                            f"to blockIdx.z; {out.name} has {len(out.shape)} axes")
    K = s[product].op.reduce_axis[0].extent
    if swizzle and (BK % 64 or BN % 64):
        raise ScheduleError(f"the 128-byte swizzle stores rows of 64 16-bit values: BK and BN must be multiples of 64; "
                            f"they are {BK} and {BN}")
    if BM % WGMMA_M or BN % 8 or not 8 <= BN <= 256 or M < BM or N < BN or K % BK or BK % MMA_K:
        raise ScheduleError(f"the wgmma tiles need BM a multiple of {WGMMA_M}, BN a multiple of 8 up to 256, "
                            f"M >= BM, N >= BN (a last block that does not fit is shifted inwards) and K a multiple "
                            f"of BK, itself a multiple of {MMA_K}; BM = {BM}, BN = {BN}, BK = {BK} and the shape is "
                            f"{M} x {N} x {K}")
    acc, a_shared, b_shared, (bi, bj, ii, jj) = _staged_blocks(s, out, product, a, b, BM, BN)
    group_row, ii = s[out].split(ii, WGMMA_M)
    warp, ii = s[out].split(ii, 16)
    row_half, quad_row = s[out].split(ii, 8)
    col_block, jj = s[out].split(jj, 8)
    quad_col, col_half = s[out].split(jj, 2)
    s[out].reorder(bi, bj, group_row, warp, quad_row, quad_col, col_block, row_half, col_half)
    thread = s[out].fuse(s[out].fuse(warp, quad_row), quad_col)
    s[out].bind(bi, "blockIdx.x" if rows_fastest else "blockIdx.y")
    s[out].bind(bj, "blockIdx.y" if rows_fastest else "blockIdx.x")
    s[out].bind(group_row, "threadIdx.y")
    s[out].bind(thread, "threadIdx.x")
    for ax in (col_block, row_half, col_half):
        s[out].unroll(ax)
    s[acc].compute_at(s[out], thread)
    (k,) = s[acc].reduce_axis
    ko, ki = s[acc].split(k, BK)
    kt, ki = s[acc].split(ki, MMA_K)
    *stacked, ci, cj = s[acc].axis
    s[acc].reorder(ko, kt, *stacked, ki, ci, cj)
    for ax in (kt, *stacked, ci, cj):
        s[acc].unroll(ax)
    for cache in (a_shared, b_shared):
        s[cache].compute_at(s[acc], ko)
        if swizzle:
            s[cache].storage_swizzle()
            _cooperative_fill(s, cache, BM // WGMMA_M, WARPGROUP_THREADS, 8)
        else:
            s[cache].storage_blocks(8, 8)
            _blocked_fill(s, cache, BM // WGMMA_M, WARPGROUP_THREADS)
        if stages:
            s[cache].pipeline(stages, reader_lag=min(in_flight, stages - 2))
    s[acc].tensorize(ki, f"wgmma_m64n{BN}k16")


class MmaTiling(Rule):
    """A product of 16-bit floats into float32 on the tensor cores: BM x BN blocks of
    WM x WN warp tiles of ``mma.sync.m16n8k16`` tiles (:func:`mma_warp_tiles`), k steps
    of BK staged in shared memory (cp.async rings of ``stages`` tiles, or one tile), the
    blocks launched row by row or (``rows_fastest``) column by column."""

    name = "mma_tiling"

    def applies(self, group, space):
        product = _product_stage(group)
        return product is not None and _operands_of_16_bits(group, product[0])

    def choices(self, group, space):
        return {"BM": [16, 64, 128], "BN": [64, 128, 256], "BK": [16, 32, 64], "WM": [16, 32, 64], "WN": [32, 64],
                "stages": [0, 3, 4], "rows_fastest": [False, True]}

    def valid(self, group, space, p):
        M, N = space.stages[group.anchor].shape
        K = space.stages[_product_stage(group)[0]].op.reduce_axis[0].extent
        if p["BM"] % p["WM"] or p["BN"] % p["WN"] or K % p["BK"] or M < p["BM"] or N < p["BN"]:
            return False
        threads = 32 * (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
        per_fill = 8 * threads  # 16-byte vectors of eight 16-bit values
        tiles = max(1, p["stages"])
        return (threads <= 512 and (p["BM"] * p["BK"]) % per_fill == 0 and (p["BK"] * p["BN"]) % per_fill == 0
                and (p["BM"] * (p["BK"] + MMA_PAD) + p["BK"] * (p["BN"] + MMA_PAD)) * 2 * tiles <= SHARED_BYTES
                and (not p["stages"] or not group.staged))

    def apply(self, s, group, p):
        product, a, b = _product_stage(group)
        mma_warp_tiles(s, s[group.anchor].op.output, product, a, b, BM=p["BM"], BN=p["BN"], BK=p["BK"],
                       WM=p["WM"], WN=p["WN"], stages=p["stages"], rows_fastest=p.get("rows_fastest", False))


class WgmmaTiling(Rule):
    """A product of 16-bit floats into float32 on Hopper's warpgroup instructions: BM x BN
    blocks of BM / 64 warpgroups of ``wgmma.m64n{BN}k16`` (:func:`wgmma_tiles`), k steps of
    BK in cp.async rings of ``stages`` tiles in the 128-byte swizzle, one k step's chain
    left running while the next is issued, the blocks launched row by row or
    (``rows_fastest``) column by column."""

    name = "wgmma_tiling"

    def applies(self, group, space):
        product = _product_stage(group)
        return product is not None and _operands_of_16_bits(group, product[0])

    def choices(self, group, space):
        return {"BM": [64, 128, 256], "BN": [64, 128, 256], "BK": [64, 128], "stages": [3, 4],
                "rows_fastest": [False, True]}

    def valid(self, group, space, p):
        *_, M, N = space.stages[group.anchor].shape
        K = space.stages[_product_stage(group)[0]].op.reduce_axis[0].extent
        if K % p["BK"] or M < p["BM"] or N < p["BN"] or group.staged:
            return False
        threads = WARPGROUP_THREADS * p["BM"] // WGMMA_M
        registers = p["BN"] // 2 + WGMMA_OTHER_REGISTERS  # the accumulators and the rest
        shared = (p["BM"] + p["BN"]) * p["BK"] * 2 * p["stages"] + 1024  # + the swizzle's alignment
        return threads * registers <= REGISTERS_PER_SM and shared <= SHARED_BYTES

    def apply(self, s, group, p):
        product, a, b = _product_stage(group)
        wgmma_tiles(s, s[group.anchor].op.output, product, a, b, BM=p["BM"], BN=p["BN"], BK=p["BK"],
                    stages=p["stages"], rows_fastest=p.get("rows_fastest", False))


def _operands_of_16_bits(group: Group, product: str) -> bool:
    """Is the product a float32 sum of products of two bfloat16 (or two float16) values?"""
    op = group.stages[product].op
    source = op.body.source
    dtypes = [f.value.dtype if isinstance(f, Cast) else f.dtype for f in (source.a, source.b)]
    return op.output.dtype == "float32" and dtypes[0] == dtypes[1] and dtypes[0] in ("bfloat16", "float16")


class SplitK(Rule):
    """Split-K for a matrix product whose output tiles alone leave most of the GPU idle (a
    decode-size M): ``s.rfactor`` cuts the k axis into ``parts`` slices, each slice a
    block-tiled product of its own (the slice bound to ``blockIdx.z``, partial sums in
    device memory), then one thread per output adds the slices. A reassociation, which
    ``tc.check`` reports."""

    name = "split_k"
    #: SMs of the target (the H200's 132): below this many output tiles, split
    SMS = 132

    def applies(self, group, space):
        product = _product_stage(group)
        if product is None or product[0] != group.anchor or group.fused:
            return False
        M, N = space.stages[group.anchor].shape
        return -(-M // 16) * -(-N // 32) < self.SMS  # even the smallest tiles leave SMs idle

    def choices(self, group, space):
        return {"parts": [2, 4, 8, 16], "BM": [16, 32, 64], "BN": [32, 64, 128], "BK": [8, 16, 32],
                "TM": [1, 2, 4], "TN": [2, 4, 8], "vector": [1, 2, 4], "threads": [64, 128, 256]}

    def valid(self, group, space, p):
        stage = space.stages[group.anchor]
        M, N = stage.shape
        K = stage.op.reduce_axis[0].extent
        if K % p["parts"] or (K // p["parts"]) % p["BK"] or p["BM"] % p["TM"] or p["BN"] % p["TN"]:
            return False
        tiles = -(-M // p["BM"]) * -(-N // p["BN"])
        threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
        per_fill = threads * p["vector"]
        return (tiles < self.SMS and tiles * p["parts"] <= 4 * self.SMS and 32 <= threads <= 1024
                and (p["BM"] * p["BK"]) % per_fill == 0 and (p["BN"] * p["BK"]) % per_fill == 0
                and p["BN"] % p["vector"] == 0 and p["threads"] <= max(M * N, 64)
                and _shared_bytes(p["BM"], p["BN"], p["BK"]) <= SHARED_BYTES
                and _fits_problem(p["BM"], M) and _fits_problem(p["BN"], N))

    def apply(self, s, group, p):
        product, a, b = _product_stage(group)
        partial = s.rfactor(product, p["parts"])
        acc = s.cache_write(partial, "local")
        a_shared, b_shared, a_frag, b_frag = _operand_caches(s, group, a, b, acc)
        part = s[partial].axis[0]
        s[partial].bind(part, "blockIdx.z")
        tx = _block_and_thread_tiles(s, partial, (part,), p["BM"], p["BN"], p["TM"], p["TN"])
        s[acc].compute_at(s[partial], tx)
        _k_loop(s, acc, a_shared, b_shared, a_frag, b_frag, p["BK"], 1)
        threads_y, threads_x = p["BM"] // p["TM"], p["BN"] // p["TN"]
        _cooperative_fill(s, a_shared, threads_y, threads_x, 1)  # NOTE: A's rows are K long, often short
        _cooperative_fill(s, b_shared, threads_y, threads_x, p["vector"])
        _combine_slices(s, product, p["threads"])


class RowReduction(Rule):
    """A reduction along rows that is not a matrix product (a row's max or sum): one block
    of ``threads`` threads per output element, each thread reducing an interleaved slice
    of the row (consecutive threads on consecutive elements) into shared memory, then one
    thread combining the slices (``s.rfactor(..., interleaved=True)``)."""

    name = "row_reduction"

    def applies(self, group, space):
        stage = space.stages[group.anchor]
        return (stage.reduction and not group.fused and _product_stage(group) is None
                and len(stage.op.reduce_axis) == 1)

    def choices(self, group, space):
        return {"threads": [32, 64, 128, 256, 512]}

    def valid(self, group, space, p):
        extent = space.stages[group.anchor].op.reduce_axis[0].extent
        return extent % p["threads"] == 0 and extent >= 2 * p["threads"]

    def apply(self, s, group, p):
        stage = s[group.anchor]
        partial = s.rfactor(stage.op.output, p["threads"], interleaved=True)
        axes = list(stage.axis)
        row = axes[0]
        for ax in axes[1:]:
            row = stage.fuse(row, ax)
        stage.bind(row, "blockIdx.x")
        s[partial].set_scope("shared")
        s[partial].compute_at(stage, row)
        s[partial].bind(s[partial].axis[0], "threadIdx.x")


class FlatTiling(Rule):
    """The kernel's output flattened, split into vectors of ``vector`` elements, blocks of
    ``threads`` threads, one vector per thread. Elementwise stages inside are inlined;
    a reduction (any that the matrix rules do not take) runs serially in each thread."""

    name = "flat_tiling"

    def applies(self, group, space):
        return not group.fused and _product_stage(group) is None

    def choices(self, group, space):
        return {"threads": [64, 128, 256, 512, 1024], "vector": [1, 2, 4, 8]}

    def valid(self, group, space, p):
        anchor = space.stages[group.anchor]
        if p["vector"] > 1 and (anchor.reduction or anchor.shape[-1] % p["vector"]):
            return False
        size = 1
        for extent in anchor.shape:
            size *= extent
        return p["threads"] * p["vector"] <= max(size, 64)

    def apply(self, s, group, p):
        stage = s[group.anchor]
        axes = list(stage.axis)
        flat = axes[0]
        for ax in axes[1:]:
            flat = stage.fuse(flat, ax)
        if p["vector"] > 1:
            flat, lanes = stage.split(flat, p["vector"])
            stage.vectorize(lanes)
        block, thread = stage.split(flat, p["threads"])
        stage.bind(block, "blockIdx.x")
        stage.bind(thread, "threadIdx.x")


BLOCK_TILING = register_rule(BlockTiling())
WARP_TILING = register_rule(WarpTiling())
SPLIT_K = register_rule(SplitK())
MMA_TILING = register_rule(MmaTiling())
WGMMA_TILING = register_rule(WgmmaTiling())
ROW_REDUCTION = register_rule(RowReduction())
FLAT_TILING = register_rule(FlatTiling())

__all__ = ["BLOCK_TILING", "BlockTiling", "FLAT_TILING", "FlatTiling", "MMA_TILING", "MmaTiling", "ROW_REDUCTION",
           "RowReduction", "SPLIT_K", "SplitK", "WARP_TILING", "WGMMA_TILING", "WarpTiling", "WgmmaTiling",
           "matrix_product_operands", "mma_warp_tiles", "wgmma_tiles"]
