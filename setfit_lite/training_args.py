"""TrainingArguments: setfit's names and (body, head) tuple semantics, plus our own options."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

OBJECTIVES = ("sentence_batch", "pairs")
SAMPLING_STRATEGIES = ("oversampling", "undersampling", "unique")
# loss names (kept here, torch-free; ``setfit_lite.losses`` builds them)
PAIR_LOSSES = ("CosineSimilarityLoss", "ContrastiveLoss", "OnlineContrastiveLoss", "CoSENTLoss", "AnglELoss")
# sentence-transformers' losses that rank every positive pair above every negative one
RANKING_LOSSES = ("CoSENTLoss", "AnglELoss")
TRIPLET_LOSSES = ("BatchAllTripletLoss", "BatchHardTripletLoss", "BatchSemiHardTripletLoss",
                  "BatchHardSoftMarginTripletLoss")
LOSSES = PAIR_LOSSES + TRIPLET_LOSSES
STRATEGIES = ("no", "steps", "epoch")

# setfit arguments we accept for compatibility but that do nothing here (reporting integrations).
_ACCEPTED_NO_OP = ("report_to", "run_name", "logging_dir", "logging_first_step", "eval_delay", "use_amp")


def _pair(value: Any, name: str) -> tuple[Any, Any]:
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} takes one value or a (body, head) pair, got {value!r}")
        return tuple(value)  # type: ignore[return-value]
    return value, value


@dataclass
class TrainingArguments:
    """Arguments of :class:`setfit_lite.Trainer`, with the names of ``setfit.TrainingArguments``.

    Tuple-valued arguments are ``(embedding phase, classifier phase)``; a single value applies to both,
    except ``body_learning_rate`` whose single value is the body's rate in the embedding phase.

    Differences from setfit, on purpose:
    - ``objective="sentence_batch"`` (default) encodes each sentence of a label-balanced batch once and
      trains on every pair of the batch; ``objective="pairs"`` reproduces setfit's pair sampling
      (``sampling_strategy``/``num_iterations``). With sentence batches an epoch is one pass over the
      data but at least ``min_steps_per_epoch`` steps (a 16-sentence set would otherwise give one step). Its
      default (None) grows with the pairs to learn: the larger of ``K**2`` for K classes (4 to 32) and the
      steps that put each pair of the N training texts in a batch of b about 1.75 times
      (``1.75 * N(N-1) / (b(b-1))``), capped at 128.
    - ``body_learning_rate`` defaults to ``(1e-4, 1e-5)`` with sentence batches (each step averages ~120 pairs)
      and to setfit's ``(2e-5, 1e-5)`` with ``objective="pairs"``. Half the steps at twice the rate of the
      previous defaults (5e-5) scored as well or better in less time (benchmarks/README.md: Emotion 16 per class
      0.511 against 0.500 on validation, in 26 s against 48 s).
    - ``freeze_word_embeddings``: None (default) freezes the word-embedding matrix during body training only when
      it has more than 100k rows (multilingual bodies), where it dominates the optimizer's time; True/False force it.
    - ``backend``/``precision``/``compile`` select the device (see ``trainers``): bf16 and fp16, not only fp16.
      ``precision="auto"`` (default) is bf16 autocast where the device computes bf16 natively (CPUs with AMX or
      AVX512-BF16, GPUs with bf16) and fp32 elsewhere; prediction always runs in fp32.
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
    warmup_proportion: float = 0.1
    l2_weight: float | None = 0.01
    max_length: int | None = None
    samples_per_label: int = 2
    show_progress_bar: bool = True
    seed: int = 42
    logging_strategy: str = "steps"
    logging_steps: int = 50
    eval_strategy: str = "no"
    eval_steps: int | None = None
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
    precision: str = "auto"
    compile: bool = False
    prompt: str | None = None
    freeze_word_embeddings: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def __init__(self, **kwargs: Any) -> None:
        names = {f.name for f in fields(self)} - {"extra"}
        unknown = sorted(k for k in kwargs if k not in names and k not in _ACCEPTED_NO_OP
                         and k != "evaluation_strategy")
        if unknown:
            raise TypeError(f"TrainingArguments got unknown argument(s): {', '.join(unknown)}. "
                            f"Known arguments: {', '.join(sorted(names))}")
        if "evaluation_strategy" in kwargs:
            warnings.warn("`evaluation_strategy` is deprecated, use `eval_strategy`", FutureWarning, stacklevel=2)
            kwargs.setdefault("eval_strategy", kwargs.pop("evaluation_strategy"))
        for f in fields(self):
            if f.name == "extra":
                continue
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            setattr(self, f.name, kwargs.pop(f.name, default))
        self.extra = {k: kwargs[k] for k in _ACCEPTED_NO_OP if k in kwargs}
        self.__post_init__()

    def __post_init__(self) -> None:
        self.embedding_batch_size, self.classifier_batch_size = _pair(self.batch_size, "batch_size")
        self.embedding_num_epochs, self.classifier_num_epochs = _pair(self.num_epochs, "num_epochs")
        rate = self.body_learning_rate
        if rate is None:
            rate = (1e-4 if self.objective == "sentence_batch" else 2e-5, 1e-5)
        self.body_embedding_learning_rate, self.body_classifier_learning_rate = _pair(rate, "body_learning_rate")
        for name in ("embedding_batch_size", "classifier_batch_size", "embedding_num_epochs", "classifier_num_epochs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("body_embedding_learning_rate", "body_classifier_learning_rate", "head_learning_rate"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        if self.sampling_strategy not in SAMPLING_STRATEGIES:
            raise ValueError(f"sampling_strategy must be one of {SAMPLING_STRATEGIES}, got {self.sampling_strategy!r}")
        floor = self.min_steps_per_epoch
        if floor is not None and (isinstance(floor, bool) or not isinstance(floor, int) or floor < 1):
            raise ValueError(f"min_steps_per_epoch must be None or a positive integer, got {floor!r}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.num_iterations is not None and self.objective == "sentence_batch":
            warnings.warn("num_iterations is setfit's legacy pair sampling; it selects objective='pairs'",
                          stacklevel=3)
            self.objective = "pairs"
        if not 0.0 <= self.warmup_proportion <= 1.0:
            raise ValueError(f"warmup_proportion must be in [0, 1], got {self.warmup_proportion!r}")
        if self.max_length is not None and (not isinstance(self.max_length, int) or self.max_length < 2):
            raise ValueError(f"max_length must be an integer >= 2 or None, got {self.max_length!r}")
        for name in ("eval_strategy", "save_strategy", "logging_strategy"):
            value = getattr(self, name)
            if hasattr(value, "value"):  # transformers' IntervalStrategy enum
                value = value.value
                setattr(self, name, value)
            if value not in STRATEGIES:
                raise ValueError(f"{name} must be one of {STRATEGIES}, got {value!r}")
        if self.eval_strategy == "steps" and self.eval_steps is None:
            self.eval_steps = self.logging_steps
        if self.load_best_model_at_end and self.eval_strategy == "no":
            raise ValueError("load_best_model_at_end needs eval_strategy 'steps' or 'epoch'")
        loss_name = self.loss if isinstance(self.loss, str) else getattr(self.loss, "__name__", None)
        if loss_name not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES} (name or sentence-transformers class), got {self.loss!r}")
        self.loss_name = loss_name

    # ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable arguments (for model cards, checkpoints and search)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
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
        by_classes = min(32, max(4, num_classes**2))
        b = max(2, batch_size)
        by_pairs = math.ceil(1.75 * num_texts * (num_texts - 1) / (b * (b - 1))) if num_texts > 1 else 0
        return min(128, max(by_classes, by_pairs))

    def update(self, arguments: dict[str, Any], ignore_extra: bool = False) -> TrainingArguments:
        """A copy with ``arguments`` replaced; unknown names raise ``TypeError`` unless ``ignore_extra``."""
        current = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        known = {k: v for k, v in arguments.items() if k in current}
        if not ignore_extra and len(known) != len(arguments):
            unknown = sorted(set(arguments) - set(known))
            raise TypeError(f"TrainingArguments has no argument(s) {', '.join(unknown)}")
        current.update(known)
        return TrainingArguments(**current, **self.extra)

    def copy(self) -> TrainingArguments:
        return self.update({})
