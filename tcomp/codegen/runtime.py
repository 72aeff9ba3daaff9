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
from pathlib import Path

import numpy as np

from ..dtypes import DEVICE_STORAGE, host_dtype
from ..errors import ArgumentError, CodegenError
from ..ir.stmt import Program


def simulator_enabled() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def cache_dir() -> Path:
    root = os.environ.get("TCOMP_CACHE_DIR") or os.path.join(Path.home(), ".cache", "tcomp")
    path = Path(root) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


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
    or torch CUDA tensors; all of one kind. ``mod.source`` is the generated code.
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
            _check_one(buf, arg, kind)
            if kind == "numpy" and buf in self.program.outputs and not arg.flags.writeable:
                raise ArgumentError(f"argument {buf.name}: the output array is read-only; pass a writeable array")
        if "numpy" in kinds and len(kinds) > 1:
            host = [b.name for b, a in zip(self.arg_buffers, args) if isinstance(a, np.ndarray)]
            raise ArgumentError(f"arguments mix host (numpy) and device memory: {', '.join(host)} "
                                "are on the host; pass all as numpy arrays or all on the device")
        _check_aliasing(self.program, args)
        kind = kinds.pop()
        if kind != "numpy":  # numpy arguments are copied into fresh, aligned device memory
            self._check_alignment(args)
        return kind

    def _check_alignment(self, args) -> None:
        for buf, arg in zip(self.arg_buffers, args):
            need = self.vector_alignment.get(buf.name)
            address = _device_address(arg)
            if need and address is not None and address % need:
                raise ArgumentError(
                    f"argument {buf.name}: the kernel accesses it with {8 * need}-bit vector loads/stores, "
                    f"which need its data to start on a {need}-byte boundary, but it starts at "
                    f"{address:#x}; pass a fresh copy (tensor.clone() or cuda.to_device(...))")

    # ------------------------------------------------------------------ launch

    def __call__(self, *args, **kwargs):
        from numba import cuda

        if kwargs:
            names = ", ".join(b.name for b in self.arg_buffers)
            raise ArgumentError(f"the module takes its arguments by position ({names}), "
                                f"not by keyword ({', '.join(kwargs)})")
        kind = self._check(args)
        if kind == "numpy":
            device = [cuda.to_device(_storage_view(np.ascontiguousarray(a)).reshape(-1)) for a in args]
        else:
            device = [_device_flat(a, kind) for a in args]
        buffers = dict(zip(self.arg_buffers, device))
        buffers.update(self._intermediate_arrays())
        for kernel, fn in zip(self.program.kernels, self._kernels):
            params = [buffers[b] for b in kernel.params]
            fn[kernel.grid, kernel.block](*params)
        if kind == "numpy":
            n_in = len(self.program.inputs)
            for arr, dev in zip(args[n_in:], device[n_in:]):
                out = dev.copy_to_host()
                arr.reshape(-1).view(out.dtype)[:] = out
        elif not self.simulator:
            cuda.synchronize() if kind == "device" else None

    def _intermediate_arrays(self) -> dict:
        from numba import cuda

        if self._intermediates is None:
            self._intermediates = {}
            for b in self.program.intermediates:
                dt = DEVICE_STORAGE.get(b.dtype, host_dtype(b.dtype))
                self._intermediates[b] = cuda.device_array(b.size, dtype=dt)
        return self._intermediates


def _storage_view(a: np.ndarray) -> np.ndarray:
    from ..dtypes import dtype_of_host

    name = dtype_of_host(a.dtype)
    if name in DEVICE_STORAGE:
        return a.view(DEVICE_STORAGE[name])
    return a


def _check_one(buf, arg, kind: str) -> None:
    shape = tuple(arg.shape)
    if shape != tuple(buf.shape):
        raise ArgumentError(f"argument {buf.name}: expected shape {tuple(buf.shape)}, got {shape}")
    if kind == "torch":
        import torch

        if not arg.is_cuda:
            raise ArgumentError(f"argument {buf.name}: the torch tensor is on {arg.device}; "
                                "pass CUDA tensors (or numpy arrays for host memory)")
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
