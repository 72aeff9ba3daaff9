"""``check_resources``: does a lowered program fit what one GPU lets a launch have?

Run by ``tc.check`` and ``tc.build`` before any launch, against the target's record:
threads and dimensions of blocks and grids, local memory per thread, shared memory per
block (counted as the code generator lays it out, ``storage.shared_layout``), device
memory per tensor, and loop trip counts (the generated code counts in 32 bits).
"""

from __future__ import annotations

from ..dtypes import itemsize
from ..errors import CapacityError
from ..ir.stmt import For, Program
from ..ir.visitor import walk
from .gpus import Target, get_target
from .storage import allocated_buffers, element_bytes, kernel_shared_bytes

#: loop counters are 32-bit (uint32 in the generated code)
MAX_LOOP_EXTENT = 2**32 - 1


def check_resources(program: Program, target: Target | str | None = None) -> None:
    """Raise ``tc.CapacityError``, naming the kernel, the need and the limit, if a kernel
    of ``program`` needs more than ``target`` (default: ``DEFAULT_TARGET``) allows."""
    gpu = get_target(target)
    for b in tuple(program.inputs) + tuple(program.outputs) + tuple(program.intermediates):
        nbytes = b.size * itemsize(b.dtype)
        if nbytes > gpu.device_memory_bytes:
            raise CapacityError(f"tensor {b.name} {tuple(b.shape)} of {b.dtype} needs {nbytes:,} bytes; the "
                                f"{gpu.name} has {gpu.device_memory_bytes:,} bytes of device memory")
    for k in program.kernels:
        _check_kernel(k, gpu)


def _check_kernel(k, gpu: Target) -> None:
    for loop in walk(k.body):
        if isinstance(loop, For) and loop.extent > MAX_LOOP_EXTENT:
            raise CapacityError(f"kernel {k.name}: loop {loop.var.name} runs {loop.extent:,} iterations; loop "
                                f"counters are 32-bit (at most {MAX_LOOP_EXTENT:,}): split it")
    threads = k.block[0] * k.block[1] * k.block[2]
    if threads > gpu.max_threads_per_block:
        raise CapacityError(f"kernel {k.name} needs {threads} threads per block ({k.block}); "
                            f"the limit is {gpu.max_threads_per_block}")
    for what, dims, limits in (("blockDim", k.block, gpu.max_block_dims), ("gridDim", k.grid, gpu.max_grid_dims)):
        for axis, n, limit in zip("xyz", dims, limits):
            if n > limit:
                raise CapacityError(f"kernel {k.name} needs {what}.{axis} = {n} (grid {k.grid}, block "
                                    f"{k.block}); the limit of {what}.{axis} is {limit}")
    local = sum(b.size * element_bytes(b) for b in allocated_buffers(k) if b.scope == "local")
    if local > gpu.max_local_bytes_per_thread:
        raise CapacityError(f"kernel {k.name} needs {local} bytes of local memory per thread; "
                            f"the limit is {gpu.max_local_bytes_per_thread} bytes")
    shared = kernel_shared_bytes(k)
    if shared > gpu.smem_per_block:
        raise CapacityError(f"kernel {k.name} needs {shared} bytes of shared memory per block (buffers on "
                            f"16-byte boundaries, a swizzled one on a 1024-byte boundary); "
                            f"the limit is {gpu.smem_per_block} bytes")


__all__ = ["MAX_LOOP_EXTENT", "check_resources"]
