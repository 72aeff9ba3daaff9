"""The tiling rules: how each kernel of a fusion choice is tiled (``tcomp.search.tiling.base``).

The built-in ones, one family a module, in the order the space tries them:

- :class:`BlockTiling` (:mod:`.block`): a kernel around one float matrix product (fused
  epilogue or not): block tiles through shared memory, thread tiles in registers;
- :class:`WarpTiling` (:mod:`.warp`): the same with the block tile split over warps;
- :class:`SplitK` (:mod:`.split_k`): a product whose output tiles cannot fill the GPU,
  its k axis in slices on blocks of their own, then added;
- :class:`SkinnyProduct` (:mod:`.skinny`): a product of at most 16 rows (a decode step),
  its weights streamed once into registers, k in slices added in a fixed order;
- :class:`WeightRows` (:mod:`.weight_rows`): the same with the weights stored ``[N, K]``
  (``torch.nn.Linear``'s layout): a warp on each output column's row of weights, the
  threads' sums added in a tree of shuffles;
- :class:`MmaRows` (:mod:`.mma_rows`): a 16-bit product of 16 rows (a decode step) on
  ``mma.sync``, its weights' fragments loaded straight from global memory into registers;
- :class:`MmaTiling` (:mod:`.mma_sync`): a 16-bit product on ``mma.sync`` tensor cores;
- :class:`WgmmaTiling` (:mod:`.wgmma`): a 16-bit product on Hopper's warpgroup instructions;
- :class:`RowKernel` (:mod:`.rows`): a row operator (softmax, RMSNorm) in one kernel, a
  block per row: its statistics and their consumers (``rows_in_blocks``, also a helper
  for hand schedules);
- :class:`SplitRows` (:mod:`.split_rows`): a row operator of fewer rows than SMs, its
  statistics in segments of the row on blocks of their own, merged in a fixed order
  (``rows_over_blocks``, also a helper for hand schedules);
- :class:`RowReduction` (:mod:`.rows`): a row reduction that is not a product;
- :class:`FlatTiling` (:mod:`.flat`): any other kernel, flattened over blocks and threads.

Shared pieces: :mod:`.products` (finding the product and its operands), :mod:`.fills`
(shared tiles filled by a block's threads), :mod:`.register_tiles` (the CUDA-core
product's tiles and k loop). Each rule's ``apply`` is a sequence of schedule primitives,
so what it does reads as the trace it leaves in a saved schedule; the sizes it may choose
come from the target the space is made for (``Space(..., target=...)``).
"""

from ...target.instructions import MMA_K, MMA_M, MMA_N
from .base import Rule, TilingRule, register_rule, registered_rules, unregister_rule
from .block import BlockTiling
from .flat import FlatTiling
from .mma_rows import MmaRows, mma_rows
from .mma_sync import MMA_PAD, MmaTiling, mma_warp_tiles
from .products import matrix_product_operands
from .rows import RowKernel, RowReduction, rows_in_blocks
from .skinny import SkinnyProduct, stream_rows
from .split_k import SplitK
from .split_rows import SplitRows, rows_over_blocks
from .warp import WarpTiling
from .weight_rows import WeightRows, stream_weight_rows
from .wgmma import WgmmaTiling, wgmma_tiles

BLOCK_TILING = register_rule(BlockTiling())
WARP_TILING = register_rule(WarpTiling())
SPLIT_K = register_rule(SplitK())
SKINNY_PRODUCT = register_rule(SkinnyProduct())
WEIGHT_ROWS = register_rule(WeightRows())
MMA_ROWS = register_rule(MmaRows())
MMA_TILING = register_rule(MmaTiling())
WGMMA_TILING = register_rule(WgmmaTiling())
ROW_KERNEL = register_rule(RowKernel())
SPLIT_ROWS = register_rule(SplitRows())
ROW_REDUCTION = register_rule(RowReduction())
FLAT_TILING = register_rule(FlatTiling())

__all__ = ["BLOCK_TILING", "BlockTiling", "FLAT_TILING", "FlatTiling", "MMA_K", "MMA_M", "MMA_N", "MMA_PAD",
           "MMA_ROWS", "MMA_TILING", "MmaRows", "MmaTiling", "ROW_KERNEL", "ROW_REDUCTION", "Rule", "RowKernel", "RowReduction",
           "SKINNY_PRODUCT", "SPLIT_K", "SPLIT_ROWS", "SkinnyProduct", "SplitK", "SplitRows", "TilingRule",
           "WARP_TILING", "WEIGHT_ROWS", "WGMMA_TILING", "WarpTiling", "WeightRows", "WgmmaTiling",
           "matrix_product_operands", "mma_rows", "mma_warp_tiles", "register_rule", "registered_rules", "rows_in_blocks",
           "rows_over_blocks", "stream_rows", "stream_weight_rows", "unregister_rule", "wgmma_tiles"]
