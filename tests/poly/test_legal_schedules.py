"""Legal schedules: tc.check accepts them (reporting reassociation and recomputation), and
each one, run in the CUDA simulator, matches tc.evaluate."""

import numpy as np
import pytest

import tcomp as tc
from legality_cases import LEGAL, ffn_bf16, legal_bf16_epilogue, make_inputs, run, same


# NOTE: index arithmetic such as ``7 - j`` wraps around in uint32 in the generated code
# (and back, so it is right); the simulator's numpy warns about it.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


@pytest.mark.parametrize("name,make", LEGAL, ids=[name for name, _ in LEGAL])
def test_legal_schedule_matches_the_reference(name, make):
    case = make()
    report = tc.check(case.s)
    assert report.legal
    assert bool(report.reassociations) == case.reassociates, str(report)
    arrays = make_inputs(case)
    want = tc.evaluate(case.out, dict(zip(case.inputs, arrays)))
    got = run(case, arrays)
    if case.exact:
        np.testing.assert_array_equal(got, want)
    else:
        assert same(got, want, case.out.dtype), f"max diff {np.abs(got.astype(float) - want).max()}"


def test_enough_cases():
    assert len(LEGAL) >= 25


PLACEMENTS = ("all_root", "epilogue_at_i", "epilogue_at_j", "matmul_at_i", "matmul_at_j", "cast_kept")


def test_rounding_point_survives_every_placement():
    """Cb = bf16(C) is a rounding point: with the epilogue fused anywhere (inlined behind
    the matmul, the matmul computed inside it, the cast kept as a stage) the result is the
    algorithm's bit for bit, and on these inputs it differs from the same pipeline without
    the rounding, so the rounding visibly happened."""
    A, W, C, Cb, Y, Q = ffn_bf16()
    Y2 = tc.compute(C.shape, lambda i, j: tc.silu(C[i, j]), name="Y2")
    Q2 = tc.compute(C.shape, lambda i, j: tc.quantize(Y2[i, j], 0.02, "int8"), name="Q2")
    case0 = legal_bf16_epilogue("all_root")
    arrays = make_inputs(case0)
    unrounded = tc.evaluate(Q2, {A: arrays[0], W: arrays[1]})
    for placement in PLACEMENTS:
        case = legal_bf16_epilogue(placement)
        want = tc.evaluate(case.out, dict(zip(case.inputs, arrays)))
        assert np.count_nonzero(want != unrounded) > 0
        got = run(case, arrays)
        np.testing.assert_array_equal(got, want, err_msg=placement)


def test_report_counts_recomputation_and_reassociation():
    from legality_cases import legal_reassociated_sum, legal_rowmax_at

    report = tc.check(legal_rowmax_at("j").s)
    (rec,) = report.recomputation
    assert (rec.stage, rec.at, rec.factor, rec.exact) == ("R", "Q.j", 16.0, True)
    assert "each element computed 16 times" in str(report)
    assert report.reassociations == ()
    report = tc.check(legal_reassociated_sum().s)
    (r,) = report.reassociations
    assert r.stage == "C" and not r.exact
    assert "adds k=4 before k=1" in str(report) and "last bits" in str(report)


@pytest.mark.parametrize("act", ["silu", "relu", "sigmoid"])
def test_every_placement_of_an_epilogue(act):
    """Behind the matmul, the epilogue is legal exactly at the loops outside the reduction."""
    from legality_cases import matmul_act
    from tcomp import poly

    A, W, C, Y = matmul_act(act)
    s = tc.create_schedule(Y)
    (k,) = s[C].reduce_axis
    s[C].split(k, 4)
    verdicts = {}
    for v in list(s[C].leaf_vars):
        s[Y].reverse_compute_at(s[C], v)
        verdicts[v.name] = poly.is_legal(s)
    assert verdicts == {"i": True, "j": True, "k_o": False, "k_i": False}


def test_every_placement_of_a_row_statistic():
    """The row max may be computed at any loop of its consumer (recomputed at j); its
    consumer may follow it only once the row is complete."""
    from legality_cases import rowmax_quant
    from tcomp import poly

    X, R, Q = rowmax_quant()
    s = tc.create_schedule(Q)
    for v in s[Q].leaf_vars:
        s[R].compute_at(s[Q], v)
        assert poly.is_legal(s), v.name
    s[R].compute_root()
    verdicts = {}
    for v in s[R].leaf_vars:
        s[Q].reverse_compute_at(s[R], v)
        verdicts[v.name] = poly.is_legal(s)
    assert verdicts == {"i": True, "k": False}
