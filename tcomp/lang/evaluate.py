"""The numpy reference of an algorithm: ``tc.evaluate(out, {placeholder: array})``, and
``tc.inputs(out)``, the placeholders it needs in the built module's argument order.

``feeds`` may key an input by its placeholder or by its name (``{"A": a}``).

No schedule is involved. Each compute is evaluated over its whole shape with
numpy index arrays; a reduction accumulates in the dtype its expression has
(bfloat16 sums rounded to bfloat16 after every step), except that a float32 sum of
products (a matmul) is one float64 contraction (``numpy.einsum``, BLAS) rounded to
float32 once: the float64 reference that a scheduled float32 sum is compared with,
and fast enough for the shapes the auto-scheduler measures.
Arithmetic on 16- and 8-bit floats is done in float32 and rounded to the dtype
after every operation; casts round to nearest even (float -> float), truncate
toward zero and saturate (float -> int), and saturate to +-448 (-> float8_e4m3).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import FP8_E4M3_MAX, INT_RANGE, host_dtype, is_float
from ..errors import ArgumentError, LanguageError
from ..ir.expr import And, Binary, Call, Cast, Compare, Expr, FloatImm, IntImm, Select, Var
from ..ir.functions import scalar_function
from .tensor import ComputeOp, Reduce, Tensor, TensorRead, placeholders_of, tensor_inputs

#: bound on elements materialized at once while evaluating a reduction
_CHUNK_ELEMENTS = 1 << 22


def inputs(out) -> list:
    """The placeholders that ``out`` (an output tensor, or a list of them) is computed
    from, in the order a module built from it takes them: ``mod(*inputs, *outputs)``.

    ::

        A = tc.placeholder((M, K), "float32", name="A")
        W = tc.placeholder((K, N), "float32", name="W")
        C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
        tc.inputs(C)                                   # [A, W]
        ref = tc.evaluate(C, dict(zip(tc.inputs(C), arrays)))
    """
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    found: list = []
    for t in outs:
        if not isinstance(t, Tensor):
            raise ArgumentError(f"tc.inputs expects a tensor or a list of tensors, got {type(t).__name__}")
        found += [p for p in placeholders_of(t) if p not in found]
    return sorted(found, key=lambda p: p.op.order)


def evaluate(out: Tensor, feeds: dict) -> np.ndarray:
    """Compute ``out`` from the placeholder values in ``feeds`` with numpy.

    ``feeds`` maps each input of ``out`` (``tc.inputs(out)``), or its name, to an array
    of its shape and dtype: ``{A: a, W: w}`` or ``{"A": a, "W": w}``. Other placeholders
    given as tensors are ignored (one feed may serve several outputs); a name that is
    not an input of ``out`` is an error."""
    if not isinstance(out, Tensor):
        raise ArgumentError(f"tc.evaluate expects a tensor, got {type(out).__name__}")
    values = {p: _check_feed(p, value) for p, value in _feeds_by_placeholder(out, feeds).items()}
    for t in tensor_inputs(out):
        if isinstance(t.op, ComputeOp):
            values[t] = _evaluate_compute(t, values)
    return values[out]


def _feeds_by_placeholder(out: Tensor, feeds: dict) -> dict:
    """``feeds`` keyed by the placeholders of ``out``: a name is looked up among its
    inputs; an unknown name, an input given twice or left out is an ArgumentError."""
    expected = inputs(out)
    by_placeholder: dict = {}
    for key, value in feeds.items():
        if isinstance(key, str):
            p = _input_named(out, expected, key)
        elif isinstance(key, Tensor):
            if key not in expected:
                continue  # NOTE: a placeholder of another output fed from the same dict
            p = key
        else:
            raise ArgumentError(f"tc.evaluate: feed keys are placeholders or their names, got a "
                                f"{type(key).__name__} ({key!r}); {out.name}'s inputs are {_listed(expected)}")
        if p in by_placeholder:
            raise ArgumentError(f"tc.evaluate: input {p.name} is given twice (as the placeholder and by its name)")
        by_placeholder[p] = value
    missing = [p for p in expected if p not in by_placeholder]
    if missing:
        raise ArgumentError(f"tc.evaluate: no value for input {', '.join(p.name for p in missing)} of {out.name}; "
                            f"it needs {_listed(expected)} (tc.inputs({out.name}), in that order), keyed by "
                            f"placeholder or by name")
    return by_placeholder


def _input_named(out: Tensor, expected: list, name: str) -> Tensor:
    """The input of ``out`` named ``name``, or an ArgumentError saying what it is instead."""
    named = [p for p in expected if p.name == name]
    if len(named) == 1:
        return named[0]
    if named:
        raise ArgumentError(f"tc.evaluate: {len(named)} inputs of {out.name} are named {name!r}; "
                            f"key them by placeholder (tc.inputs({out.name}) lists them in order)")
    if any(t.name == name and isinstance(t.op, ComputeOp) for t in tensor_inputs(out)):
        raise ArgumentError(f"tc.evaluate: {name!r} is a computed tensor of {out.name}, not an input; "
                            f"{out.name}'s inputs are {_listed(expected)}")
    raise ArgumentError(f"tc.evaluate: {name!r} is not an input of {out.name}; its inputs are {_listed(expected)}")


def _listed(placeholders: list) -> str:
    """``A (4, 8) float32, W (8, 2) float32``."""
    return ", ".join(f"{p.name} {tuple(p.shape)} {p.dtype}" for p in placeholders) or "none"


def _check_feed(p: Tensor, value) -> np.ndarray:
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if hasattr(value, "copy_to_host"):  # a numba device array
        value = value.copy_to_host()
    arr = np.asarray(value)
    if arr.shape != p.shape:
        raise ArgumentError(f"tc.evaluate: {p.name} must have shape {p.shape}, got {arr.shape}")
    want = host_dtype(p.dtype)
    if arr.dtype != want:
        raise ArgumentError(f"tc.evaluate: {p.name} must have dtype {want} ({p.dtype}), got {arr.dtype}")
    return arr


def _axis_grid(axes, shape_len_total: int, offset: int) -> dict:
    env = {}
    for n, ax in enumerate(axes):
        shape = [1] * shape_len_total
        shape[offset + n] = ax.extent
        env[ax] = np.arange(ax.extent, dtype=np.int64).reshape(shape)
    return env


def _evaluate_compute(t: Tensor, values: dict) -> np.ndarray:
    op = t.op
    nd = len(op.axis)
    body = op.body
    if not isinstance(body, Reduce):
        env = _axis_grid(op.axis, nd, 0)
        result = _eval(body, env, values)
        return np.broadcast_to(np.asarray(result, dtype=host_dtype(t.dtype)), t.shape).copy()
    return _evaluate_reduction(t, body, values)


def _evaluate_reduction(t: Tensor, red: Reduce, values: dict) -> np.ndarray:
    op = t.op
    if red.combiner == "sum" and t.dtype == "float32" and isinstance(red.source, Binary) \
            and red.source.op == "*":
        return _contraction(t, red, values)
    nd = len(op.axis)
    dtype = host_dtype(t.dtype)
    acc = np.full(t.shape, _identity(red.combiner, t.dtype), dtype=dtype)
    # enumerate the reduction domain as (first axis) x (other axes); chunk the first axis
    first, rest = red.axes[0], red.axes[1:]
    spatial = int(np.prod(t.shape))
    rest_size = int(np.prod([a.extent for a in rest])) if rest else 1
    step_by_step = is_float(t.dtype) and t.dtype != "float32"
    chunk = 1 if step_by_step else max(1, _CHUNK_ELEMENTS // max(1, spatial * rest_size))
    for start in range(0, first.extent, chunk):
        stop = min(first.extent, start + chunk)
        env = _axis_grid(op.axis, nd + len(red.axes), 0)
        shape = [1] * (nd + len(red.axes))
        shape[nd] = stop - start
        env[first] = np.arange(start, stop, dtype=np.int64).reshape(shape)
        env.update({a: g for a, g in _axis_grid(rest, nd + len(red.axes), nd + 1).items()})
        term = np.asarray(_eval(red.source, env, values))
        full = tuple(t.shape) + tuple([stop - start] + [a.extent for a in rest])
        term = np.broadcast_to(term, full)
        red_axes = tuple(range(nd, nd + len(red.axes)))
        acc = _combine(red.combiner, acc, term, red_axes, t.dtype)
    return acc


def _contraction(t: Tensor, red: Reduce, values: dict) -> np.ndarray:
    """A float32 sum of products ``a * b`` as one float64 ``einsum`` of the two factors,
    each evaluated over the axes it depends on, rounded to float32 once."""
    op = t.op
    axes = tuple(op.axis) + tuple(red.axes)
    env = _axis_grid(axes, len(axes), 0)
    letters = "abcdefghijklmnopqrstuvwxyz"[:len(axes)]
    operands, subscripts = [], []
    for factor in (red.source.a, red.source.b):
        value = np.asarray(_eval(factor, env, values), dtype=np.float64)
        value = value.reshape((1,) * (len(axes) - value.ndim) + value.shape)
        kept = [d for d in range(len(axes)) if value.shape[d] != 1]
        operands.append(value.reshape([value.shape[d] for d in kept]))
        subscripts.append("".join(letters[d] for d in kept))
    spatial = [d for d in range(len(op.axis)) if any(letters[d] in sub for sub in subscripts)]
    out = "".join(letters[d] for d in spatial)
    with np.errstate(over="ignore", invalid="ignore"):
        result = np.einsum(f"{subscripts[0]},{subscripts[1]}->{out}", *operands, optimize=True)
    shape = [t.shape[d] if d in spatial else 1 for d in range(len(op.axis))]
    return np.ascontiguousarray(np.broadcast_to(result.reshape(shape), t.shape), dtype=np.float32)


def _identity(combiner: str, dtype: str):
    if combiner == "sum":
        return 0
    if is_float(dtype):
        return -np.inf if combiner == "max" else np.inf
    lo, hi = INT_RANGE[dtype]
    return lo if combiner == "max" else hi


def _combine(combiner, acc, term, axes, dtype):
    if combiner == "sum":
        if is_float(dtype) and dtype != "float32":
            # one reduction step at a time (chunk == 1 along the first axis), rounded each time
            flat = term.reshape(acc.shape + (-1,))
            for n in range(flat.shape[-1]):
                acc = (acc.astype(np.float32) + flat[..., n].astype(np.float32)).astype(acc.dtype)
            return acc
        return (acc + term.sum(axis=axes, dtype=acc.dtype)).astype(acc.dtype)
    if combiner == "max":
        return np.maximum(acc, term.max(axis=axes))
    return np.minimum(acc, term.min(axis=axes))


def _as_dtype(x, dtype: str):
    return np.asarray(x).astype(host_dtype(dtype), copy=False)


def _f32(x):
    return np.asarray(x).astype(np.float32, copy=False)


def _eval(e: Expr, env: dict, values: dict):
    if isinstance(e, Var):
        if e not in env:
            raise LanguageError(f"axis {e.name} is not bound here")
        return env[e]
    if isinstance(e, IntImm):
        return np.asarray(e.value, dtype=host_dtype(e.dtype))
    if isinstance(e, FloatImm):
        return np.asarray(e.value, dtype=np.float32).astype(host_dtype(e.dtype))
    if isinstance(e, TensorRead):
        idx = [np.asarray(_eval(i, env, values)).astype(np.int64) for i in e.indices]
        arr = values[e.tensor]
        for d, (ix, n) in enumerate(zip(idx, arr.shape)):
            if ix.size and (ix.min() < 0 or ix.max() >= n):
                raise LanguageError(
                    f"{e.tensor.name} is read out of bounds in dimension {d}: "
                    f"index range [{ix.min()}, {ix.max()}] for extent {n}")
        return arr[tuple(idx)]
    if isinstance(e, Binary):
        return _binary(e, _eval(e.a, env, values), _eval(e.b, env, values))
    if isinstance(e, Call):
        return _call(e, [_eval(a, env, values) for a in e.args])
    if isinstance(e, Cast):
        return cast_array(_eval(e.value, env, values), e.value.dtype, e.dtype)
    if isinstance(e, Compare):
        a, b = _eval(e.a, env, values), _eval(e.b, env, values)
        return {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                "==": np.equal, "!=": np.not_equal}[e.op](a, b)
    if isinstance(e, And):
        return np.logical_and(_eval(e.a, env, values), _eval(e.b, env, values))
    if isinstance(e, Select):
        return np.where(_eval(e.cond, env, values), _eval(e.a, env, values), _eval(e.b, env, values))
    if isinstance(e, Reduce):
        raise LanguageError("a reduction may only be the whole body of a compute")
    raise LanguageError(f"cannot evaluate {type(e).__name__}")


def _binary(e: Binary, a, b):
    dtype = e.a.dtype
    if is_float(dtype):
        a, b = _f32(a), _f32(b)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
                 "max": np.maximum, "min": np.minimum}[e.op](a, b)
        return _as_dtype(r, dtype)
    if e.op == "/":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(_f32(a), _f32(b))
    a = np.asarray(a).astype(np.int64)
    b = np.asarray(b).astype(np.int64)
    r = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide, "%": np.mod,
         "max": np.maximum, "min": np.minimum}[e.op](a, b)
    # int32 arithmetic stays in int64 here (it is mostly index arithmetic); stores convert
    return r if dtype == "int32" else r.astype(host_dtype(dtype))


def _call(e: Call, args):
    """A scalar function's numpy reference (``tcomp.ir.functions``): on float32 operands,
    rounded to the call's dtype, for a function of floats only; on the operands as they
    are otherwise."""
    try:
        fn = scalar_function(e.name)
    except KeyError as err:
        raise LanguageError(str(err.args[0])) from None
    if not fn.floats_only:
        return fn.reference(*args)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        r = fn.reference(*(_f32(x) for x in args))
    return _as_dtype(r, e.dtype)


def cast_array(x, src: str, dst: str):
    """Convert host values from ``src`` to ``dst`` with tcomp's cast semantics."""
    x = np.asarray(x)
    if is_float(dst):
        if dst == "float8_e4m3":
            xf = _f32(x)
            return np.clip(xf, -FP8_E4M3_MAX, FP8_E4M3_MAX).astype(host_dtype(dst))
        if is_float(src):
            return _f32(x).astype(host_dtype(dst))
        return x.astype(np.float64).astype(host_dtype(dst))
    lo, hi = INT_RANGE[dst]
    if is_float(src):
        xf = np.nan_to_num(_f32(x).astype(np.float64), nan=0.0)
        return np.clip(np.trunc(xf), lo, hi).astype(host_dtype(dst))
    return x.astype(np.int64).astype(host_dtype(dst))
