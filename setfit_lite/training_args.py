"""TrainingArguments: setfit's names and (body, head) tuple semantics, plus our own options."""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from .config.loss_names import loss_name
from .config.rules import is_integer
from .config.sampling_policy import MAX_FLOOR_STEPS, default_body_learning_rate, steps_per_epoch_floor
from .config.training_rules import TRAINING_RULES, check_argument

__all__ = ["MAX_FLOOR_STEPS", "TrainingArguments", "check_argument", "is_integer"]


def _pair(value: Any) -> tuple[Any, Any]:
    """``(body, head)`` of a checked value: its pair, or the value twice."""
    return value if isinstance(value, tuple) else (value, value)


@dataclass
class TrainingArguments:
    """Arguments of :class:`setfit_lite.Trainer`, with the names of ``setfit.TrainingArguments``.

    As in setfit, ``batch_size``, ``num_epochs`` and ``body_learning_rate`` are ``(embedding phase, classifier
    phase)`` pairs: a single value is stored as the pair ``(value, value)``, and ``embedding_batch_size``,
    ``classifier_batch_size``, ``embedding_num_epochs``, ``classifier_num_epochs``, ``body_embedding_learning_rate``
    and ``body_classifier_learning_rate`` read its halves. Strategies are transformers' ``IntervalStrategy`` values
    ("no", "steps", "epoch"; the enum members are accepted and compare equal). As in setfit, ``eval_steps`` alone
    turns on ``eval_strategy="steps"``; ``eval_strategy="steps"`` without ``eval_steps`` evaluates every
    ``logging_steps``; ``load_best_model_at_end`` needs a saving strategy equal to the evaluation strategy (and
    ``save_steps`` a multiple of ``eval_steps``) when checkpoints are saved; ``report_to`` is kept as a list.

    Differences from setfit, on purpose:
    - ``objective="sentence_batch"`` (default) encodes each sentence of a label-balanced batch once and
      trains on every pair of the batch; ``objective="pairs"`` reproduces setfit's pair sampling
      (``sampling_strategy``/``num_iterations``). With sentence batches an epoch is one pass over the
      data but at least ``min_steps_per_epoch`` steps (a 16-sentence set would otherwise give one step). Its
      default (None) grows with the pairs to learn: the larger of ``K**2`` for K classes (4 to 32) and the
      steps that put each pair of the N training texts in a batch of b about 1.75 times
      (``1.75 * N(N-1) / (b(b-1))``), capped at 384 (``MAX_FLOOR_STEPS``, chosen on validation over 128: at 64 per
      class, 384 steps scored +4.4 / +3.8 points on SST-5 / Emotion validation).
    - ``body_learning_rate`` defaults (None) to ``(1e-4, 1e-5)`` with sentence batches (each step averages ~120 pairs)
      and to setfit's ``(2e-5, 1e-5)`` with ``objective="pairs"``. Half the steps at twice the rate of the
      previous defaults (5e-5) scored as well or better in less time (benchmarks/README.md: Emotion 16 per class
      0.511 against 0.500 on validation, in 26 s against 48 s).
    - ``label_anchors="auto"`` (default) uses the label names when there are any (str labels, or ``labels=``
      names given to the model; single-label, at most 64 classes): each class's ``anchor_template`` text ("This
      text is about {label}.") is encoded in every batch of the embedding phase, and ``anchor_weight`` times
      ``anchor_loss`` ties the sentences to them: ``"pairs"`` (default, AncSetFit) the balanced cosine loss on every
      (sentence, label text) pair, ``"softmax"`` (FastFit) a cross-entropy over ``cos / anchor_temperature``.
      ``model.training_info["label_anchors"]`` says whether they were used and why not. ``"off"`` trains as
      before. ``anchors_per_batch`` (None: every class's text in every batch, up to 64 classes) puts only that
      many label texts in a batch (at least the batch size): those of its classes and random others, so a step
      encodes at most twice the batch however many classes there are, and anchors work beyond 64 classes.
      ``label_prior_temperature`` (None: off) also folds the label texts into a logistic-regression head as a
      prior. Chosen on validation splits; measured on the accuracy benchmark page (docs/benchmarks/accuracy.md).
    - ``zero_shot="prototypes"`` (default): when every class has a single distinct training text
      (``get_templated_dataset``'s zero-shot set), contrastive training has no positive pair to learn from and
      only pushes the label sentences apart, so the body is left as it is and the head is the nearest of those
      texts by cosine (probabilities: a softmax over ``cos / anchor_temperature``, stored as a logistic
      regression). ``model.training_info["zero_shot"]`` says which was used. ``"train"`` trains the body and a
      logistic regression as for real examples (setfit's behaviour). Zero-shot Emotion, validation split,
      MiniLM-L6: 0.411 against 0.330-0.350 (benchmarks/README.md, "Zero-shot").
    - ``calibration="none"`` (default): ``predict_proba`` gives the head's probabilities. ``"temperature"``: a
      temperature dividing the head's log-probabilities, fitted on out-of-fold predictions of the training
      examples (``setfit_lite.heads.calibration``, out-of-fold negative log-likelihood), saved with the head and
      applied by ``predict_proba`` on every tier (torch, ONNX, static); it never changes a prediction. When the
      body is trained, each fold's whole model (body from its untrained state, and head) is trained without the
      fold (cross-fitting, ``calibration_folds`` folds, default 2: 2.5-3x the training time); a head refitted
      on folds of the trained body's embeddings would see rows the body already pulled to their class and sharpen
      far too much (validation splits, MiniLM, 8 per class, seeds 0-1: SST-5 ECE 0.47/0.48 that way against
      0.05/0.15 cross-fitted, Emotion 0.40/0.44 against 0.13/0.10). With the body not trained
      (``body_learning_rate=0``), k-fold refits of the head on the embeddings (k = ``calibration_folds``, default
      min(5, smallest class count)). Not for multi-label heads, zero-shot prototypes, end-to-end torch heads, a
      class with one example (``model.training_info["calibration"]`` says why) or distributed training (refused).
    - ``head_class_weight="auto"`` (default) trains the head with ``class_weight="balanced"`` (each class's
      examples weigh ``n / (K * count)``; the LogisticRegression's own parameter, the differentiable head's
      weighted cross-entropy) when the single-label training labels are skewed: the largest class has at least
      twice the rows of the smallest (:func:`setfit_lite.metrics.is_skewed`); ``"balanced"`` always, None never.
      A ``class_weight`` given in ``head_params`` (or set on a head instance) wins.
      ``model.training_info["class_weight"]`` records what was used. Chosen on validation data (SST-5 and
      Emotion, 32/16/8/4/2(/2) rows per class, MiniLM-L6, 300 validation texts): macro-F1 0.065 -> 0.264 and
      0.215 -> 0.447 with the LogisticRegression (benchmarks/README.md, "Imbalanced few-shot sets").
    - ``self_training="auto"`` (default) decides per task whether an ``unlabeled_dataset`` is used: by
      cross-validation on the labelled texts only (``self_training_folds`` stratified folds, default 3, at most the
      smallest class's count; each fold's model is trained from the untrained body without the fold, scored on it,
      self-trained on at most 1,024 pool texts exactly as the real run, and scored again); the pool is used when the
      held-out accuracy gains more than ``self_training_margin`` (default 0: at least one held-out text more
      right), else the model trained on the labelled texts alone is kept. A class with one labelled text cannot be
      cross-validated: the pool is not used. ``True`` always self-trains, ``False`` ignores the pool. The decision
      and its figures are in ``model.training_info["self_training"]`` and logged (``self_training_used``,
      ``self_training_cv_*``). Cost: about ``2 * folds`` extra trainings on (folds - 1)/folds of the labels.
    - ``pseudo_label_method="knn"`` (default) keeps a pool text only when a strict majority of its
      ``pseudo_label_neighbors`` (3) nearest labelled texts in the trained body's embedding space has the class
      the head predicts (HAST's agreement rule, Schroeder and Heyer 2024); ``"confidence"`` is the head's
      confidence alone (``self_training=True, pseudo_label_method="confidence"``: confidence-only self-training,
      always on). The choice of these defaults on validation splits is in
      docs/benchmarks/unlabeled.md.
    - ``self_training_rounds`` (default 1), ``pseudo_label_threshold`` (0.5), ``pseudo_labels_per_class`` (4.0)
      and ``self_training_body`` (True) shape a round: it pseudo-labels the pool with the current (calibrated,
      with ``calibration``) head, keeping per class the most confident texts with probability >= the threshold
      (and, with ``"knn"``, the vote's agreement), at most ``pseudo_labels_per_class`` times the class's labelled
      count, and trains the body (for as many steps as the labelled set alone) and the head again on the labelled
      plus pseudo-labelled texts (:mod:`setfit_lite.training.self_training`); 0 rounds ignore the pool.
      Chosen on validation splits (MiniLM-L6, 8 per class, 2,000 pool texts, 300 validation texts, seed 0;
      docs/benchmarks/unlabeled.md): SST-2 65.7 -> 72.7 with the body trained again, 63.7 with the head only,
      72.0 with two rounds (the threshold cannot matter for two classes); on SST-5 the same setting lost points
      (38.7 -> 34.3; head only 38.3): what ``self_training="auto"`` guards against.
    - ``freeze_word_embeddings``: None (default) freezes the word-embedding matrix during body training only when
      it has more than 100k rows (multilingual bodies), where it dominates the optimizer's time; True/False force it.
    - ``load_best_model_at_end`` also works without checkpoints (``save_strategy="no"``, our default; setfit
      saves every 500 steps by default): the best body is kept in memory.
    - The head phase is evaluated too: a torch head on fixed embeddings after each of its epochs when there is an
      eval dataset and ``eval_strategy`` or ``early_stopping_patience`` is set (its logs: ``head_eval_*``), an
      end-to-end head at the points of ``eval_strategy``; ``early_stopping_patience`` and
      ``load_best_model_at_end`` apply to those evaluations as to the body's (see
      :mod:`setfit_lite.training.head_phase`).
    - ``report_to`` runs transformers' reporting callbacks (``"tensorboard"``, ``"mlflow"``, ...; see
      :mod:`setfit_lite.reporting`): default ``["none"]`` (setfit's default is "all"), ``"all"`` every installed
      one; an unknown name is a ``ValueError`` and one that is not installed an ``ImportError``, here, as are a
      name given twice and ``"none"`` or ``"all"`` with other names. ``run_name`` names the run and
      ``logging_dir`` is TensorBoard's folder (default ``output_dir/runs/<date>_<host>``; an existing file there
      is a ``ValueError``).
      ``logging_first_step``, ``eval_delay`` and ``use_amp`` are accepted and stored, and do nothing
      (``precision`` chooses mixed precision).
    - ``backend``/``precision``/``compile`` select the device (see ``trainers``): bf16 and fp16, not only fp16.
      ``precision="auto"`` (default) is bf16 autocast where the device computes bf16 natively (CPUs with AMX or
      AVX512-BF16, GPUs with bf16) and fp32 elsewhere. It applies to body training; the embeddings the head is
      fitted and evaluated on are computed as ``predict`` computes them, in the model's ``inference_precision``
      (its "auto" is this rule for the body's device; ``SetFitModel(..., inference_precision="fp32")`` forces fp32).
    - ``backend_options``: the chosen backend's options by name (docs/backends.md), e.g.
      ``{"num_threads": 8}`` or ``{"use_ipex": True}`` (cpu), ``{"gaudi_config": "gaudi_config.json"}`` (hpu),
      ``{"ipu_config": {"replication_factor": 2}}`` (ipu), ``{"dist_timeout": 600}`` (cpu, cuda, hpu). A name the
      backend does not take is a ``TypeError`` when training starts.

    Every argument is checked here (and by :meth:`update`, hence ``Trainer.apply_hyperparameters``): a wrong
    type is a ``TypeError``, a value out of range a ``ValueError``, each naming the argument, the value and what
    is allowed (:func:`check_argument`). Integers and reals may be numpy numbers; booleans must be booleans.
    Values with a meaning of their own:
    - ``body_learning_rate=0`` (or a 0 in its pair) freezes the body in that phase: with 0 for the embedding
      phase the contrastive phase is skipped and only the head is trained on the body as loaded. NaN and
      infinite rates are refused; ``head_learning_rate`` must be > 0.
    - ``max_steps=-1`` and ``eval_max_steps=-1`` (defaults): no limit; otherwise a positive integer.
    - ``save_total_limit=None``: keep every checkpoint; ``max_grad_norm=None`` or ``0``: no gradient clipping;
      ``early_stopping_patience=None``: no early stopping; ``eval_steps=None``: ``logging_steps``.
    - ``backend`` is one of ``trainers.names.NAMES`` (any case) or a ``trainers.Backend`` (then
      ``backend_options`` must be None); ``precision`` one of ``trainers.names.PRECISION_NAMES``. Whether the
      device exists is checked when training starts.
    """

    output_dir: str = "checkpoints"
    batch_size: tuple[int, int] | int = (16, 2)
    num_epochs: tuple[int, int] | int = (1, 16)
    max_steps: int = -1
    sampling_strategy: str = "oversampling"
    num_iterations: int | None = None
    body_learning_rate: tuple[float, float] | float | None = None
    head_learning_rate: float = 1e-2
    loss: Any = "CosineSimilarityLoss"
    distance_metric: Any = None
    margin: float = 0.25
    end_to_end: bool = False
    use_amp: bool = False
    warmup_proportion: float = 0.1
    l2_weight: float | None = 0.01
    max_length: int | None = None
    samples_per_label: int = 2
    show_progress_bar: bool = True
    seed: int = 42
    report_to: list[str] | str = "none"
    run_name: str | None = None
    logging_dir: str | None = None
    logging_strategy: str = "steps"
    logging_first_step: bool = True
    logging_steps: int = 50
    eval_strategy: str = "no"
    eval_steps: int | None = None
    eval_delay: float = 0
    eval_max_steps: int = -1
    save_strategy: str = "no"
    save_steps: int = 500
    save_total_limit: int | None = 1
    load_best_model_at_end: bool = False
    metric_for_best_model: str | None = None
    greater_is_better: bool | None = None
    # setfit_lite's own
    objective: str = "sentence_batch"
    sentence_batch_size: int | None = None
    min_steps_per_epoch: int | None = None
    early_stopping_patience: int | None = None
    max_grad_norm: float | None = 1.0
    backend: str = "auto"
    backend_options: dict[str, Any] | None = None
    precision: str = "auto"
    compile: bool = False
    prompt: str | None = None
    freeze_word_embeddings: bool | None = None
    label_anchors: str = "auto"
    anchor_template: str = "This text is about {label}."
    anchor_weight: float = 1.0
    anchors_per_batch: int | None = None
    anchor_loss: str = "pairs"
    anchor_temperature: float = 0.05
    label_prior_temperature: float | None = None
    zero_shot: str = "prototypes"
    calibration: str = "none"
    calibration_folds: int | None = None
    head_class_weight: str | None = "auto"
    self_training: str | bool = "auto"
    self_training_folds: int = 3
    self_training_margin: float = 0.0
    pseudo_label_method: str = "knn"
    pseudo_label_neighbors: int = 3
    self_training_rounds: int = 1
    pseudo_label_threshold: float = 0.5
    pseudo_labels_per_class: float = 4.0
    self_training_body: bool = True
    # whether body_learning_rate was left to the objective's default (update() and copy() keep it so)
    _default_body_learning_rate: bool = field(default=True, init=False, repr=False, compare=False)

    def __init__(self, **kwargs: Any) -> None:
        names = [f.name for f in fields(self) if f.init]
        unknown = sorted(k for k in kwargs if k not in names and k != "evaluation_strategy")
        if unknown:
            raise TypeError(f"TrainingArguments got unknown argument(s): {', '.join(unknown)}. "
                            f"Known arguments: {', '.join(sorted(names))}")
        if "evaluation_strategy" in kwargs:
            warnings.warn("`evaluation_strategy` is deprecated, use `eval_strategy`", FutureWarning, stacklevel=2)
            kwargs.setdefault("eval_strategy", kwargs.pop("evaluation_strategy"))
        for f in fields(self):
            if f.init:
                default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
                setattr(self, f.name, kwargs.pop(f.name, default))
        self.__post_init__()

    def __post_init__(self) -> None:
        for name in TRAINING_RULES:
            setattr(self, name, check_argument(name, getattr(self, name)))
        self.batch_size, self.num_epochs = _pair(self.batch_size), _pair(self.num_epochs)
        if self.num_iterations is not None and self.objective == "sentence_batch":
            warnings.warn("num_iterations is setfit's legacy pair sampling; it selects objective='pairs'",
                          stacklevel=3)
            self.objective = "pairs"
        self._default_body_learning_rate = self.body_learning_rate is None
        if self.body_learning_rate is None:
            self.body_learning_rate = default_body_learning_rate(self.objective)
        self.body_learning_rate = _pair(self.body_learning_rate)
        self._check_intervals()
        if self.report_to != ["none"]:  # transformers' integrations: checked here, run by the Trainer
            from .reporting import check_report_to

            self.report_to = check_report_to(self.report_to)
        if self.backend_options and not isinstance(self.backend, str):
            raise ValueError("TrainingArguments: backend_options cannot be combined with a trainers.Backend instance "
                             "(build the instance with its options instead)")
        self.loss_name = loss_name(self.loss)

    def _check_intervals(self) -> None:
        """setfit's (transformers') rules between the logging, evaluation and saving intervals."""
        if self.logging_strategy == "steps" and self.logging_steps == 0:
            raise ValueError("TrainingArguments: logging_steps must be a positive integer with logging_strategy "
                             "'steps', got 0")
        if self.eval_steps is not None and self.eval_strategy == "no":
            self.eval_strategy = "steps"  # as setfit: eval_steps alone asks for evaluation every eval_steps
        if self.eval_strategy == "steps" and self.eval_steps is None:
            if self.logging_steps == 0:
                raise ValueError("TrainingArguments: eval_strategy 'steps' needs eval_steps or a positive "
                                 "logging_steps, got eval_steps=None and logging_steps=0")
            self.eval_steps = self.logging_steps
        if self.load_best_model_at_end and self.eval_strategy == "no":
            raise ValueError("TrainingArguments: load_best_model_at_end=True needs eval_strategy 'steps' or 'epoch', "
                             f"got {self.eval_strategy!r}")
        if self.load_best_model_at_end and self.save_strategy != "no":  # without checkpoints: kept in memory
            if self.save_strategy != self.eval_strategy:
                raise ValueError("TrainingArguments: load_best_model_at_end=True requires the save and eval strategy "
                                 f"to match, got save_strategy={self.save_strategy!r} and "
                                 f"eval_strategy={self.eval_strategy!r} (or save_strategy='no': the best model is "
                                 "kept in memory)")
            if self.eval_strategy == "steps" and self.save_steps % self.eval_steps:
                raise ValueError("TrainingArguments: load_best_model_at_end=True requires save_steps to be a round "
                                 f"multiple of eval_steps, got save_steps={self.save_steps} and "
                                 f"eval_steps={self.eval_steps}")

    # setfit's names for the halves of the (embedding phase, classifier phase) pairs
    @property
    def embedding_batch_size(self) -> int:
        return _pair(self.batch_size)[0]

    @property
    def classifier_batch_size(self) -> int:
        return _pair(self.batch_size)[1]

    @property
    def embedding_num_epochs(self) -> int:
        return _pair(self.num_epochs)[0]

    @property
    def classifier_num_epochs(self) -> int:
        return _pair(self.num_epochs)[1]

    @property
    def body_embedding_learning_rate(self) -> float:
        return _pair(self.body_learning_rate)[0]

    @property
    def body_classifier_learning_rate(self) -> float:
        return _pair(self.body_learning_rate)[1]

    # ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable arguments (for model cards, checkpoints and search)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if not f.init:
                continue
            value = getattr(self, f.name)
            if isinstance(value, Callable) and not isinstance(value, type):  # type: ignore[arg-type]
                value = getattr(value, "__name__", repr(value))
            elif isinstance(value, type):
                value = value.__name__
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return json.loads(json.dumps(out, default=str))

    def steps_per_epoch_floor(self, num_classes: int, num_texts: int = 0, batch_size: int = 16) -> int:
        """``min_steps_per_epoch``, or its default for K classes and N texts in batches of b (see the class doc)."""
        if self.min_steps_per_epoch is not None:
            return self.min_steps_per_epoch
        return steps_per_epoch_floor(num_classes, num_texts, batch_size)

    def update(self, arguments: dict[str, Any], ignore_extra: bool = False) -> TrainingArguments:
        """A copy with ``arguments`` replaced; unknown names raise ``TypeError`` unless ``ignore_extra``."""
        current = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        if self._default_body_learning_rate:
            current["body_learning_rate"] = None  # still the (new) objective's default
        known = {k: v for k, v in arguments.items() if k in current}
        if not ignore_extra and len(known) != len(arguments):
            unknown = sorted(set(arguments) - set(known))
            raise TypeError(f"TrainingArguments has no argument(s) {', '.join(unknown)}")
        current.update(known)
        return TrainingArguments(**current)

    def copy(self) -> TrainingArguments:
        return self.update({})
