"""Split-K: a matrix product whose output tiles cannot fill the target's SMs, its k axis
cut into slices that run on blocks of their own (``s.rfactor``), then added. The rule
:class:`SplitK`, and the helpers with which the block and warp tilings split k too."""

from __future__ import annotations

from ..kernels import Group
from .base import Rule
from .fills import cooperative_fill
from .products import accumulator, fits_problem, operand_caches, product_stage, tiles_that_fit
from .register_tiles import block_and_thread_tiles, k_loop, tile_shared_bytes


def split_k_valid(group: Group, space, p, tiles: int) -> bool:
    """``split_k`` slices (``p["split_k"]``, 1 for none) are possible where the product is
    the kernel's own unfused output, the slices divide k, and the output's ``tiles`` alone
    give the SMs fewer than two blocks each (at most four slices' blocks per SM)."""
    parts = p.get("split_k", 1)
    if parts == 1:
        return True
    product = product_stage(group)
    if product[0] != group.anchor or group.fused:
        return False
    K = space.stages[product[0]].op.reduce_axis[0].extent
    return K % parts == 0 and tiles < 2 * space.target.sms and tiles * parts <= 4 * space.target.sms


def tiled_stage(s, group: Group, product: str, parts: int) -> tuple:
    """``(stage, lead, acc)``: the stage whose last two axes the rule tiles, the axes kept
    outside its tiles (already bound) and the accumulator. With ``parts`` > 1 that stage is
    the product's split-K partial results (``s.rfactor``, the slice on ``blockIdx.z``), and
    the product itself adds the slices, one thread per output (:func:`combine_slices`)."""
    if parts == 1:
        return s[group.anchor].op.output, (), accumulator(s, group, product)
    partial = s.rfactor(product, parts)
    acc = s.cache_write(partial, "local")
    part = s[partial].axis[0]
    s[partial].bind(part, "blockIdx.z")
    combine_slices(s, product, 256)
    return partial, (part,), acc


def tensor_core_slices_valid(group: Group, space, p, BM: int, BN: int, BK: int) -> bool:
    """Are ``p["split_k"]`` slices (1: none) possible for a tensor-core tiling of BM x BN
    blocks: an unbatched product whose output tiles leave SMs idle (fewer tiles than SMs;
    at most two slices' blocks an SM), whose K the slices cut into whole k steps?"""
    parts = p.get("split_k", 1)
    if parts == 1:
        return True
    product = space.stages[product_stage(group, any_layout=True)[0]]
    if len(product.shape) != 2 or group.staged:
        return False
    M, N = product.shape
    K = product.op.reduce_axis[0].extent
    tiles = -(-M // BM) * -(-N // BN)
    # NOTE: a slice's k is not the operands' own, so its tail cannot be padded: whole k steps
    return (tiles < space.target.sms and tiles * parts <= 2 * space.target.sms and K % parts == 0
            and (K // parts) % BK == 0)


def tensor_core_slices(s, group: Group, product: str, parts: int) -> tuple:
    """``(tensor, stage)`` a tensor-core rule tiles: the group's output and its product, or
    with ``parts`` > 1 the product's split-K partial results twice (``s.rfactor``; the rule
    binds the slice to ``blockIdx.z``), the slices then added one output per thread of
    blocks of 256: by the product's own kernel (:func:`combine_slices`), or, where
    elementwise stages after the product are in the group's kernel, by the anchor's thread
    before it runs them on the whole sum."""
    if parts == 1:
        return s[group.anchor].op.output, product
    partial = s.rfactor(product, parts)
    if product == group.anchor:
        combine_slices(s, product, 256)
        return partial, partial.name
    anchor = s[group.anchor]
    flat = anchor.fuse(*anchor.axis)
    block, thread = anchor.split(flat, 256)
    anchor.bind(block, "blockIdx.x")
    anchor.bind(thread, "threadIdx.x")
    s[product].compute_at(anchor, thread)
    return partial, partial.name


def combine_slices(s, product: str, threads: int) -> None:
    """The split-K sum of the slices, its outputs flattened over blocks of ``threads``."""
    combine = s[product]
    flat = combine.fuse(*combine.axis)
    block, thread = combine.split(flat, threads)
    combine.bind(block, "blockIdx.x")
    combine.bind(thread, "threadIdx.x")


class SplitK(Rule):
    """Split-K for a matrix product whose output tiles alone leave most of the GPU idle (a
    decode-size M): ``s.rfactor`` cuts the k axis into ``parts`` slices, each slice a
    block-tiled product of its own (the slice bound to ``blockIdx.z``, partial sums in
    device memory), then one thread per output adds the slices. A reassociation, which
    ``tc.check`` reports."""

    name = "split_k"

    def applies(self, group, space):
        product = product_stage(group)
        if product is None or product[0] != group.anchor or group.fused:
            return False
        M, N = space.stages[group.anchor].shape
        return -(-M // 16) * -(-N // 32) < space.target.sms  # even the smallest tiles leave SMs idle

    def choices(self, group, space):
        M, N = space.stages[group.anchor].shape
        return {"parts": [2, 4, 8, 16], "BM": tiles_that_fit([16, 32, 64], M), "BN": tiles_that_fit([32, 64, 128], N),
                "BK": [8, 16, 32],
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
        return (tiles < space.target.sms and tiles * p["parts"] <= 4 * space.target.sms
                and 32 <= threads <= space.target.max_threads_per_block
                and (p["BM"] * p["BK"]) % per_fill == 0 and (p["BN"] * p["BK"]) % per_fill == 0
                and p["BN"] % p["vector"] == 0 and p["threads"] <= max(M * N, 64)
                and tile_shared_bytes(p["BM"], p["BN"], p["BK"]) <= space.target.smem_per_block
                and fits_problem(p["BM"], M) and fits_problem(p["BN"], N))

    def apply(self, s, group, p):
        product, a, b = product_stage(group)
        partial = s.rfactor(product, p["parts"])
        acc = s.cache_write(partial, "local")
        a_shared, b_shared, a_frag, b_frag = operand_caches(s, group, a, b, acc)
        part = s[partial].axis[0]
        s[partial].bind(part, "blockIdx.z")
        tx = block_and_thread_tiles(s, partial, (part,), p["BM"], p["BN"], p["TM"], p["TN"])
        s[acc].compute_at(s[partial], tx)
        k_loop(s, acc, a_shared, b_shared, a_frag, b_frag, p["BK"], 1)
        threads_y, threads_x = p["BM"] // p["TM"], p["BN"] // p["TN"]
        cooperative_fill(s, a_shared, threads_y, threads_x, 1)  # NOTE: A's rows are K long, often short
        cooperative_fill(s, b_shared, threads_y, threads_x, p["vector"])
        combine_slices(s, product, p["threads"])


__all__ = ["SplitK", "combine_slices", "split_k_valid", "tensor_core_slices", "tensor_core_slices_valid",
           "tiled_stage"]
