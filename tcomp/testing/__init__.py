"""Testing helpers that ship with tcomp: the schedule fuzzer (:mod:`tcomp.testing.fuzz`,
with its workloads, schedule drawer, oracle, known bugs, statistics and reproducers in
modules of their own), the instruments of Numba's CUDA simulator that make wrong
schedules show (:mod:`tcomp.testing.simulator_chaos`) and the algorithms the test
suites share (:mod:`tcomp.testing.algorithms`).

Nothing here is imported by ``import tcomp``; the fuzzer needs ``hypothesis`` (the
``test`` extra).
"""
