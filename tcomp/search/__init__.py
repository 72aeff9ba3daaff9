"""The auto-scheduler: the space of candidate schedules, its filters and rank, the
measured search and the tuning database (docs/architecture.md, "Search")."""

from .search import SearchResult, autoschedule

__all__ = ["SearchResult", "autoschedule"]
