"""double_buffer(): a shared tile's next k step is loaded into registers while the
current one is computed on. The loop nest changes (a prologue, one barrier before the
commit, the prefetch guarded by ko + 1 < n); what is computed does not."""

import re

import pytest

import tcomp as tc
from workloads import matmul, matmul_tol, run_and_compare, tiled_matmul


def _tiled(M, N, K, bk=4, threads=(4, 4), double=("A", "W"), vector=1):
    w, s, caches = tiled_matmul(M, N, K, bk, threads, vector)
    for name in double:
        s[caches[name]].double_buffer()
    return w, s, caches


def test_loop_nest_has_prologue_commit_and_guarded_prefetch():
    w, s, caches = _tiled(8, 8, 12)
    text = str(tc.lower(s))
    body = text[text.index("for k_o in range(3):"):]
    prologue = text[:text.index("for k_o in range(3):")]
    assert "A_shared_next = alloc local float32[1]" in prologue
    assert re.search(r"A_shared_next\[0\] = A\[", prologue)  # the fill's one-iteration loop dropped
    # one barrier opens the iteration, one follows the commit, none closes it
    lines = [line.strip() for line in body.splitlines()]
    first_store = next(n for n, line in enumerate(lines) if line.startswith("A_shared["))
    assert lines[1:first_store].count("syncthreads()") == 1
    assert "= A_shared_next[0]" in lines[first_store]
    assert "if k_o + 1 < 3:" in body
    assert body.count("syncthreads()") == 2


def test_double_buffered_matmul_matches(rng):
    w, s, _ = _tiled(8, 8, 12)
    run_and_compare(s, w, rng, **matmul_tol(12))


def test_double_buffered_with_tails_everywhere(rng):
    """M, N, K that no tile divides: the staged loads keep the fill's guards."""
    w, s, _ = _tiled(7, 9, 11, bk=3)
    run_and_compare(s, w, rng, **matmul_tol(11))


def test_only_one_tile_double_buffered(rng):
    w, s, _ = _tiled(8, 8, 12, double=("W",))
    text = str(tc.lower(s))
    assert "W_shared_next" in text and "A_shared_next" not in text
    run_and_compare(s, w, rng, **matmul_tol(12))


def test_double_buffered_vector_fills(rng):
    w, s, _ = _tiled(8, 8, 16, bk=8, vector=2)
    mod = tc.build(s)
    assert "_load2(A," in mod.source and "_store2(W_shared," in mod.source
    run_and_compare(s, w, rng, **matmul_tol(16))


def _refused_by_check_and_build(s, pattern: str) -> None:
    """tc.check refuses what tc.build refuses, with the same LoweringError (check = build:
    these are the schedules the fuzzer found legal by the check and refused by the build)."""
    with pytest.raises(tc.LoweringError, match=pattern) as by_check:
        tc.check(s)
    with pytest.raises(tc.LoweringError, match=pattern) as by_build:
        tc.build(s)
    assert str(by_check.value) == str(by_build.value)


def test_a_serial_fill_loop_cannot_be_staged():
    w, s, caches = _tiled(8, 8, 12, double=())
    AS = caches["A"]
    rest = next(v for v, kind in s[AS].annotations.items() if kind == "unroll")
    del s[AS].annotations[rest]  # the fill's outer loop is serial again
    s[AS].double_buffer()
    _refused_by_check_and_build(s, r"double_buffer of A_shared needs every loop of its fill .*"
                                   r"is serial: unroll it or bind it to threads")


def test_only_shared_tiles_can_be_double_buffered():
    w = matmul(4, 4, 8)
    C = w["C"]
    s = w.schedule()
    AL = s.cache_read("A", "local", [C])
    ko, ki = s[C].split(s[C].reduce_axis[0], 4)
    s[AL].compute_at(s[C], ko)
    s[AL].double_buffer()
    _refused_by_check_and_build(s, "only a shared-memory tile can be double buffered, and A_local is local")


def test_the_loop_of_a_double_buffered_tile_must_be_serial():
    w = matmul(4, 4, 8)
    C = w["C"]
    s = w.schedule()
    AS = s.cache_read("A", "shared", [C])
    i, j = s[C].axis
    s[C].bind(i, "threadIdx.x")
    s[AS].compute_at(s[C], i)
    s[AS].double_buffer()
    _refused_by_check_and_build(s, "computed at loop i of C, which is threadIdx.x")


def test_an_output_cannot_be_double_buffered():
    w = matmul(4, 4, 8)
    s = w.schedule()
    with pytest.raises(tc.ScheduleError, match=r"double_buffer\(\) at .*test_double_buffer.py:\d+: C is an output"):
        s[w["C"]].double_buffer()


def test_the_trace_replays_double_buffer():
    w, s, _ = _tiled(8, 8, 12)
    text = s.trace_source()
    assert "s['A_shared'].double_buffer()" in text
