"""The user's file and line: where a tensor was defined or a schedule call was made,
for the messages that blame it."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class CallSite:
    filename: str
    lineno: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


def user_call_site() -> CallSite:
    """The innermost stack frame outside the tcomp package: the user's own line."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR + os.sep):
            return CallSite(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return CallSite("<unknown>", 0)
