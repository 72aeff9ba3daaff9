"""Testing helpers that ship with tcomp (the schedule fuzzer: :mod:`tcomp.testing.fuzz`).

Nothing here is imported by ``import tcomp``; :mod:`tcomp.testing.fuzz` needs
``hypothesis`` (the ``test`` extra).
"""
