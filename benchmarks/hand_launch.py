"""Launching hand-written Numba kernels in the probes (``softmax_long_rows.py``,
``gemv_split.py``) the way tcomp launches its own: one ``cuLaunchKernel`` with parameters
packed once, on PyTorch's current stream. Numba's dispatcher spends more host time per
launch than a decode-sized kernel takes, which batched timing would then measure."""

from __future__ import annotations


def launcher(kernel, grid, block, tensors, shared: int = 0):
    """A call that launches ``kernel`` on the contiguous torch ``tensors`` (each passed as
    a 1-D array of its dtype) with ``grid`` and ``block``, and ``shared`` bytes of
    dynamic shared memory a block."""
    import torch
    from numba import types

    from tcomp.codegen.launch import DriverKernel, DriverLaunch

    kinds = {torch.float32: types.float32, torch.int16: types.int16, torch.int32: types.int32}
    signature = tuple(types.Array(kinds[t.dtype], 1, "C") for t in tensors)
    grid, block = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
    compiled = DriverKernel(kernel, signature, grid, block, [(t.numel(), t.element_size()) for t in tensors], shared)
    launch = DriverLaunch([compiled], [[slot] for slot in compiled.data_slots], [])
    pointers = tuple(t.data_ptr() for t in tensors)
    return lambda: launch(pointers, torch.cuda.current_stream().cuda_stream)
