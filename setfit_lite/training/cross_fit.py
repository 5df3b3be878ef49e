"""Calibration with a trained body: out-of-fold probabilities from whole models trained without each fold.

The body is trained contrastively on the same few shots the head is fitted on, so a head refitted on folds of the
trained body's embeddings sees held-out rows the body already pulled to their class, and a temperature fitted on
them sharpens the head far too much. Cross-fitting (``calibration="temperature"`` with a trained body) trains each
fold's model from the body as it was before training (``Session.initial_body``), with the same arguments, on the
other folds' texts only, and scores the held-out texts with it: honest out-of-fold probabilities, for the price of
``folds`` extra trainings on ``(folds - 1) / folds`` of the data.
"""

from __future__ import annotations

import copy
import gc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["FOLD_ARGUMENTS", "check_folds_in_one_process", "fold_trainer", "free_folds"]

# A fold's training: the run's arguments, without what writes, reports, evaluates or self-trains (eval_steps too:
# TrainingArguments reads eval_steps alone as eval_strategy="steps", and a fold has no eval dataset)
FOLD_ARGUMENTS = {"calibration": "none", "save_strategy": "no", "eval_strategy": "no", "eval_steps": None,
                  "report_to": "none", "early_stopping_patience": None, "load_best_model_at_end": False,
                  "self_training_rounds": 0}


def free_folds() -> None:
    """Collect a scored fold's garbage now: a sentence-transformers body is in reference cycles (its model card data
    holds it), so a fold's copy of the body, its optimizer state and bf16 copy would stay alive until Python's
    cyclic collector next ran, several folds' bodies at once (multilingual-e5-small with a 3,000-text pool: a
    9.2 GiB peak where freeing fold by fold gives 6.0). Called after the fold's model is dropped."""
    gc.collect()


def fold_trainer(trainer_class: type, model: Any, initial_body: Any, args: Any, texts: Sequence[str],
                 labels: Sequence[Any]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``fit_predict(train_rows, held_out_rows)`` for `setfit_lite.heads.calibration.cross_fit_temperature`: a
    copy of ``initial_body`` in a model with ``model``'s settings, trained by ``trainer_class`` with ``args``
    (less `FOLD_ARGUMENTS`) on ``texts``/``labels`` at ``train_rows``; returns its probabilities for the
    texts at ``held_out_rows`` (columns in ``model.labels`` order)."""
    fold_args = args.update(FOLD_ARGUMENTS)

    def fit_predict(train: np.ndarray, held_out: np.ndarray) -> np.ndarray:
        fold_model = model.with_body(copy.deepcopy(initial_body))
        trainer_class(model=fold_model, args=fold_args, train_dataset={
            "text": [texts[i] for i in train], "label": [labels[i] for i in train]}).train()
        proba = np.asarray(fold_model.predict_proba([texts[i] for i in held_out], as_numpy=True))
        del fold_model
        free_folds()
        return proba

    return fit_predict


def check_folds_in_one_process(calibration: str, processes: int, how: str = "distributed training") -> None:
    """ValueError for ``calibration="temperature"`` over several processes: its cross-fitting trains whole models
    on folds of the data in one process (``how``: what runs the processes, for the message)."""
    if processes > 1 and calibration == "temperature":
        raise ValueError("calibration='temperature' trains whole models on folds of the data in one process; with "
                         f"{how} use calibration='none'")
