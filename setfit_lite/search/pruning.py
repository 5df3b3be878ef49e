"""Reports a trial's evaluations during training to Optuna, through the trainer's callbacks, and prunes it.

Imports transformers (and so torch): `setfit_lite.search.study` imports it only when a trial runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import optuna
from transformers import TrainerCallback, TrainerControl, TrainerState

__all__ = ["OptunaPruningCallback"]

logger = logging.getLogger(__name__)


class OptunaPruningCallback(TrainerCallback):
    """On each ``on_evaluate`` during training (``eval_strategy`` "steps"/"epoch", or a torch head's epochs
    evaluated for ``early_stopping_patience``): ``trial.report`` of the objective at the global step, and
    ``optuna.TrialPruned`` when the trial's pruner says so.

    ``compute_objective`` gets the metrics of the evaluation during training, named as ``Trainer.evaluate()``
    names them (without the ``eval_`` prefix): the metric's values, without the keys only ``evaluate()`` adds
    (``calibration``, ``groups``, ...). When the objective cannot be computed from them (it raises, such as a
    ``KeyError`` for ``m["calibration"]``), nothing more of this trial is reported during training, so the pruner
    never stops it, and the reason is logged once (a warning); the trial then completes and is scored on
    ``evaluate()``'s metrics as usual, where an error of the objective is raised.

    Args:
        trial: The Optuna trial reported to.
        compute_objective: The search's objective, a function of the metrics.
        notices: The reasons already logged, shared by a search's trials so that each is logged once; None for
            this callback's own.

    Attributes:
        last_step: The last step reported (None before the first report).
        unusable: Why the objective could not be computed from the metrics during training (None while it
            could); nothing is reported after it is set.
    """

    def __init__(self, trial: optuna.Trial, compute_objective: Callable[[Mapping[str, Any]], float],
                 notices: set[str] | None = None) -> None:
        self.trial, self.compute_objective = trial, compute_objective
        self.notices = notices if notices is not None else set()
        self.last_step: int | None = None
        self.unusable: str | None = None

    def on_evaluate(self, args: Any, state: TrainerState, control: TrainerControl,
                    metrics: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if metrics is None or self.unusable is not None:
            return
        step = state.global_step
        interim = {k.removeprefix("eval_"): v for k, v in metrics.items()}
        try:
            value = float(self.compute_objective(interim))
        except Exception as error:  # evaluate()'s metrics are scored unguarded once the trial is trained
            self.unusable = f"{type(error).__name__}: {error}"
            self._notify(interim)
            return
        self.trial.report(value, step)
        self.last_step = step
        if self.trial.should_prune():
            raise optuna.TrialPruned(f"pruned at step {step}")

    def _notify(self, interim: Mapping[str, Any]) -> None:
        """Log once per reason that the pruner sees nothing of the trials during training."""
        reason = f"{self.unusable} (metrics during training: {', '.join(sorted(interim))})"
        if reason in self.notices:
            return
        self.notices.add(reason)
        logger.warning("compute_objective cannot score the evaluations during training (%s): trials it fails on are "
                       "not pruned, and are scored on evaluate()'s metrics once trained; give an objective of the "
                       "metric's keys, or pruner=optuna.pruners.NopPruner(), to silence this", reason)
