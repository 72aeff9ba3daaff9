"""``tc.lower`` and ``tc.build``: from a schedule to a callable module."""

from __future__ import annotations

from .codegen import Module, program_source, simulator_enabled
from .codegen.cuda_source import MAX_STATIC_SHARED_BYTES as _MAX_STATIC_SHARED_BYTES
from .codegen.cuda_source import element_bytes, shared_bytes
from .errors import CapacityError, CodegenError
from .ir.stmt import Program
from .lower import lower as _lower

#: per-block limits of the H200 (compute capability 9.0) that a launch must respect
MAX_THREADS_PER_BLOCK = 1024
#: above this, a kernel's shared buffers live in dynamic shared memory (cuda_source)
MAX_STATIC_SHARED_BYTES = _MAX_STATIC_SHARED_BYTES
#: the most shared memory one block may have (227 KB; the driver lends it to a function
#: that asks, which tcomp's launch does)
MAX_SHARED_BYTES_PER_BLOCK = 232448
MAX_BLOCK_DIMS = (1024, 1024, 64)  # blockDim.x, .y, .z
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)  # gridDim.x, .y, .z
MAX_LOCAL_BYTES_PER_THREAD = 512 * 1024
#: the H200's device memory (141 GB of HBM3e): no buffer can be larger
MAX_GLOBAL_BYTES = 141 * 10**9
#: loop counters are 32-bit (uint32 in the generated code)
MAX_LOOP_EXTENT = 2**32 - 1


def lower(s, trace=None) -> Program:
    """The loop-nest IR of schedule ``s``; ``print(tc.lower(s))`` shows it."""
    return _lower(s, trace=trace)


def build(s, target: str = "cuda", check: bool = True) -> Module:
    """Compile schedule ``s`` into a module ``mod(*inputs, *outputs)``.

    ``target="cuda"`` compiles with numba-cuda, or runs in Numba's CUDA simulator when
    ``NUMBA_ENABLE_CUDASIM=1`` is set. ``check=False`` skips the legality check.
    """
    if target != "cuda":
        raise CodegenError(f"unknown target {target!r}; tcomp generates code for 'cuda'")
    simulator = simulator_enabled()
    if check:
        from .check import checked_program

        _, program, source = checked_program(s)
    else:
        program = _lower(s)
        check_resources(program)
        source = program_source(program, simulator)
    return Module(program, source, simulator)


def check_resources(program: Program) -> None:
    """Raise before any launch if a kernel needs more than a block may have."""
    from .ir.stmt import Allocate, For
    from .ir.visitor import walk
    from .dtypes import itemsize

    for b in tuple(program.inputs) + tuple(program.outputs) + tuple(program.intermediates):
        nbytes = b.size * itemsize(b.dtype)
        if nbytes > MAX_GLOBAL_BYTES:
            raise CapacityError(f"tensor {b.name} {tuple(b.shape)} of {b.dtype} needs {nbytes:,} bytes; the "
                                f"GPU has {MAX_GLOBAL_BYTES:,} bytes of device memory")
    for k in program.kernels:
        for loop in walk(k.body):
            if isinstance(loop, For) and loop.extent > MAX_LOOP_EXTENT:
                raise CapacityError(f"kernel {k.name}: loop {loop.var.name} runs {loop.extent:,} iterations; loop "
                                    f"counters are 32-bit (at most {MAX_LOOP_EXTENT:,}): split it")
        threads = k.block[0] * k.block[1] * k.block[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise CapacityError(f"kernel {k.name} needs {threads} threads per block ({k.block}); "
                                f"the limit is {MAX_THREADS_PER_BLOCK}")
        for what, dims, limits in (("blockDim", k.block, MAX_BLOCK_DIMS), ("gridDim", k.grid, MAX_GRID_DIMS)):
            for axis, n, limit in zip("xyz", dims, limits):
                if n > limit:
                    raise CapacityError(f"kernel {k.name} needs {what}.{axis} = {n} (grid {k.grid}, block "
                                        f"{k.block}); the limit of {what}.{axis} is {limit}")
        # NOTE: a partitioned loop holds its buffers' Allocate once per part: count buffers once
        allocated = {n.buffer for n in walk(k.body) if isinstance(n, Allocate)}
        local = sum(b.size * element_bytes(b) for b in allocated if b.scope == "local")
        if local > MAX_LOCAL_BYTES_PER_THREAD:
            raise CapacityError(f"kernel {k.name} needs {local} bytes of local memory per thread; "
                                f"the limit is {MAX_LOCAL_BYTES_PER_THREAD} bytes")
        shared = shared_bytes(b for b in allocated if b.scope == "shared")  # 16-bit floats: 2 bytes each
        if shared > MAX_SHARED_BYTES_PER_BLOCK:
            raise CapacityError(f"kernel {k.name} needs {shared} bytes of shared memory per block; "
                                f"the limit is {MAX_SHARED_BYTES_PER_BLOCK} bytes")
