"""Numba's typing of a call, remembered for the length of one tcomp compile.

A generated kernel makes hundreds of calls with a handful of distinct signatures: the
index arithmetic on ``uint32`` values, the conversions, the intrinsics. numba-cuda types
each call anew (``BaseFunction.get_call_type``): it tries every template of the function
in turn, and for an operator such as ``+`` those include numpy's ufunc loops, which it
matches type by type. That was a third of a tensor-core kernel's front end.

``memoized_typing()`` is a context manager around a compile: inside it, the result of
``get_call_type(function type, typing context, argument types, keyword types)`` is kept
in a dictionary that lives as long as the ``with`` block, so that a repeated call is
resolved once. The typing of a call depends on nothing else (the types carry any literal
values), and numba records the implementation of a resolved signature on the function
type the first time (``_impl_keys``), which the memo leaves in place. A failure is not
remembered: it raises as before. Outside the block, and for numba users other than
tcomp in the same process, ``get_call_type`` behaves exactly as numba's own.

``tests/codegen/test_typing_memo.py`` checks that the PTX of the example kernels is identical
with and without it.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading

_MEMO: contextvars.ContextVar = contextvars.ContextVar("tcomp_typing_memo", default=None)
_install_lock = threading.Lock()
_installed = False


def _install() -> None:
    """Wrap ``BaseFunction.get_call_type`` once per process."""
    global _installed
    with _install_lock:
        if _installed:
            return
        from numba.core.types.functions import BaseFunction

        resolve = BaseFunction.get_call_type

        def get_call_type(self, context, args, kws):
            memo = _MEMO.get()
            if memo is None:
                return resolve(self, context, args, kws)
            try:
                key = (self, context, tuple(args), tuple(sorted(kws.items())))
                hit = memo.get(key)
            except TypeError:  # an unhashable argument type: resolve as numba does
                return resolve(self, context, args, kws)
            if hit is None:
                hit = memo[key] = resolve(self, context, args, kws)
            return hit

        get_call_type.__doc__ = resolve.__doc__
        get_call_type.__wrapped__ = resolve
        BaseFunction.get_call_type = get_call_type
        _installed = True


@contextlib.contextmanager
def memoized_typing():
    """Remember the typing of calls until the block ends (see the module docstring)."""
    _install()
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


__all__ = ["memoized_typing"]
