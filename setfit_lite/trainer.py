"""Trainer: setfit's training API over THE training loop (`setfit_lite.training`).

Every device decision is asked of a ``trainers`` backend object; the loop, checkpoints, signal handling, the
evaluation during training and head fitting live in `setfit_lite.training`, one concern per module.
"""

from __future__ import annotations

import copy
import logging
import math
import numbers
import os
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
import torch

from trainers import Backend, get_backend
from trainers.distributed import current_env

from .config.rules import check_writable_folder
from .data import LabeledData, check_trainable, encode_labels, to_labeled_data
from .data.checks import is_dataframe, is_dataset, is_dataset_dict
from .data.readers import column_renames
from .evaluation import evaluate_model
from .heads.calibration import CROSS_FIT_FOLDS, MAX_FOLDS, cross_fit_temperature, cv_temperature
from .losses import PAIR_LOSSES, LabelAnchorLoss, build_loss
from .metrics import MetricInputs, check_metric, check_metric_for, check_metric_for_best_model
from .modeling import SetFitModel, capped_max_length
from .reporting import reporting_callbacks
from .runtime.chunking import window_width
from .search import DEFAULT_DIRECTION, DEFAULT_N_TRIALS, routing, run_hyperparameter_search
from .search.seeding import seed_everything
from .serialization import check_output_path
from .training.batch_samplers import PairSampler, SentenceBatchSampler, WithAnchors
from .training.callbacks import CallbackHandler, TrainerControl, TrainerState
from .training.checkpoints import (
    check_new_run,
    check_resume_data,
    data_digest,
    resolve_checkpoint,
    rng_state,
    set_rng_state,
)
from .training.cross_fit import check_folds_in_one_process, fold_trainer
from .training.head_fit import check_head_fits, fit_head, fit_prototypes, gather_embeddings, weigh_classes
from .training.head_phase import HeadEpochs, log_estimator_fit
from .training.interim_eval import HeadEvaluator, InterimEvaluator, body_has_steps, idle_patience
from .training.label_policy import fold_label_prior, label_anchor_texts, zero_shot_prototypes
from .training.loop import Phase, run_phase
from .training.modules import ClassifierModule, EmbeddingModule
from .training.optim import body_optimizer, end_to_end_optimizer, freeze_word_embeddings
from .training.self_training import check_disjoint, decide_pool, pool_without, read_unlabeled, run_self_training
from .training.session import Session
from .training.signals import TrainingInterrupted
from .training_args import TrainingArguments

__all__ = ["SetFitTrainer", "Trainer", "TrainingInterrupted"]

logger = logging.getLogger(__name__)


_REQUIRED_COLUMNS = ("label", "text")


class Trainer:
    """Trains a [`SetFitModel`][setfit_lite.modeling.SetFitModel] in two phases: contrastive body training, then
    the head.

    The same arguments, errors and messages as `setfit.Trainer`. The datasets are checked when the trainer is
    built, before any training.

    Args:
        model: The model to train; give it or `model_init`, not both.
        args: The training arguments; None for the defaults of
            [`TrainingArguments`][setfit_lite.training_args.TrainingArguments].
        train_dataset: The labelled texts: a `datasets.Dataset`, a dict of lists, a pandas DataFrame or a list of
            dicts, with `text` and `label` columns (or those `column_mapping` names).
        eval_dataset: Texts to score during and after training, in the same form.
        model_init: A function returning a fresh model, called with no argument or with a trial's hyperparameters
            (needed by [`hyperparameter_search`][setfit_lite.trainer.Trainer.hyperparameter_search]).
        metric: A name (`"accuracy"`, `"f1"`, ... computed with scikit-learn; any other name through
            `evaluate.load`, as setfit, loaded once when the trainer is built to check it) or a callable
            `metric(y_pred, y_true, **metric_kwargs)`, which receives what setfit gives it: the predictions as a
            CPU tensor and the true labels as a list (with string labels, both as class ids).
        metric_kwargs: Keyword arguments of the metric (such as `{"average": "macro"}` for `"f1"`): a dict, whose
            keys a metric computed with scikit-learn must take (checked when the trainer is built).
        callbacks: transformers `TrainerCallback`s (instances or classes), called during training.
        column_mapping: Renames columns to `text` and `label`, such as `{"sentence": "text", "sentiment": "label"}`.
        unlabeled_dataset: Unlabelled texts (a list of str, or a table with a `text` column) to self-train on after
            the labelled training (see [Self-training](self-training.md)). Draw them from the training data, never
            from the test data: a pool sharing texts with `eval_dataset` is refused.

    Attributes:
        model: The model being trained (a fresh one from `model_init` when given).
        args: The training arguments.
        state: transformers' `TrainerState` of the last `train()`: `global_step`, `log_history`, `best_metric`, ...

    Raises:
        ValueError: `args` that is not a `TrainingArguments`, a dataset without its columns, a bad
            `column_mapping`, a `metric` name computed neither here nor by `evaluate.load`, a `metric_kwargs` key
            the metric does not take, or an unlabelled pool sharing texts with `eval_dataset`.
        TypeError: A `metric` that is neither a name nor a callable, or `metric_kwargs` that is not a dict.
        RuntimeError: Neither or both of `model` and `model_init`.

    Example:
        ```python
        from setfit_lite import SetFitModel, Trainer, TrainingArguments

        train = {"text": ["a great film", "loved it", "dull and long", "a waste of time"],
                 "label": ["positive", "positive", "negative", "negative"]}
        trainer = Trainer(model=SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2"),
                          args=TrainingArguments(num_epochs=1), train_dataset=train, eval_dataset=train)
        trainer.train()
        print(trainer.evaluate())   # {'accuracy': 1.0, 'calibration': {...}}
        ```
    """

    def __init__(self, model: SetFitModel | None = None, args: TrainingArguments | None = None,
                 train_dataset: Any = None, eval_dataset: Any = None,
                 model_init: Callable[..., SetFitModel] | None = None, metric: str | Callable = "accuracy",
                 metric_kwargs: dict[str, Any] | None = None, callbacks: list[Any] | None = None,
                 column_mapping: dict[str, str] | None = None, unlabeled_dataset: Any = None) -> None:
        if args is not None and not isinstance(args, TrainingArguments):
            raise ValueError("`args` must be a `TrainingArguments` instance imported from `setfit`: here "
                             f"`setfit_lite.TrainingArguments`, got a {type(args).__name__}")
        if model is None and model_init is None:
            raise RuntimeError("`Trainer` requires either a `model` or `model_init` argument.")
        if model is not None and model_init is not None:
            raise RuntimeError("`Trainer` requires either a `model` or `model_init` argument, but not both.")
        check_metric(metric, metric_kwargs)
        self.args = args or TrainingArguments()
        self.model_init = model_init
        self.metric, self.metric_kwargs = metric, metric_kwargs
        self.column_mapping = column_mapping
        self.train_dataset, self.eval_dataset = train_dataset, eval_dataset
        self._train_data = self._load(train_dataset) if train_dataset is not None else None
        self._eval_data = self._load(eval_dataset) if eval_dataset is not None else None
        # unlabeled texts for self-training (TrainingArguments.self_training_*); never the data scored on
        self._unlabeled = read_unlabeled(unlabeled_dataset, column_mapping) if unlabeled_dataset is not None \
            else None
        if self._unlabeled is not None and self._eval_data is not None:
            check_disjoint(self._unlabeled, self._eval_data.texts, "the eval dataset")
        self._callbacks = list(callbacks or [])
        self.state = TrainerState()
        self.session: Session | None = None  # the current (or last) train() call's
        # (model, its body before training) kept after an interrupted call, for the folds of the call resuming it
        self._untrained: tuple[Any, Any] | None = None
        if model is None:
            seed_everything(self.args.seed)
            model = self.call_model_init()
        self.model = model

    # ---- data ---------------------------------------------------------------------------------
    def _load(self, dataset: Any) -> LabeledData:
        self._validate_column_mapping(dataset)
        return to_labeled_data(dataset, column_mapping=self.column_mapping)

    def _validate_column_mapping(self, dataset: Any) -> None:
        """setfit's checks (and messages) of a table's columns against ``column_mapping``: ValueError when the text
        or label column is missing, a mapped column is absent, or ``dataset`` is a ``DatasetDict`` (not a split).
        Other inputs (texts and labels, files) are checked when they are read."""
        columns = _column_names(dataset)
        if columns is None:
            return
        mapping = self.column_mapping
        if mapping is None and not set(_REQUIRED_COLUMNS) <= set(columns):
            if is_dataset_dict(dataset) and set(columns) == {"train"}:
                raise ValueError("SetFit expected a Dataset, but it got a DatasetDict with the split ['train']. "
                                 "Did you mean to select the training split with dataset['train']?")
            if is_dataset_dict(dataset):
                raise ValueError(f"SetFit expected a Dataset, but it got a DatasetDict with the splits "
                                 f"{sorted(columns)}. Did you mean to select one of these splits from the dataset?")
            raise ValueError(f"SetFit expected the dataset to have the columns {sorted(_REQUIRED_COLUMNS)}, but only "
                             f"the columns {sorted(columns)} were found. Either make sure these columns are present, "
                             "or specify which columns to use with column_mapping in Trainer.")
        if mapping is not None:
            missing = set(_REQUIRED_COLUMNS) - set(mapping.values()) - (set(columns) - set(mapping))
            if missing:
                raise ValueError(f"The following columns are missing from the column mapping: {sorted(missing)}. "
                                 "Please provide a mapping for all required columns.")
            if not set(mapping) <= set(columns):
                raise ValueError(f"The column mapping expected the columns {sorted(mapping)} in the dataset, but the "
                                 f"dataset had the columns {sorted(columns)}.")

    def _apply_column_mapping(self, dataset: Any, column_mapping: dict[str, str]) -> Any:
        """setfit's helper, by the rule training applies (`column_renames`). A
        ``datasets.Dataset`` gives a ``Dataset``, other tables a dict of lists."""
        if is_dataset(dataset):
            renames = column_renames(dataset.column_names, column_mapping)
            return dataset.rename_columns({old: new for old, new in renames.items() if old != new})
        table = to_labeled_data(dataset, column_mapping=column_mapping)
        return {"text": table.texts, "label": table.labels, **table.columns}

    def call_model_init(self, params: dict[str, Any] | None = None) -> SetFitModel:
        """A fresh model from ``model_init``: ``params`` as its one argument (setfit's convention), or as keyword
        arguments where it declares them (see `setfit_lite.search.routing.call_model_init`)."""
        if self.model_init is None:
            raise ValueError("call_model_init needs the Trainer's model_init")
        return routing.call_model_init(self.model_init, params)

    def add_callback(self, callback: Any) -> None:
        """Add a callback for the next `train()` calls.

        Args:
            callback: A transformers `TrainerCallback` instance, or a class to instantiate.
        """
        self._callbacks.append(callback() if isinstance(callback, type) else callback)

    def pop_callback(self, callback: Any) -> Any:
        """Remove a callback and return it.

        Args:
            callback: The instance, or a class (its first instance is removed).

        Returns:
            The callback removed, or None when there is none.
        """
        for index, cb in enumerate(self._callbacks):
            if cb is callback or (isinstance(callback, type) and type(cb) is callback):
                return self._callbacks.pop(index)
        return None

    def remove_callback(self, callback: Any) -> None:
        """Remove a callback, if it is there.

        Args:
            callback: The instance, or a class (its first instance is removed).
        """
        self.pop_callback(callback)

    @property
    def callbacks(self) -> list[Any]:
        """The callbacks the next ``train()`` calls (setfit keeps them in ``st_trainer.callback_handler``)."""
        return list(self._callbacks)

    def freeze(self, component: Literal["body", "head"] | None = None) -> None:
        """Deprecated in setfit (a `DeprecationWarning`): use `SetFitModel.freeze`.

        Args:
            component: `"body"`, `"head"`, or None for both.
        """
        warnings.warn(f"`{type(self).__name__}.freeze` is deprecated and will be removed in v2.0.0 of SetFit. "
                      "Please use `SetFitModel.freeze` directly instead.", DeprecationWarning, stacklevel=2)
        self.model.freeze(component)

    def unfreeze(self, component: Literal["body", "head"] | None = None,
                 keep_body_frozen: bool | None = None) -> None:
        """Deprecated in setfit (a `DeprecationWarning`): use `SetFitModel.unfreeze`.

        Args:
            component: `"body"`, `"head"`, or None for both.
            keep_body_frozen: setfit's deprecated form of `component="head"`.
        """
        warnings.warn(f"`{type(self).__name__}.unfreeze` is deprecated and will be removed in v2.0.0 of SetFit. "
                      "Please use `SetFitModel.unfreeze` directly instead.", DeprecationWarning, stacklevel=2)
        self.model.unfreeze(component, keep_body_frozen=keep_body_frozen)

    # ---- training -----------------------------------------------------------------------------
    def apply_trial(self, args: TrainingArguments | None, trial: Any) -> None:
        """`train`'s ``trial``, applied as `apply_hyperparameters(params, final_model=True)` (nothing for None).

        Raises:
            ValueError: ``args`` given and a trial that sets training arguments.
        """
        if trial is None:
            return
        params = routing.trial_params(trial)
        arg_params = routing.split_hyperparameters(self, params)[0]
        if args is not None and arg_params:
            raise ValueError(f"train() got args and a trial that sets training arguments "
                             f"({', '.join(sorted(arg_params))}): give one of them")
        self.apply_hyperparameters(params, final_model=True)

    def train(self, args: TrainingArguments | None = None, trial: Any = None,
              resume_from_checkpoint: Any = None, **kwargs: Any) -> None:
        """Train the model: check the data, train the body contrastively, then fit the head.

        The model is left in eval mode (dropout off), also when training raises. With checkpoints on
        (`save_strategy`), SIGTERM or Ctrl-C stops training after a checkpoint
        ([`TrainingInterrupted`][setfit_lite.trainer.TrainingInterrupted]).

        Args:
            args: Training arguments for this call only; None for the trainer's.
            trial: setfit's keyword: a dict of hyperparameters, or an Optuna trial such as
                `best.study.best_trial`, applied first for this and later calls as
                `apply_hyperparameters(params, final_model=True)` does. A trial that sets training arguments cannot
                be combined with `args`.
            resume_from_checkpoint: A checkpoint folder to resume from, or True for the latest one in
                `args.output_dir`; training continues where it stopped, on the same data.
            **kwargs: setfit 0.x's `train(num_epochs=...)`: setfit's `DeprecationWarning`; those that are
                `TrainingArguments` names apply to this call (setfit ignores them).

        Every check, the backend's device included, comes before the model changes: a call that raises before
        training leaves `model.labels`, `model.prompt` and the body's `max_seq_length` as they were.
        `early_stopping_patience` that will not act on some phase (no `eval_dataset`; the body not evaluated with
        `eval_strategy="no"`) is said in a `UserWarning`.

        Raises:
            ValueError: No `train_dataset`, an `eval_strategy` other than `"no"` without an `eval_dataset`, labels
                the model cannot train on (a single class, labels absent from `model.labels`), head parameters
                scikit-learn refuses, a `metric_for_best_model` the evaluations never report, a checkpoint of other
                data, `args` and a `trial` that both set arguments, or checkpoints to save into an `args.output_dir`
                that holds those of an earlier run without resuming it (a `CheckpointError`).
            FileExistsError: Checkpoints to save under a file (`args.output_dir` cannot be created).
            PermissionError: Checkpoints to save into a folder that cannot be written in.
            TypeError: A keyword argument that is not a `TrainingArguments` name.
            RuntimeError: A backend whose device is not here.
            TrainingInterrupted: SIGTERM or SIGINT stopped training after a checkpoint.
        """
        if kwargs:
            name = type(self).__name__
            warnings.warn(f"`{name}.train` does not accept keyword arguments anymore. Please provide training "
                          f"arguments via a `TrainingArguments` instance to the `{name}` initialisation or the "
                          f"`{name}.train` method. setfit_lite applies {', '.join(sorted(kwargs))} to this call "
                          "(setfit ignores them).", DeprecationWarning, stacklevel=2)
            args = (args or self.args).update(kwargs)
        self.apply_trial(args, trial)
        args = args or self.args
        self.check_eval_strategy(args)
        self.check_output_dir(args, resume_from_checkpoint)
        if args.save_strategy != "no":  # its checkpoints never mix with those of a run it does not continue
            check_new_run(args.output_dir, resume_from_checkpoint)
        resume_from = resolve_checkpoint(resume_from_checkpoint, args.output_dir) if resume_from_checkpoint \
            else None
        if self._train_data is None:
            raise ValueError(f"Training requires a `train_dataset` given to the `{type(self).__name__}` "
                             "initialization.")
        data = self._train_data
        self._data_digest = data_digest(data.texts, list(data.labels))
        if resume_from is not None:
            check_resume_data(resume_from, self._data_digest)
        ids, labels, multi_label = self.checked_labels(data)
        counts = ids.sum(axis=0) if ids.ndim == 2 else np.bincount(ids, minlength=len(labels))
        if (absent := [label for label, n in zip(labels, counts) if n == 0]):
            warnings.warn(f"labels {absent} (given in labels=) have no example in train_dataset: the model can "
                          "never learn them (a scikit-learn head gives them probability 0)", UserWarning, stacklevel=2)
        if multi_label and self._uses_pool(args):
            raise ValueError("self-training on unlabeled_dataset needs single-label data; multi-label training "
                             "data was given (set self_training=False or drop unlabeled_dataset)")
        if self._uses_pool(args):
            pool_without(self._unlabeled, data.texts)  # a pool that nothing is left of: refused before training
        if self._evaluates(args):
            check_metric_for_best_model(args.metric_for_best_model, self.metric)
        idle = idle_patience(args, self._eval_data is not None, self._head_epochs(args, len(labels), multi_label))
        if idle is not None:
            warnings.warn(idle, UserWarning, stacklevel=2)
        # the device is checked (a backend that cannot run here raises) before anything of the model changes
        backend = get_backend(args.backend, precision=args.precision, compile=args.compile,
                              **(args.backend_options or {}))
        seed_everything(args.seed)
        restore = self._configure_model(args, labels)
        try:
            backend.setup()
        except BaseException:
            restore()
            raise
        try:
            self._train(args, backend, data, ids, multi_label, resume_from)
        finally:
            backend.teardown()
            self.model.settle_eval()

    def checked_labels(self, data: LabeledData) -> tuple[np.ndarray, list, bool]:
        """The training labels of ``data`` encoded against the model's labels, with every check `train` makes of
        them before any work: at least two classes, a metric the data can have, a head that can fit them (with
        parameters scikit-learn accepts), and eval labels the training knows.

        Returns:
            ``(ids, labels, multi_label)``, as `encode_labels` gives them.

        Raises:
            ValueError: Labels that cannot train the model (the message names the problem).
        """
        ids, labels, multi_label = encode_labels(data.labels, known_labels=self.model.labels)
        check_trainable(ids, multi_label, labels)
        check_metric_for(self.metric, multi_label)
        check_head_fits(self.model.new_head(len(labels), multi_label), ids, labels)  # before the body trains
        if self._eval_data is not None:
            self.model_labels_check(self._eval_data, labels, multi_label)
        return ids, labels, multi_label

    def _configure_model(self, args: TrainingArguments, labels: list) -> Callable[[], None]:
        """Give the model this call's ``labels``, ``args.max_length`` and ``args.prompt``, and check that a chunking
        model's windows keep room for text; returns what restores the model as it was (called here when the
        check fails, by `train` when a later step before training fails)."""
        model = self.model
        before = (model.labels, model.model_body.max_seq_length, model.prompt)

        def restore() -> None:
            model.labels, model.model_body.max_seq_length, model.prompt = before

        try:
            model.labels = labels
            if args.max_length is not None:
                model.model_body.max_seq_length = capped_max_length(model.model_body, args.max_length)
            if args.prompt is not None:
                model.prompt = args.prompt
            if model.chunking.enabled and model.model_body.max_seq_length is not None:  # windows with room for text
                window_width(model.model_body.max_seq_length, *model.affixes())
        except BaseException:
            restore()
            raise
        return restore

    def check_eval_strategy(self, args: TrainingArguments) -> None:
        """ValueError when ``args`` ask for evaluations during training (``eval_strategy`` ``"steps"`` or
        ``"epoch"``) and the trainer has no eval dataset: checked when `train` starts, before any work, not when the
        Trainer is built (``train(args=...)`` may give other arguments, and `evaluate` takes a dataset of its own).
        """
        if args.eval_strategy != "no" and self._eval_data is None:
            raise ValueError(f"eval_strategy={args.eval_strategy!r} needs an eval_dataset: give the "
                             f"{type(self).__name__} an eval_dataset, or set eval_strategy='no'")

    def _evaluates(self, args: TrainingArguments) -> bool:
        """Whether ``args`` evaluate during training: with an eval dataset, when ``eval_strategy`` or
        ``early_stopping_patience`` asks for evaluations."""
        return self._eval_data is not None and (args.eval_strategy != "no" or args.early_stopping_patience is not None)

    def _head_epochs(self, args: TrainingArguments, num_classes: int, multi_label: bool) -> bool:
        """Whether the head is a torch head fitted by epochs on fixed embeddings (each epoch evaluated when
        `_evaluates`), not end to end with the body."""
        return isinstance(self.model.new_head(num_classes, multi_label), torch.nn.Module) and not args.end_to_end

    def read_folders(self) -> list[Any]:
        """The folders training reads from (the model's), which checkpoints never go into, over or around."""
        return [getattr(self.model, "source_folder", None)]

    def check_output_dir(self, args: TrainingArguments, resume_from_checkpoint: Any = None) -> None:
        """With checkpoints on, ValueError if they would be written into, over or around a folder training reads:
        the model's (``read_folders``), or the checkpoint resumed from (which may lie inside ``output_dir``, its
        run's); FileExistsError or PermissionError when ``output_dir`` cannot be created or written in
        (`check_writable_folder`, the command line's check of ``--output-dir``), checked by the process that
        writes the checkpoints (rank 0: on several machines the others may not see that folder)."""
        if args.save_strategy == "no":
            return
        check_output_path(args.output_dir, *self.read_folders(), suffix="checkpoints")
        if self.is_world_process_zero():
            check_writable_folder("output_dir", args.output_dir)
        if isinstance(resume_from_checkpoint, (str, os.PathLike)):
            check_output_path(args.output_dir, resume_from_checkpoint, allow_contained=True, suffix="checkpoints")

    def _train(self, args: TrainingArguments, backend: Backend, data: LabeledData, ids: np.ndarray,
               multi_label: bool, resume_from: Any) -> None:
        logger.info("training on %s", backend.describe())
        model = self.model
        reporting = reporting_callbacks(args)  # report_to: transformers' integrations, for this call
        self.session = session = Session(args, backend, model, CallbackHandler(self._callbacks + reporting, model),
                                         resume_from=resume_from, data_digest=self._data_digest)
        self.state = session.state
        # this call's self-training record only: a model trained (or saved) with a pool before keeps none of it
        model.training_info.pop("self_training", None)
        model.training_info.pop("eval_results", None)  # scores of the model before: the card must not report them
        session.event("on_init_end")
        start = time.perf_counter()
        backend.move_module(model.model_body)
        tokens = model.tokenize(data.texts)
        own_objective = self._own_objective()
        session.prototypes = zero_shot_prototypes(args, model, data.texts, ids, multi_label, own_objective)
        session.anchor_texts = label_anchor_texts(args, model, ids, session.prototypes, own_objective)
        session.event("on_train_begin")
        end_to_end = args.end_to_end and model.has_differentiable_head  # an end-to-end head is not calibrated
        if args.calibration == "temperature" and self.trains_body(args) and not multi_label and not end_to_end:
            check_folds_in_one_process(args.calibration, backend.world_size)
            session.initial_body = self._body_before_training(resume_from)
        if self._uses_pool(args) and args.self_training == "auto":  # the folds of the decision start from it
            session.pool_body = session.initial_body if session.initial_body is not None \
                else self._body_before_training(resume_from)
        if self.trains_body(args):
            self.train_embeddings(args, tokens, ids)
        self.train_classifier(args, tokens, ids, multi_label)
        if self._uses_pool(args):
            session.resume_from = None  # a checkpoint resumes the labelled phase only
            self.self_train(args, data, ids)
        self.state.train_seconds = time.perf_counter() - start
        model.training_info.update({
            "training_args": args.to_dict(),
            "dataset_sizes": {"train": len(data)} | ({"eval": len(self._eval_data)} if self._eval_data else {})
            | ({"unlabeled": len(self._unlabeled)} if self._unlabeled is not None else {}),
            "train_seconds": round(self.state.train_seconds, 3),
            "backend": backend.describe(),
        })
        self._untrained = None  # trained to the end: nothing resumes this call
        if reporting:
            session.log(self._final_logs())
        session.event("on_train_end")

    def _body_before_training(self, resume_from: Any) -> Any:
        """A copy (on the CPU) of the model's body before this call trains it, which the folds of calibration and
        of the pool decision retrain: on a resume of this trainer's interrupted call, the copy that call took
        (the body has trained since); else a copy now, kept until the call ends."""
        kept = self._untrained
        if resume_from is not None and kept is not None and kept[0] is self.model:
            return kept[1]
        body = copy.deepcopy(self.model.model_body).to("cpu")
        self._untrained = (self.model, body)
        return body

    def _uses_pool(self, args: TrainingArguments) -> bool:
        return self._unlabeled is not None and args.self_training is not False and args.self_training_rounds > 0

    def self_train(self, args: TrainingArguments, data: LabeledData, ids: np.ndarray) -> None:
        """After the labelled training: with ``self_training="auto"``, decide by cross-validation on the labelled
        texts whether the pool helps (`decide_pool`), and self-train on
        it when it does (always with ``self_training=True``). Recorded in ``model.training_info["self_training"]``
        and logged to the callbacks."""
        session, model = self.session, self.model
        assert session is not None and self._unlabeled is not None
        pool = pool_without(self._unlabeled, data.texts)
        info: dict[str, Any] = {"pool": len(pool), "dropped": len(self._unlabeled) - len(pool),
                                "decision": "auto" if args.self_training == "auto" else "always"}
        if args.self_training == "auto":
            # the folds' trainings draw random numbers: the run goes on with the generators as they were, so a kept
            # pool trains the model self_training=True trains (the decision only decides)
            generators = rng_state(self.backend.rng_state())
            try:
                decision = decide_pool(type(self), model, session.pool_body, args, data.texts, data.labels, ids,
                                       pool)
            finally:
                set_rng_state(generators)
                self.backend.set_rng_state(generators)
            session.pool_body = None
            logger.info("self-training: %s", decision.reason)
            session.log(decision.logs())
            info |= {"used": decision.used, "cv": vars(decision)}
            if not decision.used:
                model.training_info["self_training"] = info | {"rounds": []}
                return
        rounds = run_self_training(self, args, data.texts, ids, pool, self.trains_body(args), session.log)
        model.training_info["self_training"] = info | {"used": True, "rounds": [vars(done) for done in rounds]}

    def trains_body(self, args: TrainingArguments) -> bool:
        """Whether ``args`` train the body contrastively (not for zero-shot prototypes, a frozen body, no steps)."""
        prototypes = self.session is not None and self.session.prototypes
        return not prototypes and body_has_steps(args)

    def _final_logs(self) -> dict[str, float]:
        """What a reporting integration receives when training ends: ``train_runtime``, and the trained model's
        metrics on the eval dataset as ``final_eval_<name>`` (logged at the last step; rank 0 evaluates)."""
        logs = {"train_runtime": round(self.state.train_seconds, 4)}
        if self._eval_data is not None and self.is_world_process_zero():
            metrics = evaluate_model(self.model, self._eval_data, self.metric, self.metric_kwargs,
                                     metric_inputs=self._metric_inputs())
            logs.update({f"final_eval_{k}": float(v) for k, v in metrics.items()
                         if isinstance(v, numbers.Real) and not isinstance(v, bool)})
        return logs

    def _own_objective(self) -> str | None:
        """Why this trainer takes no zero-shot prototypes nor label anchors (it trains its own objective), or None."""
        if type(self).embedding_loss is Trainer.embedding_loss:
            return None
        return f"{type(self).__name__} trains its own objective"

    @property
    def backend(self) -> Backend | None:
        """The backend of the current (or last) ``train()`` call."""
        return self.session.backend if self.session is not None else None

    @property
    def handler(self) -> CallbackHandler | None:
        """The callbacks of the current (or last) ``train()`` call."""
        return self.session.handler if self.session is not None else None

    @property
    def control(self) -> TrainerControl | None:
        """transformers' ``TrainerControl`` of the current (or last) ``train()`` call."""
        return self.session.control if self.session is not None else None

    def is_world_process_zero(self) -> bool:
        """Whether this process is the one that logs and saves (rank 0, or the only process)."""
        if self.backend is not None:
            return self.backend.is_main_process
        return current_env().rank == 0  # the process group already initialised (Ray Train), else torchrun's RANK

    def save_model(self, output_dir: str | os.PathLike) -> bool:
        """Save the model, on the main process only (the other processes hold the same model).

        Args:
            output_dir: The folder, as in `SetFitModel.save_pretrained`.

        Returns:
            Whether this process saved.
        """
        if not self.is_world_process_zero():
            return False
        self.model.save_pretrained(output_dir)
        return True

    def model_labels_check(self, data: LabeledData, labels: list, multi_label: bool) -> None:
        encode_labels(data.labels, known_labels=labels, multi_label=multi_label)

    def _batch_labels(self, ids: np.ndarray) -> Callable[[np.ndarray], torch.Tensor]:
        """What the loss receives as ``labels`` for the rows of a batch: their class ids (or multi-hot rows)."""
        dtype = torch.float32 if ids.ndim > 1 else torch.long
        return lambda rows: torch.as_tensor(ids[rows], dtype=dtype)

    def make_sampler(self, args: TrainingArguments, ids: np.ndarray) -> Any:
        """The embedding phase's batches: setfit's pairs (``objective="pairs"``) or label-balanced sentences; this
        process's share of them during ``train()``, all of them outside it."""
        rank, world_size = (self.backend.rank, self.backend.world_size) if self.backend is not None else (0, 1)
        if args.objective == "pairs" and args.loss_name in PAIR_LOSSES:
            return PairSampler(ids, args.embedding_batch_size, args.seed, args.sampling_strategy,
                               args.num_iterations, rank=rank, world_size=world_size)
        batch_size = args.sentence_batch_size or args.embedding_batch_size
        num_classes = ids.shape[1] if ids.ndim > 1 else len(np.unique(ids))
        per_epoch = max(math.ceil(len(ids) / batch_size), args.steps_per_epoch_floor(num_classes, len(ids), batch_size))
        return SentenceBatchSampler(ids, batch_size, args.seed, rank=rank, world_size=world_size,
                                    batches_per_epoch=per_epoch * world_size)

    def _interim_evaluator(self, args: TrainingArguments, tokens: list[list[int]],
                           ids: np.ndarray) -> InterimEvaluator | None:
        """The evaluation of the embedding phase (``eval_strategy``), or None."""
        if args.eval_strategy == "no":
            return None
        self.check_eval_strategy(args)  # train() checked it before any work; a direct call is checked here
        assert self._eval_data is not None
        return InterimEvaluator(self._eval_data, self.metric, self.metric_kwargs, tokens, ids,
                                metric_inputs=self._metric_inputs())

    def embedding_loss(self, args: TrainingArguments) -> torch.nn.Module:
        """The embedding phase's batch loss (``args.loss``)."""
        return build_loss(args.loss, margin=args.margin, distance_metric=args.distance_metric)

    def train_embeddings(self, args: TrainingArguments, tokens: list[list[int]], ids: np.ndarray,
                         checkpoints: bool = True) -> None:
        """Phase 1: contrastive training of the body (sentence batches by default, setfit pairs on request);
        ``checkpoints``: whether it saves and resumes checkpoints (the labelled training; a self-training round's
        body training does neither, so its steps never replace the labelled phase's checkpoints)."""
        backend, body = self.backend, self.model.model_body
        assert backend is not None and self.session is not None
        freeze_word_embeddings(body, args.freeze_word_embeddings)
        loss, sampler, evaluator = self.embedding_loss(args), self.make_sampler(args, ids), \
            self._interim_evaluator(args, tokens, ids)
        anchors = self.session.anchor_texts
        if anchors:
            sampler = WithAnchors(sampler, len(tokens), len(anchors), args.anchors_per_batch, ids, args.seed)
            loss = LabelAnchorLoss(loss, sampler.per_batch, args.anchor_weight, args.anchor_loss,
                                   args.anchor_temperature)
            tokens = tokens + self.model.tokenize(anchors)
            ids = np.concatenate([ids, np.arange(len(anchors), dtype=ids.dtype)])
        run_phase(self.session, Phase(
            "embedding", EmbeddingModule(body, loss), body_optimizer(backend, body, args),
            sampler, tokens, self._batch_labels(ids), args.embedding_num_epochs,
            max_steps=args.max_steps, checkpoints=checkpoints, evaluate=evaluator))
        freeze_word_embeddings(body, False)

    def train_classifier(self, args: TrainingArguments, tokens: list[list[int]], ids: np.ndarray,
                         multi_label: bool) -> None:
        """Phase 2: the head, on embeddings of the training texts computed once (or end to end with the body)."""
        model, backend = self.model, self.backend
        assert backend is not None and self.session is not None
        head = model.new_head(len(model.labels), multi_label)
        if isinstance(head, torch.nn.Module) and args.end_to_end:
            module = ClassifierModule(model.model_body, head, model.normalize_embeddings)
            sampler = SentenceBatchSampler(ids, max(2, args.classifier_batch_size), args.seed + 1,
                                           rank=backend.rank, world_size=backend.world_size)
            evaluator = self._head_evaluator(args, head, ids, fixed_body=False) \
                if args.eval_strategy != "no" else None
            class_weight = weigh_classes(head, ids, args)
            head.fit_class_weight(ids)
            run_phase(self.session, Phase(
                "classifier", module, end_to_end_optimizer(backend, model.model_body, head, args), sampler, tokens,
                self._batch_labels(ids), args.classifier_num_epochs, evaluate=evaluator, stage="head",
                keep=module))
            head = backend.to_host(head)
            head.fitted = True
            self._not_calibrated("an end-to-end torch head is not calibrated")
        else:
            embeddings, class_weight = gather_embeddings(model, tokens, backend), None
            if backend.is_main_process and self.session.prototypes:
                fit_prototypes(head, embeddings, ids, args.anchor_temperature)
                self._not_calibrated("zero-shot prototypes are not calibrated (one text per class)")
            elif backend.is_main_process:
                class_weight = self._fit_head(args, head, embeddings, ids)
                fold_label_prior(args, model, head, embeddings)
                self.calibrate(args, head, embeddings, ids)
            head = backend.broadcast_object(head)
        model.model_head = head
        model.training_info["class_weight"] = {"setting": args.head_class_weight, "used": class_weight}

    def _head_evaluator(self, args: TrainingArguments, head: Any, ids: np.ndarray,
                        fixed_body: bool) -> HeadEvaluator | None:
        """The evaluation of the head phase: with an eval dataset, when ``eval_strategy`` or
        ``early_stopping_patience`` asks for evaluations (else None)."""
        if not self._evaluates(args):
            return None
        assert self._eval_data is not None
        return HeadEvaluator(self._eval_data, self.metric, self.metric_kwargs, ids, head, fixed_body,
                             metric_inputs=self._metric_inputs())

    def _fit_head(self, args: TrainingArguments, head: Any, embeddings: np.ndarray, ids: np.ndarray) -> Any:
        """Fit the head on the training embeddings, its epochs (torch) or its fit (scikit-learn) reported to the
        callbacks (`setfit_lite.training.head_phase`); returns the class weight it was fitted with."""
        assert self.session is not None
        if not isinstance(head, torch.nn.Module):
            class_weight = fit_head(head, embeddings, ids, args)
            log_estimator_fit(self.session, head)
            return class_weight
        epochs = HeadEpochs(self.session, head, len(embeddings), args.classifier_batch_size,
                            args.classifier_num_epochs, self._head_evaluator(args, head, ids, fixed_body=True))
        class_weight = fit_head(head, embeddings, ids, args, hook=epochs)
        epochs.finish()
        return class_weight

    def calibrate(self, args: TrainingArguments, head: Any, embeddings: np.ndarray, ids: np.ndarray) -> None:
        """With ``calibration="temperature"``, set ``head.calibration_temperature`` from out-of-fold predictions:
        of whole models trained without each fold when the body is trained (`setfit_lite.training.cross_fit`),
        else of heads refitted on folds of the training embeddings
        (`setfit_lite.heads.calibration.cv_temperature`).
        Recorded in ``model.training_info["calibration"]`` with the reason when none is fitted."""
        temperature, how = None, "calibration='none'"
        session = self.session
        if args.calibration == "temperature" and session is not None and session.cross_fit is None:
            # fitted once, on the labelled texts: a self-training round's head reuses it (refitted on the round's
            # pseudo-labels, the head's own confident guesses, it would sharpen the probabilities)
            if session.initial_body is not None:
                data = self._train_data
                assert data is not None
                session.cross_fit = cross_fit_temperature(
                    fold_trainer(type(self), self.model, session.initial_body, args, data.texts, data.labels),
                    ids, args.calibration_folds or CROSS_FIT_FOLDS, seed=args.seed)
            else:  # the body is not trained: its embeddings are out of sample
                num_classes = len(self.model.labels or [])
                session.cross_fit = cv_temperature(
                    lambda: self.model.new_head(num_classes, ids.ndim > 1),
                    lambda h, x, y: self._refit_head(args, h, x, y), embeddings, ids,
                    args.calibration_folds or MAX_FOLDS, seed=args.seed)
        if args.calibration == "temperature" and session is not None:
            temperature, how = session.cross_fit
        head.calibration_temperature = temperature or 1.0
        self.model.training_info["calibration"] = {"temperature": temperature, "method": how}

    def _refit_head(self, args: TrainingArguments, head: Any, embeddings: np.ndarray, ids: np.ndarray) -> None:
        """A fold's head for calibration: fitted as the model's head is, without reporting to the callbacks."""
        fit_head(head, embeddings, ids, args)
        fold_label_prior(args, self.model, head, embeddings)

    def _not_calibrated(self, why: str) -> None:
        self.model.training_info["calibration"] = {"temperature": None, "method": why}

    # ---- evaluation ---------------------------------------------------------------------------
    def evaluate(self, dataset: Any = None, metric_key_prefix: str = "test", group_by: str | None = None
                 ) -> dict[str, Any]:
        """Score the model with the trainer's metric.

        Args:
            dataset: The texts and labels to score, in any form `train_dataset` takes; None for `eval_dataset`.
            metric_key_prefix: The key the result is recorded under in `model.training_info["eval_results"]`
                (and in the model card).
            group_by: A column of `dataset`: the metric is also given per value of that column.

        Returns:
            The metric by name, such as `{"accuracy": 0.9}`, with per-group results under `group_by`.

        Raises:
            ValueError: No dataset given here nor to the trainer, labels the model does not know, or a dataset
                sharing texts with the unlabelled pool.
        """
        data = self._load(dataset) if dataset is not None else self._eval_data
        if data is None:
            raise ValueError("No evaluation dataset provided to `Trainer.evaluate` nor the `Trainer` initialization.")
        if self._unlabeled is not None:
            check_disjoint(self._unlabeled, data.texts, "the evaluated dataset")
        result = evaluate_model(self.model, data, self.metric, self.metric_kwargs, group_by=group_by,
                                metric_inputs=self._metric_inputs())
        self.model.training_info.setdefault("eval_results", {})[metric_key_prefix] = result
        return result

    # ---- hyperparameter search ----------------------------------------------------------------
    def hyperparameter_search(self, hp_space: Any = None, compute_objective: Callable | None = None,
                              n_trials: int = DEFAULT_N_TRIALS, direction: str = DEFAULT_DIRECTION,
                              backend: str | None = "optuna",
                              hp_name: Callable | None = None, **kwargs: Any) -> Any:
        """Search hyperparameters with Optuna: each trial trains a fresh model from `model_init` and scores it on
        `eval_dataset`.

        The trainer's args and model are restored afterwards; train the final model with
        `trainer.apply_hyperparameters(best.hyperparameters, final_model=True)` then `trainer.train()` (or
        `trainer.train(trial=best.hyperparameters)`). The guide: [Hyperparameter search](../search.md).

        Args:
            hp_space: The search space: a function of an Optuna trial returning a dict, a SigOpt parameter list or
                experiment dict (its metric's `objective` sets the direction, which a `direction` passed must
                agree with; its `observation_budget` replaces the default `n_trials`, not one passed; its metric
                `name` picks the metric), a dict of Optuna distributions, or None for
                [`default_hp_space`][setfit_lite.search.default_hp_space].
            compute_objective: Scores `evaluate()`'s metrics; None for
                [`default_compute_objective`][setfit_lite.search.default_compute_objective].
            n_trials: The trials this call runs at most; None for no cap (with `max_trials` or `timeout`).
            direction: `"maximize"` or `"minimize"`.
            backend: `"optuna"` (None too, setfit's default), which also runs SigOpt-style spaces; `"sigopt"`
                runs SigOpt's offline driver (`sigopt[lite]`, installed separately: an ImportError naming it
                otherwise).
            hp_name: setfit's trial-naming function (accepted; Optuna names trials by number).
            **kwargs: Optuna's `sampler`, `pruner`, `storage` (a URL, a `.db` or `.log`/`.jsonl` path, or a storage
                object), `study_name`, `load_if_exists`, `timeout`, `n_jobs` (1 only: trials share the trainer),
                `gc_after_trial`, `callbacks`, `catch`, `show_progress_bar`; and, for several workers sharing one
                study through a database, `max_trials` (stop once the study holds that many complete trials) and
                `heartbeat_interval`, `grace_period`, `max_retry` (re-run a dead worker's trials; see
                [`create_study`][setfit_lite.search.create_study]).

        Returns:
            The best run: its trial number, objective, hyperparameters and the Optuna study
            ([`BestRun`][setfit_lite.search.BestRun]).

        Raises:
            ValueError: No `model_init` or no `eval_dataset`, a bad `direction` or search space.
            TypeError: An unknown keyword argument, or a `compute_objective` that is not callable.
            NoCompletedTrialError: No trial completed.

        Example:
            ```python
            best = trainer.hyperparameter_search(n_trials=5)
            trainer.train(trial=best.hyperparameters)
            ```
        """
        return run_hyperparameter_search(self, hp_space=hp_space, compute_objective=compute_objective,
                                         n_trials=n_trials, direction=direction, backend=backend,
                                         hp_name=hp_name, **kwargs)

    def apply_hyperparameters(self, params: dict[str, Any], final_model: bool = False) -> None:
        """Use hyperparameters for the next `train()`: training arguments, head parameters and `model_init`'s.

        Args:
            params: The hyperparameters by name; a name is routed to the training arguments, the head's
                parameters or `model_init`'s, whichever takes it.
            final_model: Whether to build a fresh model from `model_init` now (for the final training after a
                search).

        Raises:
            TypeError: A name nothing takes.
            ValueError: A value a training argument refuses.
        """
        routing.apply_hyperparameters(self, params, final_model=final_model)

    def _metric_inputs(self) -> MetricInputs:
        """What setfit gives a callable metric, from class ids: the predictions as a CPU tensor
        (``predict(..., use_labels=False)``) and the true labels as a list; with string labels both are class ids
        (setfit encodes them), with other labels the label values."""
        labels = self.model.labels

        def convert(y_pred: np.ndarray, y_true: np.ndarray) -> tuple[torch.Tensor, Any]:
            if y_true.ndim > 1 or labels is None or any(isinstance(label, str) for label in labels):
                return torch.as_tensor(y_pred), y_true.tolist() if y_true.ndim > 1 else y_true
            values = np.asarray(labels)
            return torch.as_tensor(values[y_pred]), values[y_true].tolist()

        return convert

    def push_to_hub(self, *args: Any, **kwargs: Any) -> None:
        """setfit's upload of the model to the Hugging Face Hub: `SetFitModel.push_to_hub`, which is not available
        here (`RuntimeError`); save the model with `model.save_pretrained(path)` and upload the folder.

        Raises:
            RuntimeError: Always.
        """
        self.model.push_to_hub(*args, **kwargs)


def _column_names(dataset: Any) -> list[str] | None:
    """The column names of a table (a ``DatasetDict``: its split names, as setfit reads them), else None."""
    if is_dataset(dataset) or is_dataset_dict(dataset):
        return list(dataset.column_names)
    if is_dataframe(dataset):
        return [str(name) for name in dataset.columns]
    if isinstance(dataset, Mapping):
        return list(dataset)
    if isinstance(dataset, (list, tuple)) and dataset and all(isinstance(row, Mapping) for row in dataset):
        return list(dict.fromkeys(name for row in dataset for name in row))
    return None


# ---- setfit's deprecated 0.x trainers ---------------------------------------------------------------------------
def warn_deprecated(old: str, new: str) -> None:
    """setfit's `DeprecationWarning` for its 0.x trainer ``old``, replaced by ``new``."""
    warnings.warn(f"`{old}` has been deprecated and will be removed in v2.0.0 of SetFit. Please use `{new}` "
                  "instead.", DeprecationWarning, stacklevel=3)


def legacy_arguments(loss_class: Any, num_iterations: int, num_epochs: int, learning_rate: float,
                     batch_size: int, seed: int, use_amp: bool, warmup_proportion: float,
                     **extra: Any) -> TrainingArguments:
    """setfit's mapping of the 0.x keywords: one learning rate for body and head, setfit's pair sampling
    (`num_iterations`), which these trainers always used (so no warning that it selects it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="num_iterations is setfit's legacy pair sampling")
        return TrainingArguments(num_iterations=num_iterations, num_epochs=num_epochs,
                                 body_learning_rate=learning_rate,
                                 head_learning_rate=learning_rate, batch_size=batch_size, seed=seed,
                                 use_amp=use_amp, warmup_proportion=warmup_proportion, loss=loss_class, **extra)


class SetFitTrainer(Trainer):
    """setfit's deprecated `SetFitTrainer`: a `Trainer` built from setfit 0.x's keywords (`DeprecationWarning`).

    Args:
        model: As in `Trainer`.
        train_dataset: As in `Trainer`.
        eval_dataset: As in `Trainer`.
        model_init: As in `Trainer`.
        metric: As in `Trainer`.
        metric_kwargs: As in `Trainer`.
        loss_class: `TrainingArguments.loss`.
        num_iterations: `TrainingArguments.num_iterations` (setfit's pair sampling).
        num_epochs: `TrainingArguments.num_epochs`.
        learning_rate: The body's and the head's learning rate.
        batch_size: `TrainingArguments.batch_size`.
        seed: `TrainingArguments.seed`.
        column_mapping: As in `Trainer`.
        use_amp: `TrainingArguments.use_amp`.
        warmup_proportion: `TrainingArguments.warmup_proportion`.
        distance_metric: `TrainingArguments.distance_metric`.
        margin: `TrainingArguments.margin`.
        samples_per_label: `TrainingArguments.samples_per_label`.
    """

    def __init__(self, model: SetFitModel | None = None, train_dataset: Any = None, eval_dataset: Any = None,
                 model_init: Callable[..., SetFitModel] | None = None, metric: str | Callable = "accuracy",
                 metric_kwargs: dict[str, Any] | None = None, loss_class: Any = "CosineSimilarityLoss",
                 num_iterations: int = 20, num_epochs: int = 1, learning_rate: float = 2e-5, batch_size: int = 16,
                 seed: int = 42, column_mapping: dict[str, str] | None = None, use_amp: bool = False,
                 warmup_proportion: float = 0.1, distance_metric: Any = None, margin: float = 0.25,
                 samples_per_label: int = 2) -> None:
        warn_deprecated("SetFitTrainer", "Trainer")
        args = legacy_arguments(loss_class, num_iterations, num_epochs, learning_rate, batch_size, seed, use_amp,
                                 warmup_proportion, distance_metric=distance_metric, margin=margin,
                                 samples_per_label=samples_per_label)
        super().__init__(model=model, args=args, train_dataset=train_dataset, eval_dataset=eval_dataset,
                         model_init=model_init, metric=metric, metric_kwargs=metric_kwargs,
                         column_mapping=column_mapping)
