"""What the matrix-product tiling rules share: finding a kernel's one matrix product and
its operands, what kind of operands they are, and the caches through which the product
reads them."""

from __future__ import annotations

from ...dtypes import itemsize
from ...ir.expr import Cast
from ...lang.tensor import TensorRead
from ...lower.tensor_copies import MAX_TENSOR_RANK
from ...target.instructions import MATRIX_OPERAND_DTYPES
from ..kernels import Group
from ..stages import matrix_product_operands


def product_stage(group: Group, any_layout: bool = False):
    """The one matrix product of ``group`` and its operands, or None; ``any_layout`` as in
    :func:`matrix_product_operands` (the tensor-core tilings take those)."""
    if len(group.reductions) != 1:
        return None
    name = group.reductions[0]
    operands = matrix_product_operands(group.stages[name].op, any_layout)
    return (name, *operands) if operands else None


def operands_of_16_bits(group: Group, product: str) -> bool:
    """Is the product a float32 sum of products of two bfloat16 (or two float16) values?"""
    op = group.stages[product].op
    source = op.body.source
    dtypes = [f.value.dtype if isinstance(f, Cast) else f.dtype for f in (source.a, source.b)]
    return op.output.dtype == "float32" and dtypes[0] == dtypes[1] and dtypes[0] in MATRIX_OPERAND_DTYPES


def copied_by_cp_async(group: Group, operands=(0, 1)) -> bool:
    """Can these of the product's operand tiles (0: a, 1: b) be pipelined: are they float32
    tensors read unchanged (no cast, not staged), so that their fills are byte copies?"""
    body = group.stages[group.reductions[0]].op.body
    factors = (body.source.a, body.source.b)
    return all(isinstance(factors[n], TensorRead) and factors[n].tensor.dtype == "float32"
               and factors[n].tensor.name not in group.staged for n in operands)


def copied_by_tma(group: Group) -> bool:
    """Can TMA boxes fill both operand tiles of the group's product: are the operands 2-D
    or 3-D tensors read unchanged (a cast aside; not staged) whose rows start 16 bytes
    apart?"""
    body = group.stages[group.reductions[0]].op.body
    for factor in (body.source.a, body.source.b):
        read = factor.value if isinstance(factor, Cast) else factor
        if not isinstance(read, TensorRead) or read.tensor.name in group.staged or not 2 <= len(read.tensor.shape) <= MAX_TENSOR_RANK:
            return False
        if read.tensor.shape[-1] * itemsize(read.tensor.dtype) % 16:
            return False
    return True


def accumulator(s, group: Group, product: str):
    """The stage that accumulates the product in registers: the fused reduction itself,
    or, when the product is the kernel's own output, a local copy (``cache_write``)."""
    if product == group.anchor:
        return s.cache_write(product, "local")
    return s[product].op.output


def operand_caches(s, group: Group, a, b, acc) -> tuple:
    """Shared tiles of the operands and register fragments of those, read by ``acc``. An
    operand the group stages (an elementwise stage, ``"staged"``) is inlined into its
    tile's fill: computed there, once per element of the tile."""
    a_shared = s.cache_read(a, "shared", [acc])
    b_shared = s.cache_read(b, "shared", [acc])
    for operand in (a, b):
        if operand in group.staged:
            s[operand].compute_inline()
    return a_shared, b_shared, s.cache_read(a_shared, "local", [acc]), s.cache_read(b_shared, "local", [acc])


def staged_blocks(s, out, product, a, b, BM: int, BN: int) -> tuple:
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


def aligned_lanes(tile, widest: int = 8) -> int:
    """How many elements (at most ``widest``, 16 bytes of a 16-bit type) of the tensor
    that shared ``tile`` caches one aligned access can move: the largest power of two
    that divides the length of its rows (its last dimension), so that every vector
    starts on a multiple of its size. A bfloat16 operand with K = 1000 moves 8 (16
    bytes), with K = 1002 two, with K = 1001 one."""
    lanes = widest
    while tile.shape[-1] % lanes:
        lanes //= 2
    return lanes


def copied_asynchronously(tile, lanes: int) -> bool:
    """Can a fill of ``tile`` that moves ``lanes`` elements at a time be a cp.async copy
    (4, 8 or 16 bytes)? A row of odd length of a 16-bit type cannot: its fill loads
    element by element."""
    return lanes * itemsize(tile.dtype) >= 4


def fits_problem(tile: int, extent: int) -> bool:
    """A tile no larger than the extent rounded up to a power of two (at least 16)."""
    bound = 16
    while bound < extent:
        bound *= 2
    return tile <= bound


def tiles_that_fit(sizes: list, extent: int) -> list:
    """The tile sizes among ``sizes`` that :func:`fits_problem` allows for ``extent``: a
    rule's choices for a tile, so that the search never enumerates the others (at 32 x
    32, 4 of the 25 block shapes of ``block_tiling``, none of ``warp_tiling``'s)."""
    return [size for size in sizes if fits_problem(size, extent)]


def output_tiles(M: int, N: int, p) -> int:
    """How many BM x BN block tiles cover the M x N output."""
    return -(-M // p["BM"]) * -(-N // p["BN"])


__all__ = ["accumulator", "aligned_lanes", "copied_asynchronously", "copied_by_cp_async", "fits_problem",
           "matrix_product_operands", "operand_caches", "operands_of_16_bits", "output_tiles", "product_stage",
           "staged_blocks", "tiles_that_fit"]
