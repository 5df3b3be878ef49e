"""SIGTERM/SIGINT during training: finish the step, checkpoint, stop with `TrainingInterrupted`."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import Any

from trainers import Backend

logger = logging.getLogger(__name__)


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by SIGTERM or SIGINT after saving a checkpoint; the message says where.

    A `KeyboardInterrupt`: `train()` raises it once the checkpoint is written, and
    `train(resume_from_checkpoint=True)` continues from it.

    Args:
        message: What happened and where the checkpoint is.
        signum: The signal's number.
        checkpoint: The checkpoint folder written.
    """

    def __init__(self, message: str, signum: int | None = None, checkpoint: Path | None = None) -> None:
        super().__init__(message)
        self.signum, self.checkpoint = signum, checkpoint


class StopSignal:
    """While enabled (checkpoints are on), SIGTERM/SIGINT only set a flag: the loop checkpoints after the
    current step and stops. A context manager: the previous handlers are restored on exit."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignal:
        if self.enabled and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def _handle(self, signum: int, frame: Any) -> None:
        self.signum = signum
        logger.warning("signal %d received: saving a checkpoint after this step, then stopping", signum)

    def received(self, backend: Backend) -> bool:
        """Whether any rank got a stop signal (all ranks agree, so they checkpoint together)."""
        if not self._previous:
            return False
        if not backend.is_distributed:
            return self.signum is not None
        return any(backend.gather_object(self.signum is not None))

    def interrupted(self, step: int, checkpoint: Path) -> TrainingInterrupted:
        """The exception that ends training after the checkpoint ``checkpoint`` of ``step``."""
        return TrainingInterrupted(f"training stopped by signal {self.signum} at step {step}; checkpoint saved to "
                                   f"{checkpoint}; resume with trainer.train(resume_from_checkpoint=True)",
                                   signum=self.signum, checkpoint=checkpoint)
