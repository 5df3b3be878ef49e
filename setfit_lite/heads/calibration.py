"""Temperature scaling fitted without a validation set, on out-of-fold predictions of the training examples.

Each of ``k`` stratified folds of the training examples is scored by a model fitted without it, and the
temperature ``T`` minimising the negative log-likelihood of those out-of-fold predictions under
``softmax(log p / T)`` (`setfit_lite.runtime.predictor.temper`, the rule every prediction tier applies) is kept;
``T`` changes no argmax. What "a model fitted without it" is depends on whether the body was trained on the
examples: if not, a head refitted on the other folds' embeddings (`cv_temperature`, ``k = min(5, smallest
class count)``); if so, a whole model, body and head, trained without the fold (`cross_fit_temperature`,
``k = 2`` by default; `setfit_lite.training.cross_fit`), since a trained body has already pulled every
training example to its class. Multi-label heads are not calibrated (independent sigmoids have no single softmax
to scale).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["CROSS_FIT_FOLDS", "MAX_FOLDS", "TEMPERATURE_BOUNDS", "cross_fit_temperature", "cv_temperature",
           "fit_temperature", "out_of_fold_log_proba"]

MAX_FOLDS = 5
CROSS_FIT_FOLDS = 2  # each fold trains a whole model: cost (folds - 1) / folds x folds trainings
TEMPERATURE_BOUNDS = (0.05, 20.0)  # the search range of T; its ends mean "sharpen/flatten as far as sensible"


def fit_temperature(log_proba: np.ndarray, ids: np.ndarray) -> float:
    """The ``T`` in `TEMPERATURE_BOUNDS` minimising the mean negative log-likelihood of class ids ``ids``
    under ``softmax(log_proba / T)`` (searched on ``log T``, bounded)."""
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    log_proba = np.maximum(np.asarray(log_proba, dtype=np.float64), np.log(np.finfo(np.float64).tiny))
    rows = np.arange(len(ids))

    def nll(log_t: float) -> float:
        return float(-log_softmax(log_proba / np.exp(log_t), axis=1)[rows, ids].mean())

    low, high = np.log(TEMPERATURE_BOUNDS)
    return float(np.exp(minimize_scalar(nll, bounds=(low, high), method="bounded").x))


def out_of_fold_log_proba(fit_predict: Callable[[np.ndarray, np.ndarray], np.ndarray], ids: np.ndarray,
                          max_folds: int = MAX_FOLDS, seed: int = 0) -> tuple[np.ndarray | None, int | str]:
    """``(log-probabilities, folds)``: each row's log-probabilities from ``fit_predict(train_rows, held_out_rows)``
    (a model fitted on the other stratified folds, ``min(max_folds, smallest class count)`` of them);
    ``(None, why not)`` for multi-label ids or a class with fewer than two rows."""
    from sklearn.model_selection import StratifiedKFold

    ids = np.asarray(ids)
    if ids.ndim != 1:
        return None, "multi-label heads are not calibrated"
    counts = np.bincount(ids)
    folds = int(min(max_folds, counts[counts > 0].min()))
    if folds < 2:
        return None, "a class has a single training example (no fold can hold it out)"
    log_proba: np.ndarray | None = None
    rows = np.arange(len(ids))
    for train, held_out in StratifiedKFold(folds, shuffle=True, random_state=seed % 2**32).split(rows, ids):
        proba = np.asarray(fit_predict(train, held_out), dtype=np.float64)
        if log_proba is None:
            log_proba = np.empty((len(ids), proba.shape[1]), dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_proba[held_out] = np.log(proba)
    assert log_proba is not None
    return log_proba, folds


def cv_temperature(new_head: Callable[[], Any], fit: Callable[[Any, np.ndarray, np.ndarray], None],
                   embeddings: np.ndarray, ids: np.ndarray, max_folds: int = MAX_FOLDS,
                   seed: int = 0) -> tuple[float | None, str]:
    """``(T, how)``: the temperature fitted on out-of-fold log-probabilities of heads ``new_head()`` fitted by
    ``fit(head, embeddings, ids)`` on stratified folds of fixed embeddings; ``(None, why not)`` for multi-label
    ids or a class with fewer than two rows."""
    ids = np.asarray(ids)

    def fit_predict(train: np.ndarray, held_out: np.ndarray) -> np.ndarray:
        head = new_head()
        fit(head, embeddings[train], ids[train])
        return head.predict_proba(embeddings[held_out])

    return _oof_temperature(fit_predict, ids, max_folds, seed, "cross-validation on the training embeddings")


def cross_fit_temperature(fit_predict: Callable[[np.ndarray, np.ndarray], np.ndarray], ids: np.ndarray,
                          max_folds: int = CROSS_FIT_FOLDS, seed: int = 0) -> tuple[float | None, str]:
    """``(T, how)``: the temperature fitted on out-of-fold log-probabilities of whole models (body and head)
    trained by ``fit_predict(train_rows, held_out_rows)`` without the held-out rows (cross-fitting);
    ``(None, why not)`` as `out_of_fold_log_proba`."""
    return _oof_temperature(fit_predict, ids, max_folds, seed,
                            "cross-fitting (body and head trained without each fold)")


def _oof_temperature(fit_predict: Callable[[np.ndarray, np.ndarray], np.ndarray], ids: np.ndarray, max_folds: int,
                     seed: int, method: str) -> tuple[float | None, str]:
    """``(T, "<k>-fold <method>")`` from `out_of_fold_log_proba`, or ``(None, why not)``."""
    log_proba, folds = out_of_fold_log_proba(fit_predict, ids, max_folds, seed)
    if log_proba is None:
        return None, str(folds)
    return fit_temperature(log_proba, np.asarray(ids)), f"{folds}-fold {method}"
