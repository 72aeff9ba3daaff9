"""Code generation: loop IR -> Numba CUDA source -> a callable module."""

from .cuda_source import program_source
from .environment import simulator_enabled
from .runtime import Module

__all__ = ["program_source", "Module", "simulator_enabled"]
