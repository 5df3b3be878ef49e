"""Scoring a fitted model on labelled data: ``Trainer.evaluate`` and ``setfit-lite evaluate``, torch models or
exported ones alike (this module does not import torch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .data import LabeledData
from .metrics import MetricInputs, add_reported_metrics, calibration_metrics, compute_metric
from .runtime.predictor import Predictor

__all__ = ["evaluate_model"]


def evaluate_model(model: Predictor, data: LabeledData, metric: str | Callable[..., Any] = "accuracy",
                   metric_kwargs: dict[str, Any] | None = None, group_by: str | None = None,
                   metric_inputs: MetricInputs | None = None) -> dict[str, Any]:
    """``metric`` of ``model``'s predictions on ``data``; with ``group_by``, also per value of that column.

    With ``metric="accuracy"`` and skewed labels in ``data`` (the largest class has twice the rows of the smallest
    or more), macro-F1 is reported beside it as ``"f1_macro"``.

    The per-group results are under ``"groups"``, keyed by the column's values as strings, each with its ``"n"``.
    ``metric_inputs`` converts the predicted and true class ids for a callable metric (see ``compute_metric``).
    With a metric given by name, a single-label model's probabilities are also scored under ``"calibration"``:
    ``expected_calibration_error`` (15 bins) and ``brier_score`` (``setfit_lite.metrics``), nested so that the
    metric stays the only number at the top level (what a search's default objective sums). A callable metric's
    result is returned as the callable gives it (as setfit does), with no key added.
    """
    model._check_fitted()
    assert model.labels is not None
    if data.labels is None:
        raise ValueError("evaluation needs labelled data: the dataset has no labels")
    if group_by is not None and group_by not in data.columns:  # checked before any text is predicted
        raise ValueError(f"group_by column {group_by!r} not in the dataset; its columns besides the text and the "
                         f"label: {sorted(data.columns)}")
    y_true = model.label_ids(data.labels)
    proba = model.class_proba(data.texts)
    y_pred = model.class_ids(proba)
    num_classes = len(model.labels)
    result: dict[str, Any] = add_reported_metrics(
        compute_metric(metric, y_pred, y_true, metric_kwargs, num_classes, metric_inputs), metric, y_pred, y_true,
        num_classes=num_classes)
    if not model.multi_label and not callable(metric):
        result["calibration"] = calibration_metrics(proba, y_true)
    if group_by is not None:
        values = np.asarray([str(v) for v in data.columns[group_by]])
        result["groups"] = {
            str(g): compute_metric(metric, y_pred[values == g], y_true[values == g], metric_kwargs, num_classes,
                                   metric_inputs)
            | {"n": int((values == g).sum())}
            for g in sorted(set(values))
        }
    return result
