"""The building blocks of a matrix product on the CUDA cores: block and thread tiles,
the k loop over shared tiles and register fragments, and how the operand tiles' loads
overlap the computation (double buffering, cp.async rings)."""

from __future__ import annotations

from ..kernels import Group
from .products import copied_by_cp_async


def block_and_thread_tiles(s, out, lead: tuple, BM: int, BN: int, TM: int, TN: int):
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


def k_loop(s, acc, a_shared, b_shared, a_frag, b_frag, BK: int, k_unroll: int, fragment_k: int = 1) -> None:
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


def overlaps(p) -> tuple:
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


def tile_shared_bytes(BM: int, BN: int, BK: int, p=None) -> int:
    """Shared bytes of the a (BM x BK) and b (BK x BN) tiles, rings included."""
    (_, a_tiles), (_, b_tiles) = overlaps(p or {})
    return (BM * a_tiles + BN * b_tiles) * BK * 4


def overlap_valid(group: Group, p) -> bool:
    """A pipelined tile's fill must be a copy."""
    pipelined = tuple(n for n, (how, _) in enumerate(overlaps(p)) if how == "pipeline")
    return not pipelined or copied_by_cp_async(group, pipelined)


def overlap(s, a_shared, b_shared, p) -> None:
    """The operand tiles' loads overlapped with the computation, as ``p`` says."""
    for tile, (how, stages) in zip((a_shared, b_shared), overlaps(p)):
        if how == "double_buffer":
            s[tile].double_buffer()
        elif how == "pipeline":
            s[tile].pipeline(stages)


__all__ = ["block_and_thread_tiles", "k_loop", "overlap", "overlap_valid", "overlaps", "tile_shared_bytes"]
