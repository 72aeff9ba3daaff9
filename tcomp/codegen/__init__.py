"""Code generation: loop IR -> Numba CUDA source -> a callable module."""

from .cuda_source import program_source
from .runtime import Module, simulator_enabled

__all__ = ["program_source", "Module", "simulator_enabled"]
