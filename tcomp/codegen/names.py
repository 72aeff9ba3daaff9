"""The names of a generated kernel's variables: unique identifiers that avoid the
builtins, the index constants and every name the module binds around the kernels."""

from __future__ import annotations

import ast
import builtins
import re

#: the names of index constants (``KernelWriter.constant``), which no variable may take
_CONSTANT_NAME = re.compile(r"_u(32|64)_\d+")


class Namer:
    """Unique Python identifiers for the variables and buffers of one kernel."""

    def __init__(self, reserved=()):
        self.names: dict = {}
        self.taken = set(reserved)

    def __call__(self, obj, base: str) -> str:
        if obj not in self.names:
            name = base if base.isidentifier() else "v"
            candidate, n = name, 1
            while candidate in self.taken or _CONSTANT_NAME.fullmatch(candidate):
                n += 1
                candidate = f"{name}_{n}"
            self.taken.add(candidate)
            self.names[obj] = candidate
        return self.names[obj]


#: the builtins a kernel may call (``range``, ``min``, ...): no variable takes their names
BUILTIN_NAMES = frozenset(name for name in dir(builtins) if not name.startswith("__"))


def module_level_names(module_head: str) -> frozenset:
    """The names a generated module binds outside its kernels (its imports, helpers and
    constants), read from the code itself: the kernels' variables must not take them."""
    names = set()
    for node in ast.parse(module_head).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
    return frozenset(names)


__all__ = ["BUILTIN_NAMES", "Namer", "module_level_names"]
