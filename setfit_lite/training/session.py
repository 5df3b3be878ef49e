"""What every part of one ``Trainer.train()`` call shares."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers import Backend

from ..training_args import TrainingArguments
from .callbacks import CallbackHandler, TrainerControl, TrainerState

logger = logging.getLogger(__name__)


@dataclass
class Session:
    """The arguments, backend and model of one training run, with the callbacks and the state they see.

    ``resume_from`` is the checkpoint the first resumable phase restores (None: start afresh); ``prototypes``
    whether the head is the zero-shot prototypes and the body is not trained, ``anchor_texts`` the label texts
    the embedding phase anchors the classes to (`setfit_lite.training.label_policy`); ``initial_body`` and
    ``cross_fit`` serve ``calibration="temperature"`` with a trained body (`setfit_lite.Trainer.calibrate`).
    """

    args: TrainingArguments
    backend: Backend
    model: Any
    handler: CallbackHandler
    state: TrainerState = field(default_factory=TrainerState)
    control: TrainerControl = field(default_factory=TrainerControl)
    resume_from: Path | None = None
    prototypes: bool = False
    anchor_texts: list[str] | None = None
    initial_body: Any = None  # calibration with a trained body: the body before training, which each fold retrains
    cross_fit: tuple[float | None, str] | None = None  # the temperature and its method, once fitted (either way)
    data_digest: str | None = None  # sha256 of the training texts and labels: a checkpoint resumes only on them
    pool_body: Any = None  # self_training="auto": the body before training, which each fold of the decision retrains

    def __post_init__(self) -> None:  # callbacks (reporting integrations) act on process zero only
        self.state.is_world_process_zero = self.backend.is_main_process
        self.state.is_local_process_zero = getattr(self.backend, "local_rank", 0) == 0

    def event(self, name: str, **kwargs: Any) -> None:
        """Dispatch the transformers event ``name`` to the callbacks (they may replace ``control``)."""
        self.control = self.handler(name, self.args, self.state, self.control, **kwargs)

    def log(self, logs: dict[str, float]) -> None:
        """Record ``logs`` at the current step in ``state.log_history`` and tell the callbacks (``on_log``)."""
        entry = {**logs, "step": self.state.global_step}
        self.state.log_history.append(entry)
        if self.backend.is_main_process:
            logger.info("%s", entry)
        self.event("on_log", logs=logs)
