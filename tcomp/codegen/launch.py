"""Kernel launches through the CUDA driver, a few microseconds of host time each.

Numba's dispatcher spends 20-80 µs of host time on a launch (it matches the argument
types against its overloads and converts each array into the kernel's parameters every
time). A tcomp module knows its kernels' signatures at build time, so it compiles each
kernel once for that signature, keeps the driver's handle of the compiled function and
packs the kernel's parameter block once (``ctypes``): a call then writes the data
pointers into their slots and calls ``cuLaunchKernel``.

A numba kernel takes a 1-D C-contiguous array as seven parameters: meminfo and parent
(null on the device), the element count, the item size, the data pointer, the shape and
the stride in bytes. Everything but the data pointer is fixed by the buffer's size and
dtype, known at build.

Launches go to the stream the caller names (0: the legacy default stream, which numba and
PyTorch's default stream share; a :func:`tcomp.graph` capture's stream while one runs)
and are asynchronous, as numba's and PyTorch's are.
"""

from __future__ import annotations

import ctypes
import threading

from ..errors import CapacityError
from .driver import checked, driver
from .typing_memo import memoized_typing

#: parameters of a numba 1-D array argument; the data pointer is the fifth
_ARRAY_PARAMS = 7
_DATA_SLOT = 4


def _compiled_function(dispatcher, signature):
    """Compile ``dispatcher`` for ``signature``; numba's compiled function (its ``handle``
    is what cuLaunchKernel takes, its ``attrs`` the registers and thread limit)."""
    with memoized_typing():
        dispatcher.compile(signature)
    return dispatcher.overloads[tuple(signature)]._codelibrary.get_cufunc()


def _launch_handle(cufunc):
    handle = cufunc.handle
    value = handle.value if hasattr(handle, "value") else handle
    return driver().CUfunction(int(value))


def _allow_dynamic_shared(function, nbytes: int) -> None:
    """Let ``function`` have ``nbytes`` of dynamic shared memory per block. numba-cuda may
    load its modules as libraries, and then the handle it keeps is a ``CUkernel``, which
    ``cuFuncSetAttribute`` refuses (``cuLaunchKernel`` takes either): then the kernel's
    attribute is set for the current device instead."""
    d = driver()
    attribute = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    err, = d.cuFuncSetAttribute(function, attribute, nbytes)
    if err == d.CUresult.CUDA_ERROR_INVALID_HANDLE:
        device = checked(d.cuCtxGetDevice(), "cuCtxGetDevice")
        err, = d.cuKernelSetAttribute(attribute, nbytes, d.CUkernel(int(function)), device)
    checked((err,), f"setting the dynamic shared memory of a kernel to {nbytes} bytes")


def _check_block_fits(attrs, block, name: str) -> None:
    """A CapacityError when the compiled kernel's registers leave too few for a block of
    ``block`` threads (the launch would fail with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)."""
    threads = block[0] * block[1] * block[2]
    if threads > attrs.maxthreads:
        raise CapacityError(f"kernel {name} was compiled to {attrs.regs} registers a thread, which allows blocks "
                            f"of at most {attrs.maxthreads} threads on this GPU; its schedule launches blocks of "
                            f"{threads} (bind fewer threads, or give each fewer outputs)")


class DriverKernel:
    """One compiled kernel with its launch shape and its packed parameter block."""

    def __init__(self, dispatcher, signature, grid, block, param_sizes, dynamic_shared: int = 0):
        """``param_sizes``: (element count, item size) of each array parameter, in order;
        ``dynamic_shared``: bytes of dynamic shared memory each block gets."""
        cufunc = _compiled_function(dispatcher, signature)
        self.grid, self.block = tuple(grid), tuple(block)
        _check_block_fits(cufunc.attrs, self.block, getattr(dispatcher, "__name__", "kernel"))
        self.function = _launch_handle(cufunc)
        if dynamic_shared:  # NOTE: above 48 KB the function must ask for it first
            _allow_dynamic_shared(self.function, dynamic_shared)
        self._values = []
        self.data_slots = []  # one c_void_p per parameter, holding its data pointer
        for count, itemsize in param_sizes:
            values = [ctypes.c_void_p(0), ctypes.c_void_p(0), ctypes.c_int64(count), ctypes.c_int64(itemsize),
                      ctypes.c_void_p(0), ctypes.c_int64(count), ctypes.c_int64(itemsize)]
            self._values += values
            self.data_slots.append(values[_DATA_SLOT])
        self._params = (ctypes.c_void_p * len(self._values))(*[ctypes.addressof(v) for v in self._values])
        self.params_address = ctypes.addressof(self._params)
        #: cuLaunchKernel's arguments before the stream: function, grid, block, dynamic shared bytes
        self.launch_head = (self.function, *self.grid, *self.block, dynamic_shared)


class DriverLaunch:
    """The kernels of one module launched in order, their parameters sharing slots: a
    buffer's pointer is written once per call into every kernel that takes it."""

    def __init__(self, kernels, slots_of_argument, fixed_pointers, derived=(), owners=()):
        """``kernels``: DriverKernel list; ``slots_of_argument``: per module argument, the
        data slots it fills; ``fixed_pointers``: (slot, pointer) of the intermediates and
        their tensor maps; ``derived``: (slot, argument number, ``TensorMapTable``) of the
        tensor maps of arguments, whose device maps depend on the argument's pointer;
        ``owners``: what holds the device memory behind fixed pointers (the tables of the
        intermediates' maps), kept alive as long as the launch: a map freed while its
        pointer stays in a slot is memory the next allocation takes (a module built after
        another then read a tensor map overwritten by its own buffers)."""
        self.owners = tuple(owners)
        self.kernels = kernels
        self.slots_of_argument = slots_of_argument
        self.derived = tuple(derived)
        for slot, pointer in fixed_pointers:
            slot.value = pointer
        self._lock = threading.Lock()
        self._launches = tuple((k.launch_head, k.params_address, k) for k in kernels)
        self._launch_kernel = driver().cuLaunchKernel

    def __call__(self, pointers, stream, captured: bool = False) -> None:
        """Launch on ``stream`` (``captured``: a graph capture's, where a tensor map's copy
        to the device must be captured too)."""
        launch_kernel = self._launch_kernel
        # NOTE: the lock keeps two threads from interleaving their pointers in the shared
        # parameter blocks; cuLaunchKernel copies the block before it returns.
        with self._lock:
            for slots, pointer in zip(self.slots_of_argument, pointers):
                for slot in slots:
                    slot.value = pointer
            for slot, argument, table in self.derived:
                slot.value = table.device_pointer(pointers[argument], stream if captured else None)
            for head, params, kernel in self._launches:
                err, = launch_kernel(*head, stream, params, 0)
                if err:
                    checked((err,), f"cuLaunchKernel (grid {kernel.grid}, block {kernel.block})")
