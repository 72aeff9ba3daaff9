"""The CUDA driver through ``cuda.bindings`` (which numba-cuda depends on): one place to
import it and to turn a failed call into a ``DriverError`` (a ``CodegenError``) naming the
call."""

from __future__ import annotations

from ..errors import DriverError


def driver():
    from cuda.bindings import driver as _driver

    return _driver


def checked(result, what: str):
    """The values a ``cuda.bindings`` call returned after its status, or a DriverError
    naming the call and the driver's error."""
    err, *values = result
    if int(err) != 0:
        _, name = driver().cuGetErrorName(err)
        raise DriverError(f"{what} failed: {name.decode() if isinstance(name, bytes) else name}")
    return values[0] if len(values) == 1 else values
