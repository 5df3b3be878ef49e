"""Routing of a ``model_init__<name>`` given with a training argument or head parameter of the same name: the
unmarked name goes to its receiver, and a one-argument ``model_init(params)`` receives the marked value under
``<name>``; two names that only model_init takes under one key stay an error."""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.search import apply_hyperparameters, split_hyperparameters

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _args() -> TrainingArguments:
    return TrainingArguments(num_epochs=(1, 1), max_steps=2, show_progress_bar=False, backend="cpu")


def _dict_model_init(body: str, received: list) -> Any:
    """setfit's one-argument ``model_init(params)``: copies (and so reads) every key of the dict it gets."""

    def model_init(params: dict | None) -> SetFitModel:
        received.append(None if params is None else dict(params))
        return SetFitModel.from_pretrained(body)

    return model_init


@pytest.mark.parametrize("params", [{"seed": 1, "model_init__seed": 2, "C": 0.5, "model_init__C": 7},
                                    {"model_init__C": 7, "model_init__seed": 2, "C": 0.5, "seed": 1}],
                         ids=["unmarked-first", "marked-first"])
def test_a_marked_name_and_a_training_argument_of_that_name(tiny_body_path: str, toy_data: Any,
                                                            params: dict[str, Any]) -> None:
    received: list = []
    trainer = Trainer(args=_args(), train_dataset=toy_data, model_init=_dict_model_init(tiny_body_path, received))
    assert split_hyperparameters(trainer, params) == ({"seed": 1}, {"seed": 2, "C": 7})
    apply_hyperparameters(trainer, params)
    assert received[-1] == {"seed": 2, "C": 7}  # the marked values, whatever the order given
    assert trainer.args.seed == 1  # the unmarked seed: the training arguments'
    assert trainer.model.head_params == {"C": 0.5}  # the unmarked C: the head's


def test_a_search_space_with_seed_and_model_init_seed(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    received: list = []
    trainer = Trainer(args=_args(), train_dataset=toy_data, eval_dataset=toy_eval,
                      model_init=_dict_model_init(tiny_body_path, received))
    space = [{"name": "seed", "type": "int", "grid": [5]}, {"name": "model_init__seed", "type": "int", "grid": [9]}]
    best = trainer.hyperparameter_search(hp_space=space, n_trials=1, pruner=optuna.pruners.NopPruner())
    assert [t.state for t in best.study.trials] == [optuna.trial.TrialState.COMPLETE]
    assert best.hyperparameters == {"seed": 5, "model_init__seed": 9}
    assert received[-1] == {"seed": 9}
    trainer.train(trial=best.hyperparameters)
    assert received[-1] == {"seed": 9}
    assert trainer.args.seed == 5 and trainer.model.training_info["training_args"]["seed"] == 5


def test_two_names_only_model_init_takes_under_one_key_stay_an_error(tiny_body_path: str, toy_data: Any) -> None:
    received: list = []
    trainer = Trainer(args=_args(), train_dataset=toy_data, model_init=_dict_model_init(tiny_body_path, received))
    model, args, calls = trainer.model, trainer.args, len(received)
    with pytest.raises(TypeError, match=r"model_init parameter\(s\) 'foo' given twice"):
        apply_hyperparameters(trainer, {"foo": 1, "model_init__foo": 2})
    with pytest.raises(TypeError, match=r"model_init parameter\(s\) 'foo' given twice"):
        apply_hyperparameters(trainer, {"model_init__foo": 2, "foo": 1, "seed": 3})
    assert len(received) == calls and trainer.model is model and trainer.args is args  # refused before model_init

    keywords: list = []

    def keyword_init(norm: bool = False, seed: int = 0) -> SetFitModel:
        keywords.append({"norm": norm, "seed": seed})
        return SetFitModel.from_pretrained(tiny_body_path, normalize_embeddings=norm)

    trainer = Trainer(args=_args(), train_dataset=toy_data, model_init=keyword_init)
    with pytest.raises(TypeError, match=r"model_init parameter\(s\) 'norm' given twice"):
        apply_hyperparameters(trainer, {"norm": True, "model_init__norm": False})
    # a keyword model_init's seed: the unmarked one is the training arguments', the marked one its keyword
    apply_hyperparameters(trainer, {"seed": 1, "model_init__seed": 2})
    assert keywords[-1] == {"norm": False, "seed": 2} and trainer.args.seed == 1
