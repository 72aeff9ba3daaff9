"""Decode rows (M = 1 .. 16) of the FFN projection (examples/ffn_bf16.py: bf16 A @ W, bf16
rounding, SiLU, int8), whose time is streaming W once: tcomp's skinny-product schedule
(``tcomp.search.tiling.skinny.stream_rows``: 16-byte loads of W into registers, k in
slices on blocks of their own, the slices added in a fixed order with the epilogue) in a
few sizes, its one-kernel form (``stream_rows_in_blocks``: the slices of a block's columns
on its threads, added through shared memory), from 16 rows the example's ``decode`` (mma.sync
with k in slices) in a few sizes, at 16 rows ``mma_rows`` (mma.sync with W's fragments
loaded straight from global memory) in a few sizes, and the example's own schedule, against
PyTorch eager (cuBLAS, then SiLU and quantization), cuBLAS's matmul alone and a device
copy of W, in one run.

    python benchmarks/decode_rows.py [--cases 1x12288x4096,4x12288x4096,16x12288x4096,1x4096x12288]

Each row gives the time per call measured two ways: batched CUDA events around 20 calls
(the kernels' time) and a CUDA graph replay of one call (tcomp ``mod.graph``, torch
``torch.cuda.graph``). "of copy" is the floor of W's bytes at the device-copy bandwidth
(half the time of ``W.clone()``, which reads and writes them) over the time. Outputs are
poisoned, then compared with the float64 reference rounded where the algorithm rounds.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import bf16_operands, build_scheduled, time_cuda_batched  # noqa: E402  (benchmarks/timing.py)

#: (parts, threads, unroll) of stream_rows measured for every case
STREAM_VARIANTS = [(64, 256, 2), (128, 128, 2), (128, 256, 2), (64, 128, 8), (256, 128, 2), (32, 64, 8)]
#: (parts, threads_x, unroll) of stream_rows_in_blocks (one kernel, the slices added in shared memory)
IN_BLOCK_VARIANTS = [(64, 8, 2), (64, 4, 4), (32, 8, 8), (128, 4, 2), (256, 2, 2), (256, 2, 4), (128, 2, 4),
                     (256, 4, 2), (64, 8, 4), (128, 4, 4), (128, 8, 2), (64, 16, 8), (256, 4, 4), (128, 4, 8)]
#: (block_parts, parts, threads_x, unroll) of stream_rows_in_blocks with k cut over blocks too (a warp
#: reads 512 contiguous bytes of a row of W at threads_x = 32; a second kernel adds the blocks' sums)
SPLIT_VARIANTS = [(8, 8, 32, 4), (16, 8, 32, 4), (24, 8, 32, 4), (32, 8, 32, 4), (16, 8, 32, 8), (12, 8, 32, 8),
                  (16, 4, 32, 8), (8, 16, 32, 4), (16, 8, 16, 4)]
#: (slices, mma_warp_tiles sizes) of the example's ``decode`` (16 to 31 rows on mma.sync, k in slices)
MMA_VARIANTS = [(2, dict(BN=128, WN=32, stages=4)), (4, dict(BN=128, WN=32, stages=4)),
                (8, dict(BN=128, WN=32, stages=4)), (16, dict(BN=128, WN=32, stages=3)),
                (4, dict(BN=128, WN=32, stages=6)), (4, dict(BN=64, WN=16, stages=4)),
                (8, dict(BN=64, WN=16, stages=4)), (8, dict(BN=256, WN=64, stages=3)),
                # one wave of 128 blocks at 12288 columns: 64 column blocks x 2 slices, 32 x 4
                (2, dict(BN=192, WN=32, BK=64, stages=4)), (2, dict(BN=192, WN=16, BK=64, stages=4)),
                (2, dict(BN=192, WN=32, BK=128, stages=3)), (4, dict(BN=384, WN=64, BK=64, stages=4)),
                (4, dict(BN=384, WN=32, BK=64, stages=3))]
#: mma_warp_tiles sizes at 16 rows with k whole (one kernel, the epilogue on the accumulators):
#: narrower blocks, so that the column blocks alone cover the SMs; 96 columns give 12288 columns
#: 128 blocks (one an SM, none with two), 48 columns 256 (two an SM on all but 8 SMs)
MMA_WHOLE_K_VARIANTS = [dict(BN=64, WN=16, stages=4), dict(BN=64, WN=16, stages=6), dict(BN=32, WN=8, stages=6),
                        dict(BN=64, WN=16, stages=3), dict(BN=64, WN=32, stages=4), dict(BN=64, WN=64, stages=4),
                        dict(BN=64, WN=16, BK=128, stages=3), dict(BN=64, WN=32, BK=128, stages=4),
                        dict(BN=96, WN=16, stages=4), dict(BN=96, WN=32, stages=4), dict(BN=96, WN=16, BK=128, stages=4),
                        dict(BN=96, WN=32, BK=128, stages=6), dict(BN=96, WN=16, BK=128, stages=6),
                        dict(BN=48, WN=16, stages=4), dict(BN=48, WN=16, BK=128, stages=4),
                        dict(BN=48, WN=16, BK=128, stages=6)]


#: (tiles, slices, unroll) of ``mma_rows`` at 16 rows (mma.sync, W's fragments straight from
#: global memory, the warps' slices of k added in shared memory: one kernel)
MMA_ROWS_VARIANTS = [(8, 8, 2), (8, 4, 2), (8, 16, 1), (4, 8, 2), (8, 8, 1), (8, 4, 4), (4, 16, 2), (8, 2, 4)]


def whole_k(s, out, tiles: dict) -> None:
    """The product on mma.sync in ``tiles``' blocks with k whole (no slices, whatever
    the blocks leave idle), the epilogue inlined onto the accumulators."""
    import ffn_bf16 as ffn
    s["Cb"].compute_inline()
    s["Y"].compute_inline()
    ffn.tensor_core_tiles(s, out, "C", "A", "W", tiles, {"wgmma": 0})


def graph_time(replay, calls: int = 20) -> float:
    """Seconds per replay of a captured graph, batched like the kernels."""
    return time_cuda_batched(replay, calls=calls, repeat=10)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="1x12288x4096,4x12288x4096,16x12288x4096,1x4096x12288",
                        help="MxNxK of each case, comma-separated")
    parser.add_argument("--example-only", action="store_true", help="time the example's schedule alone (and the "
                                                                      "baselines), not the variants")
    parser.add_argument("--only", default=None, help="time the example's schedule and the variants whose label "
                                                     "starts with this (say 'split over blocks')")
    args = parser.parse_args(argv)

    import torch

    import ffn_bf16 as ffn
    from tcomp.search.tiling.mma_rows import mma_rows
    from tcomp.search.tiling.skinny import stream_rows, stream_rows_in_blocks

    def quantize(y):
        return torch.clamp(torch.round(y / ffn.SCALE), -128, 127).to(torch.int8)

    worst = 0
    for case in args.cases.split(","):
        M, N, K = (int(x) for x in case.split("x"))
        a, w = bf16_operands(M, K, (K, N))

        def eager():
            return quantize(torch.nn.functional.silu(torch.matmul(a, w)).float())

        q64 = quantize(torch.nn.functional.silu((a.double() @ w.double()).to(torch.bfloat16).float())
                       .to(torch.bfloat16).float())
        t_copy = time_cuda_batched(lambda: w.clone())
        floor = t_copy / 2
        print(f"== {M} x {N} x {K}: W {K * N * 2 / 1e6:.1f} MB, its copy floor {floor * 1e6:.1f} us "
              f"({K * N * 2 / floor / 1e12:.2f} TB/s)", flush=True)

        def streamed(helper, **sizes):
            """The epilogue's stages inlined, then ``helper`` (stream_rows or its one-kernel form)."""
            def apply(s, Q):
                s["Cb"].compute_inline()
                s["Y"].compute_inline()
                helper(s, Q, "C", "A", "W", **sizes)
            return apply

        schedules = [("example schedule", ffn.schedule)] + [
            (f"stream_rows parts={p} threads={t} unroll={u}", streamed(stream_rows, parts=p, threads=t, unroll=u))
            for p, t, u in STREAM_VARIANTS if K % (p * u) == 0] + [
            (f"one kernel parts={p} threads_x={t} unroll={u}",
             streamed(stream_rows_in_blocks, parts=p, threads_x=t, unroll=u))
            for p, t, u in IN_BLOCK_VARIANTS if K % (p * u) == 0] + [
            (f"split over blocks block_parts={b} parts={p} threads_x={t} unroll={u}",
             streamed(stream_rows_in_blocks, block_parts=b, parts=p, threads_x=t, unroll=u))
            for b, p, t, u in SPLIT_VARIANTS if K % (b * p * u) == 0]
        if M == 16:
            schedules += [(f"mma rows tiles={t} slices={p} unroll={u}", streamed(mma_rows, tiles=t, slices=p, unroll=u))
                          for t, p, u in MMA_ROWS_VARIANTS if N % (8 * t) == 0 and K % (p * 16 * u) == 0]
        if M >= 16:
            schedules += [(f"mma.sync slices={p} " + " ".join(f"{k}={v}" for k, v in sizes.items()),
                           lambda s, Q, p=p, sizes=sizes: ffn.decode(s, Q, {**ffn.mma_tiles_for(M, N, K), **sizes}, p))
                          for p, sizes in MMA_VARIANTS if K % (p * 64) == 0]
            schedules += [("mma.sync k whole " + " ".join(f"{k}={v}" for k, v in sizes.items()),
                           lambda s, Q, sizes=sizes: whole_k(s, Q, {**ffn.mma_tiles_for(M, N, K), **sizes}))
                          for sizes in MMA_WHOLE_K_VARIANTS]
        if args.example_only:
            schedules = schedules[:1]
        elif args.only:
            schedules = schedules[:1] + [(label, apply) for label, apply in schedules[1:]
                                         if label.startswith(args.only)]
        rows = []
        for label, apply in schedules:
            mod = build_scheduled(label, ffn.algorithm(M, N, K), apply, width=44)
            if mod is None:
                continue
            q = torch.full((M, N), -99, dtype=torch.int8, device="cuda")
            mod(a, w, q)
            torch.cuda.synchronize()
            dmax = (q.int() - q64.int()).abs().max().item()
            worst = max(worst, dmax)
            t = time_cuda_batched(lambda: mod(a, w, q))
            t_graph = graph_time(mod.graph(a, w, q).replay)
            rows.append((f"tcomp {label}", t, t_graph, dmax))
        q_eager = eager()
        t_eager = time_cuda_batched(eager)
        static = torch.cuda.CUDAGraph()
        with torch.cuda.graph(static):
            eager()
        t_eager_graph = graph_time(static.replay)
        rows.append(("PyTorch eager (cuBLAS, SiLU, quantize)", t_eager, t_eager_graph,
                     (q_eager.int() - q64.int()).abs().max().item()))
        t_matmul = time_cuda_batched(lambda: torch.matmul(a, w))
        rows.append(("cuBLAS matmul alone", t_matmul, None, None))
        print(f"{'schedule':48s} {'batched':>9s} {'of copy':>8s} {'graph':>9s} {'vs eager':>9s}  max |diff|")
        for label, t, tg, dmax in rows:
            graph = f"{tg * 1e6:7.1f}us" if tg else " " * 9
            print(f"{label:48s} {t * 1e6:7.1f}us {floor / t:8.2f} {graph} {t / t_eager:8.2f}x  {dmax}", flush=True)
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
