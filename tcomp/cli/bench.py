"""``tcomp bench``: build a workload and time it on the GPU."""

from __future__ import annotations

import time

from ..validation import compare, flop_count, random_inputs
from .common import (Progress, add_workload_args, format_shape, outputs_of, prepare,
                     simulator_requested)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "bench", help="build and time a workload on the GPU",
        description="Load a workload file, apply its schedule (or --schedule), build it and time calls on the "
                    "GPU with CUDA events (inputs already on the device). Needs an NVIDIA GPU.")
    add_workload_args(p)
    p.add_argument("--repeat", type=int, default=20, metavar="N", help="timed calls (default 20)")
    p.add_argument("--warmup", type=int, default=3, metavar="N",
                   help="untimed calls after the first, compiling one (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--verify", action="store_true", help="also compare the result with tc.evaluate (numpy; "
                   "slow at large shapes)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..workload import WorkloadError

    if args.repeat < 1 or args.warmup < 0:
        raise WorkloadError("--repeat must be at least 1 and --warmup at least 0")
    if simulator_requested():
        raise WorkloadError("tcomp bench times kernels on a GPU; NUMBA_ENABLE_CUDASIM is set "
                            "(unset it; tcomp check and tcomp demo work without a GPU)")
    progress = Progress("bench")
    with progress.step("looking for a GPU"):
        from numba import cuda

        available = cuda.is_available()
    if not available:
        raise WorkloadError("tcomp bench needs an NVIDIA GPU and none was found "
                            "(tcomp check and tcomp demo work without one)")

    import numpy as np

    import tcomp as tc

    from ..dtypes import DEVICE_STORAGE, host_dtype

    with progress.step(f"loading {args.file} and applying the schedule"):
        s, out, shape, where = prepare(args)
    outs = outputs_of(s)
    gpu = cuda.get_current_device()
    print(f"workload: {args.file}\nshape:    {format_shape(shape)}\nschedule: {where}\n"
          f"device:   {gpu.name.decode() if isinstance(gpu.name, bytes) else gpu.name}", flush=True)

    with progress.step("building: legality check, lowering, code generation, compile") as built:
        mod = tc.build(s)
    feeds = random_inputs(s, seed=args.seed)

    def storage(a):
        name = next((n for n, d in DEVICE_STORAGE.items() if host_dtype(n) == a.dtype), None)
        return a.view(DEVICE_STORAGE[name]) if name else a

    d_in = [cuda.to_device(storage(feeds[p])) for p in tc.inputs(outs)]  # NOTE: the module's argument order
    d_out = [cuda.device_array(t.shape, dtype=DEVICE_STORAGE.get(t.dtype, host_dtype(t.dtype))) for t in outs]
    args_dev = (*d_in, *d_out)

    with progress.step("first call") as first:
        mod(*args_dev)
        cuda.synchronize()
    for _ in range(args.warmup):
        mod(*args_dev)
    cuda.synchronize()

    gpu_ms, wall_ms = [], []
    start, end = cuda.event(), cuda.event()
    with progress.step(f"timing {args.repeat} calls"):
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            start.record()
            mod(*args_dev)
            end.record()
            end.synchronize()
            wall_ms.append((time.perf_counter() - t0) * 1e3)
            gpu_ms.append(cuda.event_elapsed_time(start, end))

    gpu_arr, wall_arr = np.array(gpu_ms), np.array(wall_ms)
    med = float(np.median(gpu_arr))
    print(f"build (check + compile): {built.seconds:.2f} s; first run: {first.seconds:.2f} s")
    print(f"time per call (CUDA events, {args.repeat} calls): median {med:.4f} ms, "
          f"min {gpu_arr.min():.4f} ms, mean {gpu_arr.mean():.4f} ms")
    print(f"time per call (host clock, launch to synchronize): median {np.median(wall_arr):.4f} ms")
    flops = flop_count(out if not isinstance(out, (list, tuple)) else out[0])
    if flops and med > 0:
        print(f"throughput: {flops / (med * 1e-3) / 1e12:.3f} TFLOP/s "
              f"({flops / 1e9:.3g} GFLOP: 2 per multiply-add of the reductions)")

    if args.verify:
        with progress.step("checking the result against tc.evaluate"):
            refs = [tc.evaluate(t, feeds) for t in outs]
        ok = True
        for t, dev, ref in zip(outs, d_out, refs):
            got = dev.copy_to_host().view(host_dtype(t.dtype))
            good, lines = compare(got, ref, t.dtype)
            ok = ok and good
            print(f"output {t.name}: " + "; ".join(lines))
        return 0 if ok else 1
    return 0
