"""Compile generated source and launch it: the module that ``tc.build`` returns.

The source of every program is written to a content-hashed ``.py`` file under
the cache directory (``$TCOMP_CACHE_DIR``, default ``~/.cache/tcomp``) and
imported from there, so that Numba's on-disk cache of compiled kernels works
across processes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys

import numpy as np

from ..dtypes import DEVICE_STORAGE, host_dtype
from ..errors import ArgumentError, CodegenError
from ..ir.stmt import Program
from . import nvvm_unroll
from .cuda_source import kernel_signature
from .environment import cache_dir, simulator_enabled
from .graph import active_capture, graph
from .launch import DriverKernel, DriverLaunch
from .tensor_maps import TENSOR_MAP_BYTES, TensorMapTable


def import_source(source: str):
    """Write ``source`` to a content-hashed file and import it as a module."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    name = f"tcomp_kernels_{digest}"
    if name in sys.modules:
        return sys.modules[name], name
    path = cache_dir() / f"{name}.py"
    if not path.exists() or path.read_text() != source:
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # a bug in the generated code
        del sys.modules[name]
        raise CodegenError(f"generated source {path} failed to import: {err}") from err
    if not simulator_enabled():
        nvvm_unroll.register(name, getattr(module, "UNROLL_LOOPS", {}))
    return module, name


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _is_simulator_array(x) -> bool:
    """A device array of Numba's CUDA simulator: a numpy array in disguise, with no
    ``__cuda_array_interface__``."""
    return type(x).__name__ == "FakeCUDAArray"


def _is_device_array(x) -> bool:
    if _is_torch(x):
        return False
    return hasattr(x, "__cuda_array_interface__") or _is_simulator_array(x)


class Module:
    """A compiled program: call it with the inputs then the outputs, in placeholder order.

    Arguments may be numpy arrays (copied to the device and back), numba device arrays
    or torch CUDA tensors; device arguments may mix, host and device ones may not.
    ``mod.source`` is the generated code.

    On a GPU the kernels are compiled when the module is built and launched through the
    driver (``launch.py``): a call with device arguments checks them (shape, dtype,
    device, contiguity, alignment, outputs aliasing other arguments), then launches
    asynchronously, on PyTorch's current stream for torch tensors and on the default
    stream otherwise; a call with numpy arguments returns when the outputs are copied
    back. ``mod.graph(*args)`` captures a call into a replayable CUDA graph.
    """

    def __init__(self, program: Program, source: str, simulator: bool):
        self.program = program
        self.source = source
        self.simulator = simulator
        self._module, self.module_name = import_source(source)
        self._kernels = [getattr(self._module, k.name) for k in program.kernels]
        self._intermediates: dict | None = None
        self.arg_buffers = tuple(program.inputs) + tuple(program.outputs)
        #: global buffer name -> byte alignment its vector loads/stores need
        self.vector_alignment: dict = dict(getattr(self._module, "VECTOR_ALIGNMENT", {}))
        self._specs = tuple(_ArgSpec(b, self.vector_alignment.get(b.name, 1)) for b in self.arg_buffers)
        self._outputs = tuple(range(len(program.inputs), len(self.arg_buffers)))
        self._launch = None if simulator else self._driver_launch()
        self._device = None if simulator else _numba_device()  # the GPU the kernels are loaded on
        self._torch_tensor = None
        self._torch_dtypes: tuple | None = None  # resolved on the first call once torch is imported

    @property
    def source_path(self) -> str:
        return self._module.__file__

    def __repr__(self) -> str:
        names = ", ".join(b.name for b in self.arg_buffers)
        return f"<tcomp.Module ({names}): {len(self._kernels)} kernel(s)>"

    # ------------------------------------------------------------------ arguments

    def _check(self, args) -> str:
        want = len(self.arg_buffers)
        if len(args) != want:
            names = ", ".join(b.name for b in self.arg_buffers)
            raise ArgumentError(f"the module takes {want} arguments ({names}), got {len(args)}")
        kinds = set()
        for buf, arg in zip(self.arg_buffers, args):
            kind = "torch" if _is_torch(arg) else "device" if _is_device_array(arg) else \
                "numpy" if isinstance(arg, np.ndarray) else None
            if kind is None:
                raise ArgumentError(f"argument {buf.name}: expected a numpy array, a numba device array or "
                                    f"a torch tensor, got {type(arg).__name__}")
            kinds.add(kind)
            _check_one(buf, arg, kind, self._device)
            if kind == "numpy" and buf in self.program.outputs and not arg.flags.writeable:
                raise ArgumentError(f"argument {buf.name}: the output array is read-only; pass a writeable array")
        if "numpy" in kinds and len(kinds) > 1:
            host = [b.name for b, a in zip(self.arg_buffers, args) if isinstance(a, np.ndarray)]
            raise ArgumentError(f"arguments mix host (numpy) and device memory: {', '.join(host)} "
                                "are on the host; pass all as numpy arrays or all on the device")
        _check_aliasing(self.program, args)
        if "numpy" in kinds:  # numpy arguments are copied into fresh, aligned device memory
            return "numpy"
        self._check_alignment(args)
        return "torch" if "torch" in kinds else "device"

    def _check_alignment(self, args) -> None:
        for buf, arg in zip(self.arg_buffers, args):
            need = self.vector_alignment.get(buf.name)
            address = _device_address(arg)
            if need and address is not None and address % need:
                raise ArgumentError(
                    f"argument {buf.name}: the kernel accesses it with {8 * need}-bit vector loads/stores, "
                    f"which need its data to start on a {need}-byte boundary, but it starts at "
                    f"{address:#x}; pass a fresh copy (tensor.clone() or cuda.to_device(...))")

    def _fast_pointers(self, args):
        """The device pointers of ``args`` when they pass every check as they are (torch
        CUDA tensors or numba device arrays of the right shape, dtype and device,
        contiguous, aligned, no output overlapping another argument); None when some
        argument needs the full check, which explains what is wrong."""
        specs = self._specs
        if len(args) != len(specs):
            return None
        torch_dtypes = self._torch_dtypes or self._resolve_torch_dtypes()
        tensor = self._torch_tensor
        device = self._device
        pointers = []
        for arg, spec, torch_dtype in zip(args, specs, torch_dtypes):
            kind = type(arg)
            if kind is tensor:
                # NOTE: get_device() is -1 for a CPU tensor, so it also checks is_cuda
                if (arg.dtype is not torch_dtype or arg.shape != spec.shape or arg.get_device() != device
                        or not arg.is_contiguous()):
                    return None
                pointer = arg.data_ptr()
            elif kind is _DeviceNDArray:
                if arg.shape != spec.shape or arg.dtype != spec.storage or not arg.is_c_contiguous():
                    return None
                pointer = arg.device_ctypes_pointer.value or 0
            else:
                return None
            if pointer % spec.alignment:
                return None
            pointers.append(pointer)
        for o in self._outputs:
            low, high = pointers[o], pointers[o] + specs[o].nbytes
            for i, pointer in enumerate(pointers):
                if i != o and pointer < high and low < pointer + specs[i].nbytes:
                    return None
        return pointers

    def _resolve_torch_dtypes(self) -> tuple:
        """The torch dtype of each argument, once torch has been imported (by the user)."""
        torch = sys.modules.get("torch")
        if torch is None:
            return (None,) * len(self._specs)
        self._torch_tensor = torch.Tensor
        self._torch_dtypes = tuple(_torch_dtype(s.buffer.dtype, torch) for s in self._specs)
        return self._torch_dtypes

    # ------------------------------------------------------------------ launch

    def __call__(self, *args, **kwargs):
        if self._launch is not None and not kwargs:
            pointers = self._fast_pointers(args)
            if pointers is not None:
                self._launch(pointers, *self._stream(args))
                return
        self._call_checked(args, kwargs)

    def _call_checked(self, args, kwargs) -> None:
        """A call that runs every argument check first (and so explains a bad argument):
        numpy arguments, the simulator, and arguments the fast path does not take."""
        from numba import cuda

        if kwargs:
            names = ", ".join(b.name for b in self.arg_buffers)
            raise ArgumentError(f"the module takes its arguments by position ({names}), "
                                f"not by keyword ({', '.join(kwargs)})")
        kind = self._check(args)
        capture = active_capture()
        if capture is not None and kind == "numpy":
            raise ArgumentError("a graph capture needs device arguments (torch CUDA tensors or numba device "
                                "arrays): numpy arguments are copied for each call, which a replay cannot repeat")
        if kind == "numpy":
            device = [cuda.to_device(_storage_view(np.ascontiguousarray(a)).reshape(-1)) for a in args]
        else:
            device = [_device_flat(a, kind) for a in args]
        if self._launch is not None:
            pointers = [_device_address(d) or 0 for d in device]
            # NOTE: numpy arguments launch on the default stream, which the copy back waits for
            self._launch(pointers, *((0, False) if kind == "numpy" else self._stream(args)))
        else:
            if capture is not None:
                capture.record(args)
            self._simulate(device, capture)
        if kind == "numpy":
            n_in = len(self.program.inputs)
            for arr, dev in zip(args[n_in:], device[n_in:]):
                out = dev.copy_to_host()
                arr.reshape(-1).view(out.dtype)[:] = out

    def _stream(self, args) -> tuple:
        """``(stream, captured)``: the stream a GPU launch of ``args`` goes to, a running
        capture's (which keeps the arguments alive), else PyTorch's current stream, else
        the default stream; and whether it is being captured."""
        capture = active_capture()
        if capture is None:
            return _torch_stream(self._device), False
        capture.record(args)
        return capture.stream, True

    def _simulate(self, device, capture) -> None:
        """Run the kernels in Numba's CUDA simulator (or record them in a capture)."""
        buffers = dict(zip(self.arg_buffers, device))
        buffers.update(self._intermediate_arrays())
        launches = []
        for kernel, fn in zip(self.program.kernels, self._kernels):
            params = [buffers[b] for b in kernel.params] + [_simulated_map(m, buffers[m.tensor])
                                                            for m in kernel.tensor_maps]
            launches.append(lambda fn=fn, kernel=kernel, params=params: fn[kernel.grid, kernel.block](*params))
        if capture is not None:
            capture.simulated.extend(launches)
            return
        for launch in launches:
            launch()

    def graph(self, *args):
        """Capture this call into a :class:`tcomp.codegen.graph.Graph`; ``replay()`` runs it
        again on the same buffers (see ``tc.graph``)."""
        return graph(lambda: self(*args))

    # ------------------------------------------------------------------ build

    def _driver_launch(self):
        """Compile every kernel for its signature now and pack its parameters."""
        global _DeviceNDArray
        from numba.cuda.cudadrv.devicearray import DeviceNDArray

        _DeviceNDArray = DeviceNDArray
        kernels, slots, map_slots = [], {}, []
        dynamic = getattr(self._module, "DYNAMIC_SHARED", {})
        for kernel, fn in zip(self.program.kernels, self._kernels):
            sizes = [(b.size, _storage_dtype(b.dtype).itemsize) for b in kernel.params]
            sizes += [(TENSOR_MAP_BYTES // 8, 8)] * len(kernel.tensor_maps)
            driver_kernel = DriverKernel(fn, kernel_signature(kernel), kernel.grid, kernel.block, sizes,
                                         dynamic.get(kernel.name, 0))
            kernels.append(driver_kernel)
            for b, slot in zip(kernel.params, driver_kernel.data_slots):
                slots.setdefault(b, []).append(slot)
            map_slots += zip(kernel.tensor_maps, driver_kernel.data_slots[len(kernel.params):])
        intermediates = self._intermediate_arrays()
        fixed = [(slot, _device_address(array)) for b, array in intermediates.items() for slot in slots.get(b, [])]
        derived = []  # (slot, argument number, table): a map made from an argument's pointer at each call
        intermediate_maps = []  # the tables of the intermediates' maps: they own the maps' device memory
        for tensor_map, slot in map_slots:
            table = TensorMapTable(tensor_map.tensor.dtype, tensor_map.tensor.shape, tensor_map.box_rows,
                                   tensor_map.box_cols, tensor_map.swizzle)
            if tensor_map.tensor in intermediates:
                fixed.append((slot, table.device_pointer(_device_address(intermediates[tensor_map.tensor]))))
                intermediate_maps.append(table)
            else:
                derived.append((slot, self.arg_buffers.index(tensor_map.tensor), table))
        return DriverLaunch(kernels, [slots.get(b, []) for b in self.arg_buffers], fixed, derived,
                            owners=intermediate_maps)

    def _intermediate_arrays(self) -> dict:
        from numba import cuda

        if self._intermediates is None:
            self._intermediates = {}
            for b in self.program.intermediates:
                self._intermediates[b] = cuda.device_array(b.size, dtype=_storage_dtype(b.dtype))
        return self._intermediates


#: numba's device array class, set when the first module is built for a GPU
_DeviceNDArray = None


class _ArgSpec:
    """What a module argument must be, computed once at build."""

    def __init__(self, buf, alignment: int):
        self.buffer = buf
        self.shape = tuple(buf.shape)
        self.storage = _storage_dtype(buf.dtype)
        self.nbytes = buf.size * self.storage.itemsize
        self.alignment = max(1, alignment)


def _simulated_map(tensor_map, array):
    """The simulator's stand-in for ``tensor_map`` over the simulated device ``array``."""
    from .bulk_copy import sim_tensor_map

    return sim_tensor_map(array, tensor_map.tensor.shape, tensor_map.box_rows, tensor_map.box_cols,
                             tensor_map.swizzle)


def _storage_dtype(dtype: str) -> np.dtype:
    return np.dtype(DEVICE_STORAGE.get(dtype, host_dtype(dtype)))


def _numba_device() -> int:
    from numba import cuda

    return cuda.get_current_device().id


def _torch_stream(device: int) -> int:
    """PyTorch's current stream on ``device`` when torch is in use, else 0."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device)
    return torch.cuda.current_stream(device).cuda_stream


def _storage_view(a: np.ndarray) -> np.ndarray:
    from ..dtypes import dtype_of_host

    name = dtype_of_host(a.dtype)
    if name in DEVICE_STORAGE:
        return a.view(DEVICE_STORAGE[name])
    return a


def _check_one(buf, arg, kind: str, device: int | None) -> None:
    shape = tuple(arg.shape)
    if shape != tuple(buf.shape):
        raise ArgumentError(f"argument {buf.name}: expected shape {tuple(buf.shape)}, got {shape}")
    if kind == "torch":
        import torch

        if not arg.is_cuda:
            raise ArgumentError(f"argument {buf.name}: the torch tensor is on {arg.device}; "
                                "pass CUDA tensors (or numpy arrays for host memory)")
        if device is not None and arg.get_device() != device:
            raise ArgumentError(f"argument {buf.name}: the torch tensor is on {arg.device}, but the module "
                                f"was built on cuda:{device}; pass tensors on cuda:{device}")
        want = _torch_dtype(buf.dtype, torch)
        if arg.dtype != want:
            raise ArgumentError(f"argument {buf.name}: expected dtype {want}, got {arg.dtype}")
        if not arg.is_contiguous():
            raise ArgumentError(f"argument {buf.name}: the tensor is not contiguous; call .contiguous()")
        return
    if kind == "numpy":
        want = host_dtype(buf.dtype)
        if arg.dtype != want:
            raise ArgumentError(f"argument {buf.name}: expected dtype {want} ({buf.dtype}), got {arg.dtype}")
        if not arg.flags.c_contiguous:
            raise ArgumentError(f"argument {buf.name}: the array is not C-contiguous; "
                                "pass np.ascontiguousarray(...)")
        return
    want = DEVICE_STORAGE.get(buf.dtype, host_dtype(buf.dtype))
    if np.dtype(arg.dtype) != want:
        raise ArgumentError(f"argument {buf.name}: expected device dtype {want} ({buf.dtype}), got {arg.dtype}")
    if not arg.is_c_contiguous():
        raise ArgumentError(f"argument {buf.name}: the device array is not C-contiguous")


def _torch_dtype(dtype: str, torch):
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
            "int8": torch.int8, "int32": torch.int32, "float8_e4m3": torch.float8_e4m3fn}[dtype]


def _device_flat(arg, kind: str):
    from numba import cuda

    if kind == "torch":
        import torch

        flat = arg.reshape(-1)
        if flat.dtype in (torch.bfloat16, torch.float16):
            flat = flat.view(torch.uint16)
        elif flat.dtype == torch.float8_e4m3fn:
            flat = flat.view(torch.uint8)
        return cuda.as_cuda_array(flat)
    return arg.reshape(arg.size)


def _check_aliasing(program, args) -> None:
    n_in = len(program.inputs)
    bufs = list(program.inputs) + list(program.outputs)
    for o in range(n_in, len(args)):
        for i in range(len(args)):
            if i == o:
                continue
            if _overlaps(args[o], args[i]):
                raise ArgumentError(f"output {bufs[o].name} shares memory with argument {bufs[i].name}; "
                                    "outputs must not alias other arguments")


def _device_address(arg) -> int | None:
    if _is_torch(arg):
        return arg.data_ptr()
    try:
        return int(arg.__cuda_array_interface__["data"][0])
    except (AttributeError, KeyError, TypeError):
        return None


def _overlaps(a, b) -> bool:
    # NOTE: the simulator's device arrays wrap a numpy array and have no device address
    a, b = (x._ary if _is_simulator_array(x) else x for x in (a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.shares_memory(a, b)
    try:
        pa = a.__cuda_array_interface__["data"][0]
        pb = b.__cuda_array_interface__["data"][0]
        na, nb = a.nbytes if hasattr(a, "nbytes") else 0, b.nbytes if hasattr(b, "nbytes") else 0
    except (AttributeError, KeyError, TypeError):
        return False
    return pa < pb + nb and pb < pa + na
