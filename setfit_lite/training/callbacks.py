"""transformers-style callbacks: ``TrainerCallback`` events dispatched with the model, and early stopping."""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState

__all__ = ["CallbackHandler", "EarlyStopping", "TrainerCallback", "TrainerControl", "TrainerState"]


class CallbackHandler:
    """Calls ``event(args, state, control, model=..., **kwargs)`` on every callback, as transformers does."""

    def __init__(self, callbacks: list[Any] | None, model: Any) -> None:
        self.callbacks: list[Any] = []
        for cb in callbacks or []:
            self.add(cb)
        self.model = model

    def add(self, callback: Any) -> None:
        self.callbacks.append(callback() if isinstance(callback, type) else callback)

    def __call__(self, event: str, args: Any, state: TrainerState, control: TrainerControl,
                 **kwargs: Any) -> TrainerControl:
        for cb in self.callbacks:
            method = getattr(cb, event, None)
            if method is None:
                continue
            result = method(args, state, control, model=self.model, **kwargs)
            if isinstance(result, TrainerControl):
                control = result
        return control


class EarlyStopping:
    """Tracks the best value of a metric; ``step(value)`` says whether to stop (after ``patience`` evaluations
    without improving by more than ``threshold``)."""

    def __init__(self, patience: int | None, greater_is_better: bool = True, threshold: float = 0.0) -> None:
        self.patience = patience
        self.greater_is_better = greater_is_better
        self.threshold = threshold
        self.best: float | None = None
        self.bad_evaluations = 0

    def improved(self, value: float) -> bool:
        if self.best is None:
            return True
        delta = value - self.best if self.greater_is_better else self.best - value
        return delta > self.threshold

    def step(self, value: float) -> tuple[bool, bool]:
        """``(is_new_best, should_stop)`` after one evaluation."""
        if self.improved(value):
            self.best = value
            self.bad_evaluations = 0
            return True, False
        self.bad_evaluations += 1
        return False, self.patience is not None and self.bad_evaluations >= self.patience
