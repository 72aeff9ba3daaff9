"""``tcomp.torch.custom_op``: a built module as a PyTorch operator. On CPU tensors the
operator runs the module in Numba's CUDA simulator (how CI runs it): it matches float64,
passes ``torch.library.opcheck`` (schema, fake tensors, autograd registration, traced with
dynamic shapes), runs inside ``torch.compile(fullgraph=True)`` (no graph break), and
refuses mismatched inputs by name. On a GPU (marked) it launches on the current stream and
records into a CUDA graph."""

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.lang.evaluate import placeholders_of

torch = pytest.importorskip("torch", reason="tcomp.torch needs PyTorch (pip install -e '.[test]' brings it)")
import tcomp.torch as tct  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import ffn_bf16  # noqa: E402
import matmul_silu_quant  # noqa: E402

_OPS = {}


def _op(example, shape, name):
    """The example's schedule at ``shape``, built and registered once per test session
    (a name is registered once per process)."""
    if name not in _OPS:
        out = example.algorithm(*shape)
        s = tc.create_schedule(out)
        example.schedule(s, out)
        _OPS[name] = (out, tct.custom_op(tc.build(s), f"tcomp_tests::{name}"))
    return _OPS[name]


def _ffn():
    return _op(ffn_bf16, (70, 64, 48), "ffn")


def _bf16_inputs(out, rng):
    """Fresh bf16 inputs as torch tensors, and the same values for tc.evaluate."""
    feeds = {p: (rng.standard_normal(p.shape) / (1.0 if p.name == "A" else np.sqrt(p.shape[0])))
             .astype(ml_dtypes.bfloat16) for p in placeholders_of(out)}
    tensors = [torch.from_numpy(v.view(np.int16).copy()).view(torch.bfloat16) for v in feeds.values()]
    return feeds, tensors


def test_the_op_returns_what_the_module_computes(rng):
    """The FFN projection (bf16 product, SiLU, int8) at a shape no tile divides: a new
    int8 tensor within one step of tc.evaluate's float64 result."""
    out, op = _ffn()
    feeds, (a, w) = _bf16_inputs(out, rng)
    q = op(a, w)
    assert q.dtype == torch.int8 and tuple(q.shape) == (70, 64)
    diff = np.abs(q.numpy().astype(int) - tc.evaluate(out, feeds).astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() <= 0.01


def test_opcheck_passes(rng):
    out, op = _ffn()
    _, args = _bf16_inputs(out, rng)
    results = torch.library.opcheck(op, tuple(args))
    assert set(results.values()) == {"SUCCESS"}, results


def test_a_model_calling_the_op_compiles_without_a_graph_break(rng):
    """``fullgraph=True`` raises on a graph break; the compiled model gives the eager
    model's values."""
    out, op = _op(matmul_silu_quant, (32, 32, 32), "fused")
    a, w = (torch.randn(32, 32, generator=torch.Generator().manual_seed(seed)) for seed in (1, 2))

    def model(x, y):
        return op(torch.relu(x) + 1.0, y).float() * 0.5

    compiled = torch.compile(model, fullgraph=True)  # inductor: the op an external kernel in its code
    assert torch.equal(compiled(a, w), model(a, w))
    feeds = {p: v.numpy() for p, v in zip(placeholders_of(out), (torch.relu(a) + 1.0, w))}
    want = tc.evaluate(out, feeds).astype(np.float32) * 0.5
    assert np.abs(model(a, w).numpy() - want).max() <= 0.5  # one int8 step, halved


def test_mismatched_inputs_and_bad_names_are_refused_by_name(rng):
    out, op = _ffn()
    _, (a, w) = _bf16_inputs(out, rng)
    with pytest.raises(tc.ArgumentError, match=r"argument A must be a torch.bfloat16 tensor of shape \(70, 48\), "
                                              r"got torch.float32 of shape \(70, 48\)"):
        op(a.float(), w)
    with pytest.raises(tc.ArgumentError, match=r"argument W must be .* of shape \(48, 64\), got .* \(64, 48\)"):
        op(a, w.t().contiguous())
    with pytest.raises(RuntimeError, match="missing value for argument 'W'"):  # torch checks the schema first
        op(a)
    module = tc.build(tc.create_schedule(out))
    with pytest.raises(tc.ArgumentError, match="'namespace::name'"):
        tct.custom_op(module, "ffn")


def test_the_qwen3_ffn_block_as_a_torch_module_matches_its_reference(rng):
    """examples/qwen3_ffn.py at a small shape (16 rows, H = 64, F = 64): RMSNorm, the
    stacked gate/up projection with SwiGLU, the down projection and the residual, three
    kernels behind one operator in a ``torch.nn.Module``; its bf16 output against
    tc.evaluate (float64 between the algorithm's bf16 rounding points)."""
    import qwen3_ffn

    M, H, F = 16, 64, 64
    out = qwen3_ffn.algorithm(M, H, F)
    feeds = {p: (rng.standard_normal(p.shape) * (1.0 if p.name in ("X", "gamma") else 1 / np.sqrt(p.shape[-2])))
             .astype(ml_dtypes.bfloat16) for p in placeholders_of(out)}
    x, gamma, w, w_down = (torch.from_numpy(v.view(np.int16).copy()).view(torch.bfloat16) for v in feeds.values())
    model = qwen3_ffn.module(gamma, w, w_down, rows=M)
    y = model(x)
    assert y.dtype == torch.bfloat16 and tuple(y.shape) == (M, H)
    got = y.float().numpy().astype(np.float64)
    want = tc.evaluate(out, feeds).astype(np.float64)
    # a bf16 step of the down projection's sum moves Y = X + D by up to a step of |X| + |Y|
    x = feeds[next(p for p in feeds if p.name == "X")].astype(np.float64)
    assert (np.abs(got - want) <= 2.0 ** -7 * (np.abs(x) + np.abs(want))).all()


_BUCKETED = {}


def _bucketed():
    """matmul_silu_quant (fp32 A @ W, SiLU, int8: each row of Q from the same row of A)
    built at 4 and 16 rows, as one operator."""
    if not _BUCKETED:
        modules = {}
        for rows in (4, 16):
            out = matmul_silu_quant.algorithm(rows, 16, 16)
            s = tc.create_schedule(out)
            matmul_silu_quant.schedule(s, out)
            modules[rows] = tc.build(s)
        _BUCKETED["op"] = tct.bucketed_op(modules, "tcomp_tests::fused_rows")
    return _BUCKETED["op"]


@pytest.mark.parametrize("rows", [1, 3, 4, 10, 16])
def test_a_bucketed_op_pads_the_rows_to_the_smallest_bucket_that_holds_them(rows, rng):
    """1 and 3 rows run the 4-row kernel, 10 the 16-row one, padded with zero rows and cut
    back; 4 and 16 their own: every row as tc.evaluate gives it for that many rows."""
    op = _bucketed()
    a = torch.from_numpy(rng.standard_normal((rows, 16)).astype(np.float32))
    w = torch.from_numpy(rng.standard_normal((16, 16)).astype(np.float32))
    q = op(a, w)
    assert tuple(q.shape) == (rows, 16) and q.dtype == torch.int8
    out = matmul_silu_quant.algorithm(rows, 16, 16)
    want = tc.evaluate(out, dict(zip(placeholders_of(out), (a.numpy(), w.numpy()))))
    assert np.abs(q.numpy().astype(int) - want.astype(int)).max() <= 1


def test_a_bucketed_op_traces_with_dynamic_rows_and_refuses_more_than_its_largest(rng):
    op = _bucketed()
    w = torch.randn(16, 16)
    compiled = torch.compile(lambda x: op(x, w).float(), fullgraph=True, dynamic=True, backend="aot_eager")
    for rows in (2, 7):
        a = torch.randn(rows, 16)
        assert torch.equal(compiled(a), op(a, w).float())
    results = torch.library.opcheck(op, (torch.randn(5, 16), w))
    assert set(results.values()) == {"SUCCESS"}, results
    with pytest.raises(tc.ArgumentError, match="takes 1 to 16 rows .its largest bucket., got 17"):
        op(torch.randn(17, 16), w)
    with pytest.raises(tc.ArgumentError, match=r"argument W must be a torch.float32 tensor of shape \(16, 16\)"):
        op(torch.randn(3, 16), torch.randn(8, 16))
    with pytest.raises(tc.ArgumentError, match="positive integer extents"):
        tct.bucketed_op({0: None}, "tcomp_tests::nothing")
    modules = {}
    for rows, n in ((4, 16), (16, 8)):  # the second's W and Q narrower: not one workload's buckets
        out = matmul_silu_quant.algorithm(rows, n, 16)
        modules[rows] = tc.build(tc.create_schedule(out))
    with pytest.raises(tc.ArgumentError, match="W differs between the modules beyond its first dimension"):
        tct.bucketed_op(modules, "tcomp_tests::mixed")
    square = matmul_silu_quant.algorithm(16, 16, 16)  # keyed 4 though built at 16 rows: no input has 4 rows
    with pytest.raises(tc.ArgumentError, match="no input's first dimension is the modules' extent"):
        tct.bucketed_op({4: tc.build(tc.create_schedule(square))}, "tcomp_tests::misfiled")


@pytest.mark.gpu
def test_the_op_runs_on_the_current_stream_and_in_a_cuda_graph(rng):
    """On CUDA tensors: the values of the CPU run, on a side stream, and replayed from a
    graph captured around a model that calls the op."""
    out, op = _ffn()
    feeds, (a, w) = _bf16_inputs(out, rng)
    a, w = a.cuda(), w.cuda()
    want = tc.evaluate(out, feeds).astype(int)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the inputs' copies to the device
    with torch.cuda.stream(stream):
        q = op(a, w)
    stream.synchronize()
    assert np.abs(q.cpu().numpy().astype(int) - want).max() <= 1
    graph = torch.cuda.CUDAGraph()
    op(a, w)  # warm-up outside the capture: the tensor maps and the allocator's pool
    with torch.cuda.graph(graph):
        captured = op(a, w)
    captured.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert np.abs(captured.cpu().numpy().astype(int) - want).max() <= 1
