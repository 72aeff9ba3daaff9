"""A built module as a PyTorch operator (torch is an optional extra: ``pip install torch``).

``custom_op(module, "tcomp::name")`` registers a ``torch.library`` custom operator that takes
the module's inputs, in placeholder order, and returns its outputs as new tensors (one
tensor, or a tuple for several). The operator is functional (it writes only the tensors it
allocates), so ``torch.compile`` traces through it without a graph break and
CUDA-graph capture records it like any other kernel:

- on CUDA tensors it allocates the outputs on the inputs' device and launches the module's
  kernels on PyTorch's current stream (``Module.__call__``);
- on CPU tensors it runs the module in Numba's CUDA simulator (a module built with
  ``NUMBA_ENABLE_CUDASIM=1``), on numpy views that share the tensors' memory: slow, for
  tests;
- its fake implementation gives the outputs' shapes and dtypes without running anything,
  which is what ``torch.compile`` and ``torch.library.opcheck`` trace with.

A call whose inputs do not match the module (shape, dtype, device) raises the
module's ``tc.ArgumentError`` naming the argument, from the real and the fake
implementation alike. Outputs have no gradient: the operator has no backward.

``bucketed_op({1: m1, 16: m16, 7239: m7239}, "tcomp::name")`` does the same for builds at
several row counts: a call with any number of rows up to the largest runs the module of
the smallest extent that holds them, padding the rows (shape buckets; ``tcomp
autoschedule --shapes`` says which extents pay for their preparation).
"""

from __future__ import annotations

import numpy as np

from .dtypes import host_dtype
from .errors import ArgumentError

#: tcomp dtype -> the name of the torch dtype that holds it
TORCH_DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "int8": "int8",
                "int32": "int32", "float8_e4m3": "float8_e4m3fn"}
#: torch dtypes numpy cannot view directly -> the integer dtype of their bits
_BITS = {"bfloat16": "int16", "float16": "int16", "float8_e4m3fn": "uint8"}


def custom_op(module, name: str):
    """Register ``module`` (``tc.build``'s result) as the PyTorch operator ``name``
    (``"namespace::op"``) and return it: ``op(*inputs)`` returns the module's outputs.
    See the module docstring for what the operator does on each device."""
    return _register(name, {None: module})


def bucketed_op(modules: dict, name: str):
    """Builds of one workload at several extents of its rows (``{extent: module}``, say a
    decode step's 1, 16 and a prefill's 7239) as one operator ``name`` that takes any
    number of rows up to the largest extent: each call runs the module of the smallest
    extent that holds its rows (``tcomp.search.buckets``: the specialized kernel where
    there is one), its inputs' rows padded with zeros to that extent and its outputs' rows
    cut back. The rows are the first dimension of the inputs and outputs whose first
    dimension differs between the modules; all else must be the same. Padding is right
    for an axis along which each output row depends on the same row of the inputs only
    (the rows of a matrix product, of a row operator), which is the caller's to know."""
    if not modules or not all(isinstance(e, int) and e >= 1 for e in modules):
        raise ArgumentError(f"bucketed_op takes {{extent: module}} with positive integer extents; got "
                            f"{sorted(modules) if isinstance(modules, dict) else type(modules).__name__}")
    return _register(name, dict(sorted(modules.items())))


def _register(name: str, modules: dict):
    """The operator of ``modules`` (``{None: module}``: one shape; else by extent)."""
    import torch

    from .search.buckets import bucket_of

    if "::" not in name or not all(part.isidentifier() for part in name.split("::")):
        raise ArgumentError(f"a custom op is named 'namespace::name' (two identifiers), got {name!r}")
    first = next(iter(modules.values()))
    inputs, outputs = tuple(first.program.inputs), tuple(first.program.outputs)
    for buf in inputs + outputs:
        if buf.dtype not in TORCH_DTYPES:
            raise ArgumentError(f"{buf.name} holds {buf.dtype}, which no torch dtype holds "
                                f"(custom ops take {', '.join(sorted(TORCH_DTYPES))})")
    rows_in, rows_out = _rows(modules, "inputs"), _rows(modules, "outputs")
    returns = "Tensor" if len(outputs) == 1 else f"({', '.join('Tensor' for _ in outputs)})"
    schema = f"({', '.join(f'Tensor {b.name}' for b in inputs)}) -> {returns}"
    out_dtypes = [getattr(torch, TORCH_DTYPES[b.dtype]) for b in outputs]
    largest = max(modules) if None not in modules else None

    def check(args):
        """The call's rows (None for one shape); an ArgumentError naming what differs."""
        devices = {a.device for a in args}
        if len(devices) > 1:
            raise ArgumentError(f"{name}: the inputs are on several devices ({', '.join(map(str, devices))})")
        rows = args[rows_in[0]].shape[0] if rows_in else None
        for n, (buf, arg) in enumerate(zip(inputs, args)):
            want = getattr(torch, TORCH_DTYPES[buf.dtype])
            shape = tuple(buf.shape) if n not in rows_in else ("rows",) + tuple(buf.shape[1:])
            got = tuple(arg.shape) if n not in rows_in else ("rows",) + tuple(arg.shape[1:])
            if got != shape or arg.dtype != want or (n in rows_in and arg.shape[0] != rows):
                raise ArgumentError(f"{name}: argument {buf.name} must be a {want} tensor of shape {shape}, got "
                                    f"{arg.dtype} of shape {tuple(arg.shape)}" +
                                    (f" (rows: {rows}, as {inputs[rows_in[0]].name}'s)" if n in rows_in else ""))
        if rows is not None and not 1 <= rows <= largest:
            raise ArgumentError(f"{name} takes 1 to {largest} rows (its largest bucket), got {rows}")
        return rows

    def allocate(like, rows):
        return [torch.empty((rows, *b.shape[1:]) if n in rows_out else b.shape, dtype=d, device=like.device)
                for n, (b, d) in enumerate(zip(outputs, out_dtypes))]

    def result(outs):
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(*args):
        rows = check(args)
        bucket = None if rows is None else bucket_of(rows, list(modules))
        module = modules[bucket]
        if bucket is not None and bucket != rows:  # the rows padded with zeros to the bucket's
            args = [_padded(a, bucket) if n in rows_in else a for n, a in enumerate(args)]
        outs = allocate(args[0], bucket)
        if args[0].device.type == "cpu":
            if not module.simulator:
                raise ArgumentError(f"{name}: the module was built for the GPU; pass CUDA tensors (CPU tensors "
                                    "run a module built in the simulator, NUMBA_ENABLE_CUDASIM=1)")
            module(*(_host_view(t.contiguous()) for t in args), *(_host_view(t) for t in outs))
        else:
            module(*(t.contiguous() for t in args), *outs)
        if bucket is not None and bucket != rows:
            outs = [o[:rows].clone() if n in rows_out else o for n, o in enumerate(outs)]
        return result(outs)

    op = torch.library.custom_op(name, run, mutates_args=(), schema=schema)

    @op.register_fake
    def _(*args):
        rows = check(args)
        return result(allocate(args[0], rows))

    return op


def _rows(modules: dict, which: str) -> tuple:
    """Positions of the ``which`` ("inputs" or "outputs") whose first dimension is the
    bucketed rows: it differs between the modules and equals each one's extent; an
    ArgumentError where the modules differ otherwise."""
    if None in modules:
        return ()
    programs = [(extent, getattr(m.program, which)) for extent, m in modules.items()]
    _, first = programs[0]
    rows = []
    for extent, bufs in programs:
        if [(b.name, b.dtype, len(b.shape)) for b in bufs] != [(b.name, b.dtype, len(b.shape)) for b in first]:
            raise ArgumentError(f"bucketed_op: the modules differ in their {which}: "
                                f"{[b.name for b in first]} against {[b.name for b in bufs]}")
    extents = [extent for extent, _ in programs]
    for n, buf in enumerate(first):
        if any(tuple(bufs[n].shape[1:]) != tuple(buf.shape[1:]) for _, bufs in programs):
            raise ArgumentError(f"bucketed_op: {buf.name} differs between the modules beyond its first dimension")
        heads = [bufs[n].shape[0] for _, bufs in programs]
        # several modules: the rows are what differs; one module: what equals its extent
        if len(set(heads)) > 1 if len(programs) > 1 else heads == extents:
            if heads != extents:
                raise ArgumentError(f"bucketed_op: {buf.name}'s first dimension is not each module's extent "
                                    f"({heads} for {extents})")
            rows.append(n)
    if which == "inputs" and not rows:
        raise ArgumentError("bucketed_op: no input's first dimension is the modules' extent: build the workload "
                            "at each extent of its rows")
    return tuple(rows)


def _padded(tensor, rows: int):
    """``tensor`` with zero rows after its own, ``rows`` in all."""
    import torch

    padded = torch.zeros((rows, *tensor.shape[1:]), dtype=tensor.dtype, device=tensor.device)
    padded[:tensor.shape[0]] = tensor
    return padded


def _host_view(tensor) -> np.ndarray:
    """A numpy array over ``tensor``'s CPU memory, of the dtype the module's numpy
    arguments have (ml_dtypes' bfloat16 and float8 through the tensor's bits)."""
    name = str(tensor.dtype).removeprefix("torch.")
    if name not in _BITS:
        return tensor.numpy()
    import torch

    bits = tensor.view(getattr(torch, _BITS[name])).numpy()
    tcomp_dtype = next(k for k, v in TORCH_DTYPES.items() if v == name)
    return bits.view(host_dtype(tcomp_dtype))


__all__ = ["TORCH_DTYPES", "bucketed_op", "custom_op"]
