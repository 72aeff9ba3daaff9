"""Tensor maps for TMA copies (``tcomp.codegen.bulk_copy.tma_load_2d``, ``tma_load_3d``), made on the host.

A tensor map is 128 bytes that the driver's ``cuTensorMapEncodeTiled`` writes: the
tensor's address, extents and row pitch, the box one copy moves, and the layout the box
lands in (here: none, or the 128-byte swizzle that ``wgmma`` reads). Kernels read it from
global memory, so it travels as a 16-element uint64 array like any other argument.

``cuda.bindings`` wants every count wrapped (``cuuint32_t``, ``cuuint64_t``); extents and
boxes go innermost first, and the pitches of the outer dimensions only.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..errors import ArgumentError
from .driver import checked, driver

#: bytes of one tensor map
TENSOR_MAP_BYTES = 128
_DATA_TYPES = {"bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", "float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
               "float32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"}
_ITEM_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
_SWIZZLES = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 128: "CU_TENSOR_MAP_SWIZZLE_128B"}


#: TMA's most dimensions of a tensor
MAX_RANK = 5


def tensor_map(address: int, dtype: str, shape: tuple, box_rows: int, box_cols: int,
               swizzle: int = 128) -> np.ndarray:
    """The tensor map (16 uint64) of a row-major tensor of ``dtype`` and ``shape`` (2 to 5
    dimensions) at device ``address`` whose copies move boxes of ``box_rows`` x
    ``box_cols`` elements of its last two dimensions at one index of the others, landing
    with ``swizzle`` (0 or 128 bytes; with 128 a box row must be at most 128 bytes)."""
    if dtype not in _DATA_TYPES or swizzle not in _SWIZZLES:
        raise ArgumentError(f"tensor maps take {sorted(_DATA_TYPES)} with swizzle 0 or 128; got {dtype}, {swizzle}")
    if not 2 <= len(shape) <= MAX_RANK:
        raise ArgumentError(f"a TMA tensor has 2 to {MAX_RANK} dimensions; got the shape {tuple(shape)}")
    item = _ITEM_BYTES[dtype]
    pitch = shape[-1] * item
    if pitch % 16 or address % 16:
        raise ArgumentError(f"a TMA tensor needs a 16-byte aligned address and row pitch; got {address:#x}, {pitch}")
    if swizzle and box_cols * item > swizzle:
        raise ArgumentError(f"a box row of {box_cols * item} bytes is wider than the {swizzle}-byte swizzle")
    if not (1 <= box_rows <= 256 and 1 <= box_cols <= 256):
        raise ArgumentError(f"a TMA box is at most 256 x 256 elements; got {box_rows} x {box_cols}")
    extents = tuple(reversed(shape))  # innermost first, as the driver wants them
    pitches = [item * int(np.prod(extents[:d])) for d in range(1, len(extents))]
    box = (box_cols, box_rows) + (1,) * (len(shape) - 2)
    d = driver()
    encoded = checked(d.cuTensorMapEncodeTiled(
        getattr(d.CUtensorMapDataType, _DATA_TYPES[dtype]), d.cuuint32_t(len(shape)), address,
        [d.cuuint64_t(e) for e in extents], [d.cuuint64_t(p) for p in pitches],
        [d.cuuint32_t(b) for b in box], [d.cuuint32_t(1)] * len(shape),
        d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, getattr(d.CUtensorMapSwizzle, _SWIZZLES[swizzle]),
        d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), "cuTensorMapEncodeTiled")
    raw = ctypes.string_at(encoded.getPtr(), TENSOR_MAP_BYTES)
    return np.frombuffer(raw, dtype=np.uint64).copy()


class TensorMapTable:
    """The device copies of one tensor map spec, one per data pointer it has been made for.

    A kernel that copies boxes of a tensor by TMA takes the tensor's map as an argument,
    and the map holds the tensor's address: each call needs the map of the pointer it is
    given. A table makes a map the first time it sees a pointer (the driver's encoding and
    a device allocation) and returns the same device map on every later call, so that a
    call on the same tensors as before costs a dictionary lookup. Outside a graph capture
    the map is copied to the device at once; inside one, the copy is an asynchronous copy
    on the capture's stream from pinned host memory kept alive with the map (so that every
    replay writes it before its kernel), and a later call outside the capture copies it
    again before using it. Maps are never freed: a captured graph may replay one at any
    time (128 bytes per pointer seen).
    """

    def __init__(self, dtype: str, shape: tuple, box_rows: int, box_cols: int, swizzle: int = 128):
        self.spec = (dtype, tuple(shape), box_rows, box_cols, swizzle)
        self._maps: dict = {}  # data pointer -> [device address, device map, pinned host map, written]

    def device_pointer(self, pointer: int, stream=None) -> int:
        """The device address of the map of the tensor at ``pointer``; ``stream``: the
        stream being captured, or None outside a capture."""
        entry = self._maps.get(pointer)
        if entry is None:
            entry = self._maps[pointer] = self._make(pointer)
        address, _, host, written = entry
        if stream is not None:
            checked(driver().cuMemcpyHtoDAsync(address, host.ctypes.data, TENSOR_MAP_BYTES, stream),
                    "copying a tensor map to the device in a graph capture")
        elif not written:
            checked(driver().cuMemcpyHtoD(address, host.ctypes.data, TENSOR_MAP_BYTES), "copying a tensor map to the device")
            entry[3] = True
        return address

    def _make(self, pointer: int) -> list:
        from numba import cuda

        d = driver()
        relaxed = d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        # NOTE: allocating (pinned host or device memory) is refused on a thread that is
        # capturing a graph, unless relaxed
        previous = checked(d.cuThreadExchangeStreamCaptureMode(relaxed), "cuThreadExchangeStreamCaptureMode")
        try:
            host = cuda.pinned_array(16, dtype=np.uint64)
            device = cuda.device_array(16, dtype=np.uint64)
        finally:
            checked(d.cuThreadExchangeStreamCaptureMode(previous), "cuThreadExchangeStreamCaptureMode")
        host[:] = tensor_map(pointer, *self.spec)
        # NOTE: the address read once: a launch asks for it on every call
        return [device.device_ctypes_pointer.value, device, host, False]
