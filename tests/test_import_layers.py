"""The package's import graph has no circle: each package of ``tcomp`` imports only
packages below it, and inside a package no two files import each other, through any
chain. Imports inside functions count too; the one exception is the IR's ``__str__``,
which imports its printer lazily (``tcomp/ir/expr.py``, ``tcomp/ir/stmt.py``)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "tcomp"

#: (importing file, imported file) pairs allowed to close a circle: the IR nodes print
#: themselves through the printer, which imports the nodes
LAZY_PRINTING = {("ir/expr.py", "ir/printer.py"), ("ir/stmt.py", "ir/printer.py")}


def _module_of(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _file_of(module: str):
    base = ROOT.parent / module.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _imports(path: Path) -> set:
    """The files of tcomp that ``path`` imports, anywhere in it."""
    package = _module_of(path) if path.name == "__init__.py" else _module_of(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            target = _file_of(name) if name.startswith("tcomp") else None
            if target is not None and target != path:
                found.add(target)
                break
    return found


def _graph() -> dict:
    files = sorted(ROOT.rglob("*.py"))
    return {f: _imports(f) for f in files}


def _cycle(graph: dict):
    """One circle of ``graph`` (a list of nodes), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _package(path: Path) -> str:
    """``tcomp/lower/nest.py`` -> ``lower``; a top-level module is its own package."""
    rel = path.relative_to(ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_no_two_files_import_each_other():
    graph = {f: {g for g in targets if (_rel(f), _rel(g)) not in LAZY_PRINTING}
             for f, targets in _graph().items()}
    circle = _cycle(graph)
    assert circle is None, "import circle: " + " -> ".join(_rel(f) for f in circle)


def test_packages_import_only_downward():
    graph: dict = {}
    for f, targets in _graph().items():
        if f.name == "__init__.py" and f.parent == ROOT:
            continue  # tcomp/__init__.py is the package's face: it imports everything
        for g in targets:
            if _package(f) != _package(g) and g != ROOT / "__init__.py":
                graph.setdefault(_package(f), set()).add(_package(g))
    circle = _cycle(graph)
    assert circle is None, "packages import each other: " + " -> ".join(circle)


def test_the_check_sees_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("module", ["tcomp.lower.passes", "tcomp.codegen.runtime"])
def test_the_graph_reads_relative_imports(module):
    assert _imports(_file_of(module)), f"{module} imports files of tcomp"
