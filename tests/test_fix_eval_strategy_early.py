"""``eval_strategy`` "steps" or "epoch" without an eval dataset is refused when ``train()`` starts, before any work:
the model (its body's weights, labels, training record and frozen word embeddings) is left as it was, and no
callback hears of training."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from transformers import TrainerCallback

from setfit_lite import SetFitModel, Trainer, TrainingArguments


class Events(TrainerCallback):
    """Records the events that start training."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.seen.append("on_init_end")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.seen.append("on_train_begin")

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.seen.append("on_step_end")


@pytest.mark.parametrize("strategy", ["steps", "epoch"])
def test_refused_before_the_model_changes(tiny_body_path: str, toy_data: Any, strategy: str) -> None:
    model = SetFitModel.from_pretrained(tiny_body_path)
    weights = {name: tensor.clone() for name, tensor in model.model_body.state_dict().items()}
    trainable = {name: p.requires_grad for name, p in model.model_body.named_parameters()}
    labels, info = model.labels, copy.deepcopy(model.training_info)
    events = Events()
    args = TrainingArguments(num_epochs=(1, 1), show_progress_bar=False, backend="cpu", eval_strategy=strategy,
                             eval_steps=1 if strategy == "steps" else None, freeze_word_embeddings=True)
    trainer = Trainer(model, args=args, train_dataset=toy_data, callbacks=[events])  # built: eval data may come
    with pytest.raises(ValueError, match=rf"eval_strategy='{strategy}' needs an eval_dataset"):
        trainer.train()
    body = model.model_body.state_dict()
    assert all(torch.equal(weights[name], body[name]) for name in weights)  # the body's weights unchanged
    assert {name: p.requires_grad for name, p in model.model_body.named_parameters()} == trainable
    assert model.labels == labels and model.training_info == info
    assert events.seen == []  # neither on_init_end nor on_train_begin: no work started


def test_other_arguments_for_the_call_and_an_eval_dataset_still_train(tiny_body_path: str, toy_data: Any,
                                                                      toy_eval: Any) -> None:
    steps = TrainingArguments(num_epochs=(1, 1), max_steps=2, show_progress_bar=False, backend="cpu",
                              eval_strategy="steps", eval_steps=1)
    trainer = Trainer(SetFitModel.from_pretrained(tiny_body_path), args=steps, train_dataset=toy_data)
    trainer.train(args=TrainingArguments(num_epochs=(1, 1), max_steps=2, show_progress_bar=False, backend="cpu"))
    assert trainer.model.model_head is not None
    evaluated = Trainer(SetFitModel.from_pretrained(tiny_body_path), args=steps, train_dataset=toy_data,
                        eval_dataset=toy_eval)
    evaluated.train()
    assert any("eval_accuracy" in entry for entry in evaluated.state.log_history)
