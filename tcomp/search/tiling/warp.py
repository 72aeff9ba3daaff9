"""Warp tiling: the block tile split over warps, each thread's tile strided over its
warp's sub-tiles; overlapped loads and split k as in block tiling."""

from __future__ import annotations

from .base import Rule
from .fills import cooperative_fill
from .products import fits_problem, operand_caches, output_tiles, product_stage, tiles_that_fit
from .register_tiles import k_loop, overlap, overlap_valid, tile_shared_bytes
from .split_k import split_k_valid, tiled_stage


class WarpTiling(Rule):
    """Block tiles split over warps of WM x WN; each thread computes TM x TN outputs at
    each of the warp's WNITER column sub-tiles (and as many row sub-tiles as it takes
    for the warp's 32 threads to cover WM x WN). A transposed, vectorized A tile."""

    name = "warp_tiling"

    def applies(self, group, space):
        return product_stage(group) is not None

    def choices(self, group, space):
        M, N = space.stages[group.anchor].shape
        return {"BM": tiles_that_fit([64, 128, 256], M), "BN": tiles_that_fit([64, 128, 256], N), "BK": [8, 16, 32],
                "WM": [32, 64, 128],
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
        return (threads <= space.target.max_threads_per_block
                and (p["BM"] * p["BK"]) % per_fill == 0 and (p["BN"] * p["BK"]) % per_fill == 0
                and p["BK"] % p["k_unroll"] == 0 and overlap_valid(group, p)
                and tile_shared_bytes(p["BM"], p["BN"], p["BK"], p) <= space.target.smem_per_block
                and fits_problem(p["BM"], M) and fits_problem(p["BN"], N)
                and split_k_valid(group, space, p, output_tiles(M, N, p)))

    def apply(self, s, group, p):
        product, a, b = product_stage(group)
        warps, wmiter = self._layout(p)
        out, lead, acc = tiled_stage(s, group, product, p.get("split_k", 1))
        a_shared, b_shared, a_frag, b_frag = operand_caches(s, group, a, b, acc)
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
        k_loop(s, acc, a_shared, b_shared, a_frag, b_frag, p["BK"], p["k_unroll"])
        row, kk = s[a_shared].axis
        s[a_shared].storage_order(kk, row)
        cooperative_fill(s, a_shared, warps, 32, 4)
        cooperative_fill(s, b_shared, warps, 32, 4)
        overlap(s, a_shared, b_shared, p)


__all__ = ["WarpTiling"]
