"""The ``setfit-lite`` argparse parser: ``--quiet``/``--verbose`` and one sub-command per module of
`setfit_lite.cli.commands` (each adds its own options)."""

from __future__ import annotations

import argparse

from .commands import COMMANDS

__all__ = ["build_parser"]


def _verbosity_parser() -> argparse.ArgumentParser:
    """``--quiet``/``--verbose``, accepted before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const="quiet",
                       default=argparse.SUPPRESS, help="print only results and errors: no warnings, no progress bars")
    group.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const="verbose",
                       default=argparse.SUPPRESS, help="also log training progress and dependencies' messages")
    return common


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``setfit-lite`` and its commands (the CLI reference page is generated from it)."""
    common = _verbosity_parser()
    parser = argparse.ArgumentParser(prog="setfit-lite", description="Few-shot text classification.",
                                     parents=[common])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        command.add_arguments(sub.add_parser(name, parents=[common], help=command.HELP))
    return parser
