"""Every option and positional argument of ``setfit-lite`` and of each of its commands has a help text."""

from __future__ import annotations

import argparse

from setfit_lite.cli import build_parser


def undocumented(parser: argparse.ArgumentParser, name: str = "setfit-lite") -> list[str]:
    """``"command option"`` for every argument of ``parser`` and its sub-parsers without a help text."""
    missing = []
    for action in parser._actions:  # argparse keeps its actions and sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                missing += undocumented(sub, f"{name} {command}")
        elif not isinstance(action, argparse._HelpAction) and not (action.help or "").strip():
            missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_cli_option_has_help() -> None:
    assert undocumented(build_parser()) == []


def test_an_option_without_help_is_found() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers().add_parser("run")
    sub.add_argument("--fast", help="go fast")
    sub.add_argument("--slow")
    sub.add_argument("path")
    assert undocumented(parser, "x") == ["x run --slow", "x run path"]
