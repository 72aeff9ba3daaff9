"""The built-in tiling rules and the schedule helpers that examples and benchmarks use,
under the name they had before the rules moved to ``tcomp.search.tiling`` (one module
per family there). New code imports from ``tcomp.search.tiling``."""

from .tiling import (BLOCK_TILING, FLAT_TILING, MMA_K, MMA_M, MMA_N, MMA_PAD, MMA_TILING, ROW_REDUCTION, SPLIT_K,
                     WARP_TILING, WGMMA_TILING, BlockTiling, FlatTiling, MmaTiling, RowReduction, SplitK, WarpTiling,
                     WgmmaTiling, matrix_product_operands, mma_warp_tiles, wgmma_tiles)

__all__ = ["BLOCK_TILING", "BlockTiling", "FLAT_TILING", "FlatTiling", "MMA_K", "MMA_M", "MMA_N", "MMA_PAD",
           "MMA_TILING", "MmaTiling", "ROW_REDUCTION", "RowReduction", "SPLIT_K", "SplitK", "WARP_TILING",
           "WGMMA_TILING", "WarpTiling", "WgmmaTiling", "matrix_product_operands", "mma_warp_tiles", "wgmma_tiles"]
