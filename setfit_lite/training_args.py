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
    """The arguments of [`Trainer`][setfit_lite.trainer.Trainer], with the names of `setfit.TrainingArguments`.

    Every argument is keyword-only and checked when the object is built (and by
    [`update`][setfit_lite.training_args.TrainingArguments.update], hence `Trainer.apply_hyperparameters`): a wrong
    type is a `TypeError`, a value out of range a `ValueError`, each naming the argument, the value and what is
    allowed. Integers and reals may be numpy numbers; booleans must be booleans. An unknown name is a `TypeError`
    listing the known ones. The values each argument allows are in the
    [table of every argument](../training.md#every-argument).

    As in setfit, `batch_size`, `num_epochs` and `body_learning_rate` are `(embedding phase, classifier phase)`
    pairs: a single value is stored as the pair `(value, value)`, and `embedding_batch_size`,
    `classifier_batch_size`, `embedding_num_epochs`, `classifier_num_epochs`, `body_embedding_learning_rate` and
    `body_classifier_learning_rate` read its halves. Strategies are transformers' `IntervalStrategy` values
    (`"no"`, `"steps"`, `"epoch"`; the enum members are accepted and compare equal).

    Args:
        output_dir: The folder checkpoints are saved in (and TensorBoard's logs, unless `logging_dir` is given); the
            one argument that may be given positionally, as in setfit (`TrainingArguments("out")`).
        batch_size: The batch size of the embedding phase and of the head's phase, as a pair or one value for both.
        num_epochs: The epochs of the embedding phase and of the head's phase, as a pair or one value for both.
        max_steps: The most optimizer steps of the embedding phase; -1 for no limit.
            0 skips the body's training.
        sampling_strategy: How `objective="pairs"` draws its pairs: setfit's `"oversampling"`, `"undersampling"`
            or `"unique"`.
        num_iterations: setfit's legacy pair count per sentence; giving it selects `objective="pairs"`.
        body_learning_rate: The body's learning rate in the embedding phase and in an end-to-end head's phase.
            None takes the objective's default: `(1e-4, 1e-5)` with sentence batches (each step averages many
            pairs), setfit's `(2e-5, 1e-5)` with `objective="pairs"`. A 0 freezes the body in that phase: with 0
            for the embedding phase the contrastive phase is skipped and only the head is trained on the body as
            loaded. NaN and infinite rates are refused. How the default was chosen: the
            [accuracy benchmark](../benchmarks/accuracy.md#how-the-defaults-were-chosen-validation-splits-only).
        head_learning_rate: The learning rate of a differentiable head
            ([`SetFitHead`][setfit_lite.heads.torch_head.SetFitHead]).
        loss: The contrastive loss of the embedding phase, by name or class.
            A name, setfit's sentence-transformers class or [`SupConLoss`][setfit_lite.losses.SupConLoss]; see
            [`build_loss`][setfit_lite.losses.build_loss] for what each name trains.
        distance_metric: The distance of the triplet losses (a sentence-transformers distance function); None for
            the loss's default.
        margin: The margin of the triplet and contrastive losses.
        end_to_end: Whether a differentiable head's phase trains the body too (setfit's end-to-end training).
        use_amp: Accepted for setfit's sake and ignored; `precision` chooses mixed precision.
        warmup_proportion: The fraction of each phase's steps over which the learning rate rises linearly to its
            value.
        l2_weight: The weight decay of a differentiable head's optimizer (AdamW); None for none.
        max_length: The most tokens of a training text; None for the body's own limit.
        samples_per_label: Accepted for setfit's sake and ignored (sentence batches are label-balanced).
        show_progress_bar: Whether training shows progress bars.
        seed: The seed of sampling, initialisation and shuffling, an integer in [0, 2**32 - 1] (numpy's and
            scikit-learn's generators take no larger seed); the same seed on the same machine gives the same model.
        report_to: The transformers reporting integrations training logs to (`"tensorboard"`, `"mlflow"`, ...).
            `"none"` (default; setfit's is `"all"`) for none, `"all"` for every installed one. An unknown name is a
            `ValueError` and one that is not installed an `ImportError`, here, as are a name given twice and
            `"none"` or `"all"` with other names.
        run_name: The run's name for the reporting integrations.
        logging_dir: TensorBoard's folder; None for `output_dir/runs/<date>_<host>`. An existing file there is a
            `ValueError`.
        logging_strategy: When training logs its loss: `"no"`, `"steps"` (every `logging_steps`) or `"epoch"`.
        logging_first_step: Accepted for setfit's sake and ignored.
        logging_steps: The steps between logs with `logging_strategy="steps"`.
        eval_strategy: When the eval dataset is scored during training: `"no"`, `"steps"` or `"epoch"`.
            As in setfit, `eval_steps` alone turns on `"steps"`. The head's phase is evaluated too: a torch head on
            fixed embeddings after each of its epochs (its logs: `head_eval_*`), an end-to-end head at the points
            of `eval_strategy`.
        eval_steps: The steps between evaluations with `eval_strategy="steps"`; None for `logging_steps`.
        eval_delay: Accepted for setfit's sake and ignored.
        eval_max_steps: The most eval batches an evaluation during training scores; -1 for the whole eval dataset.
        save_strategy: When checkpoints are saved: `"no"` (default; setfit saves every 500 steps), `"steps"` or
            `"epoch"`.
        save_steps: The steps between checkpoints with `save_strategy="steps"`.
        save_total_limit: How many checkpoints are kept: those written last, the newest always; None keeps every
            one.
        load_best_model_at_end: Whether the best evaluated model is restored when training ends.
            Without checkpoints (`save_strategy="no"`) the best body is kept in memory; with checkpoints the saving
            strategy must equal the evaluation strategy (and `save_steps` be a multiple of `eval_steps`). Needs an
            `eval_strategy` other than `"no"`.
        metric_for_best_model: The logged metric that ranks evaluations; None for the first metric.
        greater_is_better: Whether a larger `metric_for_best_model` is better; None decides from the metric's name.
        objective: How the body is trained: `"sentence_batch"` (default) or setfit's `"pairs"`.
            `"sentence_batch"` encodes each sentence of a label-balanced batch once and trains on every pair of the
            batch; `"pairs"` reproduces setfit's pair sampling (`sampling_strategy`, `num_iterations`).
        sentence_batch_size: The sentences in a batch with `objective="sentence_batch"`; None for `batch_size`'s
            embedding half.
        min_steps_per_epoch: The fewest steps of a sentence-batch epoch; None grows it with the pairs to learn.
            An epoch of sentence batches is one pass over the data but at least this many steps (a 16-sentence set
            would otherwise give one step). The default is the larger of `K**2` for K classes (4 to 32) and the
            steps that put each pair of the N training texts in a batch of b about 1.75 times
            (`1.75 * N(N-1) / (b(b-1))`), capped at `MAX_FLOOR_STEPS` (384); see
            [`steps_per_epoch_floor`][setfit_lite.training_args.TrainingArguments.steps_per_epoch_floor].
        early_stopping_patience: The evaluations without improvement after which training stops; None never stops
            early. It applies to the body's and the head's evaluations; `train()` warns when nothing is evaluated
            (no eval dataset, or `eval_strategy="no"` with a head that has no epochs) or only a torch head's epochs.
        max_grad_norm: The norm gradients are clipped to; None or 0 for no clipping.
        backend: The device training runs on: a name of `trainers.names.NAMES` (any case) or a
            [`Backend`][trainers.base.Backend] (then `backend_options` must be None). `"auto"` (default) is hpu,
            else cuda, else cpu. Whether the device exists is checked when training starts.
        backend_options: The chosen backend's options by name, such as `{"num_threads": 8}` (cpu) or
            `{"gaudi_config": "gaudi_config.json"}` (hpu).
            A name the backend does not take is a `TypeError` when training starts; each backend's options are in
            [Backends and devices](../backends.md).
        precision: The precision of body training: `"auto"` (default), `"fp32"`, `"bf16"` or `"fp16"`.
            `"auto"` is bf16 autocast where the device computes bf16 natively (CPUs with AMX or AVX512-BF16, GPUs
            with bf16) and fp32 elsewhere. The embeddings the head is fitted on are computed as `predict` computes
            them, in the model's `inference_precision`.
        compile: Whether the body is compiled with `torch.compile` for training.
        prompt: A text put before every text the body encodes, saved with the model; None keeps the model's.
        freeze_word_embeddings: Whether the word-embedding matrix is frozen during body training; None freezes it
            only when it has more than 100k rows (multilingual bodies), where it dominates the optimizer's time.
        label_anchors: Whether label names anchor the embedding phase: `"auto"` (default) when there are any,
            `"off"` never.
            There are label names with str labels or `labels=` given to the model (single-label, at most 64
            classes, or any number with `anchors_per_batch`): each class's `anchor_template` text is encoded in
            every batch of the embedding phase and `anchor_weight` times `anchor_loss` ties the sentences to them.
            `model.training_info["label_anchors"]` says whether they were used and why not.
        anchor_template: The text a label name is put in to make its anchor (`{label}` is replaced by the name).
        anchor_weight: The weight of the anchor loss beside the contrastive loss.
        anchors_per_batch: How many label texts a batch holds; None for every class's (up to 64 classes).
            A number puts the texts of the batch's classes and random others in each batch (at least the texts a
            batch can hold: the batch size, or twice it for `objective="pairs"`), so a step encodes at most twice
            the batch's texts however many classes there are.
        anchor_loss: The anchor loss: `"pairs"` (default, AncSetFit's balanced cosine loss on every (sentence,
            label text) pair) or `"softmax"` (FastFit's cross-entropy over `cos / anchor_temperature`).
        anchor_temperature: The temperature of the softmax anchor loss and of zero-shot prototypes' probabilities.
        label_prior_temperature: The temperature at which the label texts are folded into a logistic-regression
            head as a prior; None for no prior.
        zero_shot: What training does when every class has one distinct text: `"prototypes"` (default) or
            `"train"`.
            Such a set (`get_templated_dataset`'s zero-shot set) has no positive pair to learn from, so with
            `"prototypes"` the body is left as it is and the head is the nearest of those texts by cosine
            (probabilities: a softmax over `cos / anchor_temperature`, stored as a logistic regression). `"train"`
            trains the body and a logistic regression as for real examples (setfit's behaviour).
            `model.training_info["zero_shot"]` says which was used.
        calibration: Whether `predict_proba`'s probabilities are calibrated: `"none"` (default) or `"temperature"`.
            `"temperature"` fits a temperature dividing the head's log-probabilities on out-of-fold predictions of
            the training examples; it is saved with the head, applied by every tier and never changes a
            prediction. When the body is trained, each fold's whole model is trained without the fold
            (cross-fitting, 2.5-3x the training time); with the body not trained, the head is refitted on folds of
            the embeddings. Not for multi-label heads, zero-shot prototypes, end-to-end torch heads, a class with
            one example (`model.training_info["calibration"]` says why) or distributed training (refused).
        calibration_folds: The folds of the calibration's out-of-fold fit; None for 2 when the body is trained,
            else `min(5, smallest class count)`.
        head_class_weight: Whether the head weighs its classes: `"auto"` (default) whenever the single-label
            classes have unequal counts, `"balanced"` always, None never; multi-label heads are never weighed.
            The weights are `class_weight="balanced"`'s (`n / (K * count)`, all 1 for equal counts), so a few
            labels drawn 5 to 3 do not tip the head towards the larger class. A `class_weight` in `head_params`
            (or on a head instance) wins; `model.training_info["class_weight"]` records what was used.
        self_training: Whether an `unlabeled_dataset` is used: `"auto"` (default) decides by cross-validation,
            True always self-trains, False ignores it.
            `"auto"` cross-validates on the labelled texts only (`self_training_folds` stratified folds, each
            self-trained as the real run, uncalibrated) and uses the pool when the folds pseudo-labelled some pool text
            and the held-out accuracy gains at least `self_training_margin` (a tie keeps it). A class with one
            labelled text is in every fold's training and not scored; when fewer than 2 classes have 2 or more
            texts, or fewer than 3 labelled texts per class were given, nothing is scored and the pool is not used.
            The decision and its figures are in `model.training_info["self_training"]`. Cost: about
            `2 * folds` extra trainings. See [Self-training](self-training.md).
        self_training_folds: The stratified folds of `self_training="auto"`'s cross-validation (at most the
            smallest count of the classes with 2 or more labelled texts).
        self_training_margin: The least held-out accuracy gain over the labelled texts alone with which
            `self_training="auto"` uses a pool its folds tested (0: unless it costs a held-out text).
        pseudo_label_method: How pool texts are kept: `"knn"` (default), `"spread"` or `"confidence"`.
            `"knn"` keeps a pool text only when a strict majority of its `pseudo_label_neighbors` nearest labelled
            texts in the trained body's embedding space has the class the head predicts (HAST's agreement rule);
            `"spread"` only when label spreading over the labelled and pool texts (each linked to its 7 nearest;
            at most 20,000 pool texts, drawn with `seed`, in the graph, the others labelled by their 7 nearest in
            it) gives it that class; `"confidence"` is the head's confidence alone.
        pseudo_label_neighbors: The nearest labelled texts of the `"knn"` vote.
        self_training_rounds: The self-training rounds; 0 ignores the pool.
            A round pseudo-labels the pool with the current (calibrated) head, keeps per class the most confident
            texts, and trains the body (with `self_training_body`) and the head again on the labelled plus
            pseudo-labelled texts.
        pseudo_label_threshold: The least head probability a pseudo-labelled text needs.
        pseudo_labels_per_class: The most pseudo-labels a class gets, as a multiple of its labelled count.
        self_training_body: Whether each self-training round trains the body again, not only the head.

    Raises:
        TypeError: An unknown argument, or a value of the wrong type.
        ValueError: A value out of range, or arguments that contradict each other (such as
            `load_best_model_at_end=True` with `eval_strategy="no"`).

    Example:
        ```python
        from setfit_lite import TrainingArguments

        args = TrainingArguments(batch_size=16, num_epochs=1, seed=0)
        print(args.embedding_batch_size, args.classifier_batch_size)   # 16 16
        ```
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
    # values filled in from others (eval_steps from logging_steps, greater_is_better from the metric's name):
    # `update` derives them again rather than keeping them as if they had been given
    _derived: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args:  # setfit's signature: output_dir may come first, positionally (TrainingArguments("out", ...))
            if len(args) > 1 or "output_dir" in kwargs:
                raise TypeError("TrainingArguments takes at most one positional argument (output_dir), and not "
                                f"together with output_dir=; got {len(args)} positional argument(s)")
            kwargs["output_dir"] = args[0]
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
        if self.greater_is_better is None and self.metric_for_best_model:  # as transformers sets it
            self.greater_is_better = not self.metric_for_best_model.removeprefix("eval_").endswith("loss")
            self._derived += ("greater_is_better",)
        if self.report_to != ["none"]:  # transformers' integrations: checked here, run by the Trainer
            from .reporting import check_report_to

            self.report_to = check_report_to(self.report_to)
        if self.backend_options and not isinstance(self.backend, str):
            raise ValueError("TrainingArguments: backend_options cannot be combined with a trainers.Backend instance "
                             "(build the instance with its options instead)")
        if self.backend is not None and not isinstance(self.backend, str):  # a Backend keeps its own settings
            from trainers.registry import check_backend_instance

            try:
                check_backend_instance(self.backend, self.precision, self.compile)
            except ValueError as error:
                raise ValueError(f"TrainingArguments: {error}") from None
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
            self._derived += ("eval_steps",)
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
        """The arguments as JSON-serialisable values (for model cards, checkpoints and search).

        Returns:
            Each argument by name; tuples become lists, callables and classes their names.
        """
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
        """The fewest steps of a sentence-batch epoch: `min_steps_per_epoch`, or its default for this data.

        Args:
            num_classes: The number of classes K.
            num_texts: The number of training texts N.
            batch_size: The sentences in a batch b.

        Returns:
            `min_steps_per_epoch` when it is set, else the larger of `K**2` (4 to 32) and
            `1.75 * N(N-1) / (b(b-1))`, at most 384.

        Example:
            ```python
            from setfit_lite import TrainingArguments

            print(TrainingArguments().steps_per_epoch_floor(num_classes=6, num_texts=96, batch_size=16))   # 67
            ```
        """
        if self.min_steps_per_epoch is not None:
            return self.min_steps_per_epoch
        return steps_per_epoch_floor(num_classes, num_texts, batch_size)

    def update(self, arguments: dict[str, Any], ignore_extra: bool = False) -> TrainingArguments:
        """A checked copy with some arguments replaced (the hyperparameter search's way of changing them).

        Args:
            arguments: The new values by argument name.
            ignore_extra: Whether names that are not arguments are ignored rather than refused.

        Returns:
            A new `TrainingArguments`; this one is unchanged. A `body_learning_rate` left to its default follows a
            new `objective`.

        Raises:
            TypeError: A name that is not an argument (unless `ignore_extra`), or a value of the wrong type.
            ValueError: A value out of range.
        """
        current = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        if self._default_body_learning_rate:
            current["body_learning_rate"] = None  # still the (new) objective's default
        for name in self._derived:  # derived again from the new values (eval_strategy="no" stays "no")
            current[name] = None
        known = {k: v for k, v in arguments.items() if k in current}
        if not ignore_extra and len(known) != len(arguments):
            unknown = sorted(set(arguments) - set(known))
            raise TypeError(f"TrainingArguments has no argument(s) {', '.join(unknown)}")
        current.update(known)
        return TrainingArguments(**current)

    def copy(self) -> TrainingArguments:
        """A copy of these arguments.

        Returns:
            A new, equal `TrainingArguments`.
        """
        return self.update({})
