"""The LLM layers on the tensor cores, in the simulator against float64 references:
SwiGLU with per-row float8 quantization (examples/swiglu_fp8.py: both projections in one
k loop from one tile of A, then the row's max and the quantization as a second phase) and
the FFN projection at a decode step (examples/ffn_bf16.py with 16 rows: k in slices on
blockIdx.z, the epilogue on the slices' sum)."""

import json
import shutil
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.ir.stmt import For, FragmentLoad, WarpMma
from tcomp.lang.evaluate import placeholders_of
from workloads import fp8_steps, int_sentinel, json_from_a_process_without_the_simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import ffn_bf16  # noqa: E402
import swiglu_fp8  # noqa: E402


def _inputs(out, rng):
    """Fresh bf16 inputs for every placeholder of ``out``; weights scaled by 1 / sqrt(K)."""
    feeds = {}
    for p in placeholders_of(out):
        scale = 1.0 if p.name == "A" else 1.0 / np.sqrt(p.shape[-2])
        feeds[p] = (rng.standard_normal(p.shape) * scale).astype(ml_dtypes.bfloat16)
    return feeds


def _swiglu(M, N, K):
    out = swiglu_fp8.algorithm(M, N, K)
    s = tc.create_schedule(out)
    swiglu_fp8.schedule(s, out, wgmma=0)  # mma.sync; tests/lower/test_wgmma.py has wgmma
    return out, s


def test_swiglu_matches_the_reference_in_two_kernels(rng):
    """The mma.sync sums may round a projection to the other neighbouring bf16 value than
    the float64-accumulated reference; the fp8 result then moves by at most one step."""
    M, N, K = 32, 64, 32
    out, s = _swiglu(M, N, K)
    program = tc.lower(s)
    assert [k.name for k in program.kernels] == ["k_Z", "k_Q"]
    feeds = _inputs(out, rng)
    got = np.full((M, N), np.nan, ml_dtypes.float8_e4m3fn)
    tc.build(s)(*feeds.values(), got)
    want = tc.evaluate(out, feeds)
    assert not np.isnan(got.astype(np.float32)).any()
    steps = fp8_steps(got, want)
    assert steps.max() <= 1 and (steps > 0).mean() <= 0.01
    # every row reaches the format's largest value: the scale is the complete row's max
    assert (np.abs(got.astype(np.float32)).max(axis=1) == swiglu_fp8.FP8_MAX).all()


def test_swiglu_quantizes_by_the_float32_row_max_as_pytorch_does(rng):
    """The algorithm's scale is ``float32(R) / 448`` (PyTorch: ``z.float().amax() / 448``):
    a bf16 scale would move about 2% of the fp8 values by a step (measured on the H200
    against PyTorch's result at 1024 x 12288 x 4096)."""
    M, N, K = 64, 96, 32
    out = swiglu_fp8.algorithm(M, N, K)
    feeds = _inputs(out, rng)
    a, w = (np.asarray(x, np.float64) for x in feeds.values())
    bf16 = ml_dtypes.bfloat16

    def rounded(x):
        return x.astype(bf16).astype(np.float64)

    g, u = rounded(a @ w[0]), rounded(a @ w[1])
    z = rounded(rounded(g / (1 + np.exp(-g))) * u).astype(np.float32)
    scale = np.abs(z).max(axis=1, keepdims=True) / np.float32(swiglu_fp8.FP8_MAX)
    assert scale.dtype == np.float32
    want = (z / scale).astype(ml_dtypes.float8_e4m3fn)
    assert fp8_steps(tc.evaluate(out, feeds), want).max() == 0


def test_swiglu_feeds_both_projections_from_one_tile_of_a():
    """One A tile and one stacked W tile per k step; A's fragments are loaded once for the
    gate and the up projection (outside the loop over the two)."""
    _, s = _swiglu(64, 128, 64)
    kernel = tc.lower(s).kernels[0]
    text = str(kernel)
    assert text.count("alloc shared") == 2
    # 3 stages x 2 projections x 32 k x (64 + 8): the rows of the stacked tile padded for ldmatrix
    assert "W_shared = alloc shared bfloat16[13824]" in text
    loads = []

    def visit(stmt, loops):
        if isinstance(stmt, FragmentLoad):
            loads.append((stmt, loops))
        if isinstance(stmt, WarpMma):
            loads.append((stmt, loops))
        for child in getattr(stmt, "stmts", ()) or ([stmt.body] if hasattr(stmt, "body") else []):
            visit(child, loops + ((stmt,) if isinstance(stmt, For) else ()))

    visit(kernel.body, ())
    unrolled = {id(node): int(np.prod([f.extent for f in loops if f.kind == "unroll"])) for node, loops in loads}
    a_loads = [unrolled[id(n)] for n, _ in loads if isinstance(n, FragmentLoad) and n.src.name == "A_shared"]
    mmas = [unrolled[id(n)] for n, _ in loads if isinstance(n, WarpMma)]
    # 64 x 64 blocks of 32 x 16 warp tiles, k steps of 32: per k step 2 x 2 row tiles of A,
    # 2 x 2 (projections) x 2 x 2 (rows, columns) instructions
    assert a_loads == [2 * 2] and mmas == [2 * 2 * 2 * 2]


def test_swiglu_quantizing_inside_the_row_max_is_refused():
    """Quantizing as the max goes would use a partial max: tc.check says so."""
    out = swiglu_fp8.algorithm(32, 64, 32)
    s = tc.create_schedule(out)
    (n,) = s["R"].reduce_axis
    s[out].reverse_compute_at(s["R"], n)
    with pytest.raises(tc.IllegalScheduleError, match=r"reads R\[0\], which R still updates"):
        tc.check(s)


def test_the_decode_step_splits_k_and_matches_the_reference(rng):
    """16 rows: 2 x 1 output blocks would leave the SMs idle, so k runs in 2 slices on
    blockIdx.z and a second kernel adds them before the bf16 rounding, SiLU and int8."""
    M, N, K = 16, 64, 128
    out = ffn_bf16.algorithm(M, N, K)
    s = tc.create_schedule(out)
    ffn_bf16.schedule(s, out)
    program = tc.lower(s)
    assert [(k.name, k.grid[2]) for k in program.kernels] == [("k_C_rf", 2), ("k_Q", 1)]
    assert {r.stage for r in tc.check(s).reassociations} == {"C", "C_rf_local"}  # split-K and mma.sync
    feeds = _inputs(out, rng)
    want = tc.evaluate(out, feeds)
    got = np.full((M, N), int_sentinel("int8", want), np.int8)
    tc.build(s)(*feeds.values(), got)
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() <= 0.01


def test_the_layer_benchmarks_variant_option():
    """``--variant stages=4,rows_fastest=1`` becomes schedule overrides; anything but
    KEY=INTEGER items is refused with a message that says what it takes."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import timing
    finally:
        sys.path.pop(0)
    args, shape = timing.bf16_benchmark_args("", ["--shape", "16,64,32", "--variant", "stages=4,rows_fastest=1"])
    assert shape == (16, 64, 32) and args.variants == [{"stages": 4, "rows_fastest": 1}]
    assert timing.variant_label(args.variants[0]) == "stages=4 rows_fastest=1"
    with pytest.raises(SystemExit, match=r"--variant takes KEY=INTEGER items \(or copy=tma, quantize=NAME\) separated by commas; got 'BK'"):
        timing.tile_overrides("stages=4,BK")


_ASSEMBLE = """
import json, sys
sys.path.insert(0, "examples")
import ffn_bf16, swiglu_fp8, tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
rows = []
for module, shape in ((ffn_bf16, dict(M=16, N=12288, K=4096)), (swiglu_fp8, dict(M=1024, N=12288, K=4096))):
    out = module.algorithm(**shape)
    s = tc.create_schedule(out)
    module.schedule(s, out)
    program = lower(s)
    for kernel, r in zip(program.kernels, ptx_report(program)):
        rows.append(dict(kernel=module.__name__ + "." + r.kernel, grid=kernel.grid, spills=r.spill_stores + r.spill_loads,
                         registers=r.registers, mma=r.ptx.count("mma.sync.aligned.m16n8k16") + r.ptx.count("wgmma.mma_async")))
print(json.dumps(rows))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_decode_and_swiglu_kernels_assemble_for_sm90a_at_full_size():
    rows = {r["kernel"]: r for r in json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])}
    decode = [r for name, r in rows.items() if name.startswith("ffn_bf16.")]
    # 128 column blocks of 96 and k whole (one wave on 132 SMs): one kernel, the epilogue on
    # its accumulators
    assert [(r["kernel"], r["grid"]) for r in decode] == [("ffn_bf16.k_Q", [128, 1, 1])]
    assert decode[0]["mma"] > 0 and rows["swiglu_fp8.k_Z"]["mma"] > 0
    for r in rows.values():
        assert r["spills"] == 0 and r["registers"] <= 255, r


@pytest.mark.gpu
def test_swiglu_and_the_decode_step_match_on_the_gpu(rng):
    # (1, 1024, 4096): one decode row of a narrow output, k over 16 blocks as well
    for module, (M, N, K) in ((swiglu_fp8, (256, 512, 256)), (ffn_bf16, (16, 1024, 512)),
                              (ffn_bf16, (1, 1024, 4096))):
        out = module.algorithm(M, N, K)
        s = tc.create_schedule(out)
        module.schedule(s, out)
        feeds = _inputs(out, rng)
        want = tc.evaluate(out, feeds)
        if module is swiglu_fp8:
            got = np.full((M, N), np.nan, ml_dtypes.float8_e4m3fn)
            tc.build(s)(*feeds.values(), got)
            steps = fp8_steps(got, want)
        else:
            got = np.full((M, N), int_sentinel("int8", want), np.int8)
            tc.build(s)(*feeds.values(), got)
            steps = np.abs(got.astype(int) - want.astype(int))
        assert steps.max() <= 1 and (steps > 0).mean() <= 0.001, json.dumps(int((steps > 0).sum()))


@pytest.mark.parametrize("M", [1, 3])
def test_the_qwen3_block_at_a_decode_step_streams_its_weights(M, rng):
    """examples/qwen3_ffn.py under 16 rows: RMSNorm, then both products with their weights
    streamed into registers, k in slices on the threads of a block (the stacked gate/up
    product as one: each thread holds both projections' sums for its columns, SwiGLU on
    the whole sums), the residual added after the down projection's slices; against
    tc.evaluate within one bf16 step."""
    import qwen3_ffn
    from tcomp.ir.stmt import WarpgroupMma
    from tcomp.ir.visitor import walk

    H = F = 256
    out = qwen3_ffn.algorithm(M, H, F)
    s = tc.create_schedule(out)
    qwen3_ffn.schedule(s, out, stream_sizes=dict(parts=8, threads_x=8, unroll=2))
    kernels = tc.lower(s).kernels
    assert [k.name for k in kernels] == ["k_N", "k_Z", "k_Y"]
    assert not any(isinstance(n, (WarpMma, WarpgroupMma)) for k in kernels for n in walk(k.body))
    feeds = {p: (rng.standard_normal(p.shape) * (1.0 if p.name in ("X", "gamma") else 1 / np.sqrt(p.shape[-2])))
             .astype(ml_dtypes.bfloat16) for p in placeholders_of(out)}
    got = np.full((M, H), np.nan, ml_dtypes.bfloat16)
    tc.build(s)(*feeds.values(), got)
    want = tc.evaluate(out, feeds).astype(np.float64)
    x = next(v for p, v in feeds.items() if p.name == "X").astype(np.float64)
    # a bf16 step of the down projection's sum moves Y = X + D by up to a step of |X| + |Y|
    assert (np.abs(got.astype(np.float64) - want) <= 2.0 ** -7 * (np.abs(x) + np.abs(want))).all()
    assert (got.astype(np.float64) != want).mean() <= 0.05


def test_the_decode_schedule_and_the_quantizing_phase_refuse_what_they_cannot_do():
    """The Qwen3 block at a decode step on a shape no streaming sizes fit, and SwiGLU's
    quantizing phase by an unknown name: ScheduleErrors that say what was asked."""
    import qwen3_ffn

    out = qwen3_ffn.algorithm(1, 72, 72)
    with pytest.raises(tc.ScheduleError, match=r"no sizes of ffn_bf16.stream_sizes fit that shape"):
        qwen3_ffn.schedule(tc.create_schedule(out), out)
    out = swiglu_fp8.algorithm(64, 64, 64)
    with pytest.raises(tc.ScheduleError, match="quantize must be one of 'rows', 'partial_maxima', got 'max'"):
        swiglu_fp8.schedule(tc.create_schedule(out), out, quantize="max")
