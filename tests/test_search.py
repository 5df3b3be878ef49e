"""Hyperparameter search: SigOpt -> Optuna translation, trials, parameter routing, pruning, storage, resume."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import optuna
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from setfit_lite.search import (
    BestRun,
    create_study,
    default_compute_objective,
    run_hyperparameter_search,
    sigopt_to_optuna,
    suggest_hyperparameters,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)


class AlwaysPrune(optuna.pruners.BasePruner):
    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        return True

ROOT = Path(__file__).resolve().parents[1]
SEED_SPACE = [{"name": "seed", "type": "int", "bounds": {"min": 1, "max": 40}}]


# ------------------------------------------------------------------------------------------------ translation


@st.composite
def sigopt_parameters(draw: Any, name: str) -> tuple[dict[str, Any], Any]:
    """One valid SigOpt parameter and the Optuna distribution it must become."""
    kind = draw(st.sampled_from(["double", "int", "categorical", "grid_double", "grid_int"]))
    log = kind != "categorical" and draw(st.booleans())
    if kind == "double":
        low, high = sorted(draw(st.lists(st.floats(1e-8 if log else -1e6, 1e6), min_size=2, max_size=2)))
        param: dict[str, Any] = {"name": name, "type": "double", "bounds": {"min": low, "max": high}}
        expected: Any = FloatDistribution(low, high, log=log)
    elif kind == "int":
        low, high = sorted(draw(st.lists(st.integers(1 if log else -1000, 1000), min_size=2, max_size=2)))
        param = {"name": name, "type": "int", "bounds": {"min": low, "max": high}}
        expected = IntDistribution(low, high, log=log)
    elif kind == "categorical":
        values = draw(st.lists(st.text("abcxyz_", min_size=1, max_size=5), min_size=1, max_size=5, unique=True))
        as_dicts = draw(st.booleans())
        param = {"name": name, "type": "categorical",
                 "categorical_values": [{"name": v} for v in values] if as_dicts else values}
        expected = CategoricalDistribution(values)
    elif kind == "grid_double":
        values = draw(st.lists(st.floats(1e-6 if log else -1e6, 1e6), min_size=1, max_size=5, unique=True))
        param = {"name": name, "type": "double", "grid": values}
        expected = CategoricalDistribution([float(v) for v in values])
    else:
        values = draw(st.lists(st.integers(1 if log else -100, 100), min_size=1, max_size=5, unique=True))
        param = {"name": name, "type": "int", "grid": values}
        expected = CategoricalDistribution(values)
    if log:
        param["transformation"] = "log"
    return param, expected


@st.composite
def sigopt_spaces(draw: Any) -> tuple[Any, dict[str, Any]]:
    names = draw(st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True), min_size=1, max_size=5,
                          unique=True))
    pairs = [draw(sigopt_parameters(name)) for name in names]
    space: Any = [p for p, _ in pairs]
    if draw(st.booleans()):
        space = {"parameters": space, "metrics": [{"name": "accuracy", "objective": "minimize"}],
                 "observation_budget": 5}
    return space, {name: dist for name, (_, dist) in zip(names, pairs)}


@settings(max_examples=60, deadline=None)
@given(sigopt_spaces())
def test_sigopt_translation_is_exact(case: tuple[Any, dict[str, Any]]) -> None:
    space, expected = case
    distributions = sigopt_to_optuna(space)
    assert distributions == expected
    assert list(distributions) == list(expected)
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask()
    params = suggest_hyperparameters(trial, distributions)
    assert trial.distributions == expected  # sampled through the public API with the very same distributions
    for name, dist in expected.items():
        assert dist._contains(dist.to_internal_repr(params[name]))


def _double(name: str = "lr", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "double", "bounds": {"min": 0.1, "max": 1.0}, **extra}


@pytest.mark.parametrize(("space", "name"), [
    ([{"name": "lr", "type": "float", "bounds": {"min": 0.1, "max": 1.0}}], "lr"),
    ([{"name": "lr", "type": "double"}], "lr"),
    ([{"name": "lr", "type": "double", "bounds": {}}], "lr"),
    ([{"name": "lr", "type": "double", "bounds": {"min": 0.1}}], "lr"),
    ([{"name": "lr", "type": "double", "bounds": {"min": 2.0, "max": 1.0}}], "lr"),
    ([{"name": "epochs", "type": "int", "bounds": {"min": 5, "max": 1}}], "epochs"),
    ([{"name": "lr", "type": "double", "bounds": {"min": 0.0, "max": 1.0}, "transformation": "log"}], "lr"),
    ([{"name": "steps", "type": "int", "bounds": {"min": -1, "max": 8}, "transformation": "log"}], "steps"),
    ([{"name": "lr", "type": "double", "grid": [0.0, 0.1], "transformation": "log"}], "lr"),
    ([{"name": "lr", "type": "double", "bounds": {"min": 0.1, "max": 1.0}, "transformation": "sqrt"}], "lr"),
    ([{"name": "lr", "type": "double", "bounds": {"min": 0.1, "max": float("nan")}}], "lr"),
    ([{"name": "lr", "type": "double", "bounds": {"min": True, "max": 2}}], "lr"),
    ([{"name": "epochs", "type": "int", "bounds": {"min": 1, "max": 2.5}}], "epochs"),
    ([{"name": "lr", "type": "double", "bounds": {"min": 0.1, "max": 1.0}, "grid": [0.1]}], "lr"),
    ([{"name": "lr", "type": "double", "grid": []}], "lr"),
    ([{"name": "lr", "type": "double", "grid": [0.1, 0.1]}], "lr"),
    ([{"name": "solver", "type": "categorical", "categorical_values": []}], "solver"),
    ([{"name": "solver", "type": "categorical", "categorical_values": ["a", {"name": "a"}]}], "solver"),
    ([{"name": "solver", "type": "categorical", "categorical_values": [1, 2]}], "solver"),
    ([{"name": "solver", "type": "categorical", "categorical_values": ["a"], "bounds": {"min": 0, "max": 1}}],
     "solver"),
    ([_double(prior={"name": "normal"})], "lr"),
    ([_double(), _double()], "lr"),
    ({"parameters": [_double("C")], "metrics": [{"name": "a"}, {"name": "b"}]}, "optimized metric"),
    ({"parameters": [_double("C")], "conditionals": []}, "conditionals"),
])
def test_invalid_sigopt_space_names_the_problem(space: Any, name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(name)):
        sigopt_to_optuna(space)


def test_default_compute_objective() -> None:
    assert default_compute_objective({"accuracy": 0.75}) == 0.75
    assert default_compute_objective({"f1": 0.5, "precision": 0.25, "eval_runtime": 3.0}) == 0.75
    assert default_compute_objective({"loss": 0.3}) == 0.3
    assert default_compute_objective({"loss": 0.3, "accuracy": 0.7, "epoch": 2.0, "samples_per_second": 9.0}) == 0.7
    with pytest.raises(ValueError, match="compute_objective"):
        default_compute_objective({"groups": {}})
    with pytest.raises(ValueError, match="compute_objective"):
        default_compute_objective({"epoch": 1.0, "groups": {"a": {"accuracy": 1.0}}})


def test_default_compute_objective_is_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers.trainer_utils

    seen: list = []
    monkeypatch.setattr(transformers.trainer_utils, "default_compute_objective", lambda m: seen.append(m) or 1.5)
    assert default_compute_objective({"loss": 0.25, "accuracy": 0.5, "groups": {}, "early": True}) == 1.5
    assert seen == [{"eval_loss": 0.25, "accuracy": 0.5}]  # numeric metrics only; our "loss" is its "eval_loss"


def test_pruning_callback_reports_on_evaluate_and_prunes() -> None:
    from transformers import TrainerCallback, TrainerControl, TrainerState

    from setfit_lite.search.pruning import OptunaPruningCallback

    for pruner, pruned in ((optuna.pruners.NopPruner(), False), (AlwaysPrune(), True)):
        study = optuna.create_study(pruner=pruner)
        trial = study.ask()
        callback = OptunaPruningCallback(trial, default_compute_objective)
        assert isinstance(callback, TrainerCallback) and callback.last_step is None
        state, control = TrainerState(global_step=3), TrainerControl()
        callback.on_evaluate(None, state, control)  # no metrics: nothing reported
        if pruned:
            with pytest.raises(optuna.TrialPruned, match="pruned at step 3"):
                callback.on_evaluate(None, state, control, metrics={"eval_accuracy": 0.5, "eval_f1": 0.25})
        else:
            callback.on_evaluate(None, state, control, metrics={"eval_accuracy": 0.5, "eval_f1": 0.25})
        assert callback.last_step == 3
        assert study.trials[0].intermediate_values == {3: 0.75}


def test_default_space_is_training_arguments() -> None:
    from setfit_lite.search import default_hp_space
    from setfit_lite.training_args import TrainingArguments

    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1)).ask()
    params = default_hp_space(trial)
    assert set(params) == {"body_learning_rate", "num_epochs", "batch_size", "seed"}
    assert TrainingArguments().update(params).embedding_batch_size == params["batch_size"]


# ------------------------------------------------------------------------------------------------ arguments


def test_search_arguments_are_checked() -> None:
    fake = SimpleNamespace(model_init=None, eval_dataset=[1])
    with pytest.raises(ValueError, match="model_init"):
        run_hyperparameter_search(fake)
    fake.model_init = lambda: None
    with pytest.raises(TypeError, match="n_trails"):
        run_hyperparameter_search(fake, n_trails=3)
    with pytest.raises(ValueError, match="n_jobs"):
        run_hyperparameter_search(fake, n_jobs=2)
    with pytest.raises(ValueError, match="storage"):
        create_study(storage="study.txt")


def test_a_compute_objective_that_is_not_callable_is_refused_before_the_first_trial(tmp_path: Path) -> None:
    """compute_objective="accuracy" (a metric's name) failed inside the first trial, after it trained, with
    "'str' object is not callable"; it is refused before any study or model exists."""
    built: list[int] = []
    fake = SimpleNamespace(model_init=lambda: built.append(1), eval_dataset=[1])
    storage = tmp_path / "study.db"
    with pytest.raises(TypeError, match="compute_objective must be a function of the evaluation's metrics .*"
                                        "got str 'accuracy'"):
        run_hyperparameter_search(fake, compute_objective="accuracy", n_trials=1, storage=str(storage))
    assert built == [] and not storage.exists()


def test_sigopt_backend_without_sigopt_points_to_optuna() -> None:
    import importlib.util

    if importlib.util.find_spec("sigoptlite") is not None:
        pytest.skip("sigopt's offline driver is installed")
    with pytest.raises(ImportError, match="backend='optuna'") as info:
        run_hyperparameter_search(SimpleNamespace(model_init=lambda: None, eval_dataset=[1]), hp_space=SEED_SPACE,
                                  backend="sigopt")
    assert "hosted service" in str(info.value)


# ------------------------------------------------------------------------------------------------ trials


def _args(**kwargs: Any) -> Any:
    from setfit_lite import TrainingArguments

    return TrainingArguments(num_epochs=(1, 4), body_learning_rate=1e-2, show_progress_bar=False, backend="cpu",
                             **kwargs)


def _trainer(body: str, train: Any, evaluation: Any, model_init: Any = None, created: list | None = None) -> Any:
    from setfit_lite import SetFitModel, Trainer

    def build() -> Any:
        model = SetFitModel.from_pretrained(body)
        if created is not None:
            created.append(model)
        return model

    return Trainer(args=_args(), train_dataset=train, eval_dataset=evaluation, model_init=model_init or build)


def _recording_model_init(body: str, received: list) -> Any:
    """setfit's one-argument ``model_init(params)``: records each ``params`` it gets; ``params["norm"]`` normalizes."""
    from setfit_lite import SetFitModel

    def model_init(params: dict | None = None) -> SetFitModel:
        received.append(params)
        return SetFitModel.from_pretrained(body, normalize_embeddings=bool((params or {}).get("norm")))

    return model_init


def test_search_trains_trials_and_routes_head_params(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    created: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, created=created)
    args, model = trainer.args, trainer.model
    space = [
        {"name": "body_learning_rate", "type": "double", "bounds": {"min": 1e-3, "max": 3e-2}, "transformation": "log"},
        {"name": "C", "type": "double", "bounds": {"min": 0.01, "max": 10.0}, "transformation": "log"},
        {"name": "seed", "type": "int", "bounds": {"min": 1, "max": 40}},
    ]
    best = trainer.hyperparameter_search(hp_space=space, n_trials=3, sampler=optuna.samplers.RandomSampler(seed=0),
                                         hp_name=lambda trial: f"trial-{trial.number}")
    assert isinstance(best, BestRun) and best.backend is best.study
    trials = best.study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 3
    assert best.objective == max(t.value for t in trials)
    assert best.hyperparameters == trials[int(best.run_id)].params
    run_id, objective, hyperparameters, _ = best
    assert (run_id, objective, hyperparameters) == (best.run_id, best.objective, best.hyperparameters)
    for trial, trial_model in zip(trials, created[1:]):
        assert trial.user_attrs["name"] == f"trial-{trial.number}"
        assert trial_model.head_params == {"C": trial.params["C"]}
        assert trial_model.model_head.estimator.C == trial.params["C"]
        assert trial_model.training_info["training_args"]["seed"] == trial.params["seed"]
        # default pruner (MedianPruner): evaluated every epoch, then the final evaluation one step later
        steps = sorted(trial.intermediate_values)
        assert len(steps) == 2 and steps[1] == steps[0] + 1
        assert trial.intermediate_values[steps[1]] == trial.value
    assert trainer.args is args and trainer.model is model and trainer._callbacks == []  # pruning callbacks gone
    assert args.eval_strategy == "no"

    trainer.apply_hyperparameters(best.hyperparameters, final_model=True)
    assert trainer.model is not model and trainer.model.head_params == {"C": best.hyperparameters["C"]}
    assert trainer.args.seed == best.hyperparameters["seed"]
    trainer.train()
    assert trainer.model.model_head.estimator.C == best.hyperparameters["C"]
    assert trainer.evaluate()["accuracy"] == pytest.approx(best.objective)


def test_unknown_parameter_is_an_error(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    trainer = _trainer(tiny_body_path, toy_data, toy_eval)
    space = SEED_SPACE + [{"name": "warmup_ratio", "type": "double", "bounds": {"min": 0.0, "max": 0.2}}]
    with pytest.raises(TypeError, match="'warmup_ratio'"):
        trainer.hyperparameter_search(hp_space=space, n_trials=1)
    with pytest.raises(TypeError, match="'head_size'"):
        trainer.hyperparameter_search(hp_space=lambda trial: {"head_size": trial.suggest_int("head_size", 1, 4)},
                                      n_trials=1)
    with pytest.raises(TypeError, match="'dropout'"):
        trainer.apply_hyperparameters({"dropout": 0.1})


def test_one_argument_model_init_receives_every_param(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    from setfit_lite.search import apply_hyperparameters, split_hyperparameters

    received: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, model_init=_recording_model_init(tiny_body_path, received))
    params = {"body_learning_rate": 1e-3, "max_iter": 50, "class_weight": "balanced", "model_init__norm": True}
    every = {"body_learning_rate": 1e-3, "max_iter": 50, "class_weight": "balanced", "norm": True}
    assert split_hyperparameters(trainer, params) == ({"body_learning_rate": 1e-3}, every)
    apply_hyperparameters(trainer, params)
    assert received[-1] == every  # as in setfit; the marked name without its prefix
    assert trainer.model.normalize_embeddings
    assert trainer.model.head_params == {"max_iter": 50, "class_weight": "balanced"}
    assert trainer.model.new_head(2, False).estimator.get_params()["class_weight"] == "balanced"
    assert trainer.args.body_learning_rate == (1e-3, 1e-3)  # a single rate is both phases, as in setfit

    # a name only model_init could take and that it never reads (a typo) is refused before the trial trains
    calls = len(received)
    space = SEED_SPACE + [{"name": "bogus_param", "type": "double", "bounds": {"min": 0.0, "max": 1.0}}]
    with pytest.raises(TypeError) as info:
        trainer.hyperparameter_search(hp_space=space, n_trials=1)
    message = str(info.value)
    assert message.startswith("hyperparameter(s) 'bogus_param': nothing accepts this name")
    assert ("TrainingArguments (anchor_loss, anchor_temperature, anchor_template, anchor_weight, anchors_per_batch, "
            "backend") in message
    assert "the head (LogisticRegression: C, class_weight" in message
    assert "model_init(params) got it in its dict and never read it (it read 'norm')" in message
    assert len(received) == calls + 1  # the first trial's model_init ran, and the trial stopped there
    with pytest.raises(TypeError, match=r"'body_learning_rat': did you mean 'body_learning_rate'\?"):
        trainer.hyperparameter_search(hp_space=lambda t: {"body_learning_rat": 1e-3}, n_trials=1)
    apply_hyperparameters(trainer, {"norm": False})  # unmarked: model_init reads it
    assert received[-1] == {"norm": False} and not trainer.model.normalize_embeddings
    with pytest.raises(TypeError, match=r"model_init parameter\(s\) 'norm' given twice"):
        apply_hyperparameters(trainer, {"norm": True, "model_init__norm": False})  # both only model_init's


def test_keyword_model_init_receives_the_names_it_declares(tiny_body_path: str, toy_data: Any,
                                                           toy_eval: Any) -> None:
    from setfit_lite import SetFitModel
    from setfit_lite.search import apply_hyperparameters

    received: list[dict] = []

    def model_init(normalize: bool = False, max_length: int | None = None) -> SetFitModel:
        received.append({"normalize": normalize, "max_length": max_length})
        return SetFitModel.from_pretrained(tiny_body_path, normalize_embeddings=normalize, max_length=max_length)

    trainer = _trainer(tiny_body_path, toy_data, toy_eval, model_init=model_init)
    space = [{"name": "normalize", "type": "categorical", "categorical_values": ["true", "false"]},
             # a TrainingArguments name: the prefix sends it to model_init instead
             {"name": "model_init__max_length", "type": "int", "grid": [16]}]
    best = trainer.hyperparameter_search(hp_space=space, n_trials=2, pruner=optuna.pruners.NopPruner(),
                                         sampler=optuna.samplers.RandomSampler(seed=0))
    assert received[0] == {"normalize": False, "max_length": None}  # Trainer() built its model without params
    assert len(received) == 3 and all(r["max_length"] == 16 for r in received[1:])
    assert all(type(r["normalize"]) is bool for r in received[1:])  # "true"/"false" -> True/False
    assert type(best.hyperparameters["normalize"]) is bool and best.hyperparameters["model_init__max_length"] == 16
    apply_hyperparameters(trainer, best.hyperparameters, final_model=True)
    assert received[-1] == {"normalize": best.hyperparameters["normalize"], "max_length": 16}
    assert trainer.model.normalize_embeddings is best.hyperparameters["normalize"]
    assert trainer.args.max_length is None

    calls = len(received)
    with pytest.raises(TypeError) as info:
        trainer.hyperparameter_search(hp_space=[{"name": "normalise", "type": "categorical",
                                                 "categorical_values": ["true"]}], n_trials=1)
    assert "'normalise': did you mean 'normalize'?" in str(info.value)
    assert "model_init takes its keyword parameters max_length, normalize" in str(info.value)
    with pytest.raises(TypeError, match="'model_init__dropout'"):
        trainer.hyperparameter_search(hp_space=lambda t: {"model_init__dropout": 0.1}, n_trials=1)
    assert len(received) == calls


def test_trainer_apply_hyperparameters_routes_like_a_trial(tiny_body_path: str, toy_data: Any,
                                                           toy_eval: Any) -> None:
    received: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, model_init=_recording_model_init(tiny_body_path, received))
    trainer.apply_hyperparameters({"model_init__norm": True, "C": 2.0})
    assert received[-1] == {"norm": True, "C": 2.0} and trainer.model.head_params == {"C": 2.0}


def test_train_with_a_trial_applies_its_parameters(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    """setfit's ``train(trial=...)``: the trial's parameters are routed as in a search trial, then it trains."""
    received: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, model_init=_recording_model_init(tiny_body_path, received))
    first = trainer.model
    trainer.train(trial={"seed": 3, "C": 0.5, "model_init__norm": True})
    assert received[-1] == {"seed": 3, "C": 0.5, "norm": True}  # the trial's full dict, as in setfit
    assert trainer.model is not first and trainer.model.normalize_embeddings
    assert trainer.args.seed == 3 and trainer.model.training_info["training_args"]["seed"] == 3
    assert trainer.model.model_head.estimator.C == 0.5
    with pytest.raises(ValueError, match=r"args and a trial that sets training arguments \(seed\)"):
        trainer.train(args=_args(), trial={"seed": 4})
    with pytest.raises(TypeError, match="'sed': did you mean 'seed'"):
        trainer.train(trial={"sed": 4})
    assert trainer.args.seed == 3


def test_trial_params_of_a_search_trial() -> None:
    from setfit_lite.search.routing import trial_params

    frozen = optuna.trial.create_trial(params={"seed": "3"}, distributions={"seed": CategoricalDistribution(["3"])},
                                       value=1.0, user_attrs={"hyperparameters": {"seed": 3}})
    assert trial_params(frozen) == {"seed": 3}  # the converted values a search stored
    study = optuna.create_study()
    trial = study.ask({"C": FloatDistribution(0.5, 0.5)})
    assert trial_params(trial) == {"C": 0.5}
    assert trial_params({"C": 1.0}) == {"C": 1.0}
    with pytest.raises(TypeError, match="got list"):
        trial_params([("C", 1.0)])


def test_partial_model_init_takes_the_params_dict(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    """Arguments counted by transformers' number_of_arguments: a partial's bound arguments do not count."""
    import functools

    from setfit_lite import SetFitModel
    from setfit_lite.search.routing import takes_params

    received: list = []

    def model_init(params: dict | None, body: str) -> SetFitModel:
        received.append(None if params is None else dict(params))  # dict(params) reads every name
        return SetFitModel.from_pretrained(body)

    init = functools.partial(model_init, body=tiny_body_path)
    assert takes_params(init) and not takes_params(functools.partial(model_init, None, tiny_body_path))
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, model_init=init)
    assert received == [None]
    trainer.apply_hyperparameters({"model_init__norm": True})
    assert received[-1] == {"norm": True}


def _reading_model_init(body: str, received: list, read: Any = None) -> Any:
    """A one-argument ``model_init(params)`` as setfit's docs write it: records each ``params`` it gets and builds
    ``params.get("model_id", body)``, its head's ``max_iter`` from ``params.get("max_iter", 100)``; ``read(params)``
    runs first."""
    from setfit_lite import SetFitModel

    def model_init(params: dict | None) -> SetFitModel:
        received.append(params)
        params = params or {}  # its truth value reads nothing
        if read is not None:
            read(params)
        return SetFitModel.from_pretrained(params.get("model_id", body),
                                           head_params={"max_iter": params.get("max_iter", 100)})

    return model_init


def test_one_argument_model_init_searches_a_model_id(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    """setfit's ``model_init(params)`` gets each trial's full dict: a ``model_id`` only it takes, and the head's
    ``max_iter``, which also goes to the head, as does ``seed`` to the training arguments; each trial's model is
    built by it."""
    received: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, model_init=_reading_model_init(tiny_body_path, received))

    def hp_space(trial: optuna.Trial) -> dict[str, Any]:
        return {"model_id": trial.suggest_categorical("model_id", [tiny_body_path]),
                "max_iter": trial.suggest_int("max_iter", 50, 300), "seed": trial.suggest_int("seed", 1, 40)}

    best = trainer.hyperparameter_search(hp_space=hp_space, n_trials=1, pruner=optuna.pruners.NopPruner())
    assert [t.state for t in best.study.trials] == [TrialState.COMPLETE]
    assert received[0] is None  # Trainer() built its model without params
    assert len(received) == 2 and received[1] == best.hyperparameters
    assert set(best.hyperparameters) == {"model_id", "max_iter", "seed"}
    trainer.train(trial=best.hyperparameters)
    assert len(received) == 3 and received[2] == best.hyperparameters
    assert trainer.model.model_head.estimator.max_iter == best.hyperparameters["max_iter"]
    assert trainer.model.training_info["training_args"]["seed"] == best.hyperparameters["seed"]


def test_a_name_model_init_never_reads_is_an_error_before_training(tiny_body_path: str, toy_data: Any,
                                                                    toy_eval: Any, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    received: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, model_init=_reading_model_init(tiny_body_path, received))
    model, args = trainer.model, trainer.args
    trained: list = []
    monkeypatch.setattr(trainer, "train", lambda *a, **k: trained.append(1))
    with pytest.raises(TypeError) as info:
        trainer.hyperparameter_search(hp_space=lambda t: {"model_id": tiny_body_path, "modelid": tiny_body_path,
                                                          "seed": t.suggest_int("seed", 1, 4)}, n_trials=1)
    message = str(info.value)
    assert message.startswith("hyperparameter(s) 'modelid': nothing accepts this name ('modelid': did you mean "
                              "'model_id'?). Names go to TrainingArguments (anchor_loss, ")
    assert "the head (LogisticRegression: C, class_weight" in message
    assert message.endswith("model_init(params) got it in its dict and never read it (it read 'max_iter', "
                            "'model_id').")
    assert len(received) == 2 and trained == []  # model_init ran for the trial, which never trained
    assert trainer.model is model and trainer.args is args
    monkeypatch.undo()
    with pytest.raises(TypeError, match="'model_init__dropout'.*never read it"):  # marked, never read
        trainer.apply_hyperparameters({"model_init__dropout": 0.1, "seed": 3})
    assert trainer.model is model and trainer.args is args  # nothing applied
    with pytest.raises(TypeError, match=r"'sed': did you mean 'seed'\?"):
        trainer.train(trial={"sed": 3})
    assert trainer.model is model and trainer.args is args


@pytest.mark.parametrize("read", [dict, lambda params: {**params}, lambda params: (lambda **kw: kw)(**params),
                                  lambda params: params == {}, lambda params: list(params.items())],
                         ids=["dict", "unpack", "keywords", "equal", "items"])
def test_copying_the_dict_reads_every_name(tiny_body_path: str, toy_data: Any, toy_eval: Any, read: Any) -> None:
    received: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval,
                       model_init=_reading_model_init(tiny_body_path, received, read))
    first = trainer.model
    trainer.apply_hyperparameters({"anything": 1, "model_init__other": 2})
    assert received[-1] == {"anything": 1, "other": 2} and trainer.model is not first


def test_recording_params_records_the_keys_read() -> None:
    from setfit_lite.search.routing import RecordingParams

    names = ["a", "b", "c"]

    def unread(read: Any) -> list[str]:
        params = RecordingParams(dict.fromkeys(names, 1))
        read(params)
        return params.unread(names)

    assert unread(lambda p: p or {}) == unread(len) == unread(repr) == names
    assert unread(lambda p: (p["a"], p.get("b"), "x" in p)) == ["c"]
    assert unread(lambda p: (p.pop("a"), p.setdefault("b", 0), p.get("x", 0))) == ["c"]
    for read_all in (dict, lambda p: {**p}, iter, list, lambda p: p.keys(), lambda p: p.values(),
                     lambda p: p.items(), lambda p: p.copy(), lambda p: p == {}, lambda p: p != {}):
        assert unread(read_all) == []
    params = RecordingParams({"a": 1})
    assert params.copy() == {"a": 1} and type(params.copy()) is dict and isinstance(params, dict)


def test_unknown_names_raise_up_front_unless_model_init_takes_the_dict(tiny_body_path: str, toy_data: Any,
                                                                       toy_eval: Any) -> None:
    """No model_init, one without parameters or with keyword parameters: a name nothing accepts is refused before
    any model is built, as before; only a one-argument model_init receives it."""
    from setfit_lite import SetFitModel, Trainer

    space = {"model_id": CategoricalDistribution([tiny_body_path]), "seed": IntDistribution(1, 4)}
    without = Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=_args(), train_dataset=toy_data)
    with pytest.raises(TypeError, match="'model_id': nothing accepts this name.*there is no model_init"):
        without.apply_hyperparameters({"model_id": tiny_body_path}, final_model=True)

    created: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, created=created)
    with pytest.raises(TypeError, match="'model_id': nothing accepts this name.*model_init takes no parameters"):
        trainer.hyperparameter_search(hp_space=space, n_trials=1)
    assert len(created) == 1

    built: list = []

    def keyword_init(normalize: bool = False, max_length: int | None = None) -> SetFitModel:
        built.append(normalize)
        return SetFitModel.from_pretrained(tiny_body_path, normalize_embeddings=normalize, max_length=max_length)

    trainer = _trainer(tiny_body_path, toy_data, toy_eval, model_init=keyword_init)
    with pytest.raises(TypeError, match="'model_id': nothing accepts.*keyword parameters max_length, normalize"):
        trainer.hyperparameter_search(hp_space=space, n_trials=1)
    with pytest.raises(TypeError, match="'model_id'"):
        trainer.train(trial={"model_id": tiny_body_path})
    assert built == [False]

    received: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, model_init=_reading_model_init(tiny_body_path, received))
    best = trainer.hyperparameter_search(hp_space=space, n_trials=1, pruner=optuna.pruners.NopPruner())
    assert received[-1] == best.hyperparameters and best.hyperparameters["model_id"] == tiny_body_path


@pytest.mark.parametrize("seed", [7, 2**32 - 1])
def test_model_init_runs_under_transformers_set_seed(tiny_body_path: str, toy_data: Any, toy_eval: Any,
                                                     seed: int) -> None:
    import random

    import numpy as np
    import torch
    from transformers import set_seed

    import setfit_lite.trainer
    from setfit_lite import SetFitModel, Trainer

    draws: list = []

    def model_init() -> SetFitModel:
        draws.append((random.random(), float(np.random.rand()), float(torch.rand(1))))
        return SetFitModel.from_pretrained(tiny_body_path)

    set_seed(seed % 2**32)  # numpy takes seeds below 2**32
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    trainer = Trainer(args=_args(seed=seed), train_dataset=toy_data, eval_dataset=toy_eval, model_init=model_init)
    trainer.apply_hyperparameters({"seed": seed}, final_model=True)
    assert draws == [expected, expected]
    assert not hasattr(setfit_lite.trainer, "set_seed") and not hasattr(trainer, "report_hook")


def test_string_categorical_values_take_their_receivers_type(tiny_body_path: str, toy_data: Any,
                                                              toy_eval: Any) -> None:
    from setfit_lite.search.values import check_space

    created: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, created=created)
    space = [
        {"name": "seed", "type": "categorical", "categorical_values": ["0", "1"]},
        {"name": "body_learning_rate", "type": "categorical", "categorical_values": ["1e-3", "none"]},
        {"name": "show_progress_bar", "type": "categorical", "categorical_values": ["False"]},
        {"name": "sampling_strategy", "type": "categorical", "categorical_values": ["unique", "oversampling"]},
        {"name": "C", "type": "categorical", "categorical_values": ["0.5", "2"]},
        {"name": "max_iter", "type": "categorical", "categorical_values": ["50"]},
        {"name": "class_weight", "type": "categorical", "categorical_values": ["balanced", "None"]},
    ]
    expected = {
        "seed": {"0": 0, "1": 1}, "body_learning_rate": {"1e-3": 1e-3, "none": None},
        "show_progress_bar": {"False": False},
        "sampling_strategy": {"unique": "unique", "oversampling": "oversampling"},
        "C": {"0.5": 0.5, "2": 2.0}, "max_iter": {"50": 50}, "class_weight": {"balanced": "balanced", "None": None},
    }
    conversions = check_space(trainer, sigopt_to_optuna(space))
    assert conversions == expected
    assert {n: {t: type(v) for t, v in c.items()} for n, c in conversions.items()} == \
        {n: {t: type(v) for t, v in c.items()} for n, c in expected.items()}

    space = [space[0], space[4]]
    best = trainer.hyperparameter_search(hp_space=space, n_trials=2, pruner=optuna.pruners.NopPruner(),
                                         sampler=optuna.samplers.RandomSampler(seed=0))
    trials = best.study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2
    for trial, model in zip(trials, created[1:]):
        seed, c = trial.user_attrs["hyperparameters"]["seed"], trial.user_attrs["hyperparameters"]["C"]
        assert (type(seed), type(c)) == (int, float) and str(seed) == trial.params["seed"]
        assert model.training_info["training_args"]["seed"] == seed
        assert model.model_head.estimator.C == c == float(trial.params["C"])
    assert type(best.hyperparameters["seed"]) is int


@pytest.mark.parametrize(("parameter", "error", "match"), [
    ({"name": "seed", "type": "categorical", "categorical_values": ["0", "abc"]}, ValueError,
     r"hyperparameter 'seed' \(TrainingArguments field 'seed'\), categorical value 'abc': 'abc' is not an integer"),
    ({"name": "seed", "type": "categorical", "categorical_values": ["-1"]}, ValueError,
     r"hyperparameter 'seed' .*categorical value '-1': TrainingArguments: seed must be an integer in"),
    ({"name": "seed", "type": "double", "bounds": {"min": 0, "max": 5}}, TypeError,
     r"hyperparameter 'seed' .*bound 0\.0: TrainingArguments: seed must be an integer"),
    ({"name": "max_steps", "type": "int", "grid": [0, 5]}, ValueError,
     r"hyperparameter 'max_steps' .*categorical value 0: TrainingArguments: max_steps must be"),
    ({"name": "save_strategy", "type": "categorical", "categorical_values": ["best"]}, ValueError,
     r"hyperparameter 'save_strategy' .*'best': TrainingArguments: save_strategy must be one of"),
    ({"name": "C", "type": "categorical", "categorical_values": ["abc"]}, ValueError,
     r"hyperparameter 'C' \(head parameter 'C'\), categorical value 'abc': 'abc' is not a number"),
    ({"name": "fit_intercept", "type": "categorical", "categorical_values": ["yes"]}, ValueError,
     r"hyperparameter 'fit_intercept' .*'yes' is not true/false"),
    # the head's own rules (scikit-learn's parameter constraints), before a body trains for the head to refuse
    ({"name": "C", "type": "int", "grid": [-1]}, ValueError,
     r"hyperparameter 'C' \(head parameter 'C'\), categorical value -1: .*'C' parameter of LogisticRegression"),
    ({"name": "solver", "type": "categorical", "categorical_values": ["lbfgs", "bogus"]}, ValueError,
     r"hyperparameter 'solver' .*categorical value 'bogus': .*'solver' parameter"),
    ({"name": "max_iter", "type": "double", "bounds": {"min": 10, "max": 100}}, ValueError,
     r"hyperparameter 'max_iter' .*bound 10\.0: .*'max_iter' parameter of LogisticRegression must be an int"),
])
def test_bad_space_value_is_refused_before_the_first_trial(tiny_body_path: str, toy_data: Any, toy_eval: Any,
                                                           parameter: dict, error: type, match: str) -> None:
    created: list = []
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, created=created)
    storage = optuna.storages.InMemoryStorage()
    with pytest.raises(error, match=match):
        trainer.hyperparameter_search(hp_space=[parameter], n_trials=1, storage=storage)
    assert len(created) == 1 and not storage.get_all_studies()  # no trial, not even a study


def test_pruner_prunes_on_intermediate_evaluation(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    trainer = _trainer(tiny_body_path, toy_data, toy_eval)
    args = trainer.args
    storage = optuna.storages.InMemoryStorage()
    with pytest.raises(RuntimeError, match="no trial"):
        trainer.hyperparameter_search(hp_space=SEED_SPACE, n_trials=1, pruner=AlwaysPrune(), storage=storage,
                                      study_name="pruned")
    (trial,) = optuna.load_study(study_name="pruned", storage=storage).trials
    assert trial.state == TrialState.PRUNED
    assert trial.intermediate_values  # reported during training (eval_strategy="epoch" was used for the trial)
    assert trainer.args is args and trainer._callbacks == []


# ------------------------------------------------------------------------------------------------ storage


def test_sqlite_study_is_continued(tmp_path: Path, tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    trainer = _trainer(tiny_body_path, toy_data, toy_eval)
    db = tmp_path / "s.db"
    options = {"hp_space": SEED_SPACE, "storage": db, "study_name": "continued",
               "pruner": optuna.pruners.NopPruner()}
    first = trainer.hyperparameter_search(n_trials=2, **options)
    first_trials = [(t.number, t.value, t.params) for t in first.study.trials]
    assert len(first_trials) == 2
    with pytest.raises(optuna.exceptions.DuplicatedStudyError):
        trainer.hyperparameter_search(n_trials=1, **options)
    second = trainer.hyperparameter_search(n_trials=1, load_if_exists=True, **options)
    trials = optuna.load_study(study_name="continued", storage=f"sqlite:///{db}").trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 3
    assert [(t.number, t.value, t.params) for t in trials[:2]] == first_trials
    assert second.objective == max(t.value for t in trials)


WORKER = textwrap.dedent('''
    """Runs run_hyperparameter_search on a torch-free stand-in for the Trainer (score: a function of the seed)."""
    import os
    import sys

    from setfit_lite.search import create_study, run_hyperparameter_search
    from setfit_lite.training_args import TrainingArguments

    assert "torch" not in sys.modules  # importing the search and creating studies need no torch


    class FakeTrainer:
        def __init__(self, exit_at: int) -> None:
            self.args, self.model = TrainingArguments(backend="cpu"), None
            self.model_init, self.eval_dataset = object, ["eval"]
            self.trained, self.exit_at, self.seed, self.callbacks = 0, exit_at, 0, []

        def call_model_init(self, params=None):
            return self.model_init()

        def add_callback(self, callback):
            self.callbacks.append(callback)

        def remove_callback(self, callback):
            self.callbacks.remove(callback)

        def train(self, args=None):
            if self.trained == self.exit_at:
                os._exit(3)  # killed in the middle of a trial
            assert len(self.callbacks) == 1  # the trial's pruning callback
            self.trained += 1
            self.seed = args.seed

        def evaluate(self):
            return {"accuracy": 1.0 / (1 + abs(self.seed - 7))}


    storage, study_name, n_trials, exit_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    create_study(storage, study_name, load_if_exists=True)
    assert "torch" not in sys.modules
    space = [{"name": "seed", "type": "int", "bounds": {"min": 1, "max": 40}}]
    trainer = FakeTrainer(exit_at)
    best = run_hyperparameter_search(trainer, hp_space=space, n_trials=n_trials, storage=storage,
                                     study_name=study_name, load_if_exists=True)
    assert trainer.callbacks == []
    print("best", best.run_id, best.objective)
''')


def _start_worker(tmp_path: Path, storage: str, study_name: str, n_trials: int, exit_at: int = -1
                  ) -> subprocess.Popen:
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, str(script), storage, study_name, str(n_trials), str(exit_at)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("filename", ["shared.db", "shared.jsonl"])
def test_two_processes_share_one_study(tmp_path: Path, filename: str) -> None:
    storage = str(tmp_path / filename)
    create_study(storage, "shared")  # created once; both workers load it
    workers = [_start_worker(tmp_path, storage, "shared", n_trials=3) for _ in range(2)]
    outputs = [w.communicate(timeout=900)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    trials = create_study(storage, "shared", load_if_exists=True).trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 6
    assert sorted(t.number for t in trials) == list(range(6))


def test_killed_search_is_resumed(tmp_path: Path, tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    worker = _start_worker(tmp_path, url, "killed", n_trials=5, exit_at=2)
    output = worker.communicate(timeout=900)[0]
    assert worker.returncode == 3, output
    before = optuna.load_study(study_name="killed", storage=url).trials
    assert [t.state for t in before] == [TrialState.COMPLETE, TrialState.COMPLETE, TrialState.RUNNING]

    trainer = _trainer(tiny_body_path, toy_data, toy_eval)
    best = trainer.hyperparameter_search(hp_space=SEED_SPACE, n_trials=1, storage=url, study_name="killed",
                                         load_if_exists=True, pruner=optuna.pruners.NopPruner())
    after = best.study.trials
    complete = [t for t in after if t.state == TrialState.COMPLETE]
    assert [(t.number, t.value, t.params) for t in complete[:2]] == [(t.number, t.value, t.params) for t in before[:2]]
    assert len(complete) == 3 and complete[2].number == 3
    assert best.objective == max(t.value for t in complete)


def test_cli_search(tmp_path: Path, tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    from setfit_lite.cli import main

    files = {}
    for name, data in (("train", toy_data), ("eval", toy_eval)):
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps({"text": t, "label": y}) + "\n"
                                       for t, y in zip(data["text"], data["label"])), encoding="utf-8")
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"parameters": SEED_SPACE, "metrics": [{"name": "accuracy", "objective": "maximize"}],
                                 "observation_budget": 1}), encoding="utf-8")
    out = tmp_path / "best.json"
    argv = ["search", str(files["train"]), "--eval-data", str(files["eval"]), "--model", tiny_body_path,
            "--space", str(space), "--storage", str(tmp_path / "cli.db"), "--study-name", "cli", "--output", str(out),
            "--backend", "cpu", "--num-epochs", "1"]
    assert main(argv) == 0
    best = json.loads(out.read_text(encoding="utf-8"))
    assert best["study_name"] == "cli" and best["n_trials"] == 1 and best["direction"] == "maximize"
    assert set(best["hyperparameters"]) == {"seed"} and 0.0 <= best["objective"] <= 1.0
    assert main(["search", str(files["train"]), "--model", tiny_body_path]) == 2  # no --eval-data
    # an existing --output is never written over (refused before any trial), and nothing is created for a run that
    # cannot start: no database file for a missing --eval-data file
    out.write_text('{"mine": true}', encoding="utf-8")
    assert main(argv[:-4] + ["--study-name", "again"] + argv[-2:] + ["--output", str(out)]) == 2
    assert json.loads(out.read_text(encoding="utf-8")) == {"mine": True}
    fresh = tmp_path / "fresh.db"
    assert main(["search", str(files["train"]), "--eval-data", str(tmp_path / "missing.jsonl"), "--model",
                 tiny_body_path, "--storage", str(fresh)]) == 2
    assert not fresh.exists()


def test_search_is_quiet_unless_verbose(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    import logging

    from setfit_lite import logging as sl_logging

    class Record(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.DEBUG)
            self.lines: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.lines.append(record.getMessage())

    record = Record()
    optuna_logger = logging.getLogger("optuna")
    optuna_logger.addHandler(record)
    library = logging.getLogger("setfit_lite")
    level = library.level
    trainer = _trainer(tiny_body_path, toy_data, toy_eval)
    try:
        trainer.hyperparameter_search(hp_space=SEED_SPACE, n_trials=1)
        assert not [line for line in record.lines if "Trial 0 finished" in line]  # Optuna's INFO line per trial
        library.setLevel(logging.INFO)  # setfit_lite.logging.set_verbosity_info(), without its stderr handler
        assert sl_logging.is_verbose()
        trainer.hyperparameter_search(hp_space=SEED_SPACE, n_trials=1)
        assert [line for line in record.lines if "Trial 0 finished" in line]
    finally:
        library.setLevel(level)
        optuna_logger.removeHandler(record)


def test_best_run_keeps_the_parameters_hp_space_gave(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    """The best run's hyperparameters are those the trial trained with, not their JSON copy (int dict keys became
    str, numpy values were not kept and Optuna's own names came back); and it indexes like setfit's BestRun."""
    import numpy as np

    trainer = _trainer(tiny_body_path, toy_data, toy_eval)
    seeds = np.array([3, 5])

    def space(trial: Any) -> dict:
        return {"seed": seeds[trial.suggest_int("i", 0, 1)], "class_weight": {0: 1.0, 1: 2.0}}

    best = trainer.hyperparameter_search(hp_space=space, n_trials=2, backend=None,  # None: setfit's default
                                         sampler=optuna.samplers.RandomSampler(seed=0))
    assert set(best.hyperparameters) == {"seed", "class_weight"}
    assert best.hyperparameters["class_weight"] == {0: 1.0, 1: 2.0}
    assert best.hyperparameters["seed"] in (3, 5)
    assert best[1] == best.objective and best[:2] == (best.run_id, best.objective) and len(best) == 4
    assert best._asdict()["hyperparameters"] is best.hyperparameters
    trainer.train(trial=best.hyperparameters)  # the parameters train as they are
    assert trainer.model.model_head.estimator.class_weight == {0: 1.0, 1: 2.0}


def test_evaluation_during_training_changes_nothing_the_training_draws(tiny_body_path: str, toy_data: Any,
                                                                      toy_eval: Any) -> None:
    """A trial evaluates every epoch for its pruner where the user's run does not evaluate: the evaluation's
    throwaway head must draw no random number, or the trial trains another model than the final training
    (a differentiable head's dropout and initialisation drew from the generators)."""
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    bodies = []
    for strategy in ("no", "epoch"):
        model = SetFitModel.from_pretrained(tiny_body_path, use_differentiable_head=True, head_params={"dropout": 0.3})
        args = TrainingArguments(num_epochs=(2, 2), body_learning_rate=1e-2, show_progress_bar=False, backend="cpu",
                                 eval_strategy=strategy)
        trainer = Trainer(model=model, args=args, train_dataset=toy_data, eval_dataset=toy_eval)
        trainer.train()
        bodies.append({k: v.clone() for k, v in model.model_body.state_dict().items()})
    for name, value in bodies[0].items():
        assert torch.equal(value, bodies[1][name]), name


def test_an_explicit_direction_or_trial_count_is_never_replaced_by_the_experiment(tiny_body_path: str,
                                                                                   toy_data: dict,
                                                                                   toy_eval: dict) -> None:
    """The experiment's objective and budget replace setfit's defaults only: `direction="maximize"` passed against
    an experiment that minimises is a conflict (it was taken for the default and minimised), and `n_trials=10`
    passed is kept whatever the budget (it was taken for the default and replaced)."""
    from setfit_lite.search import DEFAULT_DIRECTION, DEFAULT_N_TRIALS
    from setfit_lite.search.spaces import parse_experiment
    from setfit_lite.search.study import experiment_settings

    assert DEFAULT_DIRECTION == "maximize" and DEFAULT_N_TRIALS == 10  # setfit's defaults, as they read
    experiment = {"parameters": SEED_SPACE, "observation_budget": 3,
                  "metrics": [{"name": "accuracy", "objective": "minimize"}]}
    parsed = parse_experiment(experiment)
    assert experiment_settings(parsed, DEFAULT_DIRECTION, DEFAULT_N_TRIALS, trials_given=False) == ("minimize", 3)
    assert experiment_settings(parsed, "minimize", 10, trials_given=True) == ("minimize", 10)
    assert experiment_settings(parsed, DEFAULT_DIRECTION, None, trials_given=True) == ("minimize", 3)
    trainer = _trainer(tiny_body_path, toy_data, toy_eval)
    with pytest.raises(ValueError, match="direction='maximize' conflicts with the experiment's metric objective"):
        trainer.hyperparameter_search(hp_space=experiment, direction="maximize")
    with pytest.raises(ValueError, match="direction='maximize' conflicts"):
        trainer.hyperparameter_search(hp_space=experiment, direction="".join(["max", "imize"]))  # not interned


class _FakeSigOpt:
    """SigOpt's offline `Connection` at its import boundary: experiments, suggestions (the seeds 1, 2, 3 in
    turn) and observations, recorded."""

    def __init__(self) -> None:
        self.created: list[dict] = []
        self.observed: list[tuple[int, float]] = []

    def connection(self, driver: str) -> Any:
        assert driver == "lite"
        fake = self

        class Experiments:
            def __init__(self, experiment_id: Any = None) -> None:
                self.experiment_id = experiment_id

            def create(self, **spec: Any) -> Any:
                fake.created.append(spec)
                return SimpleNamespace(id="e1")

            def suggestions(self) -> Any:
                return SimpleNamespace(create=lambda: SimpleNamespace(
                    id=len(fake.observed) + 1, assignments={"seed": len(fake.observed) + 1}))

            def observations(self) -> Any:
                return SimpleNamespace(create=lambda suggestion, values: fake.observed.append(
                    (suggestion, values[0]["value"])))

        return SimpleNamespace(experiments=Experiments)


def test_the_sigopt_backend_runs_its_suggestions_and_reports_each_objective(
        tiny_body_path: str, toy_data: dict, toy_eval: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """backend="sigopt" through SigOpt's offline driver (faked at the import boundary): the experiment is created
    with the space, the objective's direction and the budget; each suggestion trains a model and its objective is
    observed; the best run is the best observed, in the experiment's direction."""
    import sys
    import types

    fake = _FakeSigOpt()
    sigopt = types.ModuleType("sigopt")
    sigopt.Connection = fake.connection  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sigopt", sigopt)
    monkeypatch.setitem(sys.modules, "sigoptlite", types.ModuleType("sigoptlite"))
    objectives = {1: 0.5, 2: 0.25, 3: 0.75}  # by the seed a trial trained with
    trainer = _trainer(tiny_body_path, toy_data, toy_eval)
    experiment = {"parameters": [{"name": "seed", "type": "int", "bounds": {"min": 1, "max": 3}}],
                  "observation_budget": 3, "metrics": [{"name": "accuracy", "objective": "minimize"}]}
    best = trainer.hyperparameter_search(hp_space=experiment, backend="sigopt",
                                         compute_objective=lambda metrics: objectives[trainer.args.seed])
    spec = fake.created[0]
    assert spec["observation_budget"] == 3 and spec["metrics"] == [{"name": "objective", "objective": "minimize"}]
    assert spec["parameters"] == experiment["parameters"]
    assert fake.observed == [(1, 0.5), (2, 0.25), (3, 0.75)]
    assert best.run_id == "2" and best.objective == 0.25 and best.hyperparameters == {"seed": 2}


def test_each_trial_saves_its_checkpoints_in_its_own_folder(tmp_path: Path, tiny_body_path: str, toy_data: Any,
                                                            toy_eval: Any) -> None:
    """transformers' ``run-<trial number>``: a trial never meets another trial's checkpoints (a new run into a
    folder holding an earlier run's is refused, and pruning would mix them)."""
    from setfit_lite import SetFitModel, Trainer

    out = tmp_path / "ckpt"
    trainer = Trainer(args=_args(save_strategy="steps", save_steps=2, output_dir=str(out)), train_dataset=toy_data,
                      eval_dataset=toy_eval, model_init=lambda: SetFitModel.from_pretrained(tiny_body_path))
    space = [{"name": "seed", "type": "int", "bounds": {"min": 1, "max": 40}}]
    best = trainer.hyperparameter_search(hp_space=space, n_trials=2, sampler=optuna.samplers.RandomSampler(seed=0))
    assert [t.state for t in best.study.trials] == [TrialState.COMPLETE] * 2
    assert sorted(p.name for p in out.iterdir()) == ["run-0", "run-1"]
    for run in out.iterdir():
        assert [p.name for p in run.iterdir() if p.name.startswith("checkpoint-")]
