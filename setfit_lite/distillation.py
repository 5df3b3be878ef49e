"""Knowledge distillation: a small student body learns a trained teacher's similarities on unlabelled texts.

The teacher encodes every training text once. The student is trained on batches of texts (each encoded once
per step) to reproduce the teacher's cosine similarity of every pair of the batch, so the cost grows with the
number of texts, not pairs. The student's head is then fitted on its own embeddings with the labels the
teacher predicts for those texts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from .data import LabeledData, to_labeled_data
from .losses import EmbeddingDistillationLoss, SimilarityDistillationLoss
from .modeling import SetFitModel
from .trainer import Trainer, legacy_arguments, warn_deprecated
from .training.batch_samplers import SentenceBatchSampler
from .training_args import TrainingArguments

LAYER_CHOICES = ("spread", "first")
TARGETS = ("similarities", "embeddings")


def shrink_body(model: SetFitModel, num_layers: int, keep: str | Sequence[int] = "spread") -> SetFitModel:
    """A smaller student: a new, unfitted model whose body is a copy of `model`'s with fewer transformer layers.

    The copy shares no parameters with `model`; it has no head and keeps every setting of `model` (labels, prompt,
    head settings, long-text reading), ready for
    [`DistillationTrainer`][setfit_lite.distillation.DistillationTrainer] with `model` as the teacher.

    Args:
        model: The model whose body is copied.
        num_layers: The transformer layers to keep, from 1 to the body's.
        keep: Which layers: `"spread"` evenly spaced from the first to the last (DistilBERT's initialisation
            keeps every other layer), `"first"` the lowest `num_layers`, or increasing 0-based layer indices.

    Returns:
        The student [`SetFitModel`][setfit_lite.modeling.SetFitModel].

    Raises:
        ValueError: A `num_layers` or `keep` out of range, or a body whose layers cannot be found.

    Example:
        ```python
        from setfit_lite import SetFitModel
        from setfit_lite.distillation import shrink_body

        student = shrink_body(SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2"), num_layers=3)
        ```
    """
    body = copy.deepcopy(model.model_body)
    transformer = body[0].auto_model
    config = transformer.config
    total = config.num_hidden_layers
    stacks = [module for module in transformer.modules()
              if isinstance(module, torch.nn.ModuleList) and len(module) == total]
    if len(stacks) != 1:
        raise ValueError(f"cannot find the {total} transformer layers of a {type(transformer).__name__} body")
    indices = _layer_indices(total, num_layers, keep)
    kept = torch.nn.ModuleList(stacks[0][i] for i in indices)
    parent = next(module for module in transformer.modules()
                  if any(child is stacks[0] for child in module.children()))
    name = next(key for key, child in parent.named_children() if child is stacks[0])
    setattr(parent, name, kept)
    config.num_hidden_layers = num_layers  # what a reload of the saved body builds
    if getattr(config, "layer_types", None) is not None:  # per-layer attention kinds (ModernBERT and later)
        config.layer_types = [config.layer_types[i] for i in indices]
    student = SetFitModel(body, model_head=model.head_spec, **model.settings())  # every setting save/load keeps
    student.training_info["layers_kept"] = {"of": total, "indices": indices}
    return student


def _layer_indices(total: int, num_layers: int, keep: str | Sequence[int]) -> list[int]:
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or not 1 <= num_layers <= total:
        raise ValueError(f"num_layers must be an int from 1 to the body's {total} layers, got {num_layers!r}")
    if isinstance(keep, str):
        if keep not in LAYER_CHOICES:
            raise ValueError(f"keep must be one of {LAYER_CHOICES} or a list of layer indices, got {keep!r}")
        if keep == "first":
            return list(range(num_layers))
        return [int(i) for i in np.linspace(0, total - 1, num_layers).round()]
    indices = [int(i) for i in keep]
    if len(indices) != num_layers or indices != sorted(set(indices)) or not 0 <= indices[0] <= indices[-1] < total:
        raise ValueError(f"keep must list {num_layers} increasing layer indices in 0..{total - 1}, got {keep!r}")
    return indices


class DistillationTrainer(Trainer):
    """Distil a trained teacher into a (smaller) student, like setfit's `DistillationTrainer`.

    The teacher labels the texts; the student's body learns to reproduce the teacher's in-batch cosine similarities
    (or, with `target="embeddings"`, the teacher's embeddings themselves; `args.loss` is not used), then the
    student's head is fitted on the teacher's labels.

    Args:
        teacher_model: A trained [`SetFitModel`][setfit_lite.modeling.SetFitModel].
        student_model: The model to train (such as [`shrink_body`][setfit_lite.distillation.shrink_body]'s or a
            smaller body); give it or `model_init`.
        args: As in [`Trainer`][setfit_lite.trainer.Trainer].
        train_dataset: Texts, in any form `Trainer` takes (a list of dicts, a dict of lists, ...); labels in it are
            ignored.
        eval_dataset: Labelled texts, scored with the student.
        model_init: As in `Trainer`.
        metric: As in `Trainer`.
        metric_kwargs: As in `Trainer`.
        callbacks: As in `Trainer`.
        column_mapping: As in `Trainer`.
        target: What the student body learns: `"similarities"` (the cosine similarity of every pair of a batch,
            setfit's distillation: any student width) or `"embeddings"` (each text's embedding, by mean squared
            error: the student's embeddings must have the teacher's size).

    Raises:
        TypeError: A teacher that is not a `SetFitModel`.
        ValueError: An unknown `target`. (A teacher without a fitted head is refused by `train`, before any
            work: the teacher may be trained after this trainer is built, as in setfit.)

    Example:
        ```python
        from setfit_lite import DistillationTrainer

        texts = {"text": ["an unlabelled review", "another one", "and a third"]}
        trainer = DistillationTrainer(teacher_model=teacher, student_model=student, train_dataset=texts)
        trainer.train()
        ```
    """

    def __init__(self, teacher_model: SetFitModel, student_model: SetFitModel | None = None,
                 args: TrainingArguments | None = None, train_dataset: Any = None, eval_dataset: Any = None,
                 model_init: Callable[..., SetFitModel] | None = None, metric: str | Callable = "accuracy",
                 metric_kwargs: dict[str, Any] | None = None, callbacks: list[Any] | None = None,
                 column_mapping: dict[str, str] | None = None, target: str = "similarities") -> None:
        if not isinstance(teacher_model, SetFitModel):
            raise TypeError(f"teacher_model must be a SetFitModel, got {type(teacher_model).__name__}")
        if target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
        self.target = target
        self.teacher_model = teacher_model
        super().__init__(model=student_model, args=args, train_dataset=None, eval_dataset=eval_dataset,
                         model_init=model_init, metric=metric, metric_kwargs=metric_kwargs, callbacks=callbacks,
                         column_mapping=column_mapping)
        self.train_dataset = train_dataset
        self._unlabelled = (to_labeled_data(train_dataset, column_mapping=column_mapping, require_labels=False)
                            if train_dataset is not None else None)
        self._teacher_embeddings: np.ndarray | None = None

    def train(self, args: TrainingArguments | None = None, trial: Any = None, **kwargs: Any) -> None:
        """Label the texts with the teacher, distil its similarities into the student body, fit the student head.

        Args:
            args: As in `Trainer.train`.
            trial: As in `Trainer.train`.
            **kwargs: As in `Trainer.train`.

        Raises:
            ValueError: No `train_dataset`, a teacher without a fitted head, or `target="embeddings"` with a student
                of another embedding size.
        """
        if self._unlabelled is None:
            raise ValueError("DistillationTrainer.train needs a train_dataset of texts")
        # checked here, not at construction: setfit builds both trainers first and trains the teacher in between
        self.teacher_model._check_fitted()
        self.apply_trial(args, trial)  # first: a trial with model_init replaces the student, which gets the labels
        if (calibration := (args or self.args).calibration) != "none":
            raise ValueError(f"DistillationTrainer does not calibrate (calibration={calibration!r}): its folds "
                             "would train students without the teacher; calibrate the teacher, or the distilled "
                             "student with a Trainer on labelled texts")
        teacher = self.teacher_model
        self._check_before_encoding(args or self.args)
        if self.target == "embeddings":
            sizes = [teacher.embedding_dim, self.model.embedding_dim]
            if sizes[0] != sizes[1]:
                raise ValueError(f"target='embeddings' needs a student whose embeddings have the teacher's size "
                                 f"({sizes[0]}), got {sizes[1]}; use target='similarities'")
        texts = self._unlabelled.texts
        self._teacher_embeddings = teacher.encode(texts)
        proba = np.asarray(teacher.model_head.predict_proba(self._teacher_embeddings))
        if teacher.multi_label:  # each text's labels by name: a one-label model's multi-hot [1] reads as "id 1"
            predicted = [[teacher.labels[j] for j in np.flatnonzero(row)] for row in teacher.class_ids(proba)]
        else:  # plain Python labels (setfit's return types make integer labels a tensor, which training refuses)
            predicted = teacher.labels_from_proba(proba, as_numpy=True)
            predicted = predicted.tolist() if isinstance(predicted, np.ndarray) else list(predicted)
        given_labels = self.model.labels is not None
        if not given_labels:  # all the teacher's labels, also one it predicted for no text
            self.model.labels = list(teacher.labels)
        self._train_data = LabeledData(texts, predicted, self._unlabelled.columns)
        try:
            super().train(args, None, **kwargs)
        except BaseException:
            if not given_labels and self.model.model_head is None:  # refused before training: the student as it was
                self.model.labels = None
            raise
        finally:
            self._train_data = None
        self.model.training_info["distilled_from"] = teacher.source or "a SetFitModel in memory"

    def _check_before_encoding(self, args: TrainingArguments) -> None:
        """What `Trainer.train` checks of the labels and the output folder, made before the teacher encodes the
        texts (the longest step on a large set): the student's labels hold the teacher's, the evaluation labels
        are the teacher's, and the checkpoints' folder is not one a model is read from."""
        teacher = self.teacher_model
        self.check_output_dir(args)
        if self.model.labels is not None:
            missing = [label for label in teacher.labels if label not in self.model.labels]
            if missing:
                raise ValueError(f"the student's labels {list(self.model.labels)} lack the teacher's {missing}: the "
                                 "student learns the teacher's labels (build it without labels=, or with the "
                                 f"teacher's {list(teacher.labels)})")
        if self._eval_data is not None:
            self.model_labels_check(self._eval_data, list(teacher.labels), teacher.multi_label)

    def read_folders(self) -> list[Any]:
        """The student's folder and the teacher's."""
        return [*super().read_folders(), self.teacher_model.source_folder]

    def _batch_labels(self, ids: np.ndarray) -> Callable[[np.ndarray], torch.Tensor]:
        return lambda rows: torch.as_tensor(rows, dtype=torch.long)  # rows of the teacher's embedding matrix

    def make_sampler(self, args: TrainingArguments, ids: np.ndarray) -> SentenceBatchSampler:
        """Batches of texts (each encoded once per step), whatever ``args.objective`` says."""
        backend = self.backend
        assert backend is not None
        batch_size = args.sentence_batch_size or args.embedding_batch_size
        return SentenceBatchSampler(ids, batch_size, args.seed, rank=backend.rank, world_size=backend.world_size)

    def embedding_loss(self, args: TrainingArguments) -> torch.nn.Module:
        """The student's in-batch cosine similarities (or its embeddings) regress onto the teacher's (the loss holds
        the teacher's embeddings; the backend moves them with the module it prepares)."""
        assert self._teacher_embeddings is not None
        teacher = torch.from_numpy(self._teacher_embeddings)
        if self.target == "similarities":
            return SimilarityDistillationLoss(teacher)
        return EmbeddingDistillationLoss(teacher)


class DistillationSetFitTrainer(DistillationTrainer):
    """setfit's deprecated `DistillationSetFitTrainer`: a `DistillationTrainer` built from setfit 0.x's keywords
    (`DeprecationWarning`).

    Args:
        teacher_model: As in `DistillationTrainer`.
        student_model: As in `DistillationTrainer`.
        train_dataset: As in `DistillationTrainer`.
        eval_dataset: As in `DistillationTrainer`.
        model_init: As in `DistillationTrainer`.
        metric: As in `DistillationTrainer`.
        loss_class: `TrainingArguments.loss`.
        num_iterations: `TrainingArguments.num_iterations`.
        num_epochs: `TrainingArguments.num_epochs`.
        learning_rate: The body's and the head's learning rate.
        batch_size: `TrainingArguments.batch_size`.
        seed: `TrainingArguments.seed`.
        column_mapping: As in `DistillationTrainer`.
        use_amp: `TrainingArguments.use_amp`.
        warmup_proportion: `TrainingArguments.warmup_proportion`.
    """

    def __init__(self, teacher_model: SetFitModel, student_model: SetFitModel | None = None,
                 train_dataset: Any = None, eval_dataset: Any = None,
                 model_init: Callable[..., SetFitModel] | None = None, metric: str | Callable = "accuracy",
                 loss_class: Any = "CosineSimilarityLoss", num_iterations: int = 20, num_epochs: int = 1,
                 learning_rate: float = 2e-5, batch_size: int = 16, seed: int = 42,
                 column_mapping: dict[str, str] | None = None, use_amp: bool = False,
                 warmup_proportion: float = 0.1) -> None:
        warn_deprecated("DistillationSetFitTrainer", "DistillationTrainer")
        args = legacy_arguments(loss_class, num_iterations, num_epochs, learning_rate, batch_size, seed, use_amp,
                                 warmup_proportion)
        super().__init__(teacher_model=teacher_model, student_model=student_model, args=args,
                         train_dataset=train_dataset, eval_dataset=eval_dataset, model_init=model_init,
                         metric=metric, column_mapping=column_mapping)
