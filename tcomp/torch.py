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

A call whose inputs do not match the module (shape, dtype, device, count) raises the
module's ``tc.ArgumentError`` naming the argument, from the real and the fake
implementation alike. Outputs have no gradient: the operator has no backward.
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
    import torch

    if "::" not in name or not all(part.isidentifier() for part in name.split("::")):
        raise ArgumentError(f"a custom op is named 'namespace::name' (two identifiers), got {name!r}")
    inputs, outputs = tuple(module.program.inputs), tuple(module.program.outputs)
    for buf in inputs + outputs:
        if buf.dtype not in TORCH_DTYPES:
            raise ArgumentError(f"{buf.name} holds {buf.dtype}, which no torch dtype holds "
                                f"(custom ops take {', '.join(sorted(TORCH_DTYPES))})")
    returns = "Tensor" if len(outputs) == 1 else f"({', '.join('Tensor' for _ in outputs)})"
    schema = f"({', '.join(f'Tensor {b.name}' for b in inputs)}) -> {returns}"
    out_dtypes = [getattr(torch, TORCH_DTYPES[b.dtype]) for b in outputs]

    def check(args) -> None:
        if len(args) != len(inputs):
            raise ArgumentError(f"{name} takes {len(inputs)} tensors ({', '.join(b.name for b in inputs)}), "
                                f"got {len(args)}")
        devices = {a.device for a in args}
        if len(devices) > 1:
            raise ArgumentError(f"{name}: the inputs are on several devices ({', '.join(map(str, devices))})")
        for buf, arg in zip(inputs, args):
            want = getattr(torch, TORCH_DTYPES[buf.dtype])
            if tuple(arg.shape) != tuple(buf.shape) or arg.dtype != want:
                raise ArgumentError(f"{name}: argument {buf.name} must be a {want} tensor of shape "
                                    f"{tuple(buf.shape)}, got {arg.dtype} of shape {tuple(arg.shape)}")

    def allocate(like):
        return [torch.empty(b.shape, dtype=d, device=like.device) for b, d in zip(outputs, out_dtypes)]

    def result(outs):
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(*args):
        check(args)
        outs = allocate(args[0])
        if args[0].device.type == "cpu":
            if not module.simulator:
                raise ArgumentError(f"{name}: the module was built for the GPU; pass CUDA tensors (CPU tensors "
                                    "run a module built in the simulator, NUMBA_ENABLE_CUDASIM=1)")
            module(*(_host_view(t.contiguous()) for t in args), *(_host_view(t) for t in outs))
        else:
            module(*(t.contiguous() for t in args), *outs)
        return result(outs)

    op = torch.library.custom_op(name, run, mutates_args=(), schema=schema)

    @op.register_fake
    def _(*args):
        check(args)
        return result(allocate(args[0]))

    return op


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


__all__ = ["TORCH_DTYPES", "custom_op"]
