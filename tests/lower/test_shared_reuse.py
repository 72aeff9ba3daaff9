"""Shared memory reused (``tcomp.lower.shared_reuse``): a buffer whose first use follows
another's last one, with no serial loop around both, takes its bytes behind a barrier;
``storage.shared_layout`` places it where it overlaps only buffers dead before it."""

import sys
from pathlib import Path

from tcomp.ir.expr import FloatImm, IntImm, Load, Var
from tcomp.ir.stmt import Allocate, AsyncWait, Barrier, Buffer, For, Kernel, Seq, Store
from tcomp.lower.shared_reuse import share_shared_memory
from tcomp.target.storage import shared_layout


def _buffer(name, size, scope="shared"):
    return Buffer(name, "float32", (size,), scope)


def _kernel(body):
    return Kernel("k", (), For(Var("b"), 4, "blockIdx.x", body), (4, 1, 1), (32, 1, 1))


def _copy(dst, src, t):
    return Store(dst, t, Load(src, t))


def test_a_later_buffer_takes_the_bytes_of_one_dead_before_it_behind_a_barrier():
    t = Var("t")
    ring, tile, out = _buffer("ring", 4096), _buffer("tile", 2048), _buffer("out", 32, "global")
    first = For(t, 32, "threadIdx.x", Store(ring, t, FloatImm(1.0, "float32")))
    second = For(t, 32, "threadIdx.x", Store(tile, t, Load(ring, t)))  # reads ring: not yet dead
    third = For(t, 32, "threadIdx.x", _copy(out, tile, t))
    late = _buffer("late", 2048)  # 8 KB: worth a barrier of its own
    fourth = For(t, 32, "threadIdx.x", Store(late, t, FloatImm(2.0, "float32")))
    fifth = For(t, 32, "threadIdx.x", _copy(out, late, t))
    body = Allocate(ring, Allocate(tile, Allocate(late, Seq((first, Barrier(), second, third, fourth, fifth)))))
    kernel = share_shared_memory(_kernel(body))
    reuse = dict(kernel.shared_reuse)
    assert set(reuse[late]) == {ring, tile}  # both dead once `third` has read tile
    assert tile not in reuse  # tile's first use reads ring
    layout = shared_layout([ring, tile, late], kernel.shared_reuse)
    assert layout.offsets[2] == layout.offsets[0] and layout.total_bytes == (4096 + 2048) * 4
    (seq,) = _walk_seqs(kernel.body)
    stmts = seq.stmts
    i = next(n for n, s in enumerate(stmts) if isinstance(s, For) and s.body.buffer is late)
    assert isinstance(stmts[i - 1], Barrier)  # inserted between third and fourth


def _walk_seqs(node):
    from tcomp.ir.visitor import walk

    return [n for n in walk(node) if isinstance(n, Seq)]


def test_no_reuse_inside_a_serial_loop():
    """In a loop the later buffer's use comes before the earlier one's next use."""
    t, k = Var("t"), Var("k")
    early, late, out = _buffer("early", 64), _buffer("late", 64), _buffer("out", 32, "global")
    body = Seq((For(t, 32, "threadIdx.x", Store(early, t, FloatImm(1.0, "float32"))), Barrier(),
                For(t, 32, "threadIdx.x", _copy(out, early, t)),
                For(t, 32, "threadIdx.x", Store(late, t, FloatImm(2.0, "float32"))),
                For(t, 32, "threadIdx.x", _copy(out, late, t))))
    kernel = share_shared_memory(_kernel(Allocate(early, Allocate(late, For(k, 8, "serial", body)))))
    assert kernel.shared_reuse == ()


def test_a_loop_of_one_iteration_runs_once_as_a_bound_one_does():
    """The loop a batched product's staged tile keeps over its batch axis (one product a
    block) does not stop the reuse that :func:`test_no_reuse_inside_a_serial_loop` refuses
    for a loop of eight."""
    t, h = Var("t"), Var("h")
    early, late, out = _buffer("early", 64), _buffer("late", 64), _buffer("out", 32, "global")
    body = Seq((For(t, 32, "threadIdx.x", Store(early, t, FloatImm(1.0, "float32"))), Barrier(),
                For(t, 32, "threadIdx.x", _copy(out, early, t)), Barrier(),
                For(t, 32, "threadIdx.x", Store(late, t, FloatImm(2.0, "float32"))),
                For(t, 32, "threadIdx.x", _copy(out, late, t))))
    kernel = share_shared_memory(_kernel(Allocate(early, Allocate(late, For(h, 1, "serial", body)))))
    assert dict(kernel.shared_reuse)[late] == (early,)


def test_the_batched_products_tile_takes_the_rings_bytes():
    """``examples/batched_gemm_bf16_rounded.py`` at 8 x 1024^3 stages its bf16 tile in the
    bytes of its 4-stage rings, as the 2-D product does: 265,216 bytes of shared memory
    beside them would be over the H200's 232,448."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import batched_gemm_bf16_rounded

    import tcomp as tc

    out = batched_gemm_bf16_rounded.algorithm(8, 1024, 1024, 1024)
    s = tc.create_schedule(out)
    batched_gemm_bf16_rounded.schedule(s, out)
    (kernel,) = tc.lower(s).kernels
    assert {late.name: sorted(b.name for b in early) for late, early in kernel.shared_reuse} == \
        {"C_shared": ["A_shared", "W_shared"]}


def test_an_asynchronously_filled_buffer_is_waited_for_before_its_bytes_are_reused():
    t = Var("t")
    glob = _buffer("g", 32, "global")
    early, late = _buffer("early", 2048), _buffer("late", 2048)
    fill = For(t, 32, "threadIdx.x", Store(early, t, Load(glob, t), asynchronous=True))
    body = Seq((fill, AsyncWait(0), Barrier(), For(t, 32, "threadIdx.x", _copy(glob, early, t)),
                For(t, 32, "threadIdx.x", Store(late, t, FloatImm(0.0, "float32"))),
                For(t, 32, "threadIdx.x", _copy(glob, late, IntImm(0)))))
    kernel = share_shared_memory(_kernel(Allocate(early, Allocate(late, body))))
    assert dict(kernel.shared_reuse)[late] == (early,)
    stmts = _walk_seqs(kernel.body)[0].stmts
    i = next(n for n, s in enumerate(stmts) if isinstance(s, For) and s.body.buffer is late)
    assert isinstance(stmts[i - 1], Barrier) and isinstance(stmts[i - 2], AsyncWait) and stmts[i - 2].pending == 0


def test_a_small_buffer_takes_dead_bytes_only_where_a_barrier_stands_already():
    """Under ``REUSE_WORTH_A_BARRIER`` bytes (a row kernel's second statistic's slices), a
    reuse that would need a barrier of its own is not taken; behind a barrier that is
    there anyway it is, and no second barrier is added."""
    from tcomp.lower.shared_reuse import REUSE_WORTH_A_BARRIER

    t = Var("t")
    out = _buffer("out", 32, "global")
    for barrier_there in (False, True):
        early, late = _buffer("early", 256), _buffer("late", 256)
        assert late.size * 4 < REUSE_WORTH_A_BARRIER
        use_early = (For(t, 32, "threadIdx.x", Store(early, t, FloatImm(1.0, "float32"))), Barrier(),
                     For(t, 32, "threadIdx.x", _copy(out, early, t)))
        use_late = (For(t, 32, "threadIdx.x", Store(late, t, FloatImm(2.0, "float32"))),
                    For(t, 32, "threadIdx.x", _copy(out, late, t)))
        body = Seq(use_early + ((Barrier(),) if barrier_there else ()) + use_late)
        kernel = share_shared_memory(_kernel(Allocate(early, Allocate(late, body))))
        assert (late in dict(kernel.shared_reuse)) == barrier_there
        (seq,) = _walk_seqs(kernel.body)
        assert sum(isinstance(st, Barrier) for st in seq.stmts) == (2 if barrier_there else 1)


def test_two_later_buffers_alive_together_do_not_overlap_each_other():
    a, b, c = _buffer("a", 256), _buffer("b", 64), _buffer("c", 64)
    layout = shared_layout([a, b, c], ((b, (a,)), (c, (a,))))
    (oa, ob, oc) = layout.offsets
    assert ob == oa and oc >= ob + 64 * 4 and oc + 64 * 4 <= 256 * 4
    assert layout.total_bytes == 256 * 4
