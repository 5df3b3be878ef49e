"""Where the loop stands (`Progress`), saved to a checkpoint and resumed from one (the checkpoint folder's
files: `setfit_lite.training.checkpoints`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .callbacks import EarlyStopping
from .checkpoints import (
    CheckpointError,
    finalize_checkpoint,
    load_body_state,
    load_checkpoint,
    new_staging_dir,
    rng_state,
    set_rng_state,
)
from .session import Session

logger = logging.getLogger(__name__)


@dataclass
class Progress:
    """Where the loop stands: what a checkpoint holds besides the body, optimizer, scheduler and RNG states."""

    stopper: EarlyStopping
    epoch: int = 0
    step_in_epoch: int = 0  # micro-batches of ``epoch`` already trained on
    running: float = 0.0  # loss summed since the last log
    best_state: dict[str, torch.Tensor] | None = field(default=None, repr=False)  # the best body, when kept

    def trainer_state(self, session: Session) -> dict[str, Any]:
        return {"global_step": session.state.global_step, "log_history": session.state.log_history,
                "best_metric": self.stopper.best, "bad_evaluations": self.stopper.bad_evaluations,
                "epoch": self.epoch, "step_in_epoch": self.step_in_epoch, "running": self.running,
                "data_digest": session.data_digest,
                # an early stop decided at this step (the last checkpoint of a stopped phase): a resumed run stops too
                "stopped": bool(session.control.should_training_stop)}


def save_checkpoint(session: Session, optimizer: torch.optim.Optimizer, scheduler: Any, progress: Progress) -> Path:
    """Checkpoint the phase after a step; ``on_save`` follows.

    Every rank's RNG states are gathered to rank 0, which alone writes the checkpoint, in its own ``output_dir``:
    the ranks need no shared filesystem, and the other ranks write nothing. When rank 0 fails to write it, its
    staging folder is removed and every rank raises (rank 0 its error, the others a `CheckpointError` quoting it).
    """
    args, backend, step = session.args, session.backend, session.state.global_step
    rng_states = backend.gather_object(rng_state(backend.rng_state()))
    final = Path(args.output_dir) / f"checkpoint-{step}"
    failure: Exception | None = None
    if backend.is_main_process:
        states = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                  "backend": backend.state_dict(), "trainer_state": progress.trainer_state(session),
                  "best_body": progress.best_state}
        try:
            final = finalize_checkpoint(new_staging_dir(args.output_dir, step), step=step,
                                        body=session.model.model_body, states=states, world_size=backend.world_size,
                                        save_total_limit=args.save_total_limit, rng_states=rng_states)
        except Exception as exc:  # told to the other ranks first, so that none waits for a checkpoint that never comes
            failure = exc
    reported = backend.broadcast_object(None if failure is None else f"{type(failure).__name__}: {failure}")
    if failure is not None:
        raise failure
    if reported is not None:
        raise CheckpointError(f"rank 0 could not save {final.name}: {reported}")
    session.event("on_save")
    return final


def resume(session: Session, path: Path, optimizer: torch.optim.Optimizer, scheduler: Any,
           progress: Progress) -> None:
    """Restore the phase, the trainer state and every RNG from the checkpoint ``path``."""
    backend = session.backend
    saved = load_checkpoint(path, backend.rank)
    if saved["info"]["world_size"] != backend.world_size:
        raise CheckpointError(f"checkpoint {path} was written by {saved['info']['world_size']} process(es); "
                              f"resume it with the same number (now {backend.world_size})")
    load_body_state(session.model.model_body, saved["body"], path)
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    backend.load_state_dict(saved.get("backend") or {})
    ts = saved["trainer_state"]
    session.state.global_step, session.state.log_history = ts["global_step"], list(ts["log_history"])
    progress.stopper.best, progress.stopper.bad_evaluations = ts["best_metric"], ts["bad_evaluations"]
    session.state.best_metric = progress.stopper.best
    progress.epoch, progress.step_in_epoch, progress.running = ts["epoch"], ts["step_in_epoch"], ts["running"]
    progress.best_state = saved.get("best_body")
    session.control.should_training_stop = bool(ts.get("stopped", False))  # absent from older checkpoints
    set_rng_state(saved["rng"])
    backend.set_rng_state(saved["rng"])
    logger.info("resumed from %s at step %d", path, session.state.global_step)
