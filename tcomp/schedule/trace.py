"""The recorded trace of schedule primitive calls.

Every primitive a user calls is recorded, with the caller's file and line, as a
:class:`TraceEntry`; :mod:`tcomp.schedule.trace_source` prints the trace as Python that
replays to the same schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..call_site import CallSite


@dataclass(frozen=True)
class TraceEntry:
    """One primitive call: ``target.method(*args)`` returning ``results``."""

    target: object  # a Stage, or the Schedule itself
    method: str
    args: tuple
    results: tuple  # handles (IterVars) or tensors the call returned
    site: CallSite
    kwargs: tuple = ()  # (name, value) pairs of the arguments given by keyword
    unpack: bool = True  # the call returned a tuple (``a, b = ...``), not one value
