"""The head phase as callback events: ``state.phase == "head"`` with the head's own epoch and step counters.

A torch head fitted on fixed embeddings reports each epoch (``on_epoch_begin``/``on_epoch_end``, its mean loss as
``head_loss`` through ``on_log``), is evaluated after each epoch when an evaluator is given (``on_evaluate``,
``early_stopping_patience``, the best epoch restored with ``load_best_model_at_end``), and stops after the epoch
in which a callback sets ``control.should_training_stop``. A scikit-learn head reports its fit in one ``on_log``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..heads.linear import lr_family
from .interim_eval import end_phase, evaluate, new_stopper
from .progress import Progress
from .session import Session


class HeadEpochs:
    """The `EpochHook` of a torch head fitted on ``num_samples`` embeddings
    in batches of ``batch_size`` for ``epochs`` epochs; ``finish()`` after the fit restores the best epoch."""

    def __init__(self, session: Session, head: Any, num_samples: int, batch_size: int, epochs: int,
                 evaluator: Callable[[Session], dict[str, float]] | None = None) -> None:
        self.session, self.head, self.evaluator = session, head, evaluator
        self.steps_per_epoch = math.ceil(num_samples / batch_size)
        self.progress = Progress(stopper=new_stopper(session.args))
        state = session.state
        state.phase, state.epoch, state.global_step = "head", 0.0, 0
        state.max_steps, state.num_train_epochs = self.steps_per_epoch * epochs, epochs

    def epoch_begin(self, epoch: int) -> None:
        self.session.state.epoch = float(epoch)
        self.session.event("on_epoch_begin")

    def epoch_end(self, epoch: int, loss: float) -> bool:
        session = self.session
        session.state.epoch, session.state.global_step = float(epoch + 1), (epoch + 1) * self.steps_per_epoch
        session.event("on_epoch_end")
        if session.args.logging_strategy != "no":
            session.log({"head_loss": loss})
        if self.evaluator is not None:
            evaluate(session, self.evaluator, self.progress, self.head, log_prefix="head_")
        return session.control.should_training_stop

    def finish(self) -> None:
        end_phase(self.session, self.progress, self.head)


def log_estimator_fit(session: Session, head: Any) -> None:
    """One ``on_log`` (``state.phase == "head"``) with a fitted LogisticRegression head's iterations
    (``head_n_iter``, the most any of its regressions took) and whether every one converged (``head_converged``:
    fewer iterations than ``max_iter``); other estimators report nothing."""
    family = lr_family(getattr(head, "estimator", None))
    if family is None:
        return
    n_iter = [int(np.max(m.n_iter_)) for m in family.members if hasattr(m, "n_iter_")]
    if not n_iter:
        return
    session.state.phase = "head"  # one fit, no epochs: the counters stay those of the body phase
    session.log({"head_n_iter": max(n_iter), "head_converged": max(n_iter) < family.template.max_iter})
