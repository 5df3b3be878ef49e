"""The training loop's contract with transformers' callbacks and setfit's arguments: callbacks see the best metric
before an evaluation, `greater_is_better` follows the metric as transformers sets it, a misspelt
`metric_for_best_model` is an error, and `update` derives `eval_steps` again."""

from __future__ import annotations

from typing import Any

import pytest
from transformers import TrainerCallback

from setfit_lite import SetFitModel, Trainer, TrainingArguments


def test_greater_is_better_follows_the_metric_as_in_transformers() -> None:
    assert TrainingArguments(metric_for_best_model="accuracy").greater_is_better is True
    assert TrainingArguments(metric_for_best_model="eval_loss").greater_is_better is False
    assert TrainingArguments().greater_is_better is None
    assert TrainingArguments(metric_for_best_model="loss", greater_is_better=True).greater_is_better is True
    changed = TrainingArguments(metric_for_best_model="accuracy").update({"metric_for_best_model": "loss"})
    assert changed.greater_is_better is False  # derived again, not kept from accuracy


def test_update_derives_eval_steps_again() -> None:
    args = TrainingArguments(eval_strategy="steps", logging_steps=10)
    assert args.eval_steps == 10
    assert args.update({"eval_strategy": "no"}).eval_strategy == "no"  # came back as "steps"
    assert args.update({"logging_steps": 5}).eval_steps == 5
    assert TrainingArguments(eval_steps=7).update({"logging_steps": 5}).eval_steps == 7  # given: kept


class Spy(TrainerCallback):
    """Records the state's best metric and the new metric at each on_evaluate."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, float]] = []

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict | None = None, **kwargs: Any) -> None:
        self.seen.append((state.best_metric, metrics["eval_accuracy"]))


def _args(**kwargs: Any) -> TrainingArguments:
    return TrainingArguments(num_epochs=(1, 1), min_steps_per_epoch=6, backend="cpu", show_progress_bar=False,
                             eval_strategy="steps", eval_steps=2, seed=0, body_learning_rate=1e-2, **kwargs)


def test_callbacks_see_the_best_metric_before_the_evaluation(tiny_body_path: str, toy_data: Any,
                                                             toy_eval: Any) -> None:
    spy = Spy()
    trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=_args(metric_for_best_model="accuracy"),
                      train_dataset=toy_data, eval_dataset=toy_eval, callbacks=[spy])
    trainer.train()
    body = spy.seen[:3]  # the body's evaluations at steps 2, 4, 6
    assert body[0][0] is None
    best = None
    for (before, value), _ in zip(body, range(3)):
        assert before == best  # the best of the earlier evaluations, not yet this one
        best = value if best is None else max(best, value)


def test_a_misspelt_metric_for_best_model_is_an_error(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path),
                      args=_args(metric_for_best_model="acurracy", load_best_model_at_end=True),
                      train_dataset=toy_data, eval_dataset=toy_eval)
    with pytest.raises(KeyError, match=r"metric_for_best_model='acurracy' is not among the evaluation's metrics"):
        trainer.train()
