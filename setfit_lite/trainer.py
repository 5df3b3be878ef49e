"""Trainer: THE training loop. Every device decision is asked of a ``trainers`` backend object."""

from __future__ import annotations

import copy
import itertools
import logging
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import get_linear_schedule_with_warmup

from trainers import Backend, get_backend

from .callbacks import CallbackHandler, EarlyStopping, TrainerControl, TrainerState
from .checkpoint import (
    CheckpointError,
    finalize_checkpoint,
    load_checkpoint,
    new_staging_dir,
    resolve_checkpoint,
    set_rng_state,
    staging_dir,
    write_rank_state,
)
from .data import LabeledData, check_trainable, encode_labels, to_labeled_data
from .losses import PAIR_LOSSES, build_loss
from .metrics import check_metric, compute_metric
from .modeling import SetFitModel
from .sampling import PairSampler, SentenceBatchSampler
from .search import routing, run_hyperparameter_search
from .training_args import TrainingArguments
from .verbosity import show_progress

logger = logging.getLogger(__name__)


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by SIGTERM/SIGINT after saving a checkpoint; the message says where.

    ``signum`` is the signal's number and ``checkpoint`` the folder written.
    """

    def __init__(self, message: str, signum: int | None = None, checkpoint: Path | None = None) -> None:
        super().__init__(message)
        self.signum, self.checkpoint = signum, checkpoint


class _StopSignal:
    """While saving is on, SIGTERM/SIGINT only set a flag: the loop checkpoints after the current step and stops."""

    def __init__(self, enabled: bool) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        if enabled and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        self.signum = signum
        logger.warning("signal %d received: saving a checkpoint after this step, then stopping", signum)

    def received(self, backend: Backend) -> bool:
        """Whether any rank got a stop signal (all ranks agree, so they checkpoint together)."""
        if not self._previous:
            return False
        if backend.world_size == 1:
            return self.signum is not None
        return any(backend.gather_object(self.signum is not None))

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}


class EmbeddingModule(torch.nn.Module):
    """The body and a batch loss; ``forward`` returns the loss so any backend can wrap it whole."""

    def __init__(self, body: torch.nn.Module, loss: torch.nn.Module) -> None:
        super().__init__()
        self.body, self.loss = body, loss

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        embeddings = self.body({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]
        return self.loss(embeddings, labels, pair_index, pair_target)


class ClassifierModule(torch.nn.Module):
    """Body and differentiable head trained together (``end_to_end``) on the head's loss."""

    def __init__(self, body: torch.nn.Module, head: torch.nn.Module, normalize: bool) -> None:
        super().__init__()
        self.body, self.head, self.normalize = body, head, normalize

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        embeddings = self.body({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]
        if self.normalize:
            embeddings = torch.nn.functional.normalize(embeddings, dim=-1)
        return self.head.loss(self.head(embeddings), labels)


class Trainer:
    """Trains a :class:`SetFitModel` in two phases: contrastive body training, then the head.

    Same arguments as ``setfit.Trainer``. ``metric`` is a name computed by scikit-learn
    ("accuracy", "f1", ...) or a callable ``metric(y_pred, y_true)``.
    """

    def __init__(self, model: SetFitModel | None = None, args: TrainingArguments | None = None,
                 train_dataset: Any = None, eval_dataset: Any = None,
                 model_init: Callable[..., SetFitModel] | None = None, metric: str | Callable = "accuracy",
                 metric_kwargs: dict[str, Any] | None = None, callbacks: list[Any] | None = None,
                 column_mapping: dict[str, str] | None = None) -> None:
        if model is None and model_init is None:
            raise ValueError("Trainer needs `model` or `model_init`")
        if args is not None and not isinstance(args, TrainingArguments):
            raise TypeError(f"args must be setfit_lite.TrainingArguments, got {type(args).__name__}")
        check_metric(metric)
        self.args = args or TrainingArguments()
        self.model_init = model_init
        self.metric, self.metric_kwargs = metric, metric_kwargs
        self.column_mapping = column_mapping
        self.train_dataset, self.eval_dataset = train_dataset, eval_dataset
        self._train_data = self._load(train_dataset) if train_dataset is not None else None
        self._eval_data = self._load(eval_dataset) if eval_dataset is not None else None
        self._callbacks = list(callbacks or [])
        self.state = TrainerState()
        self.backend: Backend | None = None
        self._resume_path: Path | None = None
        if model is None:
            routing.seed_everything(self.args.seed)
            model = self.call_model_init()
        self.model = model

    # ---- data ---------------------------------------------------------------------------------
    def _load(self, dataset: Any) -> LabeledData:
        return to_labeled_data(dataset, column_mapping=self.column_mapping)

    def call_model_init(self, params: dict[str, Any] | None = None) -> SetFitModel:
        """A fresh model from ``model_init``: ``params`` as its one argument (setfit's convention), or as keyword
        arguments where it declares them (see :func:`setfit_lite.search.routing.call_model_init`)."""
        if self.model_init is None:
            raise ValueError("call_model_init needs the Trainer's model_init")
        return routing.call_model_init(self.model_init, params)

    def add_callback(self, callback: Any) -> None:
        self._callbacks.append(callback)

    def remove_callback(self, callback: Any) -> None:
        self._callbacks = [cb for cb in self._callbacks if cb is not callback and type(cb) is not callback]

    # ---- training -----------------------------------------------------------------------------
    def train(self, args: TrainingArguments | None = None, trial: Any = None,
              resume_from_checkpoint: Any = None, **kwargs: Any) -> None:
        """Validate the data, train the body contrastively, then fit the head.

        ``args`` replaces the training arguments for this call only. ``trial`` (setfit's keyword: a dict of
        hyperparameters, or an Optuna trial such as ``best.study.best_trial``) first applies its parameters as a
        search trial does, for this and later calls: ``apply_hyperparameters(params, final_model=True)``
        (training arguments, head parameters, and a fresh model from ``model_init`` when there is one). A trial
        that sets training arguments cannot be combined with ``args``.
        """
        if kwargs:
            raise TypeError(f"train() got unknown argument(s): {', '.join(sorted(kwargs))}")
        if trial is not None:
            params = routing.trial_params(trial)
            arg_params = routing.split_hyperparameters(self, params)[0]
            if args is not None and arg_params:
                raise ValueError(f"train() got args and a trial that sets training arguments "
                                 f"({', '.join(sorted(arg_params))}): give one of them")
            self.apply_hyperparameters(params, final_model=True)
        args = args or self.args
        self._resume_path = resolve_checkpoint(resume_from_checkpoint, args.output_dir) if resume_from_checkpoint \
            else None
        if self._train_data is None:
            raise ValueError("Trainer.train needs a train_dataset")
        data = self._train_data
        ids, labels, multi_label = encode_labels(data.labels, known_labels=self.model.labels)
        check_trainable(ids, multi_label, labels)
        if self._eval_data is not None:
            self.model_labels_check(self._eval_data, labels, multi_label)
        routing.seed_everything(args.seed)
        model = self.model
        model.labels = labels
        if args.max_length is not None:
            model.model_body.max_seq_length = min(args.max_length, _tokenizer_limit(model))
        if args.prompt is not None:
            model.prompt = args.prompt
        self.backend = backend = get_backend(args.backend, precision=args.precision, compile=args.compile)
        backend.setup()
        logger.info("training on %s", backend.describe())
        self.handler = CallbackHandler(self._callbacks, model)
        self.state = TrainerState()
        self.control = TrainerControl()
        self.control = self.handler("on_init_end", args, self.state, self.control)
        start = time.perf_counter()
        model.model_body.to(backend.device)
        tokens = model.tokenize(data.texts)
        self._eval_cache = None
        self.control = self.handler("on_train_begin", args, self.state, self.control)
        if args.embedding_num_epochs > 0 and args.max_steps != 0 and args.body_embedding_learning_rate > 0:
            self.train_embeddings(args, tokens, ids)
        self.train_classifier(args, tokens, ids, multi_label)
        self.state.train_seconds = time.perf_counter() - start
        model.training_info.update({
            "training_args": args.to_dict(),
            "dataset_sizes": {"train": len(data)} | ({"eval": len(self._eval_data)} if self._eval_data else {}),
            "train_seconds": round(self.state.train_seconds, 3),
            "backend": backend.describe(),
        })
        self.control = self.handler("on_train_end", args, self.state, self.control)
        backend.teardown()

    def is_world_process_zero(self) -> bool:
        """Whether this process is the one that logs and saves (rank 0, or the only process)."""
        if self.backend is not None:
            return self.backend.is_main_process
        return int(os.environ.get("RANK", "0")) == 0

    def save_model(self, output_dir: str | os.PathLike) -> bool:
        """Save the model on rank 0 only (other ranks hold the same model); returns whether this process saved."""
        if not self.is_world_process_zero():
            return False
        self.model.save_pretrained(output_dir)
        return True

    def model_labels_check(self, data: LabeledData, labels: list, multi_label: bool) -> None:
        encode_labels(data.labels, known_labels=labels, multi_label=multi_label)

    def _labels_tensor(self, ids: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(ids, dtype=torch.float32 if ids.ndim > 1 else torch.long)

    def _batch_labels(self, ids: np.ndarray, idx: Any) -> torch.Tensor:
        """What the loss receives as ``labels`` for the rows ``idx`` of a batch."""
        return self._labels_tensor(ids[idx])

    def _batches(self, sampler: Any, tokens: list[list[int]], ids: np.ndarray, epoch: int, skip: int = 0
                 ) -> Iterator[dict[str, Any]]:
        """The epoch's batches, after the first ``skip`` (already trained before a checkpoint)."""
        for raw in itertools.islice(sampler.epoch(epoch), skip, None):
            idx = raw["indices"]
            batch: dict[str, Any] = self.model.collate([tokens[i] for i in idx])
            batch["labels"] = self._batch_labels(ids, idx)
            if "pair_index" in raw:
                batch["pair_index"] = torch.as_tensor(raw["pair_index"])
                batch["pair_target"] = torch.as_tensor(raw["pair_target"])
            yield batch

    def make_sampler(self, args: TrainingArguments, ids: np.ndarray) -> Any:
        backend = self.backend
        assert backend is not None
        if args.objective == "pairs" and args.loss_name in PAIR_LOSSES:
            return PairSampler(ids, args.embedding_batch_size, args.seed, args.sampling_strategy,
                               args.num_iterations, rank=backend.rank, world_size=backend.world_size)
        batch_size = args.sentence_batch_size or args.embedding_batch_size
        num_classes = ids.shape[1] if ids.ndim > 1 else len(np.unique(ids))
        per_epoch = max(math.ceil(len(ids) / batch_size), args.steps_per_epoch_floor(num_classes, len(ids), batch_size))
        return SentenceBatchSampler(ids, batch_size, args.seed, rank=backend.rank, world_size=backend.world_size,
                                    batches_per_epoch=per_epoch * backend.world_size)

    def train_embeddings(self, args: TrainingArguments, tokens: list[list[int]], ids: np.ndarray) -> None:
        """Phase 1: contrastive training of the body (sentence batches by default, setfit pairs on request)."""
        model, backend = self.model, self.backend
        assert backend is not None
        body = model.model_body
        _freeze_word_embeddings(body, args.freeze_word_embeddings)
        sampler = self.make_sampler(args, ids)
        loss = build_loss(args.loss, margin=args.margin, distance_metric=args.distance_metric)
        module = EmbeddingModule(body, loss)
        optimizer = body_optimizer(body, args)
        self._run_phase(args, module, optimizer, sampler, tokens, ids, args.embedding_num_epochs, phase="embedding")
        _freeze_word_embeddings(body, False)

    def _run_phase(self, args: TrainingArguments, module: torch.nn.Module, optimizer: torch.optim.Optimizer,
                   sampler: Any, tokens: list[list[int]], ids: np.ndarray, num_epochs: int, phase: str) -> None:
        backend = self.backend
        assert backend is not None
        total = len(sampler) * num_epochs
        if args.max_steps > 0:
            total = min(total, args.max_steps) if phase == "embedding" else total
        wrapped, optimizer = backend.prepare(module, optimizer)  # the scheduler must drive the prepared optimizer
        scheduler = get_linear_schedule_with_warmup(optimizer, math.ceil(total * args.warmup_proportion), total)
        module.train()
        state, handler = self.state, self.handler
        state.max_steps, state.global_step = total, 0
        stopper = EarlyStopping(args.early_stopping_patience, greater_is_better=self._greater_is_better(args))
        best_state: dict[str, torch.Tensor] | None = None
        loop = {"epoch": 0, "step_in_epoch": 0, "running": 0.0}
        if phase == "embedding" and self._resume_path is not None:
            best_state = self._resume(self._resume_path, optimizer, scheduler, stopper, loop)
        saving = phase == "embedding" and args.save_strategy != "no"
        show = show_progress(args.show_progress_bar) and backend.is_main_process
        from tqdm.auto import tqdm

        bar = tqdm(total=total, initial=state.global_step, desc=f"Training ({phase})", disable=not show)
        running, epoch = loop["running"], loop["epoch"]
        skip = loop["step_in_epoch"]
        stop_signal = _StopSignal(enabled=saving)
        try:
            while state.global_step < total and not self.control.should_training_stop:
                state.epoch = epoch
                if not skip:
                    self.control = handler("on_epoch_begin", args, state, self.control)
                step_in_epoch = skip
                for batch in self._batches(sampler, tokens, ids, epoch, skip=skip):
                    self.control = handler("on_step_begin", args, state, self.control)
                    loss = backend.training_step(wrapped, optimizer, backend.to_device(batch), args.max_grad_norm)
                    scheduler.step()
                    backend.on_lr_change(optimizer)
                    state.global_step += 1
                    running += float(loss)
                    step_in_epoch += 1
                    bar.update(1)
                    self.control = handler("on_step_end", args, state, self.control)
                    if args.logging_strategy == "steps" and state.global_step % args.logging_steps == 0:
                        self._log(args, {f"{phase}_loss": running / args.logging_steps,
                                         "learning_rate": scheduler.get_last_lr()[0]})
                        running = 0.0
                    if (phase == "embedding" and args.eval_strategy == "steps"
                            and state.global_step % (args.eval_steps or args.logging_steps) == 0):
                        best_state = self._eval_during_training(args, stopper, best_state, tokens, ids)
                    interrupted = stop_signal.received(backend)
                    if saving and (interrupted or (args.save_strategy == "steps"
                                                   and state.global_step % args.save_steps == 0)):
                        loop = {"epoch": epoch, "step_in_epoch": step_in_epoch, "running": running}
                        path = self._save_checkpoint(args, optimizer, scheduler, stopper, best_state, loop)
                        if interrupted:
                            raise TrainingInterrupted(f"training stopped by signal {stop_signal.signum} at step "
                                                      f"{state.global_step}; checkpoint saved to {path}; resume "
                                                      "with trainer.train(resume_from_checkpoint=True)",
                                                      signum=stop_signal.signum, checkpoint=path)
                    if state.global_step >= total or self.control.should_training_stop:
                        break
                skip = 0
                epoch += 1
                self.control = handler("on_epoch_end", args, state, self.control)
                if phase == "embedding" and args.eval_strategy == "epoch":
                    best_state = self._eval_during_training(args, stopper, best_state, tokens, ids)
                if saving and args.save_strategy == "epoch":
                    loop = {"epoch": epoch, "step_in_epoch": 0, "running": running}
                    self._save_checkpoint(args, optimizer, scheduler, stopper, best_state, loop)
        finally:
            stop_signal.restore()
            bar.close()
        self.control.should_training_stop = False
        if best_state is not None and args.load_best_model_at_end:
            self.model.model_body.load_state_dict(best_state)
        module.eval()

    def _save_checkpoint(self, args: TrainingArguments, optimizer: torch.optim.Optimizer, scheduler: Any,
                         stopper: EarlyStopping, best_state: Any, loop: dict[str, Any]) -> Path:
        """Checkpoint the embedding phase after a step: every rank writes its RNG state, rank 0 the rest."""
        backend = self.backend
        assert backend is not None
        step = self.state.global_step
        folder = staging_dir(args.output_dir, step)
        if backend.is_main_process:
            new_staging_dir(args.output_dir, step)
        backend.barrier()
        write_rank_state(folder, backend.rank)
        backend.barrier()
        final = Path(args.output_dir) / f"checkpoint-{step}"
        if backend.is_main_process:
            trainer_state = {"global_step": step, "log_history": self.state.log_history,
                             "best_metric": stopper.best, "bad_evaluations": stopper.bad_evaluations, **loop}
            states = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                      "backend": backend.state_dict(), "trainer_state": trainer_state, "best_body": best_state}
            final = finalize_checkpoint(folder, step=step, body=self.model.model_body, states=states,
                                        world_size=backend.world_size, save_total_limit=args.save_total_limit)
        backend.barrier()
        self.control = self.handler("on_save", args, self.state, self.control)
        return final

    def _resume(self, path: Path, optimizer: torch.optim.Optimizer, scheduler: Any, stopper: EarlyStopping,
                loop: dict[str, Any]) -> Any:
        """Restore the embedding phase from a checkpoint; returns the best body state it held (or None)."""
        backend = self.backend
        assert backend is not None
        saved = load_checkpoint(path, backend.rank)
        if saved["manifest"]["world_size"] != backend.world_size:
            raise CheckpointError(f"checkpoint {path} was written by {saved['manifest']['world_size']} process(es); "
                                  f"resume it with the same number (now {backend.world_size})")
        body = self.model.model_body
        missing, unexpected = body.load_state_dict(saved["body"], strict=False)
        if unexpected or [k for k in missing if not k.endswith("position_ids")]:
            raise CheckpointError(f"checkpoint {path} does not fit this model's body "
                                  f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        backend.load_state_dict(saved.get("backend") or {})
        ts = saved["trainer_state"]
        self.state.global_step, self.state.log_history = ts["global_step"], list(ts["log_history"])
        stopper.best, stopper.bad_evaluations = ts["best_metric"], ts["bad_evaluations"]
        self.state.best_metric = stopper.best
        loop.update(epoch=ts["epoch"], step_in_epoch=ts["step_in_epoch"], running=ts["running"])
        set_rng_state(saved["rng"])
        logger.info("resumed from %s at step %d", path, self.state.global_step)
        return saved.get("best_body")

    def _greater_is_better(self, args: TrainingArguments) -> bool:
        if args.greater_is_better is not None:
            return args.greater_is_better
        name = args.metric_for_best_model or "metric"
        return not name.endswith("loss")

    def _eval_during_training(self, args: TrainingArguments, stopper: EarlyStopping, best_state: Any,
                              tokens: list[list[int]], ids: np.ndarray) -> Any:
        """Fit a throwaway head on the current body and report the real eval metric (not only the loss)."""
        if self._eval_data is None:
            raise ValueError(f"eval_strategy={args.eval_strategy!r} needs an eval_dataset")
        metrics = self._metric_with_fresh_head(args, tokens, ids)
        key = args.metric_for_best_model or next(iter(metrics))
        key = key if key in metrics else f"eval_{key}" if f"eval_{key}" in metrics else next(iter(metrics))
        is_best, stop = stopper.step(metrics[key])
        self.state.best_metric = stopper.best
        self._log(args, metrics)
        self.control = self.handler("on_evaluate", args, self.state, self.control, metrics=metrics)
        if stop:
            logger.info("early stopping at step %d: %s did not improve for %d evaluations",
                        self.state.global_step, key, stopper.patience)
            self.control.should_training_stop = True
        if is_best and args.load_best_model_at_end:
            return copy.deepcopy(self.model.model_body.state_dict())
        return best_state

    def _metric_with_fresh_head(self, args: TrainingArguments, tokens: list[list[int]], ids: np.ndarray
                                ) -> dict[str, float]:
        model = self.model
        assert self._eval_data is not None and self.backend is not None
        if self._eval_cache is None:
            eval_tokens = model.tokenize(self._eval_data.texts)
            self._eval_cache = (eval_tokens, encode_labels(self._eval_data.labels, model.labels)[0])
        eval_tokens, eval_ids = self._eval_cache
        if args.eval_max_steps > 0:
            n = args.eval_max_steps * args.embedding_batch_size
            eval_tokens, eval_ids = eval_tokens[:n], eval_ids[:n]
        head = model.new_head(len(model.labels), ids.ndim > 1)
        self._fit_head(head, model.embed_tokens(tokens, autocast=self.backend.autocast()), ids, args)
        proba = head.predict_proba(model.embed_tokens(eval_tokens, autocast=self.backend.autocast()))
        pred = (proba >= 0.5).astype(np.int64) if ids.ndim > 1 else proba.argmax(-1)
        metrics = compute_metric(self.metric, pred, eval_ids, self.metric_kwargs, num_classes=len(model.labels))
        return {f"eval_{k}": v for k, v in metrics.items()}

    def _fit_head(self, head: Any, embeddings: np.ndarray, ids: np.ndarray, args: TrainingArguments) -> None:
        if isinstance(head, torch.nn.Module):
            head.fit(embeddings, ids, epochs=args.classifier_num_epochs, lr=args.head_learning_rate,
                     batch_size=args.classifier_batch_size, weight_decay=args.l2_weight or 0.0, seed=args.seed)
        else:
            head.fit(embeddings, ids)

    def train_classifier(self, args: TrainingArguments, tokens: list[list[int]], ids: np.ndarray,
                         multi_label: bool) -> None:
        """Phase 2: the head, on embeddings of the training texts computed once (or end to end with the body)."""
        model, backend = self.model, self.backend
        assert backend is not None
        head = model.new_head(len(model.labels), multi_label)
        if isinstance(head, torch.nn.Module) and args.end_to_end:
            head.to(backend.device)
            module = ClassifierModule(model.model_body, head, model.normalize_embeddings)
            optimizer = adamw([
                {"params": list(model.model_body.parameters()), "lr": args.body_classifier_learning_rate},
                {"params": list(head.parameters()), "lr": args.head_learning_rate},
            ], weight_decay=args.l2_weight or 0.0)
            sampler = SentenceBatchSampler(ids, max(2, args.classifier_batch_size), args.seed + 1,
                                           rank=backend.rank, world_size=backend.world_size)
            self._run_phase(args, module, optimizer, sampler, tokens, ids, args.classifier_num_epochs,
                            phase="classifier")
            head.cpu()
            head.fitted = True
        else:
            embeddings = self._gather_embeddings(tokens)
            if backend.is_main_process:
                self._fit_head(head, embeddings, ids, args)
            head = backend.broadcast_object(head)
        model.model_head = head

    def _gather_embeddings(self, tokens: list[list[int]]) -> np.ndarray:
        """Embeddings of all training texts: each rank embeds its share, rank order restores the input order."""
        backend = self.backend
        assert backend is not None
        positions = np.arange(len(tokens))[backend.rank::backend.world_size]
        local = self.model.embed_tokens([tokens[i] for i in positions], autocast=backend.autocast())
        if backend.world_size == 1:
            return local
        parts = backend.gather_object((positions, local))
        out = np.empty((len(tokens), local.shape[1]), dtype=np.float32)
        for pos, emb in parts:
            out[pos] = emb
        return out

    def _log(self, args: TrainingArguments, logs: dict[str, float]) -> None:
        entry = {**logs, "step": self.state.global_step}
        self.state.log_history.append(entry)
        if self.backend is None or self.backend.is_main_process:
            logger.info("%s", entry)
        self.control = self.handler("on_log", args, self.state, self.control, logs=logs)

    # ---- evaluation ---------------------------------------------------------------------------
    def evaluate(self, dataset: Any = None, metric_key_prefix: str = "test", group_by: str | None = None
                 ) -> dict[str, Any]:
        """The metric on ``dataset`` (default: ``eval_dataset``); with ``group_by``, also per value of that column."""
        data = self._load(dataset) if dataset is not None else self._eval_data
        if data is None:
            raise ValueError("evaluate() needs a dataset or an eval_dataset")
        model = self.model
        model._check_fitted()
        y_true = model.label_ids(data.labels)
        proba = model.predict_proba(data.texts)
        y_pred = (proba >= 0.5).astype(np.int64) if model.multi_label else proba.argmax(-1)
        num_classes = len(model.labels)
        result: dict[str, Any] = compute_metric(self.metric, y_pred, y_true, self.metric_kwargs, num_classes)
        if group_by is not None:
            if group_by not in data.columns:
                raise ValueError(f"group_by column {group_by!r} not in the dataset; columns: {sorted(data.columns)}")
            values = np.asarray([str(v) for v in data.columns[group_by]])
            result["groups"] = {
                str(g): compute_metric(self.metric, y_pred[values == g], y_true[values == g], self.metric_kwargs,
                                       num_classes)
                | {"n": int((values == g).sum())}
                for g in sorted(set(values))
            }
        model.training_info.setdefault("eval_results", {})[metric_key_prefix] = result
        return result

    # ---- hyperparameter search ----------------------------------------------------------------
    def hyperparameter_search(self, hp_space: Any = None, compute_objective: Callable | None = None,
                              n_trials: int = 10, direction: str = "maximize", backend: str = "optuna",
                              hp_name: Callable | None = None, **kwargs: Any) -> Any:
        """Search hyperparameters with Optuna (see :mod:`setfit_lite.search`)."""
        return run_hyperparameter_search(self, hp_space=hp_space, compute_objective=compute_objective,
                                         n_trials=n_trials, direction=direction, backend=backend,
                                         hp_name=hp_name, **kwargs)

    def apply_hyperparameters(self, params: dict[str, Any], final_model: bool = False) -> None:
        """Use ``params`` (training arguments, head and ``model_init`` parameters) for the next ``train()``."""
        routing.apply_hyperparameters(self, params, final_model=final_model)

    def push_to_hub(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("push_to_hub is not available: this environment has no hub access. "
                           "Use model.save_pretrained(path) and upload the folder yourself.")


def adamw(groups: list[dict[str, Any]], weight_decay: float) -> torch.optim.AdamW:
    """AdamW over parameter groups, fused (one kernel for all tensors) where torch has a fused CPU/CUDA kernel.

    On CPU the default per-tensor AdamW takes ~0.3 s a step for MiniLM (its 30k x 384 word embeddings), as long
    as the forward pass; the fused kernel takes ~0.06 s. Backends that need their own optimizer (hpu, ipu)
    replace it in ``prepare``.
    """
    params = [p for group in groups for p in group["params"]]
    fused = bool(params) and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.AdamW(groups, weight_decay=weight_decay, **({"fused": True} if fused else {}))


def body_optimizer(body: torch.nn.Module, args: TrainingArguments) -> torch.optim.AdamW:
    """The optimizer of the contrastive (or distillation) phase: AdamW over the body's trainable parameters."""
    params = [p for p in body.parameters() if p.requires_grad]
    return adamw([{"params": params, "lr": args.body_embedding_learning_rate}], weight_decay=0.01)


def _tokenizer_limit(model: SetFitModel) -> int:
    limit = getattr(model.model_body.tokenizer, "model_max_length", 512) or 512
    return int(min(limit, 100_000))


LARGE_VOCABULARY = 100_000


def _freeze_word_embeddings(body: torch.nn.Module, freeze: bool | None) -> None:
    """Freeze (or unfreeze) the body's word-embedding matrix; ``None`` freezes it only for large vocabularies.

    With more than :data:`LARGE_VOCABULARY` rows (XLM-R-style multilingual bodies: 250k x 384 for
    multilingual-e5-small, 96M of its 118M parameters) the matrix dominates the optimizer's time, and a few
    steps on a few sentences barely move it: on 8-shot English tweets, e5 English-only training scored the same
    in every language frozen or not (benchmarks/README.md) and trained ~1.8x as fast frozen.
    """
    for name, param in body.named_parameters():
        if "word_embeddings" in name:
            frozen = freeze if freeze is not None else param.shape[0] > LARGE_VOCABULARY
            param.requires_grad_(not frozen)
