"""The training loop's contract with transformers' callbacks and setfit's arguments: callbacks see the best metric
before an evaluation, `greater_is_better` follows the metric as transformers sets it, a misspelt
`metric_for_best_model` is an error, checkpoints that cannot be written are refused before training, and `update`
derives `eval_steps` again."""

from __future__ import annotations

import errno
import os
import re
import tempfile
from pathlib import Path
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


def _never(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("the body started training before the check")


def test_a_misspelt_metric_for_best_model_is_an_error_before_training(tiny_body_path: str, toy_data: Any,
                                                                      toy_eval: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With a metric computed here, the names the evaluations report are known: a misspelt one is refused before
    training (it was a KeyError after the first evaluation)."""
    monkeypatch.setattr(Trainer, "train_embeddings", _never)
    trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path),
                      args=_args(metric_for_best_model="acurracy", load_best_model_at_end=True),
                      train_dataset=toy_data, eval_dataset=toy_eval)
    with pytest.raises(ValueError, match=r"metric_for_best_model='acurracy' is not a metric the evaluations report: "
                                         r"with metric='accuracy' they report 'accuracy' and.*balanced_accuracy"):
        trainer.train()


def test_a_metric_for_best_model_a_callable_never_returns_is_named_at_its_first_evaluation(
        tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    """A callable's keys are known when it is called: a name it does not return is a ValueError listing them."""
    trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=_args(metric_for_best_model="hit"),
                      train_dataset=toy_data, eval_dataset=toy_eval,
                      metric=lambda y_pred, y_true: {"hits": 1.0})
    with pytest.raises(ValueError, match=r"metric_for_best_model='hit' is not among the evaluation's metrics "
                                         r"\['eval_hits'\]"):
        trainer.train()


def test_checkpoints_that_cannot_be_written_are_refused_before_training(tiny_body_path: str, toy_data: Any,
                                                                        tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With saving on, output_dir under a file, or in a folder that cannot be written in, fails before training,
    with the command line's check (it failed at the first checkpoint, after steps ran)."""
    monkeypatch.setattr(Trainer, "train_embeddings", _never)
    afile = tmp_path / "afile"
    afile.write_text("x")

    def trainer(output_dir: Path) -> Trainer:
        args = TrainingArguments(output_dir=str(output_dir), save_strategy="steps", save_steps=2, backend="cpu",
                                 show_progress_bar=False)
        return Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=args, train_dataset=toy_data)

    with pytest.raises(FileExistsError, match=re.escape(f"output_dir {afile / 'sub'}: cannot write there: {afile} "
                                                        "above it exists and is not a folder")):
        trainer(afile / "sub").train()

    def read_only(*args: Any, **kwargs: Any) -> str:  # root writes through permissions: a read-only file system
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    unwritable = trainer(tmp_path / "out")
    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    with pytest.raises(PermissionError, match=re.escape(f"output_dir {tmp_path / 'out'}: cannot write there: the "
                                                        f"folder {tmp_path} cannot be written in")):
        unwritable.train()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # nothing was written


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
