"""A decode step's product with its weights stored [N, K] (``torch.nn.Linear``'s layout):
the weight-rows rule (``tcomp.search.tiling.weight_rows``) is offered for it, its schedules
are legal, report their reassociation and match float64 in the simulator on poisoned
outputs, with and without a stage after the product, and compile to 16-byte loads without
spills."""

import shutil
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.search.space import Space
from tcomp.search.tiling import stream_weight_rows
from tcomp.search.tiling.tensor_cores import tensor_core_notes
from tcomp.search.tiling.weight_rows import MAX_ROW_LANES
from workloads import check_product, json_from_a_process_without_the_simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import linear_bf16  # noqa: E402


def _rules(out) -> set:
    space = Space(out, target="h200")
    return {rule.name for fusion in space.tileable_fusions() for group in space.groups(fusion)
            for rule in space.rules_for(group) if space.valid_params(rule, group)}


@pytest.mark.parametrize("M, offered", [(1, True), (8, True), (MAX_ROW_LANES // 8 + 1, False), (17, False)])
def test_the_rule_is_offered_for_a_decode_steps_rows(M, offered):
    rules = _rules(linear_bf16.algorithm(M=M, N=4096, K=12288))
    assert ("weight_rows" in rules) is offered
    assert "skinny_product" not in rules  # its loads run along a row of W's columns, which [N, K] has not


def test_the_explanation_names_the_rules_that_take_the_product_or_what_the_rule_needs():
    def notes(M, N, K):
        return tensor_core_notes(Space(linear_bf16.algorithm(M=M, N=N, K=K), target="h200"))

    assert notes(1, 4096, 12288) == ["Y: offered to weight_rows"]
    assert notes(9, 4096, 12288) == ["Y: offered to mma_tiling"]  # a 16-row block, 7 rows zero-filled
    (note,) = notes(9, 16, 12288)  # narrower than a tensor-core block, more rows than weight_rows takes
    assert note.endswith("weight_rows (W stored [N, K]) takes up to 8 rows, 8 values of k a 16-byte load and K a "
                         "multiple of 256 (a warp's load)"), note
    (note,) = notes(1, 16, 1001)
    assert note.endswith("weight_rows (W stored [N, K]) reads W's rows in vectors: K must be even"), note


def test_the_seed_is_four_warps_a_column_where_k_allows():
    space = Space(linear_bf16.algorithm(M=1, N=4096, K=12288), target="h200")
    seeds = [p.describe() for p in space.seed_points()]
    assert "Y: weight_rows columns=1 threads=128 unroll=4" in seeds
    # k = 3 x 256: of the seed's sizes, only a warp a column and one load at a time divide it
    space = Space(linear_bf16.algorithm(M=1, N=64, K=768), target="h200")
    assert [p.describe() for p in space.seed_points() if "weight_rows" in p.describe()] == \
        ["Y: weight_rows columns=4 threads=32 unroll=1"]


@pytest.mark.parametrize("M, sizes", [
    (1, dict(threads=32, columns=4, unroll=2)),   # a warp a column, four columns a block
    (3, dict(threads=64, columns=2, unroll=1)),   # two warps a column: their totals through shared memory
    (2, dict(threads=128, columns=1, unroll=1)),  # the seed's shape
])
def test_streamed_weight_rows_match_float64(M, sizes, rng):
    out = linear_bf16.algorithm(M=M, N=8, K=1024)
    s = tc.create_schedule(out)
    stream_weight_rows(s, out, "Y", "A", "W", **sizes)
    report = tc.check(s)
    assert report.legal and report.reassociations
    assert len(tc.lower(s).kernels) == 1
    A, W = tc.inputs(out)
    check_product(s, A, W, out, rng)


def test_a_stage_after_the_product_runs_on_the_whole_sum(rng):
    """SiLU, rounded to bf16, after the product: each thread of a column ends with the
    tree's total, and thread ``i`` writes row ``i`` (SiLU of a partial sum would differ)."""
    M, N, K = 3, 8, 512
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((N, K), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    Y = tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[j, k], "float32"), axis=k),
                   name="Y")
    Z = tc.compute((M, N), lambda i, j: tc.cast(tc.silu(Y[i, j]), "bfloat16"), name="Z")
    s = tc.create_schedule(Z)
    stream_weight_rows(s, Z, "Y", "A", "W", threads=32, columns=2, unroll=2)
    assert tc.check(s).legal and len(tc.lower(s).kernels) == 1
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    w = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(ml_dtypes.bfloat16)
    got = np.full((M, N), np.nan, ml_dtypes.bfloat16)
    tc.build(s)(a, w, got)
    want = tc.evaluate(Z, {A: a, W: w}).astype(np.float64)
    got = got.astype(np.float64)
    assert not np.isnan(got).any()
    # a float32 sum in another order may round to the neighbouring bf16 value
    assert np.all(np.abs(got - want) <= 2.0 ** -7 * np.abs(want) + 1e-6)


def test_the_search_picks_the_rule_for_a_decode_row(tmp_path):
    """The cost model ranks streaming W's rows above a block per output element
    (``row_reduction``, the best of the rest before the rule: 67 us predicted at 1 x 4096
    x 12288, the rule at W's bytes)."""
    result = tc.autoschedule(linear_bf16.algorithm(M=1, N=16, K=1024), trials=2, model_only=True,
                             db=tmp_path / "db.jsonl", workers=1)
    assert result.description.startswith("Y: weight_rows")


def test_stream_weight_rows_names_the_shapes_it_needs():
    def refused(M, N, K, **sizes):
        out = linear_bf16.algorithm(M=M, N=N, K=K)
        with pytest.raises(tc.ScheduleError) as err:
            stream_weight_rows(tc.create_schedule(out), out, "Y", "A", "W", **sizes)
        return str(err.value)

    assert "at most 16 rows of a 2-D product; Y is 17 x 8" in refused(17, 8, 1024)
    assert "reads k (1000) in steps of 32 threads x 8 values x 1 loads" in refused(1, 8, 1000, threads=32, unroll=1)
    assert "threads must be a power of two up to 32 or a multiple of 32, got 48" in refused(1, 8, 1536, threads=48)
    assert "N = 10 is not a multiple of it" in refused(1, 10, 1024, threads=32, columns=4, unroll=1)


_LOADS = """
import json, sys
sys.path.insert(0, "examples")
import linear_bf16, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.search.tiling import stream_weight_rows
found = {}
for M in (1, 8):
    out = linear_bf16.algorithm(M=M, N=4096, K=12288)
    s = tc.create_schedule(out)
    stream_weight_rows(s, out, "Y", "A", "W")
    (r,) = ptx_report(tc.lower(s))
    found[M] = dict(wide=r.ptx.count("ld.global.v4"), narrow=r.ptx.count("ld.global.u16"),
                    spills=r.spill_stores + r.spill_loads, shuffles=r.ptx.count("shfl.sync"))
print(json.dumps(found))
"""


def test_the_weights_are_read_in_16_byte_loads_without_spills():
    if shutil.which("ptxas") is None:
        pytest.skip("needs CUDA's ptxas on the PATH")
    found = json_from_a_process_without_the_simulator(["-c", _LOADS])
    for M, counts in found.items():
        assert counts["wide"] > 0 and counts["narrow"] == 0 and counts["spills"] == 0, (M, counts)
        assert counts["shuffles"] > 0, (M, counts)
