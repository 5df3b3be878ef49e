"""Temperature scaling fitted without a validation set: cross-validation on the training embeddings.

The head is refitted on ``k`` stratified folds of the training embeddings (``k = min(5, smallest class count)``),
each fold's held-out rows get the log-probabilities of the head fitted without them, and the temperature ``T``
minimising the negative log-likelihood of those out-of-fold predictions under ``softmax(log p / T)``
(:func:`setfit_lite.inference.temper`, the rule every prediction tier applies) is kept. ``T`` changes no argmax.
Multi-label heads are not calibrated (independent sigmoids have no single softmax to scale).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MAX_FOLDS", "TEMPERATURE_BOUNDS", "cv_temperature", "fit_temperature"]

MAX_FOLDS = 5
TEMPERATURE_BOUNDS = (0.05, 20.0)  # the search range of T; its ends mean "sharpen/flatten as far as sensible"


def fit_temperature(log_proba: np.ndarray, ids: np.ndarray) -> float:
    """The ``T`` in :data:`TEMPERATURE_BOUNDS` minimising the mean negative log-likelihood of class ids ``ids``
    under ``softmax(log_proba / T)`` (searched on ``log T``, bounded)."""
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    log_proba = np.maximum(np.asarray(log_proba, dtype=np.float64), np.log(np.finfo(np.float64).tiny))
    rows = np.arange(len(ids))

    def nll(log_t: float) -> float:
        return float(-log_softmax(log_proba / np.exp(log_t), axis=1)[rows, ids].mean())

    low, high = np.log(TEMPERATURE_BOUNDS)
    return float(np.exp(minimize_scalar(nll, bounds=(low, high), method="bounded").x))


def cv_temperature(new_head: Callable[[], Any], fit: Callable[[Any, np.ndarray, np.ndarray], None],
                   embeddings: np.ndarray, ids: np.ndarray, seed: int = 0) -> tuple[float | None, str]:
    """``(T, how)``: the temperature fitted on out-of-fold log-probabilities of heads ``new_head()`` fitted by
    ``fit(head, embeddings, ids)`` on stratified folds; ``(None, why not)`` for multi-label ids or a class with
    fewer than two rows."""
    from sklearn.model_selection import StratifiedKFold

    ids = np.asarray(ids)
    if ids.ndim != 1:
        return None, "multi-label heads are not calibrated"
    counts = np.bincount(ids)
    folds = int(min(MAX_FOLDS, counts[counts > 0].min()))
    if folds < 2:
        return None, "a class has a single training example (no fold can hold it out)"
    log_proba: np.ndarray | None = None
    for train, held_out in StratifiedKFold(folds, shuffle=True, random_state=seed % 2**32).split(embeddings, ids):
        head = new_head()
        fit(head, embeddings[train], ids[train])
        proba = np.asarray(head.predict_proba(embeddings[held_out]), dtype=np.float64)
        if log_proba is None:
            log_proba = np.empty((len(ids), proba.shape[1]), dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_proba[held_out] = np.log(proba)
    assert log_proba is not None
    return fit_temperature(log_proba, ids), f"{folds}-fold cross-validation on the training embeddings"
