"""MkDocs hook: pages generated from the code at build time, so they cannot drift from it.

A page marks where a generated part goes with an HTML comment on its own line:

- ``<!-- generated: training-arguments -->``: the table of every ``TrainingArguments`` field, its default, what it
  allows and what it does, read from the dataclass, from the rules that check each field
  (``setfit_lite.config.training_rules``) and from the ``Args:`` section of its docstring;
- ``<!-- generated: cli -->``: the help of ``setfit-lite`` and of each of its commands, from the argparse parser
  the command line itself uses (``setfit_lite.cli.build_parser``).

Registered in ``mkdocs.yml`` (``hooks:``); ``tests/test_docs_examples.py`` builds the site with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable
from typing import Any

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
ENTRY = re.compile(r"^(\w+)(?: \([^)]*\))?: (.*)$")  # an Args entry: ``name: text`` or ``name (type): text``


def _cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def docstring_args(doc: str) -> dict[str, str]:
    """The ``Args:`` section of a Google-style docstring: each parameter's description, by name, in order.

    ``doc`` is a cleaned docstring (``inspect.getdoc``): the section's entries are indented once (``name: text`` or
    ``name (type): text``), their continuation lines deeper; the section ends at the first line indented less.
    """
    lines = doc.splitlines()
    try:
        start = lines.index("Args:") + 1
    except ValueError:
        return {}
    entries: dict[str, list[str]] = {}
    indent = None
    for line in lines[start:]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if indent is None:
            indent = depth
        if depth < indent:
            break
        entry = ENTRY.match(line.strip()) if depth == indent else None
        if entry:
            entries[entry.group(1)] = [entry.group(2).strip()]
        elif entries:
            entries[next(reversed(entries))].append(line.strip())
    return {name: " ".join(text) for name, text in entries.items()}


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (up to the first full stop followed by a space), or all of it."""
    match = re.match(r"(.+?\.)(?:\s|$)", text)
    return match.group(1) if match else text


def training_arguments_table() -> str:
    """A Markdown table: each ``TrainingArguments`` field, its default, the values its rule allows and what it does.

    "What it does" is the first sentence of the field's entry in the ``Args:`` section of the class's docstring,
    the one text the reference also renders.
    """
    import inspect

    from setfit_lite.config.training_rules import TRAINING_RULES
    from setfit_lite.training_args import TrainingArguments

    described = docstring_args(inspect.getdoc(TrainingArguments) or "")
    rows = ["| argument | default | allowed | what it does |", "|---|---|---|---|"]
    for field in dataclasses.fields(TrainingArguments):
        if not field.init:
            continue
        if field.name not in described:
            raise ValueError(f"TrainingArguments' docstring has no Args entry for {field.name!r}")
        rule = TRAINING_RULES.get(field.name)
        allowed = rule.allowed if rule is not None else "any value (not checked)"
        default = _cell(f"`{field.default!r}`")
        does = _cell(first_sentence(described[field.name]))
        rows.append(f"| `{field.name}` | {default} | {_cell(allowed)} | {does} |")
    return "\n".join(rows)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)  # the same text on any terminal
    return parser.format_help().rstrip()


def cli_reference() -> str:
    """``setfit-lite --help`` and each command's ``--help``, as Markdown sections."""
    from setfit_lite.cli import build_parser

    parser = build_parser()
    parts = ["## `setfit-lite`", "", "```text", _help(parser), "```"]
    for name, sub in _subcommands(parser).items():
        parts += ["", f"## `setfit-lite {name}`", "", "```text", _help(sub), "```"]
    return "\n".join(parts)


GENERATORS: dict[str, Callable[[], str]] = {
    "training-arguments": training_arguments_table,
    "cli": cli_reference,
}


def render(markdown: str) -> str:
    """``markdown`` with every ``<!-- generated: NAME -->`` line replaced by its generated text."""
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated part {name!r}; known: {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs event: fill in the generated parts of each page."""
    return render(markdown)
