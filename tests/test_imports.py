"""Imports point down: no import cycle among the modules of ``setfit_lite/`` and ``trainers/``.

What counts as an import of module A by module B (parsed with ``ast``, nothing is imported):

- every ``import`` statement, wherever it is: at module level, inside functions and methods (a lazy import that
  points up defers the cycle to run time; the layers still depend on each other both ways) and under
  ``if TYPE_CHECKING:`` (a type from above is a dependency on above);
- relative imports resolved against B's package (``from .search.routing import x`` in ``setfit_lite.trainer``);
- ``from package import name`` is an import of the submodule ``package.name`` when there is one, else of
  ``package`` (its ``__init__``);
- importing ``a.b.c`` also runs ``a.b``'s ``__init__``: that implied import counts too, except of B's own
  enclosing packages (Python initializes those before B, so importing them never closes a cycle).

- imports by string, ``importlib.import_module(name)`` or ``import_module(name, package)`` (the lazy exports of
  ``setfit_lite/__init__.py`` and ``trainers/__init__.py``, the backend registry): a literal name is resolved like
  an import statement; a computed one (``f".{table[name]}"``, a variable) counts as an import of every module
  that a string constant of the same file names, relative to the package when the computed name starts with
  ``"."`` or a package is given. A lazy import still makes the layers depend on each other, so a cycle hidden
  behind one is a cycle.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("setfit_lite", "trainers")

# The rows of docs/design.md, bottom to top. A box is a top-level module or subpackage of setfit_lite (its modules
# import each other freely), or the whole of trainers/; a box imports only boxes on lower rows.
ROWS: tuple[tuple[str, ...], ...] = (
    ("trainers",),
    ("config", "serialization", "logging", "version", "errors", "reporting"),
    ("data", "losses", "sampler", "metrics", "zoo", "verbosity", "model_card"),
    ("runtime", "training_args"),
    ("heads", "evaluation"),
    ("training", "exporting"),
    ("modeling", "moved", "active"),
    ("search",),
    ("trainer", "utils"),
    ("distillation", "device_trainers", "integrations", "serving", "absa"),
    ("cli", "setfit_lite"),
)


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


def _resolve(relative: str, package: str) -> str:
    """``".a.b"`` / ``"..a"`` against ``package``, as ``importlib.import_module(relative, package)`` does."""
    level = len(relative) - len(relative.lstrip("."))
    parts = package.split(".")[:len(package.split(".")) - level + 1]
    return ".".join([*parts, relative[level:]] if relative[level:] else parts)


def _string_imports(tree: ast.Module, package: str, modules: dict[str, Path]) -> set[str]:
    """The modules that the module ``tree`` (in ``package``) imports by string (see the module doc)."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
             and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == "import_module"]
    constants = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                 and isinstance(node.value, str) and node.value}
    found: set[str] = set()
    for call in calls:
        first = call.args[0]
        relative = len(call.args) > 1 or any(kw.arg == "package" for kw in call.keywords)
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.add(_resolve(first.value, package) if first.value.startswith(".") else first.value)
            continue
        if isinstance(first, ast.JoinedStr) and first.values and isinstance(first.values[0], ast.Constant):
            relative = relative or str(first.values[0].value).startswith(".")
        for constant in constants:
            found.add(_resolve("." + constant.lstrip("."), package) if relative else constant)
    return found & set(modules)


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that module ``name`` (file ``path``) imports, by the rules of the module doc."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    targets = _string_imports(tree, name if is_package else name.rpartition(".")[0], modules)
    for node in ast.walk(tree):
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


def box_of(name: str) -> str:
    """The box of ``ROWS`` that module ``name`` belongs to."""
    parts = name.split(".")
    if parts[0] == "trainers" or len(parts) == 1:
        return parts[0]
    return parts[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``"a -> b"`` for every import of a box on the same row or above (``ROWS``), from another box."""
    row = {box: i for i, boxes in enumerate(ROWS) for box in boxes}
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if box_of(a) != box_of(b) and row[box_of(b)] >= row[box_of(a)])


def test_no_import_cycle() -> None:
    graph = import_graph()
    assert {"setfit_lite.trainer", "setfit_lite.search.routing", "trainers.base"} <= set(graph)
    cycles = import_cycles(graph)
    assert not cycles, "import cycle(s), imports must point down:\n" + "\n".join(_describe(c, graph) for c in cycles)


def test_a_cycle_in_the_real_graph_is_found() -> None:
    """One import from the bottom to the top of the real graph closes a cycle, and the checks say so."""
    graph = import_graph()
    graph["setfit_lite.config.rules"] = graph["setfit_lite.config.rules"] | {"setfit_lite.trainer"}
    assert any({"setfit_lite.config.rules", "setfit_lite.trainer"} <= c for c in import_cycles(graph))
    assert "setfit_lite.config.rules -> setfit_lite.trainer" in upward_imports(graph)


def test_every_box_has_a_row() -> None:
    boxes = {box_of(name) for name in import_graph()}
    placed = [box for boxes_of_row in ROWS for box in boxes_of_row]
    assert len(placed) == len(set(placed)), "a box on two rows"
    assert boxes == set(placed), f"without a row: {sorted(boxes - set(placed))}; gone: {sorted(set(placed) - boxes)}"


def test_imports_point_down_the_rows() -> None:
    up = upward_imports(import_graph())
    assert not up, "imports of a box on the same row or above (docs/design.md, ROWS):\n" + "\n".join(up)


def test_design_md_shows_every_box_on_its_row() -> None:
    """docs/design.md's picture has a line ``row N`` per row of ``ROWS`` naming each box of that row."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    rows: dict[int, str] = {}
    current = None
    for line in text.splitlines():
        head = line.split()[:2]
        if head[:1] == ["row"] and head[1:] and head[1].isdigit():
            current = int(head[1])
        if current is not None:
            rows[current] = rows.get(current, "") + line + "\n"
        if line.startswith("```") and current is not None:
            break
    assert sorted(rows) == list(range(len(ROWS))), f"design.md shows rows {sorted(rows)}, ROWS has {len(ROWS)}"
    for number, boxes in enumerate(ROWS):
        for box in boxes:
            assert re.search(rf"(?<![\w.]){re.escape(box)}\b", rows[number]), f"design.md row {number} lacks {box}"


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


@pytest.mark.parametrize(("how", "lazy"), [
    ("a literal name", 'importlib.import_module("low.named")'),
    ("a relative literal name", 'importlib.import_module(".named", __name__)'),
    ("a table of relative names", 'importlib.import_module(f".{TABLE[name]}", __name__)'),
    ("a table of absolute names", "import_module(TABLE_ABS[name])"),
])
def test_cycles_hidden_behind_string_imports_are_found(tmp_path: Path, how: str, lazy: str) -> None:
    """``low``'s lazy export loads a module that imports ``high``, which imports ``low``: a cycle."""
    init = ("import importlib\nfrom importlib import import_module\n"
            'TABLE = {"Top": "named"}\nTABLE_ABS = {"Top": "low.named"}\n\n'
            f"def __getattr__(name):\n    return getattr({lazy}, name)\n")
    _write(tmp_path, {"low/__init__.py": init, "low/base.py": "x = 1\n",
                      "low/named.py": "from high.trainer import Trainer as Top\n",
                      "high/__init__.py": "", "high/trainer.py": "from low.base import x\nTrainer = x\n"})
    graph = import_graph(tmp_path, ["low", "high"])
    assert "low.named" in graph["low"], how
    assert import_cycles(graph) == [frozenset({"low", "low.named", "high.trainer"})], how
    _write(tmp_path, {"low/named.py": "Top = 1\n"})  # the lazy module no longer points up: no cycle
    assert import_cycles(import_graph(tmp_path, ["low", "high"])) == [], how


def test_string_imports_of_the_packages_are_followed() -> None:
    graph = import_graph()
    assert {"setfit_lite.trainer", "setfit_lite.device_trainers"} <= graph["setfit_lite"]
    assert {"trainers.cpu", "trainers.gaudi", "trainers.ipu"} <= graph["trainers.registry"]
    assert {"trainers.base", "trainers.names", "trainers.registry"} <= graph["trainers"]


def test_the_backends_sit_below_setfit_lite() -> None:
    """``trainers/`` holds backends only: none of its modules imports ``setfit_lite`` (its Trainers wrap them)."""
    graph = import_graph()
    up = {name: sorted(t for t in targets if t.split(".")[0] == "setfit_lite")
          for name, targets in graph.items() if name.split(".")[0] == "trainers"}
    assert not {name: targets for name, targets in up.items() if targets}
