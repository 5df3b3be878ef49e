"""Imports point down (issue 18): no import cycle among the modules of ``setfit_lite/`` and ``trainers/``.

What counts as an import of module A by module B (parsed with ``ast``, nothing is imported):

- every ``import`` statement, wherever it is: at module level, inside functions and methods (a lazy import that
  points up defers the cycle to run time; the layers still depend on each other both ways) and under
  ``if TYPE_CHECKING:`` (a type from above is a dependency on above);
- relative imports resolved against B's package (``from .search.routing import x`` in ``setfit_lite.trainer``);
- ``from package import name`` is an import of the submodule ``package.name`` when there is one, else of
  ``package`` (its ``__init__``);
- importing ``a.b.c`` also runs ``a.b``'s ``__init__``: that implied import counts too, except of B's own
  enclosing packages (Python initializes those before B, so importing them never closes a cycle).

Imports by string (``importlib.import_module``) are not followed: here they load optional third-party packages,
and ``setfit_lite/__init__.py``'s lazy ``__getattr__`` exports, which load a submodule only when its name is
first used.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("setfit_lite", "trainers")

KNOWN_CYCLES: set[frozenset[str]] = set()  # none: a cycle here must be broken, not listed


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """``{dotted module name: file}`` for every ``.py`` file of ``packages`` under ``root``."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _enclosing_packages(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that module ``name`` (file ``path``) imports, by the rules of the module doc."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    edges = set()
    own = set(_enclosing_packages(name))
    for target in targets:
        while target and target not in modules:  # `import a.b.attr`-style names: the module that holds them
            target = target.rpartition(".")[0]
        if target:
            edges.add(target)
            edges.update(p for p in _enclosing_packages(target) if p in modules and p not in own)
    edges.discard(name)
    return edges


def import_graph(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    modules = module_files(root, packages)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (each holds at least one cycle), Tarjan's way."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _describe(component: frozenset[str], graph: dict[str, set[str]]) -> str:
    edges = sorted(f"{a} -> {b}" for a in component for b in graph[a] if b in component)
    return f"{{{', '.join(sorted(component))}}}: {'; '.join(edges)}"


def test_no_import_cycle_but_the_known_one() -> None:
    graph = import_graph()
    assert {"setfit_lite.trainer", "setfit_lite.search.routing", "trainers.base"} <= set(graph)
    cycles = import_cycles(graph)
    new = [c for c in cycles if c not in KNOWN_CYCLES]
    assert not new, "import cycle(s), imports must point down:\n" + "\n".join(_describe(c, graph) for c in new)
    gone = KNOWN_CYCLES - set(cycles)
    assert not gone, f"known cycle(s) {[sorted(c) for c in gone]} no longer exist: remove them from KNOWN_CYCLES"


def test_search_sits_below_the_trainer() -> None:
    graph = import_graph()
    search = {name for name in graph if name == "setfit_lite.search" or name.startswith("setfit_lite.search.")}
    assert search >= {"setfit_lite.search.spaces", "setfit_lite.search.routing", "setfit_lite.search.study"}
    assert {"setfit_lite.search", "setfit_lite.search.routing"} <= graph["setfit_lite.trainer"]
    assert not {name: graph[name] & {"setfit_lite.trainer"} for name in search if "setfit_lite.trainer" in graph[name]}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(("where", "source"), [
    ("module level", "from ..top import value\n"),
    ("a function", "def later():\n    from ..top import value\n    return value\n"),
    ("a method, absolute", "class Lazy:\n    def get(self):\n        import pkg.top\n        return pkg.top\n"),
    ("TYPE_CHECKING", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import top\n"),
])
def test_cycles_are_found_wherever_the_import_is(tmp_path: Path, where: str, source: str) -> None:
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "",
                      "pkg/top.py": "from .sub.leaf import helper\nvalue = helper\n",
                      "pkg/sub/leaf.py": source + "\ndef helper():\n    return 1\n"})
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.top"] == {"pkg.sub", "pkg.sub.leaf"}
    assert import_cycles(graph) == [frozenset({"pkg.top", "pkg.sub.leaf"})], where


def test_importing_a_submodule_runs_its_package(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/a.py": "import pkg.b.c\n", "pkg/b/__init__.py": "from .c import x\n",
             "pkg/b/c.py": "from .d import y\nx = y\n", "pkg/b/d.py": "y = 1\n"}
    _write(tmp_path, files)
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.a"] == {"pkg.b", "pkg.b.c"}
    assert graph["pkg.b.c"] == {"pkg.b.d"}  # its own package pkg.b is initialized first: no edge
    assert import_cycles(graph) == []
    _write(tmp_path, {"pkg/b/__init__.py": "from .c import x\nfrom pkg import a\n"})
    assert import_cycles(import_graph(tmp_path, ["pkg"])) == [frozenset({"pkg.a", "pkg.b"})]
