"""The auto-scheduler on the H200: each case searched with ``tc.autoschedule``, then the
winner measured again beside the best hand schedules (interleaved, in one runner) and the
baselines (cuBLAS fp32, Triton fp32 ieee best of four configurations, PyTorch eager, a
device copy of the same bytes), all in one run. tcomp and the baselines alike are timed
as replays of a CUDA graph of many calls (no host launch between calls; the 20th session's
logs and before: baselines launched back to back).

    python benchmarks/autoschedule.py --cases sgemm4096 --out-dir OUT [--trials 64]

Cases: sgemm4096, sgemm2048x8192x1024, sgemm1000 (fp32 matmul), fused4096 (matmul + SiLU
+ int8, fp32), chain8192 (SiLU, multiply, int8 quantize in bf16 at 8192x8192), ffn1024 (the
bf16 FFN projection of examples/ffn_bf16.py at 1024x12288x4096), ffn1 (the same at one decode
row), ffn16 (16 rows), ffndown1 (one row of the down projection's shape, 1 x 4096 x 12288), gemm4096 (the bf16 matmul
of examples/gemm_bf16.py; gemm8192 at 8192^3), gemm4096rounded, gemm8192rounded (examples/gemm_bf16_rounded.py:
the product rounded to a bf16 C, as cuBLAS writes it), gemm4000x1000 (the same at 4000 x 4000 x 1000: K a
multiple of no k step, M and N of no block; gemm4000x1000rounded with a bf16 C), gemm2048x8192 (2048 x 2048 x 8192: 128 output tiles
for 132 SMs), linear4096 (examples/linear_bf16.py: A @ W.T, W stored [N, K], 4096^3),
batched8x1024 (examples/batched_gemm_bf16.py: 8 products of 1024^3; batched8x1024rounded with
a bf16 C, examples/batched_gemm_bf16_rounded.py), the row operators
softmax4096, softmax4096x32768, softmax1x151936, softmax8192x1024 (examples/softmax.py,
float32; one row of a vocabulary against the example's block-per-row and split schedules,
short rows against its warp-a-row schedule), rmsnorm7239,
rmsnorm1 (examples/rmsnorm.py, bf16: the chapter's prefill and one decode row) and layernorm1024
(examples/layernorm.py), and gelu8192 (examples/gelu_chain.py: a bf16 chain with a
broadcast bias), against PyTorch eager, torch.compile and a device copy. Writes
OUT/autoschedule_CASE.json (every record, the comparison) and OUT/schedules/NAME.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
sys.path.insert(0, EXAMPLES)
sys.path.append(HERE)  # after examples/: names clash

#: case -> (example file, shape, hand schedules to compare, schedule file name)
CASES = {
    "sgemm4096": ("sgemm_ladder.py", dict(M=4096, N=4096, K=4096),
                  ["vectorized", "double_buffered", "warptiled"], "sgemm_4096"),
    "sgemm2048x8192x1024": ("sgemm_ladder.py", dict(M=2048, N=8192, K=1024),
                            ["vectorized", "double_buffered", "warptiled"], "sgemm_2048x8192x1024"),
    "sgemm1000": ("sgemm_ladder.py", dict(M=1000, N=1000, K=1000),
                  ["vectorized", "double_buffered", "warptiled"], "sgemm_1000"),
    "fused4096": ("matmul_silu_quant.py", dict(M=4096, N=4096, K=4096), ["schedule"], "matmul_silu_quant_4096"),
    "chain8192": ("silu_mul_quant.py", dict(M=8192, N=8192), ["schedule"], "silu_mul_quant_8192"),
    "ffn1024": ("ffn_bf16.py", dict(M=1024, N=12288, K=4096), ["schedule", "cuda_cores"], "ffn_bf16_1024x12288x4096"),
    "ffn1": ("ffn_bf16.py", dict(M=1, N=12288, K=4096), ["schedule", "cuda_cores"], "ffn_bf16_1x12288x4096"),
    "ffn16": ("ffn_bf16.py", dict(M=16, N=12288, K=4096), ["schedule"], "ffn_bf16_16x12288x4096"),
    "ffndown1": ("ffn_bf16.py", dict(M=1, N=4096, K=12288), ["schedule"], "ffn_bf16_1x4096x12288"),
    "gemm4096": ("gemm_bf16.py", dict(M=4096, N=4096, K=4096), ["schedule", "mma_sync"], "gemm_bf16_4096"),
    "gemm8192": ("gemm_bf16.py", dict(M=8192, N=8192, K=8192), ["schedule"], "gemm_bf16_8192"),
    "gemm4096rounded": ("gemm_bf16_rounded.py", dict(M=4096, N=4096, K=4096), ["schedule"],
                        "gemm_bf16_rounded_4096"),
    "gemm8192rounded": ("gemm_bf16_rounded.py", dict(M=8192, N=8192, K=8192), ["schedule"],
                        "gemm_bf16_rounded_8192"),
    "gemm4000x1000": ("gemm_bf16.py", dict(M=4000, N=4000, K=1000), ["schedule", "mma_sync"],
                      "gemm_bf16_4000x4000x1000"),
    "gemm4000x1000rounded": ("gemm_bf16_rounded.py", dict(M=4000, N=4000, K=1000), ["schedule"],
                             "gemm_bf16_rounded_4000x4000x1000"),
    "gemm2048x8192": ("gemm_bf16.py", dict(M=2048, N=2048, K=8192), ["schedule", "mma_sync"],
                      "gemm_bf16_2048x2048x8192"),
    "linear4096": ("linear_bf16.py", dict(M=4096, N=4096, K=4096), ["schedule", "mma_sync"], "linear_bf16_4096"),
    "batched8x1024": ("batched_gemm_bf16.py", dict(B=8, M=1024, N=1024, K=1024), ["schedule", "mma_sync"],
                      "batched_gemm_bf16_8x1024"),
    "batched8x1024rounded": ("batched_gemm_bf16_rounded.py", dict(B=8, M=1024, N=1024, K=1024), ["schedule"],
                             "batched_gemm_bf16_rounded_8x1024"),
    "softmax4096": ("softmax.py", dict(M=4096, N=4096), ["schedule"], "softmax_4096"),
    "softmax4096x32768": ("softmax.py", dict(M=4096, N=32768), ["schedule"], "softmax_4096x32768"),
    "softmax1x151936": ("softmax.py", dict(M=1, N=151936), ["split"], "softmax_1x151936"),
    "softmax8192x1024": ("softmax.py", dict(M=8192, N=1024), ["schedule", "warps"], "softmax_8192x1024"),
    "rmsnorm7239": ("rmsnorm.py", dict(M=7239, N=4096), ["schedule"], "rmsnorm_7239x4096"),
    "rmsnorm1": ("rmsnorm.py", dict(M=1, N=4096), ["schedule", "split"], "rmsnorm_1x4096"),
    "layernorm1024": ("layernorm.py", dict(M=1024, N=4096), ["schedule"], "layernorm_1024x4096"),
    "gelu8192": ("gelu_chain.py", dict(M=8192, N=8192), ["schedule"], "gelu_chain_8192"),
}

#: the cases whose baselines come from benchmarks/row_operators.py: case prefix -> example
ROW_OPERATORS = {"softmax": "softmax", "rmsnorm": "rmsnorm", "layernorm": "layernorm", "gelu": "gelu_chain"}

TRITON_CONFIGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages): common fp32 choices
    (128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 32, 4, 4)]


def _hand_source(module, name, out):
    import tcomp as tc

    s = tc.create_schedule(out)
    fn = module.schedule if name == "schedule" else module.SCHEDULES[name]
    fn(s, out)
    return s.trace_source(with_sites=False)


def _torch_inputs(bench):
    import numpy as np
    import torch

    arrays = []
    n = 0
    while os.path.exists(os.path.join(bench, f"input{n}.npy")):
        a = np.load(os.path.join(bench, f"input{n}.npy"))
        if a.dtype == np.uint16:  # NOTE: prepare_bench saves bfloat16 as its bits (every case's 16-bit inputs)
            arrays.append(torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda())
        else:
            arrays.append(torch.from_numpy(a).cuda())
        n += 1
    return arrays


def _time_torch(fn, repeat=10):
    """Seconds per call, replayed from a CUDA graph as the search times tcomp (no host
    launch between calls: at a few microseconds a kernel, launches back to back time the
    host)."""
    from timing import time_cuda_replayed  # benchmarks/timing.py

    return time_cuda_replayed(fn, calls=20, repeat=repeat)


def _triton_matmul():
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            ka = k0 + rk
            x = tl.load(a + rm[:, None] * sam + ka[None, :] * sak, mask=(rm[:, None] < M) & (ka[None, :] < K),
                        other=0.0)
            y = tl.load(b + ka[:, None] * sbk + rn[None, :] * sbn, mask=(ka[:, None] < K) & (rn[None, :] < N),
                        other=0.0)
            acc += tl.dot(x, y, input_precision="ieee")
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    def run(a, b, c, config):
        BM, BN, BK, warps, stages = config
        M, K = a.shape
        N = b.shape[1]
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                     BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages)

    return run


def _baselines(case, bench, ref_path):
    """Seconds of the baselines of ``case`` on the bench's inputs: {name: seconds}."""
    import numpy as np
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    inputs = _torch_inputs(bench)
    out = {}
    if case.startswith("sgemm") or case.startswith("fused"):
        a, b = inputs
        out["cuBLAS fp32 (torch.matmul)"] = _time_torch(lambda: torch.matmul(a, b))
        if case.startswith("sgemm"):
            ref = np.load(ref_path)
            run = _triton_matmul()
            c = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device="cuda")
            best = None
            for config in TRITON_CONFIGS:
                c.fill_(float("nan"))
                run(a, b, c, config)
                err = float(np.abs(c.cpu().numpy() - ref).max() / max(1.0, np.abs(ref).max()))
                t = _time_torch(lambda: run(a, b, c, config))
                out[f"Triton fp32 ieee {config}"] = t
                if err < 1e-4 and (best is None or t < best):
                    best = t
            out["Triton fp32 ieee, best of four"] = best
        else:
            def eager():
                y = torch.nn.functional.silu(torch.matmul(a, b))
                return torch.clamp(torch.round(y / 0.05), -128, 127).to(torch.int8)
            out["PyTorch eager fp32"] = _time_torch(eager)
    elif case.startswith("gemm") or case.startswith("batched"):
        a, w = inputs
        out["cuBLAS bf16 (torch.matmul, bf16 out)"] = _time_torch(lambda: torch.matmul(a, w))
    elif case.startswith("linear"):
        a, w = inputs
        out["cuBLAS bf16 (torch.nn.functional.linear: A @ W.T, bf16 out)"] = _time_torch(
            lambda: torch.nn.functional.linear(a, w))
    elif case.startswith("ffn"):
        a, w = inputs
        out["cuBLAS bf16 matmul alone (torch.matmul)"] = _time_torch(lambda: torch.matmul(a, w))

        def eager():  # torch.matmul rounds its float32 sums to bfloat16, as Cb does
            y = torch.nn.functional.silu(torch.matmul(a, w))
            return torch.clamp(torch.round(y.float() / 0.05), -128, 127).to(torch.int8)
        out["PyTorch eager bf16"] = _time_torch(eager)
        if a.shape[0] <= 16:  # a decode step: its time is streaming W once
            out["device copy of W's bytes (floor: half a W.clone())"] = _time_torch(lambda: w.clone()) / 2
    elif case.startswith(tuple(ROW_OPERATORS)):
        from row_operators import copy_floor, torch_functions

        eager = torch_functions(next(e for p, e in ROW_OPERATORS.items() if case.startswith(p)), torch)[0]
        out["PyTorch eager"] = _time_torch(lambda: eager(*inputs))
        compiled = torch.compile(eager)
        compiled(*inputs)
        out["torch.compile"] = _time_torch(lambda: compiled(*inputs))
        out["device copy of the same bytes (floor)"] = copy_floor(inputs, inputs[0], torch, timer=_time_torch)
    else:
        x, g = inputs

        def eager():
            z = torch.nn.functional.silu(x) * g
            return torch.clamp(torch.round(z.float() / 0.05), -128, 127).to(torch.int8)
        out["PyTorch eager bf16"] = _time_torch(eager)
        if a.shape[0] <= 16:  # a decode step: its time is streaming W once
            out["device copy of W's bytes (floor: half a W.clone())"] = _time_torch(lambda: w.clone()) / 2
        nbytes = x.numel() * (2 + 2 + 1)  # X and G read, Q written
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        out["device copy of the same bytes (floor)"] = _time_torch(lambda: dst.copy_(src))
    return out


def _measuring_target():
    """The cost model's record of the GPU that measures (an H100 when the H200 is not lent),
    the H200's where tcomp has none for it."""
    from numba import cuda

    from tcomp.target import H200, target_of_device

    name = cuda.get_current_device().name
    return target_of_device(name.decode() if isinstance(name, bytes) else name) or H200


def run_case(case, trials, out_dir, db, workers):
    import numpy as np

    import tcomp as tc
    from tcomp.cli.autoschedule import write_schedule_file
    from tcomp.search.measure import measure_batch, prepare_bench
    from tcomp.validation import flop_count
    from tcomp.workload import load_workload

    example, shape, hands, name = CASES[case]
    path = os.path.join(EXAMPLES, example)
    workload = load_workload(path)
    out, _ = workload.build_algorithm(shape)
    target = _measuring_target()
    print(f"== {case}: {example} {shape}, {trials} trials, the cost model ranking for the {target.name}", flush=True)
    t0 = time.perf_counter()
    result = tc.autoschedule(out, trials=trials, target=target, db=db, seed=0, workers=workers)
    wall = time.perf_counter() - t0
    print(f"search: {wall:.0f} s wall, winner {result.measured * 1e3:.4f} ms: {result.description}", flush=True)
    sched_path = os.path.join("schedules", f"{name}.py")  # NOTE: main() runs in out_dir
    write_schedule_file(sched_path, result, f"examples/{example}", shape, target.name,
                        shape_option=",".join(f"{k}={v}" for k, v in shape.items()))
    rows = [("searched", result.source)] + [(f"hand: {h}", _hand_source(workload.module, h, out)) for h in hands]
    times = {label: [] for label, _ in rows}
    with tempfile.TemporaryDirectory() as folder:
        bench = prepare_bench(out, folder)
        for _ in range(3):
            for (label, _), m in zip(rows, measure_batch(bench, [src for _, src in rows], repeats=10)):
                if m.status == "ok":
                    times[label].extend(m.times)
                else:
                    print(f"{label}: {m.status} {m.error[:300]}", flush=True)
        baselines = _baselines(case, bench, os.path.join(bench, "reference0.npy"))
    flops = flop_count(out)
    measured = {label: float(np.median(ts)) for label, ts in times.items() if ts}
    measured.update({k: v for k, v in baselines.items() if v})
    ref_name = next((k for k in measured if k.startswith("cuBLAS")), None) or \
        next((k for k in measured if k.startswith("device copy")), None)
    print(f"{'schedule':48s} {'ms':>9s} {'TFLOP/s':>8s} {'vs ' + (ref_name or '')[:20]:>24s}")
    for label, t in measured.items():
        rate = f"{flops / t / 1e12:8.2f}" if flops else "        "
        ratio = f"{measured[ref_name] / t:24.3f}" if ref_name else ""
        print(f"{label:48s} {t * 1e3:9.4f} {rate} {ratio}", flush=True)
    statuses = {}
    for r in result.records:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    summary = {"case": case, "shape": shape, "trials": trials, "wall_s": wall, "winner": result.description,
               "winner_predicted": result.predicted, "winner_measured_in_search": result.measured,
               "spread": result.spread, "kendall_tau": result.kendall_tau, "statuses": statuses,
               "measured": measured, "reference": ref_name, "flops": flops,
               "records": [{"predicted": r.predicted, "measured": r.measured, "status": r.status}
                           for r in result.records]}
    with open(os.path.join(out_dir, f"autoschedule_{case}.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"kendall tau {result.kendall_tau}, statuses {statuses}", flush=True)
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--out-dir", default=".")
    parser.add_argument("--db", default=None)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    db = os.path.abspath(args.db or os.path.join(args.out_dir, "tuning.jsonl"))
    args.out_dir = os.path.abspath(args.out_dir)
    os.chdir(args.out_dir)
    for case in args.cases.split(","):
        run_case(case, args.trials, args.out_dir, db, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
