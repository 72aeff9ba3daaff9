"""Schedules: how to compute an algorithm."""

from .schedule import Schedule, create_schedule, replay
from .stage import Stage

__all__ = ["Schedule", "Stage", "create_schedule", "replay"]
