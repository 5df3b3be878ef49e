"""The API reference reads as one: Google-style docstrings, no raw Sphinx roles, every documented parameter named.

The objects checked are the ones the reference pages render: each ``::: path`` line of ``docs/reference/*.md`` with
its ``members:`` list (or, without one, the object's own public members, as mkdocstrings shows them). No site is
built here (``tests/test_docs_examples.py`` builds it once and checks the rendered pages).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import setfit_lite

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
PACKAGES = ("setfit_lite", "trainers", "benchmarks", "scripts")
SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|const|ref):`")
DIRECTIVE = re.compile(r"^::: ([\w.]+)\n((?:    .*\n|\n)*)", re.MULTILINE)
ARGS_ENTRY = re.compile(r"^(\*{0,2}\w+)(?: \([^)]*\))?:", re.MULTILINE)
# internals a user never calls; the reference must not show them (tests/test_docs_examples.py checks the pages)
INTERNALS = ("settle_eval", "affixes", "collate", "read_folders", "check_output_dir", "trains_body", "make_sampler",
             "train_embeddings")


def docstrings(path: Path) -> list[tuple[int, str, str]]:
    """``(line, name, docstring)`` of the module, every class and every function of a source file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in [tree, *ast.walk(tree)]:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((getattr(node, "lineno", 1), getattr(node, "name", "<module>"), doc))
    return found


def rendered_objects() -> list[tuple[str, object]]:
    """``(path, object)`` of every object a reference page renders, its listed (or own public) members included."""
    objects = []
    for page in sorted(REFERENCE.glob("*.md")):
        for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
            path, options = match.group(1), match.group(2)
            module_name, _, name = path.rpartition(".")
            try:
                obj = getattr(importlib.import_module(module_name), name)
            except ModuleNotFoundError:  # a module itself (its docstring only)
                continue
            objects.append((path, obj))
            if not inspect.isclass(obj):
                continue
            listed = re.search(r"members:\n((?:\s+- \w+\n)+)", options)
            if "members: false" in options:
                members = []
            elif listed:
                members = re.findall(r"- (\w+)", listed.group(1))
            else:
                members = [m for m in vars(obj) if not m.startswith("_")]
            objects += [(f"{path}.{m}", inspect.getattr_static(obj, m)) for m in members]
    return objects


def named_parameters(obj: object) -> list[str]:
    """The parameters a caller names (no self/cls, no bare ``*args``/``**kwargs``); a dataclass's fields when its
    ``__init__`` takes ``**kwargs`` only (as ``TrainingArguments``)."""
    function = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
    if isinstance(function, property) or not callable(function):
        return []
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return []
    names = [p.name for p in signature.parameters.values()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")]
    if not names and inspect.isclass(function) and hasattr(function, "__dataclass_fields__"):
        names = [f.name for f in function.__dataclass_fields__.values() if f.init]
    return names


def is_record(obj: object) -> bool:
    """A dataclass or a named tuple: its fields are documented as ``Attributes:`` (as mkdocstrings reads them)."""
    return hasattr(obj, "__dataclass_fields__") or (inspect.isclass(obj) and issubclass(obj, tuple)
                                                     and hasattr(obj, "_fields"))


def args_section(doc: str, title: str = "Args:") -> list[str]:
    """The parameter names of the ``Args:`` (or another such) section of a cleaned docstring."""
    lines = doc.splitlines()
    if title not in lines:
        return []
    body = []
    for line in lines[lines.index(title) + 1:]:
        if line.strip() and not line.startswith(" "):
            break
        body.append(line[4:] if line.startswith("    ") else line)
    return [name.lstrip("*") for name in ARGS_ENTRY.findall("\n".join(body))]


def source_files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_no_raw_sphinx_role_in_any_docstring() -> None:
    found = [f"{path.relative_to(ROOT)}:{line} ({name})" for path in source_files()
             for line, name, doc in docstrings(path) if SPHINX_ROLE.search(doc)]
    assert not found, "Markdown in docstrings: `name` or [`name`][path.to.name], not :class:`...`: " + ", ".join(found)


def test_the_role_check_finds_a_role() -> None:
    assert SPHINX_ROLE.search("see :class:`~setfit_lite.Trainer` and :meth:`update`")
    assert not SPHINX_ROLE.search("see [`Trainer`][setfit_lite.trainer.Trainer] and ``update``")


def test_every_public_name_is_on_a_reference_page() -> None:
    rendered = {id(obj) for _, obj in rendered_objects()}
    missing = [name for name in setfit_lite.__all__ if name != "__version__"
               and id(getattr(setfit_lite, name)) not in rendered]
    assert not missing, f"not on any page of docs/reference/: {missing}"


def test_no_internal_is_listed_on_a_reference_page() -> None:
    listed = [path for path, _ in rendered_objects() if path.rsplit(".", 1)[-1] in INTERNALS]
    assert not listed, listed


RENDERED = rendered_objects()


@pytest.mark.parametrize(("path", "obj"), RENDERED, ids=[path for path, _ in RENDERED])
def test_rendered_callables_document_every_parameter(path: str, obj: object) -> None:
    """Every rendered callable that takes parameters has an ``Args:`` section naming each of them (a class's are
    its constructor's), and names none it does not take."""
    names = named_parameters(obj)
    function = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
    if not callable(function) and not isinstance(function, property):
        return  # a constant or a dataclass field: its class's docstring (or the page) describes it
    doc = inspect.getdoc(function.fget if isinstance(function, property) else function) or ""
    assert doc, f"{path} has no docstring"
    if not names:
        return
    documented = args_section(doc)
    if not documented and is_record(function):
        documented = args_section(doc, "Attributes:")  # a record's fields
    assert documented, f"{path} takes {names} but its docstring has no Args: section"
    assert sorted(set(names) - set(documented)) == [], f"{path}: parameters missing from Args:"
    signature = inspect.signature(function)
    starred = {p.name for p in signature.parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    extra = set(documented) - set(names) - starred
    if hasattr(function, "__dataclass_fields__") or any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values()):
        extra = set()  # keyword arguments passed on (or a dataclass's fields): names the signature cannot show
    assert sorted(extra) == [], f"{path}: Args: names what it does not take"


def test_args_parser_reads_names_and_the_check_can_fail() -> None:
    doc = "Do it.\n\nArgs:\n    texts: The texts.\n        More.\n    k (int): How many.\n\nReturns:\n    x: no.\n"
    assert args_section(doc) == ["texts", "k"]
    assert args_section("Do it.") == []

    def takes(texts: list, k: int) -> None:
        """Do it.

        Args:
            texts: The texts.
        """

    assert set(named_parameters(takes)) - set(args_section(inspect.getdoc(takes))) == {"k"}


FENCED = re.compile(r"```python\n(.*?)```", re.DOTALL)


def example_code(doc: str) -> list[str]:
    """The code of a cleaned docstring's examples: each fenced ```python block, and the ``>>>``/``...`` lines of a
    doctest (prompts removed), dedented."""
    import textwrap

    blocks = [textwrap.dedent(block) for block in FENCED.findall(doc)]
    prompts = [line.strip()[4:] for line in doc.splitlines() if line.strip().startswith((">>> ", "... "))]
    return blocks + (["\n".join(prompts)] if prompts else [])


@pytest.mark.parametrize(("path", "obj"), RENDERED, ids=[path for path, _ in RENDERED])
def test_rendered_examples_are_python_and_render_as_code(path: str, obj: object) -> None:
    """An example compiles; a doctest sits under ``Examples:`` (griffe renders it as code there; under ``Example:``
    its ``>>>`` prompts would be Markdown quotes)."""
    function = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
    if not callable(function) and not isinstance(function, property):
        return  # a value: its type's docstring is not ours
    doc = inspect.getdoc(function.fget if isinstance(function, property) else function) or ""
    for code in example_code(doc):
        compile(code, path, "exec")
    if ">>> " in doc:
        section = doc[:doc.index(">>> ")].rstrip().rsplit("\n", 1)[-1].strip()
        assert section == "Examples:", f"{path}: a doctest under {section!r}"


def test_example_extraction_finds_both_forms() -> None:
    doc = "X.\n\nExample:\n    ```python\n    a = 1\n    ```\n\nExamples:\n    >>> b = [1,\n    ...      2]\n"
    assert example_code(doc) == ["a = 1\n", "b = [1,\n     2]"]
    with pytest.raises(SyntaxError):
        compile(example_code("```python\nprint(\n```")[0], "x", "exec")
