"""Exceptions callers catch by type, in a module that imports nothing (the CLI catches them without loading the
modules that raise them)."""

from __future__ import annotations

__all__ = ["NoCompletedTrialError"]


class NoCompletedTrialError(RuntimeError):
    """A hyperparameter search ended without one completed trial (every trial pruned or failed)."""
