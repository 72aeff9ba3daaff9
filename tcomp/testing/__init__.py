"""Testing helpers that ship with tcomp: the schedule fuzzer (:mod:`tcomp.testing.fuzz`)
and the instruments of Numba's CUDA simulator that make wrong schedules show
(:mod:`tcomp.testing.simulator_chaos`).

Nothing here is imported by ``import tcomp``; :mod:`tcomp.testing.fuzz` needs
``hypothesis`` (the ``test`` extra).
"""
