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
    assert len(body) == 3 and body[0][0] is None
    best = None
    for before, value in body:
        assert before == best  # the best of the earlier evaluations, not yet this one
        best = value if best is None else max(best, value)


def test_a_misspelt_metric_for_best_model_is_an_error(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path),
                      args=_args(metric_for_best_model="acurracy", load_best_model_at_end=True),
                      train_dataset=toy_data, eval_dataset=toy_eval)
    with pytest.raises(KeyError, match=r"metric_for_best_model='acurracy' is not among the evaluation's metrics"):
        trainer.train()


def test_logging_by_epoch_logs_each_epochs_mean_loss(tiny_body_path: str, toy_data: Any) -> None:
    args = TrainingArguments(num_epochs=(2, 1), min_steps_per_epoch=3, backend="cpu", show_progress_bar=False,
                             logging_strategy="epoch", seed=0, body_learning_rate=1e-2)
    trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=args, train_dataset=toy_data)
    trainer.train()
    losses = [entry for entry in trainer.state.log_history if "embedding_loss" in entry]
    assert len(losses) == 2 and all(entry["embedding_loss"] > 0 for entry in losses)  # one per epoch


def test_a_signal_during_the_last_epochs_end_stops_with_a_checkpoint(tiny_body_path: str, toy_data: Any,
                                                                      tmp_path) -> None:
    """SIGTERM that arrives after the last step's check (here in on_epoch_end, as during an evaluation or a save)
    stops training with a checkpoint; it was swallowed and training went on to the head."""
    import os
    import signal

    from setfit_lite.trainer import TrainingInterrupted

    class Kill(TrainerCallback):
        def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == state.max_steps:
                os.kill(os.getpid(), signal.SIGTERM)

    args = TrainingArguments(output_dir=str(tmp_path), num_epochs=(2, 1), min_steps_per_epoch=3, backend="cpu",
                             show_progress_bar=False, save_strategy="steps", save_steps=100, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model=model, args=args, train_dataset=toy_data, callbacks=[Kill()])
    with pytest.raises(TrainingInterrupted, match="checkpoint saved to .*checkpoint-6"):
        trainer.train()
    assert model.model_head is None  # the head was never fitted
    assert (tmp_path / "checkpoint-6" / "checkpoint.json").is_file()


def test_resuming_the_checkpoint_of_an_early_stop_stops_there_too(tiny_body_path: str, toy_data: Any,
                                                                  toy_eval: Any, tmp_path) -> None:
    """The last checkpoint of a phase that early stopping ended (the process then killed, say while the head fits)
    resumes into the same stop: a resumed run equals the uninterrupted one (it trained on to the next
    evaluation)."""
    import torch

    def run(resume: Any = None) -> Trainer:
        args = TrainingArguments(output_dir=str(tmp_path), num_epochs=(1, 1), min_steps_per_epoch=12, backend="cpu",
                                 show_progress_bar=False, eval_strategy="steps", eval_steps=2, save_strategy="steps",
                                 save_steps=2, early_stopping_patience=1, seed=0, body_learning_rate=1e-2)
        # a metric that never improves: patience 1 stops the body at its second evaluation, step 4 of 12
        trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=args, train_dataset=toy_data,
                          eval_dataset=toy_eval, metric=lambda y_pred, y_test: 0.5)
        trainer.train(resume_from_checkpoint=resume)
        return trainer

    whole = run()
    evaluated = [entry["step"] for entry in whole.state.log_history if "eval_metric" in entry]
    assert evaluated[:2] == [2, 4] and whole.state.global_step < 12
    resumed = run(resume=True)
    assert [entry["step"] for entry in resumed.state.log_history if "eval_metric" in entry] == evaluated
    a, b = whole.model.model_body.state_dict(), resumed.model.model_body.state_dict()
    assert all(torch.equal(a[name], b[name]) for name in a)
