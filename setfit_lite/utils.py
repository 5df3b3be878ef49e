"""setfit's ``setfit.utils`` names that user code imports: ``BestRun`` (the result of a hyperparameter search)."""

from __future__ import annotations

from .search.study import BestRun

__all__ = ["BestRun"]
