"""The recorded trace: every primitive call, printable as Python that replays to the
same schedule."""

import os

import numpy as np
import pytest

import tcomp as tc
from tcomp.schedule import replay
from workloads import matmul, matmul_silu_quant, run, run_and_compare

HERE = os.path.basename(__file__)


def _big_schedule(s, w, tile=4):
    """Every primitive once: caches, tile, fuse, split with a keyword, reorder with a
    list, bind, unroll, vectorize, compute_at, compute_inline, set_scope."""
    A, C, Y, Q = w["A"], w["C"], w["Y"], w["Q"]
    CL = s.cache_write(C, "local")
    AS = s.cache_read(A, "shared", [s[CL]])
    i, j = s[Q].axis
    io, jo, ii, ji = s[Q].tile(i, j, tile, tile)
    s[Q].bind(io, "blockIdx.y")
    s[Q].bind(jo, "blockIdx.x")
    s[Q].bind(ji, "threadIdx.x")
    s[Y].compute_inline()
    s[C].compute_at(s[Q], jo)
    s[CL].compute_at(s[C], s[C].axis[1])
    ko, ki = s[CL].split(s[CL].reduce_axis[0], factor=4)
    s[CL].unroll(ki)
    s[AS].compute_at(s[CL], ko)
    s[AS].set_scope("shared")
    f = s[AS].fuse(*s[AS].axis)
    fo, fi = s[AS].split(f, tile)
    s[AS].bind(fi, "threadIdx.x")
    s[Q].reorder([ji, ii])
    s[Q].vectorize(ii)


def test_trace_golden():
    w = matmul(8, 8, 4)
    C = w["C"]
    s = w.schedule()
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 4, 4)
    f = s[C].fuse(io, jo)
    s[C].bind(f, "blockIdx.x")
    s[C].bind(ji, "threadIdx.x")
    ko, ki = s[C].split(s[C].reduce_axis[0], factor=2)
    line = _lineno() - 6
    assert s.trace_source() == (
        "def schedule(s, out):\n"
        "    C_i, C_j = s['C'].axis\n"
        f"    C_i_o, C_j_o, C_i_i, C_j_i = s['C'].tile(C_i, C_j, 4, 4)  # {HERE}:{line + 1}\n"
        f"    C_i_o_j_o_f = s['C'].fuse(C_i_o, C_j_o)  # {HERE}:{line + 2}\n"
        f"    s['C'].bind(C_i_o_j_o_f, 'blockIdx.x')  # {HERE}:{line + 3}\n"
        f"    s['C'].bind(C_j_i, 'threadIdx.x')  # {HERE}:{line + 4}\n"
        "    C_k, = s['C'].reduce_axis\n"
        f"    C_k_o, C_k_i = s['C'].split(C_k, factor=2)  # {HERE}:{line + 5}\n"
    )
    assert str(s) == s.trace_source()


def test_trace_without_sites_is_plain_python():
    w = matmul_silu_quant(13, 17, 19)
    s = w.schedule()
    _big_schedule(s, w)
    src = s.trace_source(with_sites=False)
    assert "#" not in src
    compile(src, "<trace>", "exec")
    assert src.startswith("def schedule(s, out):\n")
    assert len([ln for ln in src.splitlines() if "= s[" not in ln or "(" in ln]) - 1 == len(s.trace)


def test_trace_sites_name_this_file():
    w = matmul_silu_quant(13, 17, 19)
    s = w.schedule()
    _big_schedule(s, w)
    for entry in s.trace:
        assert os.path.basename(entry.site.filename) == HERE
    assert all(f"# {HERE}:" in ln for ln in s.trace_source().splitlines() if "(" in ln and "def " not in ln)


def test_trace_replays_to_the_same_trace_and_ir(rng):
    w = matmul_silu_quant(6, 7, 9)
    s = w.schedule()
    _big_schedule(s, w)
    src = s.trace_source()
    s2 = replay(src, w.out)
    assert s2.trace_source(with_sites=False) == s.trace_source(with_sites=False)
    assert str(tc.lower(s2)) == str(tc.lower(s))
    # and it still computes the algorithm
    run_and_compare(s2, w, rng)


def test_trace_replay_of_a_replay_is_stable():
    w = matmul(8, 8, 4)
    s = w.schedule()
    C = w["C"]
    i, j = s[C].axis
    s[C].split(j, 3)
    s[C].fuse(i, s[C].leaf_vars[1])
    first = s.trace_source(with_sites=False)
    second = replay(first, w.out).trace_source(with_sites=False)
    third = replay(second, w.out).trace_source(with_sites=False)
    assert first == second == third


def test_trace_records_only_successful_top_level_calls():
    w = matmul(8, 8, 4)
    s = w.schedule()
    C = w["C"]
    i, j = s[C].axis
    with pytest.raises(tc.ScheduleError):
        s[C].split(i, 0)
    s[C].tile(i, j, 2, 2)  # calls split and reorder inside: one entry
    assert [e.method for e in s.trace] == ["tile"]


def test_empty_trace():
    w = matmul(2, 2, 2)
    s = w.schedule()
    assert s.trace_source() == "def schedule(s, out):\n    pass\n"
    assert replay(s.trace_source(), w.out).trace == []


def test_replay_rejects_bad_sources():
    w = matmul(2, 2, 2)
    with pytest.raises(tc.ScheduleError, match="parse"):
        replay("def schedule(s, out)\n    pass\n", w.out)
    with pytest.raises(tc.ScheduleError, match="schedule"):
        replay("x = 1\n", w.out)


def test_replayed_trace_numerics_match_the_original(rng):
    w = matmul(13, 11, 5)
    s = w.schedule()
    C = w["C"]
    i, j = s[C].axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 8)
    s[C].bind(ii, "threadIdx.y")
    s[C].bind(ji, "threadIdx.x")
    s2 = replay(s.trace_source(), w.out)
    xs = w.make_inputs(rng)
    np.testing.assert_array_equal(run(s, xs), run(s2, xs))


def _lineno():
    import inspect

    return inspect.currentframe().f_back.f_lineno
