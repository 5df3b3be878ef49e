"""The eval metric during body training: a throwaway head fitted on the current body, scored on the eval set."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..data import LabeledData, encode_labels
from ..metrics import MetricInputs, add_reported_metrics, check_best_key, compute_metric
from ..runtime.predictor import head_threshold_rule, predict_ids
from ..training_args import TrainingArguments
from .callbacks import EarlyStopping
from .checkpoints import rng_state, set_rng_state
from .head_fit import fit_head
from .progress import Progress
from .session import Session

logger = logging.getLogger(__name__)


class InterimEvaluator:
    """``evaluator(session)``: the real eval metric (not only the loss) of the body as it is now.

    The training embeddings and labels are ``tokens``/``ids``; the eval set is tokenised once. A callable metric
    receives ``metric_inputs(y_pred, y_true)`` when given (as in ``Trainer.evaluate``).
    """

    def __init__(self, data: LabeledData, metric: str | Callable, metric_kwargs: dict[str, Any] | None,
                 tokens: list[list[int]], ids: np.ndarray, metric_inputs: MetricInputs | None = None) -> None:
        self.data, self.metric, self.metric_kwargs = data, metric, metric_kwargs
        self.metric_inputs = metric_inputs
        self.tokens, self.ids = tokens, ids
        self._eval: tuple[list[list[int]], np.ndarray] | None = None

    def __call__(self, session: Session) -> dict[str, float]:
        # the evaluation draws no random number the training would have drawn: a run with evaluation on trains the
        # model a run without it trains (the throwaway head's fit and dropout used the generators)
        state = rng_state(session.backend.rng_state())
        try:
            return self._metrics(session)
        finally:
            set_rng_state(state)
            session.backend.set_rng_state(state)

    def _metrics(self, session: Session) -> dict[str, float]:
        model, args = session.model, session.args
        if self._eval is None:
            self._eval = (model.tokenize(self.data.texts), encode_labels(self.data.labels, model.labels)[0])
        eval_tokens, eval_ids = self._eval
        if args.eval_max_steps > 0:
            n = args.eval_max_steps * args.embedding_batch_size
            eval_tokens, eval_ids = eval_tokens[:n], eval_ids[:n]
        pred = self.predict(session, eval_tokens)
        metrics = compute_metric(self.metric, pred, eval_ids, self.metric_kwargs, num_classes=len(model.labels),
                                 metric_inputs=self.metric_inputs)
        best = (args.metric_for_best_model or "").removeprefix("eval_")
        metrics = add_reported_metrics(metrics, self.metric, pred, eval_ids, wanted=[best],
                                       num_classes=len(model.labels))
        return {f"eval_{k}": v for k, v in metrics.items()}

    def predict(self, session: Session, eval_tokens: list[list[int]]) -> np.ndarray:
        """Class ids (or multi-hot rows) of the eval texts: a head fitted on the body as it is now."""
        model, args = session.model, session.args
        head = model.new_head(len(model.labels), self.ids.ndim > 1)
        fit_head(head, model.embed_tokens(self.tokens), self.ids, args)
        return predict_ids(head.predict_proba(model.embed_tokens(eval_tokens)), self.ids.ndim > 1,
                           rule=head_threshold_rule(head))


class HeadEvaluator(InterimEvaluator):
    """The eval metric of ``head`` as it is being trained; with ``fixed_body`` (the head trains on embeddings
    computed once) the eval embeddings are computed once too."""

    def __init__(self, data: LabeledData, metric: str | Callable, metric_kwargs: dict[str, Any] | None,
                 ids: np.ndarray, head: Any, fixed_body: bool, metric_inputs: MetricInputs | None = None) -> None:
        super().__init__(data, metric, metric_kwargs, [], ids, metric_inputs)
        self.head, self.fixed_body = head, fixed_body
        self._embeddings: np.ndarray | None = None

    def predict(self, session: Session, eval_tokens: list[list[int]]) -> np.ndarray:
        embeddings = self._embeddings if self._embeddings is not None else session.model.embed_tokens(eval_tokens)
        if self.fixed_body:
            self._embeddings = embeddings
        return predict_ids(self.head.predict_proba(embeddings), self.ids.ndim > 1, rule=head_threshold_rule(self.head))


def greater_is_better(args: TrainingArguments) -> bool:
    """``args.greater_is_better``, or from the metric's name (losses are minimised)."""
    if args.greater_is_better is not None:
        return args.greater_is_better
    return not (args.metric_for_best_model or "metric").endswith("loss")


def new_stopper(args: TrainingArguments) -> EarlyStopping:
    return EarlyStopping(args.early_stopping_patience, greater_is_better=greater_is_better(args))


def evaluate(session: Session, evaluator: Callable[[Session], dict[str, float]], progress: Progress,
             keep: torch.nn.Module | None = None, log_prefix: str = "") -> None:
    """Evaluate, log (keys prefixed by ``log_prefix``), dispatch ``on_evaluate``, keep the best weights of ``keep``
    (default: the body) for ``load_best_model_at_end`` and ask the loop to stop after ``early_stopping_patience``
    evaluations without improvement."""
    args = session.args
    metrics = evaluator(session)
    # a misspelt name never ranks by another metric (a name computed here was checked before training)
    key = check_best_key(args.metric_for_best_model, metrics) if args.metric_for_best_model else next(iter(metrics))
    is_best, stop = progress.stopper.step(metrics[key])
    session.log({f"{log_prefix}{k}": v for k, v in metrics.items()})
    # callbacks see the best metric before this evaluation, as transformers' do (its EarlyStoppingCallback
    # compares the new value with it)
    session.event("on_evaluate", metrics=metrics)
    session.state.best_metric = progress.stopper.best
    if stop:
        logger.info("early stopping at step %d: %s did not improve for %d evaluations",
                    session.state.global_step, key, progress.stopper.patience)
        session.control.should_training_stop = True
    if is_best and args.load_best_model_at_end:
        progress.best_state = copy.deepcopy((keep if keep is not None else session.model.model_body).state_dict())


def end_phase(session: Session, progress: Progress, keep: torch.nn.Module | None = None) -> None:
    """After a phase: a stop asked for ends this phase only, and with ``load_best_model_at_end`` the best weights
    kept by `evaluate` go back into ``keep`` (default: the body)."""
    session.control.should_training_stop = False
    if progress.best_state is not None and session.args.load_best_model_at_end:
        (keep if keep is not None else session.model.model_body).load_state_dict(progress.best_state)


def body_has_steps(args: TrainingArguments) -> bool:
    """Whether ``args`` give the body contrastive training steps (epochs, steps and a learning rate)."""
    return args.embedding_num_epochs > 0 and args.max_steps != 0 and args.body_embedding_learning_rate > 0


def idle_patience(args: TrainingArguments, has_eval_data: bool, head_epochs: bool) -> str | None:
    """What ``early_stopping_patience`` will not act on, as a warning's text, or None when it applies to every phase
    that trains.

    The body is evaluated with an ``eval_strategy`` other than ``"no"``; a torch head fitted on fixed embeddings
    (``head_epochs``) is evaluated after its epochs with ``eval_strategy`` or the patience alone; nothing is
    evaluated without an eval dataset.
    """
    patience = args.early_stopping_patience
    if patience is None:
        return None
    setting = f"early_stopping_patience={patience}"
    if not has_eval_data:
        return f"{setting} stops nothing: no eval_dataset was given, so nothing is evaluated"
    if args.eval_strategy != "no":
        return None
    if head_epochs:
        if not body_has_steps(args):
            return None
        return (f"{setting} applies to the torch head's epochs only: the body is not evaluated with "
                "eval_strategy='no'; set eval_strategy='epoch' or 'steps' to stop the body's training early too")
    return (f"{setting} stops nothing: the body is not evaluated with eval_strategy='no', and this head (a "
            "scikit-learn estimator, or a torch head trained end to end) is evaluated only with an eval_strategy; "
            "set eval_strategy='epoch' or 'steps'")
