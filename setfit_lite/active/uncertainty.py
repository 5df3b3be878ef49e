"""Informativeness from a head's probabilities: how close a text is to the model's decision boundary.

Single-label: one minus the margin between the two most probable classes ("breaking ties", the margin of
small-text's ``BreakingTies``); multi-label: one minus twice the distance of the label nearest the
0.5 threshold (`MULTI_LABEL_THRESHOLD`). Both lie in [0, 1]: 1 on the boundary.
"""

from __future__ import annotations

import numpy as np

from ..runtime.predictor import MULTI_LABEL_THRESHOLD

__all__ = ["uncertainty"]


def uncertainty(proba: np.ndarray, multi_label: bool) -> np.ndarray:
    """(n,) informativeness of each row of ``proba`` (n, classes): 1 at the decision boundary, 0 when sure.

    Args:
        proba: class probabilities (single-label rows sum to 1; multi-label: each label's probability).
        multi_label: whether each label is decided by its own threshold.

    Returns:
        float64 scores in [0, 1].

    Examples:
        >>> uncertainty(np.array([[0.5, 0.5], [0.9, 0.1]]), multi_label=False).round(3).tolist()
        [1.0, 0.2]
    """
    proba = np.asarray(proba, dtype=np.float64)
    if multi_label:
        return 1.0 - 2.0 * np.abs(proba - MULTI_LABEL_THRESHOLD).min(axis=1)
    if proba.shape[1] < 2:
        return np.zeros(len(proba))
    top2 = np.partition(proba, proba.shape[1] - 2, axis=1)[:, -2:]
    return 1.0 - np.abs(top2[:, 1] - top2[:, 0])
