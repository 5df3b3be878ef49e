"""Reports a trial's evaluations during training to Optuna, through the trainer's callbacks, and prunes it.

Imports transformers (and so torch): `setfit_lite.search.study` imports it only when a trial runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import optuna
from transformers import TrainerCallback, TrainerControl, TrainerState

__all__ = ["OptunaPruningCallback"]


class OptunaPruningCallback(TrainerCallback):
    """On each ``on_evaluate`` during training (``eval_strategy`` "steps"/"epoch"): ``trial.report`` of the
    objective at the global step, and ``optuna.TrialPruned`` when the trial's pruner says so.

    ``compute_objective`` gets the metrics as ``Trainer.evaluate()`` names them (without the ``eval_`` prefix).
    ``last_step`` is the last step reported (None before the first evaluation).
    """

    def __init__(self, trial: optuna.Trial, compute_objective: Callable[[Mapping[str, Any]], float]) -> None:
        self.trial, self.compute_objective = trial, compute_objective
        self.last_step: int | None = None

    def on_evaluate(self, args: Any, state: TrainerState, control: TrainerControl,
                    metrics: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if metrics is None:
            return
        step = state.global_step
        self.trial.report(float(self.compute_objective({k.removeprefix("eval_"): v for k, v in metrics.items()})),
                          step)
        self.last_step = step
        if self.trial.should_prune():
            raise optuna.TrialPruned(f"pruned at step {step}")
