"""THE training loop, one run per phase; every device decision in it is asked of the session's backend.

A `Phase` says what is trained and which of the loop's features apply to it: the body's contrastive (or
distillation) phase checkpoints, resumes and evaluates; the end-to-end head phase does neither.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainers import Backend

from ..logging import tqdm_disable
from .interim_eval import end_phase, evaluate, new_stopper
from .optim import linear_schedule
from .progress import Progress, resume, save_checkpoint
from .session import Session
from .signals import StopSignal


@dataclass
class Phase:
    """One optimisation phase: ``module`` (its forward returns the loss) trained by ``optimizer`` (from
    ``backend.make_optimizer``) on the batches of ``sampler`` over ``tokens``.

    ``batch_labels(rows)`` gives the loss's ``labels`` for the rows of a batch. ``max_steps`` caps the phase
    (-1: no cap); ``checkpoints`` turns on ``save_strategy`` and ``resume_from_checkpoint``; ``evaluate``, when
    given, is called at the points of ``eval_strategy`` (see `interim_eval`). ``stage`` is what callbacks
    read in ``state.phase`` ("body" or "head"); ``keep`` is the module whose best weights are kept and restored
    with ``load_best_model_at_end`` (default: the body).
    """

    name: str
    module: torch.nn.Module
    optimizer: torch.optim.Optimizer
    sampler: Any
    tokens: list[list[int]]
    batch_labels: Callable[[np.ndarray], torch.Tensor]
    num_epochs: int
    max_steps: int = -1
    checkpoints: bool = False
    evaluate: Callable[[Session], dict[str, float]] | None = None
    stage: str = "body"
    keep: torch.nn.Module | None = None


def run_phase(session: Session, phase: Phase) -> None:
    """Train ``phase`` to its end (or to an early stop); leaves the trained weights in the host-side module."""
    args, backend, state = session.args, session.backend, session.state
    per_step = backend.batch_multiplier
    steps_per_epoch = len(phase.sampler) // per_step
    if steps_per_epoch == 0:
        raise ValueError(f"the {backend.name} backend trains on {per_step} batches per step, but the {phase.name} "
                         f"phase has {len(phase.sampler)} per epoch: use more data or a smaller batch_size, or "
                         "lower the backend's batch multiplier")
    total = steps_per_epoch * phase.num_epochs
    if phase.max_steps > 0:
        total = min(total, phase.max_steps)
    wrapped, optimizer = backend.prepare(phase.module, phase.optimizer)  # the scheduler drives the prepared one
    _check_prepared(backend, phase, wrapped)
    scheduler = linear_schedule(optimizer, total, args.warmup_proportion)
    phase.module.train()
    state.phase, state.max_steps, state.global_step = phase.stage, total, 0
    progress = Progress(stopper=new_stopper(args))
    if phase.checkpoints and session.resume_from is not None:
        resume(session, session.resume_from, optimizer, scheduler, progress)
    saving = phase.checkpoints and args.save_strategy != "no"
    from tqdm.auto import tqdm

    bar = tqdm(total=total, initial=state.global_step, desc=f"Training ({phase.name})",
               disable=tqdm_disable(args.show_progress_bar and backend.is_main_process))
    # steps whose loss is in progress.running and not logged yet (a resumed run's running sum is the checkpoint's)
    unlogged = progress.step_in_epoch // per_step if args.logging_strategy == "epoch" else 0
    with StopSignal(enabled=saving) as stop, contextlib.closing(bar):
        while state.global_step < total and not session.control.should_training_stop:
            state.epoch = progress.epoch
            if not progress.step_in_epoch:
                session.event("on_epoch_begin")
            for batch, consumed in _steps(session, phase, progress.epoch, progress.step_in_epoch):
                session.event("on_step_begin")
                _train_mode(phase.module)
                loss = backend.training_step(wrapped, optimizer, backend.to_device(batch), args.max_grad_norm)
                scheduler.step()
                backend.on_lr_change(optimizer)
                state.global_step += 1
                progress.running += float(loss)
                unlogged += 1
                progress.step_in_epoch += consumed
                bar.update(1)
                session.event("on_step_end")
                if args.logging_strategy == "steps" and state.global_step % args.logging_steps == 0:
                    session.log({f"{phase.name}_loss": progress.running / args.logging_steps,
                                 "learning_rate": scheduler.get_last_lr()[0]})
                    progress.running, unlogged = 0.0, 0
                if (phase.evaluate is not None and args.eval_strategy == "steps"
                        and state.global_step % (args.eval_steps or args.logging_steps) == 0):
                    _evaluate(session, phase, wrapped, progress)
                interrupted = stop.received(backend)
                if saving and (interrupted or (args.save_strategy == "steps"
                                               and state.global_step % args.save_steps == 0)):
                    path = _save(session, wrapped, optimizer, scheduler, progress)
                    if interrupted:
                        raise stop.interrupted(state.global_step, path)
                if state.global_step >= total or session.control.should_training_stop:
                    break
            progress.epoch, progress.step_in_epoch = progress.epoch + 1, 0
            state.epoch = progress.epoch  # as transformers: the epochs completed
            if args.logging_strategy == "epoch" and unlogged:  # the mean loss of the epoch's steps
                session.log({f"{phase.name}_loss": progress.running / unlogged,
                             "learning_rate": scheduler.get_last_lr()[0]})
                progress.running, unlogged = 0.0, 0
            session.event("on_epoch_end")
            if phase.evaluate is not None and args.eval_strategy == "epoch":
                _evaluate(session, phase, wrapped, progress)
            if saving and args.save_strategy == "epoch":
                _save(session, wrapped, optimizer, scheduler, progress)
        # a signal after the last step's check (during the epoch's end: an evaluation, a save, a callback) stops
        # here, with a checkpoint, not after the rest of training
        if saving and stop.received(backend):
            raise stop.interrupted(state.global_step, _save(session, wrapped, optimizer, scheduler, progress))
    backend.unwrap(wrapped)
    end_phase(session, progress, phase.keep)
    phase.module.eval()


def _check_prepared(backend: Backend, phase: Phase, wrapped: torch.nn.Module) -> None:
    """RuntimeError, before any step, unless ``backend.unwrap`` of what ``prepare`` returned is the phase's own
    module: the loop resumes, evaluates, checkpoints and keeps the weights of ``phase.module``, so a backend that
    trained a copy (such as ``ipex.optimize`` without ``inplace=True``) would leave the model untrained."""
    inner = backend.unwrap(wrapped)
    if inner is not phase.module:
        raise RuntimeError(f"{type(backend).__name__}.prepare returned a module that does not unwrap to the "
                           f"{phase.name} phase's {type(phase.module).__name__} (unwrap gave another "
                           f"{type(inner).__name__}): it would train a copy, and the model would keep its untrained "
                           "weights; a backend must wrap or change the module in place")


def _train_mode(module: torch.nn.Module) -> None:
    """Training mode for the next step: an evaluation or a callback since the last one may have predicted, which
    switches the body to eval mode (``SetFitModel.embed_tokens``)."""
    if not all(sub.training for sub in module.modules()):
        module.train()


def _evaluate(session: Session, phase: Phase, wrapped: torch.nn.Module, progress: Progress) -> None:
    assert phase.evaluate is not None
    session.backend.unwrap(wrapped)  # the trained weights where the evaluation reads them (IPU: copied back)
    evaluate(session, phase.evaluate, progress, phase.keep, log_prefix="head_" if phase.stage == "head" else "")


def _save(session: Session, wrapped: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any,
          progress: Progress) -> Path:
    """`save_checkpoint` of the trained weights: on the host side first (IPU: copied back), where it reads them."""
    session.backend.unwrap(wrapped)
    return save_checkpoint(session, optimizer, scheduler, progress)


def _steps(session: Session, phase: Phase, epoch: int, skip: int) -> Iterator[tuple[dict[str, Any], int]]:
    """The epoch's training steps after the first ``skip`` micro-batches (already trained before a checkpoint):
    ``(batch, micro-batches in it)``, ``backend.batch_multiplier`` micro-batches stacked per step (an incomplete
    group at the end of the epoch is dropped)."""
    per_step = session.backend.batch_multiplier
    raw = itertools.islice(phase.sampler.epoch(epoch), skip, None)
    while len(group := list(itertools.islice(raw, per_step))) == per_step:
        yield _collate(session, phase, group), per_step


def _collate(session: Session, phase: Phase, group: list[dict[str, np.ndarray]]) -> dict[str, Any]:
    """One batch of the micro-batches ``group`` stacked along the first dimension (pair indices stay local to
    their micro-batch, as the backend splits the batch back into them)."""
    sizes = {(len(raw["indices"]), len(raw.get("pair_index", ()))) for raw in group}
    if len(sizes) > 1:
        raise ValueError(f"the {session.backend.name} backend stacks {len(group)} batches per step and needs them "
                         f"of one size, got (sentences, pairs) {sorted(sizes)}: use objective='sentence_batch' and "
                         "at least as many examples per class as a batch takes")
    rows = np.concatenate([raw["indices"] for raw in group])
    batch: dict[str, Any] = session.model.collate([phase.tokens[i] for i in rows])
    batch["labels"] = phase.batch_labels(rows)
    if "pair_index" in group[0]:
        batch["pair_index"] = torch.as_tensor(np.concatenate([raw["pair_index"] for raw in group]))
        batch["pair_target"] = torch.as_tensor(np.concatenate([raw["pair_target"] for raw in group]))
    return batch
