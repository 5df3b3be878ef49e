"""AbsaTrainer: setfit's ABSA trainer, two `Trainer` runs over one dataset.

The dataset (one row per aspect: ``text``, ``span``, ``label``, ``ordinal``) is checked once, before spaCy or any
model runs. Per sentence, the gold aspects are matched to spaCy tokens; the aspect model learns them as
``"aspect"`` and every candidate span that does not overlap one as ``"no aspect"`` (where candidates overlap, also
those beside a gold aspect that is a candidate: `negative_candidates`); the polarity model learns the gold aspects'
labels.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..trainer import Trainer
from ..training_args import TrainingArguments
from .data import AspectRows, gold_slices, negative_candidates, read_aspect_rows
from .modeling import ASPECT_LABELS, SAVED_ASPECT_THRESHOLD, AbsaModel, AspectModel, PolarityModel

logger = logging.getLogger(__name__)

__all__ = ["AbsaTrainer", "FALLBACK_THRESHOLDS", "MIN_TRAINING_ASPECTS_KEPT"]

#: the least share of its own training aspects the trained aspect model must score at or above its threshold to keep
#: it; below, it falls back to the highest of `FALLBACK_THRESHOLDS` that keeps that share: a model trained on a few
#: sentences is not that confident
MIN_TRAINING_ASPECTS_KEPT = 0.5
#: the thresholds `AbsaTrainer.settle_threshold` tries below the model's own, highest first: the default before 0.95
#: (0.85), then setfit's argmax (0.5)
FALLBACK_THRESHOLDS = (0.85, SAVED_ASPECT_THRESHOLD)


class AbsaTrainer:
    """Trains an `AbsaModel`: its aspect model, then its polarity model.

    Args:
        model: the model to train.
        args: the aspect model's training arguments, and the polarity model's when ``polarity_args`` is None
            (then, when they save checkpoints, each model's go to its own subfolder of ``output_dir``,
            ``aspect/`` and ``polarity/``).
        polarity_args: the polarity model's training arguments.
        train_dataset: one row per aspect with the columns ``text``, ``span``, ``label``, ``ordinal`` (a
            ``datasets.Dataset``, a DataFrame, a dict of lists or a list of dicts).
        eval_dataset: as ``train_dataset``, for `evaluate`.
        metric: the metric of both models' evaluation (a name or a callable, as for `Trainer`).
        metric_kwargs: keyword arguments of the metric.
        callbacks: transformers ``TrainerCallback`` instances (or classes) given to both trainers.
        column_mapping: ``{dataset column: setfit's column name}``, e.g. ``{"sentence": "text"}``.

    Raises:
        TypeError: ``model`` is not an AbsaModel, or an argument has the wrong type.
        ValueError: a dataset lacks a column or has a bad value (named, before any work).

    Examples:
        >>> trainer = AbsaTrainer(model, train_dataset=train)  # doctest: +SKIP
        >>> trainer.train()  # doctest: +SKIP
    """

    _REQUIRED_COLUMNS = {"text", "span", "label", "ordinal"}

    def __init__(self, model: AbsaModel, args: TrainingArguments | None = None,
                 polarity_args: TrainingArguments | None = None, train_dataset: Any = None,
                 eval_dataset: Any = None, metric: str | Callable = "accuracy",
                 metric_kwargs: dict[str, Any] | None = None, callbacks: list[Any] | None = None,
                 column_mapping: Mapping[str, str] | None = None) -> None:
        if not isinstance(model, AbsaModel):
            raise TypeError(f"AbsaTrainer trains an AbsaModel (AbsaModel.from_pretrained(...)), got "
                            f"{type(model).__name__}")
        for name, value in (("args", args), ("polarity_args", polarity_args)):
            if value is not None and not isinstance(value, TrainingArguments):
                raise TypeError(f"`{name}` must be a setfit_lite.TrainingArguments, got {type(value).__name__}")
        # every dataset is read and checked before spaCy or a model runs
        train_rows = self._read(train_dataset, column_mapping, "train_dataset")
        eval_rows = self._read(eval_dataset, column_mapping, "eval_dataset")
        self.model = model
        self.aspect_extractor = model.aspect_extractor
        self.column_mapping = column_mapping
        aspect_train, polarity_train = self.preprocess_dataset(model.aspect_model, model.polarity_model, train_rows)
        aspect_eval, polarity_eval = self.preprocess_dataset(model.aspect_model, model.polarity_model, eval_rows)
        aspect_args = args if args is not None else TrainingArguments()
        if polarity_args is None and aspect_args.save_strategy != "no":
            # one set of arguments for both: each model's checkpoints in its own subfolder, never mixed
            root = Path(aspect_args.output_dir)
            polarity_args = aspect_args.update({"output_dir": str(root / "polarity")})
            aspect_args = aspect_args.update({"output_dir": str(root / "aspect")})
        polarity_args = (polarity_args or args or TrainingArguments()).copy()
        self.aspect_trainer = self._trainer(model.aspect_model, aspect_args, aspect_train, aspect_eval, metric,
                                            metric_kwargs, callbacks)
        self.polarity_trainer = self._trainer(model.polarity_model, polarity_args, polarity_train, polarity_eval,
                                              metric, metric_kwargs, callbacks)

    @staticmethod
    def _trainer(model: Any, args: TrainingArguments, train: Any, evaluation: Any, metric: str | Callable,
                 metric_kwargs: dict[str, Any] | None, callbacks: list[Any] | None) -> Trainer:
        """One model's Trainer; a table left empty (no gold aspect on spaCy's tokens) stays readable as
        ``train_dataset`` / ``eval_dataset`` and is refused when used."""
        trainer = Trainer(model, args=args, train_dataset=train if train is not None and len(train) else None,
                          eval_dataset=evaluation if evaluation is not None and len(evaluation) else None,
                          metric=metric, metric_kwargs=metric_kwargs, callbacks=list(callbacks or []))
        trainer.train_dataset, trainer.eval_dataset = train, evaluation
        return trainer

    @staticmethod
    def _read(dataset: Any, column_mapping: Mapping[str, str] | None, what: str) -> AspectRows | None:
        return None if dataset is None else read_aspect_rows(dataset, column_mapping, what=what)

    def preprocess_dataset(self, aspect_model: AspectModel, polarity_model: PolarityModel,
                           dataset: Any) -> tuple[Any, Any]:
        """The aspect model's and the polarity model's training tables (``text``, ``label``) from an ABSA dataset.

        Args:
            aspect_model: formats the aspect texts (its ``span_context``).
            polarity_model: formats the polarity texts.
            dataset: an ABSA table (checked as in the constructor), already read rows, or None.

        Returns:
            Two ``datasets.Dataset`` (None, None for None): candidate spans labelled ``"aspect"``/``"no aspect"``,
            and gold aspects with their labels.
        """
        from datasets import Dataset

        if dataset is None:
            return None, None
        rows = dataset if isinstance(dataset, AspectRows) else read_aspect_rows(dataset, self.column_mapping)
        groups = rows.grouped()
        docs, candidates = self.aspect_extractor(groups, candidates=aspect_model.candidates)
        aspect_spans, aspect_labels, polarity_spans, polarity_labels = [], [], [], []
        for doc, spans, indices in zip(docs, candidates, groups.values()):
            gold, kept = gold_slices(doc, rows, indices)
            others = negative_candidates(spans, gold)
            aspect_spans.append(gold + others)
            aspect_labels += [ASPECT_LABELS[1]] * len(gold) + [ASPECT_LABELS[0]] * len(others)
            polarity_spans.append(gold)
            polarity_labels += [rows.labels[i] for i in kept]
        aspect = Dataset.from_dict({"text": list(aspect_model.prepend_aspects(docs, aspect_spans)),
                                    "label": aspect_labels})
        polarity = Dataset.from_dict({"text": list(polarity_model.prepend_aspects(docs, polarity_spans)),
                                      "label": polarity_labels})
        return aspect, polarity

    def train(self, args: TrainingArguments | None = None, polarity_args: TrainingArguments | None = None,
              trial: Any = None, **kwargs: Any) -> None:
        """Train the aspect model, then the polarity model.

        Both models' tables are checked first, as `Trainer.train` checks its data: a table that cannot train one of
        them (no rows, a single class, labels the model does not know) is a ValueError before either model trains.

        Args:
            args: the aspect model's training arguments for this call.
            polarity_args: the polarity model's training arguments for this call.
            trial: hyperparameters (a dict or an Optuna trial) applied to both, as `Trainer.train`.
            **kwargs: as `Trainer.train`.

        Raises:
            ValueError: a model's table cannot train it (named), or what `Trainer.train` raises.
        """
        # the polarity table first: it is empty when no gold aspect is on spaCy's tokens, which that error says
        _check_trainable(self.polarity_trainer, "polarity", polarity_args)
        aspect, polarity = args or self.aspect_trainer.args, polarity_args or self.polarity_trainer.args
        if "no" not in (aspect.save_strategy, polarity.save_strategy) and \
                os.path.realpath(aspect.output_dir) == os.path.realpath(polarity.output_dir):
            raise ValueError(f"the aspect and polarity models would write their checkpoints into one output_dir "
                             f"({aspect.output_dir!r}), where each run's would replace the other's: give "
                             "polarity_args an output_dir of its own")
        _check_trainable(self.aspect_trainer, "aspect", args)
        self.train_aspect(args=args, trial=trial, **kwargs)
        self.train_polarity(args=polarity_args, trial=trial, **kwargs)

    def train_aspect(self, args: TrainingArguments | None = None, trial: Any = None, **kwargs: Any) -> None:
        """Train the aspect model only (arguments as `Trainer.train`), then check its threshold
        (`settle_threshold`)."""
        _check_trainable(self.aspect_trainer, "aspect", args)
        self.aspect_trainer.train(args=args, trial=trial, **kwargs)
        self.settle_threshold()

    def settle_threshold(self) -> None:
        """Keep the aspect model's ``threshold`` when it scores at least `MIN_TRAINING_ASPECTS_KEPT` (half) of its
        own training aspects at or above it; otherwise use the highest of `FALLBACK_THRESHOLDS` below it that does
        (0.85, else setfit's argmax, 0.5), with a warning.

        The default threshold (0.95) was chosen on models trained on 64 sentences, which score their training
        aspects near their highest probability (about 0.96 there); a model trained on fewer sentences has a lower
        ceiling, and one trained on a handful scores its aspects near 0.6 and would find no aspect at all.
        Recorded in ``aspect_model.training_info["aspect_threshold"]``.
        """
        model, data = self.model.aspect_model, self.aspect_trainer.train_dataset
        texts = [] if data is None else [text for text, label in zip(data["text"], data["label"])
                                         if label == ASPECT_LABELS[1]]
        if not texts or model.threshold <= SAVED_ASPECT_THRESHOLD:
            return
        proba = model.predict_proba(texts, as_numpy=True)[:, model.labels.index(ASPECT_LABELS[1])]
        kept = float((proba >= model.threshold).mean())
        info = {"threshold": model.threshold, "training_aspects_kept": kept}
        if kept < MIN_TRAINING_ASPECTS_KEPT:
            lower = [t for t in FALLBACK_THRESHOLDS if t < model.threshold]
            used = next((t for t in lower if (proba >= t).mean() >= MIN_TRAINING_ASPECTS_KEPT), lower[-1])
            logger.warning("The aspect model scores %.0f%% of its %d training aspects at or above its threshold %s: "
                           "using %s instead%s; set aspect_model.threshold to change it.", 100 * kept, len(texts),
                           model.threshold, used, " (the more likely label)" if used == SAVED_ASPECT_THRESHOLD else "")
            model.threshold = used
        model.training_info["aspect_threshold"] = info | {"used": model.threshold}

    def train_polarity(self, args: TrainingArguments | None = None, trial: Any = None, **kwargs: Any) -> None:
        """Train the polarity model only (arguments as `Trainer.train`)."""
        _check_trainable(self.polarity_trainer, "polarity", args)
        self.polarity_trainer.train(args=args, trial=trial, **kwargs)

    def evaluate(self, dataset: Any = None) -> dict[str, dict[str, float]]:
        """Both models' metric on an ABSA table.

        Args:
            dataset: A table with `text`, `span`, `label` and `ordinal` columns (as `train_dataset`); None for
                `eval_dataset`.

        Returns:
            ``{"aspect": {metric: value}, "polarity": {metric: value}}``.

        Raises:
            ValueError: no dataset here nor at construction, or a bad table.
        """
        if dataset is None:
            aspect, polarity = self.aspect_trainer.eval_dataset, self.polarity_trainer.eval_dataset
        else:
            rows = read_aspect_rows(dataset, self.column_mapping, what="dataset")
            aspect, polarity = self.preprocess_dataset(self.model.aspect_model, self.model.polarity_model, rows)
        if aspect is None:
            raise ValueError("No evaluation dataset provided to `AbsaTrainer.evaluate` nor the `AbsaTrainer` "
                             "initialization.")
        if not len(polarity):
            raise ValueError("no aspect of the evaluation dataset falls on spaCy's token boundaries: nothing to "
                             "evaluate")
        return {"aspect": self.aspect_trainer.evaluate(aspect), "polarity": self.polarity_trainer.evaluate(polarity)}

    def add_callback(self, callback: Any) -> None:
        """Add a callback to both trainers.

        Args:
            callback: A transformers `TrainerCallback` instance, or a class to instantiate.
        """
        if isinstance(callback, type):
            callback = callback()
        self.aspect_trainer.add_callback(callback)
        self.polarity_trainer.add_callback(callback)

    def pop_callback(self, callback: Any) -> tuple[Any, Any]:
        """Remove a callback from both trainers and return it.

        Args:
            callback: The instance, or a class (its first instance is removed).

        Returns:
            `(aspect trainer's, polarity trainer's)` callback, None where absent.
        """
        return self.aspect_trainer.pop_callback(callback), self.polarity_trainer.pop_callback(callback)

    def remove_callback(self, callback: Any) -> None:
        """Remove a callback from both trainers.

        Args:
            callback: The instance, or a class (its first instance is removed).
        """
        self.aspect_trainer.remove_callback(callback)
        self.polarity_trainer.remove_callback(callback)

    def push_to_hub(self, repo_id: str, polarity_repo_id: str | None = None, **kwargs: Any) -> None:
        """setfit's upload to the Hub: not available here (see `AbsaModel.push_to_hub`).

        Args:
            repo_id: setfit's: the aspect model's repository.
            polarity_repo_id: setfit's: the polarity model's repository.
            **kwargs: setfit's upload options.

        Raises:
            RuntimeError: Always.
        """
        self.model.push_to_hub(repo_id, polarity_repo_id, **kwargs)


def _check_trainable(trainer: Trainer, which: str, args: TrainingArguments | None) -> None:
    """What `Trainer.train` checks before it trains the ``which`` model, named by the model: ValueError when its
    table has no rows (none of the aspects of train_dataset on spaCy's token boundaries), when its labels cannot
    train it (`Trainer.checked_labels`), or when ``args`` (None: the trainer's) would write checkpoints into a
    folder the model is read from, or ask for evaluations during training without an eval table
    (`Trainer.check_eval_strategy`)."""
    if trainer.train_dataset is not None and not len(trainer.train_dataset):
        raise ValueError(f"the {which} model has no training rows: no aspect of train_dataset was found at its "
                         "ordinal on spaCy's token boundaries (see the log lines)")
    trainer.check_output_dir(args or trainer.args)
    try:
        trainer.check_eval_strategy(args or trainer.args)
    except ValueError as error:
        raise ValueError(f"the {which} model: {error}") from error
    data = trainer._train_data
    if data is None:  # no train_dataset: Trainer.train says so
        return
    try:
        trainer.checked_labels(data)
    except ValueError as error:
        raise ValueError(f"the {which} model cannot train: {error}") from error
