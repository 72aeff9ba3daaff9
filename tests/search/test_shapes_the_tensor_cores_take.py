"""What the search offers at the shapes a model sends (issue 31): the tensor-core rules for a
K no k step divides, for W stored as [N, K] and for a batch axis; the skinny-product rule
(``tcomp.search.tiling.skinny``) for a decode step's few rows, checked by ``tc.check`` and
run in the simulator against ``tc.evaluate`` on poisoned outputs."""

import random
import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.search.space import Space
from tcomp.search.tiling import stream_rows
from tcomp.search.tiling.skinny import stream_rows_in_blocks
from tcomp.search.tiling.split_k import tensor_core_slices_valid
from workloads import check_product

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import batched_gemm_bf16  # noqa: E402
import ffn_bf16  # noqa: E402
import gemm_bf16  # noqa: E402
import linear_bf16  # noqa: E402
import swiglu_fp8  # noqa: E402


def _rules(out, target="h200") -> set:
    """The tiling rules the space offers for the kernel of ``out``'s product, unfused."""
    space = Space(out, target=target)
    names = set()
    for fusion in space.tileable_fusions():
        for group in space.groups(fusion):
            names |= {rule.name for rule in space.rules_for(group) if space.valid_params(rule, group)}
    return names


@pytest.mark.parametrize("algorithm, shape", [
    (gemm_bf16.algorithm, dict(M=4000, N=4000, K=1000)),   # K a multiple of no k step
    (gemm_bf16.algorithm, dict(M=1000, N=520, K=1001)),    # K odd: A's rows are not 4-byte aligned
    (linear_bf16.algorithm, dict(M=4096, N=4096, K=4096)),  # W stored [N, K]
    (batched_gemm_bf16.algorithm, dict(B=8, M=1024, N=1024, K=1024)),
])
def test_the_tensor_core_rules_are_offered(algorithm, shape):
    assert {"mma_tiling", "wgmma_tiling"} <= _rules(algorithm(**shape))


def test_a_small_ragged_product_runs_on_mma_sync(rng):
    """20 x 40 x 24: 16-row blocks shifted inwards, 32 columns, the k step padded; a point
    the search draws for it matches float64 in the simulator."""
    out = gemm_bf16.algorithm(M=20, N=40, K=24)
    assert "mma_tiling" in _rules(out)
    space = Space(out, target="h200")
    draws = random.Random(1)
    point = next(p for p in iter(lambda: space.sample(draws), 0) if p is not None and "mma_tiling" in p.describe())
    A, W = tc.inputs(out)
    check_product(space.schedule(point), A, W, out, rng)


@pytest.mark.parametrize("M, layout, stages", [(9, "nk", 3), (12, "kn", 0), (15, "nk", 0)])
def test_fewer_rows_than_an_instruction_run_on_mma_sync(M, layout, stages, rng):
    """9 to 15 rows in one row of 16-row blocks: A's tile zero-filled past M (a cp.async copy
    of no bytes, or a zero stored), the rows past M never stored; with W as [N, K] the
    decode rows that no streaming rule takes (``weight_rows`` stops at 8)."""
    from tcomp.search.tiling import mma_warp_tiles
    from workloads import product_16_bit

    A, W, C = product_16_bit(M, 40, 40, layout)
    s = tc.create_schedule(C)
    mma_warp_tiles(s, C, "C", "A", "W", BM=16, BN=32, BK=16, WM=16, WN=16, stages=stages)
    assert tc.check(s).legal
    check_product(s, A, W, C, rng)


def test_the_search_seeds_a_decode_step_of_twelve_rows_on_mma_sync():
    out = linear_bf16.algorithm(M=12, N=12288, K=4096)
    space = Space(out, target="h200")
    seeds = [p.describe() for p in space.seed_points()]
    assert any(d.startswith("Y: mma_tiling BK=128 BM=16 BN=96") for d in seeds), seeds
    assert not any("mma_tiling" in p.describe() for p in Space(linear_bf16.algorithm(M=8, N=12288, K=4096),
                                                                 target="h200").seed_points())


@pytest.mark.parametrize("M", [1, 8])
def test_eight_rows_or_fewer_are_refused_by_the_mma_tiles(M):
    from tcomp.search.tiling import mma_warp_tiles
    from workloads import product_16_bit

    A, W, C = product_16_bit(M, 40, 40, "nk")
    with pytest.raises(tc.ScheduleError, match=r"the mma tiles need M >= BM = 16 \(or 9 to 15 rows and BM = 16"):
        mma_warp_tiles(tc.create_schedule(C), C, "C", "A", "W", BM=16, BN=32, BK=16, WM=16, WN=16)


def test_a_cuda_core_rule_is_not_offered_a_layout_it_cannot_tile():
    """The CUDA-core tilings read b as [K, N]: W as [N, K] is the tensor-core rules' alone."""
    assert "block_tiling" not in _rules(linear_bf16.algorithm(M=256, N=256, K=256))


@pytest.mark.parametrize("M, offered", [(1, True), (16, True), (17, False), (1024, False)])
def test_the_skinny_rule_is_offered_for_a_decode_steps_rows(M, offered):
    assert ("skinny_product" in _rules(ffn_bf16.algorithm(M=M, N=12288, K=4096))) is offered


def test_a_skinny_point_is_legal_and_reports_its_reassociation():
    out = ffn_bf16.algorithm(M=1, N=12288, K=4096)
    space = Space(out, target="h200")
    rng = random.Random(0)
    point = None
    for _ in range(500):
        point = space.sample(rng)
        if point is not None and "skinny_product" in point.describe():
            break
    assert point is not None and "skinny_product" in point.describe()
    report = tc.check(space.schedule(point))
    assert report.legal and any(r.stage.startswith("C_rf") or r.stage == "C" for r in report.reassociations)


def _skinny_point(space, seed: int = 0):
    """A point of ``space`` whose product the skinny rule tiles."""
    rng = random.Random(seed)
    for _ in range(3000):
        point = space.sample(rng)
        if point is not None and "skinny_product" in point.describe():
            return point
    raise AssertionError("no skinny_product point drawn in 3000 draws")


@pytest.mark.parametrize("M", [1, 3])
def test_the_skinny_rule_streams_swiglus_stacked_product(M):
    """SwiGLU's gate and up projections as one stacked product ``P[h, i, j] = sum_k A[i, k]
    W[h, k, j]``: at a decode step's rows the skinny rule is offered for it (each
    projection on its own ``blockIdx.y``), the point is legal, and the whole SwiGLU with
    its per-row fp8 runs in the simulator within one fp8 step of ``tc.evaluate`` (a float32
    sum in another order may round a projection to the other bf16 neighbour)."""
    from workloads import fp8_steps

    N, K = 128, 256
    out = swiglu_fp8.algorithm(M=M, N=N, K=K)
    space = Space(out, target="h200")
    s = space.schedule(_skinny_point(space))
    assert tc.check(s).legal
    rng = np.random.default_rng(M)
    feeds = {p: (rng.standard_normal(p.shape) / (1.0 if p.name == "A" else np.sqrt(K))).astype(ml_dtypes.bfloat16)
             for p in tc.inputs(out)}
    got = np.full((M, N), np.nan, ml_dtypes.float8_e4m3fn)
    tc.build(s)(*feeds.values(), got)
    assert not np.isnan(got.astype(np.float32)).any()
    steps = fp8_steps(got, tc.evaluate(out, feeds))
    assert steps.max() <= 1 and (steps > 0).mean() <= 0.02


def test_the_skinny_rule_leaves_weights_stored_n_by_k_to_the_weight_rows_rule():
    """``W[j, k]`` (torch.nn.Linear's layout) puts k, not the columns, along a row of W: the
    16-byte loads of a thread's columns that the skinny rule streams do not exist there
    (``tests/search/test_weight_rows.py``: the rule that streams W's rows instead)."""
    assert "skinny_product" not in _rules(linear_bf16.algorithm(M=1, N=4096, K=12288))


def _ffn_streamed(M: int, N: int, K: int, stream):
    """The FFN projection with its epilogue stages inlined and ``stream(s, out)`` applied."""
    out = ffn_bf16.algorithm(M=M, N=N, K=K)
    s = tc.create_schedule(out)
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    stream(s, out)
    return s, out


def _check_ffn(s, out, rng) -> None:
    """Run ``s`` on fresh inputs into a poisoned Q and hold it to ``tc.evaluate``: a float32
    sum in another order may flip a bf16 tie, one int8 step on an element or two."""
    A, W = tc.inputs(out)
    (M, K), N = A.shape, out.shape[1]
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    w = (rng.standard_normal((K, N)) / 8).astype(ml_dtypes.bfloat16)
    got = np.full((M, N), -77, np.int8)
    tc.build(s)(a, w, got)
    want = tc.evaluate(out, {A: a, W: w})
    assert np.abs(got.astype(int) - want).max() <= 1 and np.count_nonzero(got != want) <= 2


def test_sixteen_decode_rows_in_narrow_blocks_with_k_whole_match_float64(rng):
    """16 rows of a wide W: 16 x 96 blocks of six 16 x 16 warp tiles, k whole and the
    epilogue on the accumulators, one kernel (``gemm_bf16.mma_tiles_for`` where 96-column
    blocks fill the SMs' waves best: one wave of 128 at N = 12288); here at 21 x 104 x 136,
    which none of the tiles divide: the last row block and the last column block shifted
    inwards, K padded in its second k step of 128, and A's 16 x 128 tile (256 vectors)
    copied by the block's 192 threads in two passes."""
    tiles = gemm_bf16.mma_tiles_for(16, 12288, 4096)
    assert (tiles["BN"], tiles["BK"]) == (96, 128)
    out = ffn_bf16.algorithm(M=21, N=104, K=136)
    s = tc.create_schedule(out)
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    gemm_bf16.mma_warp_tiles(s, out, "C", "A", "W", **tiles)
    assert len(tc.lower(s).kernels) == 1 and tc.check(s).legal
    _check_ffn(s, out, rng)


@pytest.mark.parametrize("M", [1, 3])
def test_streamed_rows_match_float64(M, rng):
    """Slices of k added in a fixed order, then the bf16 rounding, SiLU and int8 quantization
    on the whole sum (a consumer of a partial sum would compute something else)."""
    s, out = _ffn_streamed(M, 64, 64, lambda s, out: stream_rows(s, out, "C", "A", "W", parts=4, threads=8,
                                                                 unroll=4, combine_threads=64))
    _check_ffn(s, out, rng)


@pytest.mark.parametrize("M", [1, 2])
def test_streamed_rows_in_one_kernel_match_float64(M, rng):
    """The slices of a block's columns on its threads, added through shared memory after a
    barrier, in a fixed order, then the epilogue: one kernel."""
    s, out = _ffn_streamed(M, 64, 128, lambda s, out: stream_rows_in_blocks(s, out, "C", "A", "W", parts=8,
                                                                            threads_x=4, unroll=4))
    assert tc.check(s).legal and len(tc.lower(s).kernels) == 1
    _check_ffn(s, out, rng)


@pytest.mark.parametrize("M", [1, 2])
def test_streamed_rows_split_over_blocks_and_warps_match_float64(M, rng):
    """k cut into slices on blockIdx.y and, within each, on the warps of a block: the
    warps' sums added through shared memory, the blocks' by a second kernel in a fixed
    order, then the epilogue on the whole sum."""
    s, out = _ffn_streamed(M, 64, 256, lambda s, out: stream_rows_in_blocks(s, out, "C", "A", "W", parts=4,
                                                                            threads_x=4, unroll=4, block_parts=2))
    assert tc.check(s).legal
    kernels = tc.lower(s).kernels
    assert len(kernels) == 2 and kernels[0].grid[1] == 2
    _check_ffn(s, out, rng)


def test_the_skinny_rule_offers_the_one_kernel_form():
    out = ffn_bf16.algorithm(M=1, N=12288, K=4096)
    space = Space(out, target="h200")
    point = _drawn(space, "skinny_product", "one_kernel=True")
    s = space.schedule(point)
    assert tc.check(s).legal and len(tc.lower(s).kernels) == len(point.tilings)  # the product's kernel is one


def test_the_skinny_rule_offers_k_over_blocks_as_well():
    """The down projection's 4096 columns make 128 blocks of 32: the rule also offers k cut
    over blocks (``block_parts``), the blocks' sums added by a second kernel."""
    out = ffn_bf16.algorithm(M=1, N=4096, K=12288)
    space = Space(out, target="h200")
    point = _drawn(space, "skinny_product", "one_kernel=True", "block_parts=16")
    s = space.schedule(point)
    assert tc.check(s).legal and len(tc.lower(s).kernels) == len(point.tilings) + 1
    # the search measures the schedule's source: its two slice axes have names of their own
    source = s.trace_source(with_sites=False)
    assert tc.lower(tc.schedule.replay(source, out)).kernels[0].grid == tc.lower(s).kernels[0].grid


def test_stream_rows_names_the_shapes_it_needs():
    out = ffn_bf16.algorithm(M=1, N=64, K=60)
    s = tc.create_schedule(out)
    with pytest.raises(tc.ScheduleError, match=r"stream_rows cuts k \(60\) into 16 slices of whole steps of 4"):
        stream_rows(s, out, "C", "A", "W", parts=16, unroll=4)
    out = ffn_bf16.algorithm(M=1, N=60, K=64)
    with pytest.raises(tc.ScheduleError, match=r"N = 60 is not a multiple of 8"):
        stream_rows(tc.create_schedule(out), out, "C", "A", "W", parts=4, unroll=4)
    out = ffn_bf16.algorithm(M=17, N=64, K=64)
    with pytest.raises(tc.ScheduleError, match=r"at most 16 rows; C has 17"):
        stream_rows(tc.create_schedule(out), out, "C", "A", "W", parts=4, unroll=4)
    out = ffn_bf16.algorithm(M=16, N=64, K=1024)
    with pytest.raises(tc.ScheduleError, match=r"the stream schedule is for a decode step of under 16 rows"):
        ffn_bf16.stream(tc.create_schedule(out), out)
    out = ffn_bf16.algorithm(M=16, N=512, K=1024)
    with pytest.raises(tc.ScheduleError, match=r"stream_rows_in_blocks runs 64 x 128 threads a block"):
        stream_rows_in_blocks(tc.create_schedule(out), out, "C", "A", "W", parts=16, threads_x=64, unroll=4)
    out = ffn_bf16.algorithm(M=1, N=1000, K=1000)
    with pytest.raises(tc.ScheduleError, match=r"the stream schedule needs N a multiple of 8 and K a multiple"):
        ffn_bf16.stream(tc.create_schedule(out), out)


@pytest.mark.parametrize("algorithm, shape, target, note", [
    (gemm_bf16.algorithm, dict(M=4000, N=4000, K=1000), "h200", r"^C: offered to mma_tiling, wgmma_tiling$"),
    (gemm_bf16.algorithm, dict(M=64, N=64, K=8), "h200", r"^C: offered to mma_tiling, wgmma_tiling$"),
    (ffn_bf16.algorithm, dict(M=1, N=12288, K=4096), "h200", r"^C: offered to skinny_product$"),
    (ffn_bf16.algorithm, dict(M=16, N=12288, K=4096), "h200", r"^C: offered to skinny_product, mma_rows, mma_tiling$"),
    (ffn_bf16.algorithm, dict(M=1, N=60, K=64), "h200",
     r"^C: on the CUDA cores: the output \(1 x 60\) is under the smallest tensor-core block \(9 x 32\); "
     r"skinny_product takes up to 16 rows, N a multiple of 8 and K of at least 128$"),
    # ten rows: a 16-row block, its rows past M zero-filled (N = 60 is no multiple of 8 for the skinny rule)
    (ffn_bf16.algorithm, dict(M=10, N=60, K=64), "h200", r"^C: offered to mma_tiling$"),
    (linear_bf16.algorithm, dict(M=128, N=128, K=96), "rtx_a6000", r"^Y: offered to mma_tiling$"),
    # the output is the reason, not a K under one k step (which the tilings pad with zeros)
    (gemm_bf16.algorithm, dict(M=8, N=64, K=8), "h200",
     r"^C: on the CUDA cores: the output \(8 x 64\) is under the smallest tensor-core block \(9 x 32\); "
     r"skinny_product takes up to 16 rows, N a multiple of 8 and K of at least 128$"),
])
def test_the_tensor_core_notes_say_which_rules_take_a_product(algorithm, shape, target, note):
    from tcomp.search.tiling.tensor_cores import tensor_core_notes

    (line,) = tensor_core_notes(Space(algorithm(**shape), target=target))
    assert re.match(note, line), line


def test_a_float32_product_says_why_it_stays_on_the_cuda_cores(capsys):
    """``tcomp explain`` prints the verdict: a silent fall back to the CUDA cores is a bug."""
    from tcomp import cli

    example = Path(__file__).resolve().parents[2] / "examples" / "sgemm_ladder.py"
    assert cli.main(["explain", str(example), "--shape", "M=64,N=64,K=64"]) == 0
    out = capsys.readouterr().out
    assert ("C: on the CUDA cores: the tensor-core rules take two bfloat16 or float16 operands summed in float32; "
            "C multiplies float32 and float32 into float32") in out


def _drawn(space, *words):
    draws = random.Random(0)
    return next(p for p in iter(lambda: space.sample(draws), 0)
                if p is not None and all(w in p.describe() for w in words))


def test_split_k_on_the_tensor_cores_where_the_blocks_leave_sms_idle(rng):
    """One 64 x 64 block for 132 SMs: the wgmma rule offers k in slices on blockIdx.z,
    added afterwards; the point is legal, reports the reassociation and matches float64."""
    out = gemm_bf16.algorithm(M=64, N=64, K=256)
    space = Space(out, target="h200")
    point = _drawn(space, "wgmma_tiling", "split_k=2")
    s = space.schedule(point)
    report = tc.check(s)
    assert report.legal and report.reassociations
    A, W = tc.inputs(out)
    check_product(s, A, W, out, rng)
    big = Space(gemm_bf16.algorithm(M=4096, N=4096, K=4096), target="h200")
    (group,) = big.groups(big.tileable_fusions()[0])
    assert not tensor_core_slices_valid(group, big, {"split_k": 2}, 128, 256, 64)  # 512 blocks: no SM idles


def test_split_k_with_the_epilogue_adds_the_slices_before_it(rng):
    """The FFN's bf16 rounding, SiLU and quantization run on the whole sum of the slices."""
    out = ffn_bf16.algorithm(M=32, N=64, K=128)
    space = Space(out, target="h200")
    _check_ffn(space.schedule(_drawn(space, "Q: mma_tiling", "split_k=2")), out, rng)
