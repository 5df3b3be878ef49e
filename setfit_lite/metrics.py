"""Evaluation metrics computed locally with scikit-learn (no hub downloads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn import metrics as skm

_METRICS: dict[str, Callable[..., float]] = {
    "accuracy": skm.accuracy_score,
    "f1": skm.f1_score,
    "precision": skm.precision_score,
    "recall": skm.recall_score,
    "matthews_correlation": skm.matthews_corrcoef,
    "balanced_accuracy": skm.balanced_accuracy_score,
}


def compute_metric(metric: str | Callable[..., Any], y_pred: np.ndarray, y_true: np.ndarray,
                   metric_kwargs: dict[str, Any] | None = None, num_classes: int | None = None) -> dict[str, float]:
    """``{name: value}`` for a metric name or a callable ``metric(y_pred, y_true, **kwargs)`` (setfit's order).

    f1/precision/recall without an ``average`` use ``"binary"`` for a two-class model, ``"macro"`` for more
    classes and ``"micro"`` for multi-label. ``num_classes`` is the model's number of classes (a subset of a
    multiclass eval set is still multiclass); without it, ids other than 0 and 1 mean multiclass.
    """
    kwargs = dict(metric_kwargs or {})
    if callable(metric):
        result = metric(y_pred, y_true, **kwargs)
        if isinstance(result, dict):
            return {str(k): float(v) for k, v in result.items()}
        return {getattr(metric, "__name__", "metric"): float(result)}
    if metric not in _METRICS:
        raise ValueError(f"unknown metric {metric!r}; use one of {sorted(_METRICS)} or a callable")
    y_pred, y_true = np.asarray(y_pred), np.asarray(y_true)
    if metric in ("f1", "precision", "recall") and "average" not in kwargs:
        present = np.unique(np.concatenate([y_true.ravel(), y_pred.ravel()]))
        binary = num_classes == 2 if num_classes is not None else set(present.tolist()) <= {0, 1}
        kwargs["average"] = "micro" if y_true.ndim > 1 else ("binary" if binary else "macro")
    if metric in ("f1", "precision", "recall"):
        kwargs.setdefault("zero_division", 0)
    return {metric: float(_METRICS[metric](y_true, y_pred, **kwargs))}


def check_metric(metric: Any) -> None:
    """Fail early, before training, on a metric name that does not exist."""
    if not callable(metric) and metric not in _METRICS:
        raise ValueError(f"unknown metric {metric!r}; use one of {sorted(_METRICS)} or a callable")
