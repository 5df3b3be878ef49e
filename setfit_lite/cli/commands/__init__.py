"""The ``setfit-lite`` commands, one module each: ``HELP`` (its line in ``setfit-lite --help``),
``add_arguments(parser)`` (its options) and ``run(ns)`` (what it does; results on stdout)."""

from __future__ import annotations

from types import ModuleType

from . import convert, demo, evaluate, export, predict, search, serve, suggest, train

__all__ = ["COMMANDS"]

COMMANDS: dict[str, ModuleType] = {"demo": demo, "train": train, "search": search, "evaluate": evaluate,
                                   "predict": predict, "suggest": suggest, "export": export,
                                   "convert": convert, "serve": serve}
