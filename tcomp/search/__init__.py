"""The auto-scheduler: the space of candidate schedules, its filters and rank, the
measured search and the tuning database (docs/architecture.md, "Search").

- ``stages.py``, ``kernels.py``: what both kinds of rule read (the algorithm's stages,
  one kernel of a fusion choice);
- ``fusion/``: the fusion rules, which stages share a kernel (``register_fusion_rule``);
- ``tiling/``: the tiling rules, how each kernel is tiled (``register_rule``);
- ``space.py``: the points that combine them, for one algorithm and target;
- ``filters.py``, ``measure.py``, ``database.py``, ``search.py``: screening, timing,
  recording, and ``tc.autoschedule``, which runs them in that order.
"""

from .search import SearchResult, autoschedule

__all__ = ["SearchResult", "autoschedule"]
