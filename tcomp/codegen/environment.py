"""Where generated kernels run and where their files go, read from the environment.

``NUMBA_ENABLE_CUDASIM=1`` runs every kernel in Numba's CUDA simulator (the tests do);
``TCOMP_CACHE_DIR`` (default ``~/.cache/tcomp``) holds the generated modules and the
answers worth keeping between processes (``exact_division``'s proofs).
"""

from __future__ import annotations

import os
from pathlib import Path


def simulator_enabled() -> bool:
    """Do kernels run in Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM`` set, not 0)?"""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def cache_dir() -> Path:
    """The directory of generated kernel modules (made if missing)."""
    root = os.environ.get("TCOMP_CACHE_DIR") or os.path.join(Path.home(), ".cache", "tcomp")
    path = Path(root) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


__all__ = ["cache_dir", "simulator_enabled"]
