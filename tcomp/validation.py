"""Checking a built schedule against the algorithm: random inputs (never zeros), the
comparison of a result with ``tc.evaluate``'s within what its dtype allows, and the flop
count that throughput figures use. Shared by the command line and the auto-scheduler's
measurement."""

from __future__ import annotations

#: threads a second that Numba's CUDA simulator runs, roughly (docs/hardware.md, "Numba's CUDA simulator")
SIMULATOR_THREADS_PER_SECOND = 4000


def launch_threads(program) -> int:
    """Threads launched by every kernel of a lowered program (grid x block)."""
    total = 0
    for k in program.kernels:
        n = 1
        for extent in tuple(k.grid) + tuple(k.block):
            n *= int(extent)
        total += n
    return total


def random_inputs(s, seed: int = 0) -> dict:
    """Random host arrays for the placeholders of schedule ``s``: ``{tensor: array}``."""
    import numpy as np

    from .dtypes import host_dtype

    rng = np.random.default_rng(seed)
    feeds = {}
    for t in s.placeholders:
        dt = host_dtype(t.dtype)
        if t.dtype == "int8":
            a = rng.integers(-128, 128, size=t.shape, dtype=np.int8)
        elif t.dtype == "int32":
            a = rng.integers(-1000, 1000, size=t.shape, dtype=np.int32)
        else:
            a = rng.standard_normal(t.shape, dtype=np.float32).astype(dt)
        feeds[t] = np.ascontiguousarray(a)
    return feeds


def compare(got, ref, dtype: str) -> tuple[bool, list[str]]:
    """Compare a result with the reference; return ``(acceptable, report lines)``.

    Integer outputs must match up to one unit in a small share of elements (a value
    that lands near a rounding tie may round either way when the float work before
    the rounding is ordered differently); float outputs within a relative tolerance.
    """
    import numpy as np

    got = np.asarray(got)
    ref = np.asarray(ref)
    lines = []
    if dtype in ("int8", "int32"):
        diff = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        differ = int(np.count_nonzero(diff))
        worst = int(diff.max()) if diff.size else 0
        lines.append(f"max abs difference: {worst}")
        lines.append(f"{dtype} elements that differ: {differ} of {diff.size}")
        ok = worst <= 1 and differ <= max(1, diff.size // 100)
        if differ == 0:
            lines.append("result: exact match with tc.evaluate")
        elif ok:
            lines.append("result: matches tc.evaluate up to rounding ties (off by one in a few elements)")
        else:
            lines.append("result: MISMATCH with tc.evaluate")
        return ok, lines
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    diff = np.abs(g - r)
    worst = float(diff.max()) if diff.size else 0.0
    scale = float(np.abs(r).max()) if r.size else 0.0
    tol = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2, "float8_e4m3": 1.3e-1}.get(dtype, 1e-4)
    ok = bool(np.all(np.isfinite(g) == np.isfinite(r))) and worst <= tol * max(scale, 1.0)
    lines.append(f"max abs difference: {worst:.3g} (largest |reference| {scale:.3g}, tolerance {tol:g} of it)")
    lines.append(f"elements that differ: {int(np.count_nonzero(diff))} of {diff.size}")
    lines.append("result: matches tc.evaluate" if ok else "result: MISMATCH with tc.evaluate")
    return ok, lines


def flop_count(out) -> int:
    """Two flops per multiply-add of every reduction that ``out`` depends on."""
    from .lang.tensor import ComputeOp, tensor_inputs

    total = 0
    for t in tensor_inputs(out):
        op = t.op
        if isinstance(op, ComputeOp) and op.reduce_axis:
            n = 2
            for extent in tuple(t.shape) + tuple(r.extent for r in op.reduce_axis):
                n *= int(extent)
            total += n
    return total
