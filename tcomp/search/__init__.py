"""The auto-scheduler: the space of candidate schedules, its filters and rank, the
measured search and the tuning database (DESIGN.md section 3)."""

from .search import SearchResult, autoschedule

__all__ = ["SearchResult", "autoschedule"]
