"""Block tiling: block tiles staged through shared memory, a thread tile accumulated in
registers from register fragments, with the A tile stored transposed or not, vector
loads, the tiles' loads overlapped with the computation (double buffering through
registers, cp.async rings of 3 or 4 tiles, or A double buffered and B pipelined), the k
loop unrolled in steps, and k split in slices where the output's tiles leave the
target's SMs idle."""

from __future__ import annotations

from .base import Rule
from .fills import cooperative_fill
from .products import fits_problem, operand_caches, output_tiles, product_stage, tiles_that_fit
from .register_tiles import block_and_thread_tiles, k_loop, overlap, overlap_valid, tile_shared_bytes
from .split_k import split_k_valid, tiled_stage


class BlockTiling(Rule):
    """Block tiles BM x BN, k steps of BK in shared memory, TM x TN outputs per thread."""

    name = "block_tiling"

    def applies(self, group, space):
        return product_stage(group) is not None

    def choices(self, group, space):
        M, N = space.stages[group.anchor].shape
        return {"BM": tiles_that_fit([16, 32, 64, 128, 256], M), "BN": tiles_that_fit([16, 32, 64, 128, 256], N),
                "BK": [8, 16, 32], "TM": [2, 4, 8], "TN": [2, 4, 8], "transpose_a": [False, True], "vector": [1, 2, 4],
                "double_buffer": [False, True], "pipeline": [0, 3, 4], "k_unroll": [1, 2, 4], "fragment_k": [1, 4],
                "split_k": [1, 2, 4]}

    def valid(self, group, space, p):
        M, N = space.stages[group.anchor].shape
        if p["BM"] % p["TM"] or p["BN"] % p["TN"]:
            return False
        threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
        per_fill = threads * p["vector"]
        return (64 <= threads <= space.target.max_threads_per_block
                and (p["BM"] * p["BK"]) % per_fill == 0 and (p["BN"] * p["BK"]) % per_fill == 0
                and p["BK"] % p["vector"] == 0 and p["BN"] % p["vector"] == 0
                and p["BK"] % (p["k_unroll"] * p.get("fragment_k", 1)) == 0
                and (p.get("fragment_k", 1) == 1 or not p["transpose_a"]) and overlap_valid(group, p)
                and tile_shared_bytes(p["BM"], p["BN"], p["BK"], p) <= space.target.smem_per_block
                and fits_problem(p["BM"], M) and fits_problem(p["BN"], N)
                and split_k_valid(group, space, p, output_tiles(M, N, p)))

    def apply(self, s, group, p):
        product, a, b = product_stage(group)
        out, lead, acc = tiled_stage(s, group, product, p.get("split_k", 1))
        a_shared, b_shared, a_frag, b_frag = operand_caches(s, group, a, b, acc)
        tx = block_and_thread_tiles(s, out, lead, p["BM"], p["BN"], p["TM"], p["TN"])
        s[acc].compute_at(s[out], tx)
        k_loop(s, acc, a_shared, b_shared, a_frag, b_frag, p["BK"], p["k_unroll"], p.get("fragment_k", 1))
        if p["transpose_a"]:
            row, kk = s[a_shared].axis
            s[a_shared].storage_order(kk, row)
        threads_y, threads_x = p["BM"] // p["TM"], p["BN"] // p["TN"]
        cooperative_fill(s, a_shared, threads_y, threads_x, p["vector"])
        cooperative_fill(s, b_shared, threads_y, threads_x, p["vector"])
        overlap(s, a_shared, b_shared, p)


__all__ = ["BlockTiling"]
