"""A search's trials train the model the final training trains, and score it as documented: a searched
``early_stopping_patience`` kept under the default pruner, and an objective of ``evaluate()``'s own keys
(``calibration``) that the evaluations during training lack."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

from setfit_lite.search.pruning import OptunaPruningCallback

optuna.logging.set_verbosity(optuna.logging.WARNING)

PRUNERS = {"default (MedianPruner)": None, "NopPruner": optuna.pruners.NopPruner()}
# the patience's warning that it acts on the torch head's epochs only (or on nothing), as the user's run says it
pytestmark = [pytest.mark.filterwarnings("ignore:early_stopping_patience=1:UserWarning"),
              pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")]


class HeadEpochs:
    """A callback counting the torch head's epochs of each `train()` call."""

    def __init__(self) -> None:
        self.runs: list[int] = []

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.runs.append(0)

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.phase == "head":
            self.runs[-1] += 1


def _trainer(body: str, train: Any, evaluation: Any, differentiable: bool, callbacks: list | None = None,
             **arguments: Any) -> Any:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    def model_init() -> SetFitModel:
        return SetFitModel.from_pretrained(body, use_differentiable_head=differentiable)

    args = TrainingArguments(show_progress_bar=False, backend="cpu", batch_size=4, report_to="none", **arguments)
    return Trainer(model_init=model_init, args=args, train_dataset=train, eval_dataset=evaluation,
                   callbacks=callbacks)


def _retrained(trainer: Any, params: dict, objective: Any) -> float:
    """The objective of the model that the final training with ``params`` gives."""
    trainer.apply_hyperparameters(params, final_model=True)
    trainer.train()
    return objective(trainer.evaluate())


@pytest.mark.parametrize("pruner", PRUNERS.values(), ids=PRUNERS.keys())
def test_trial_keeps_a_searched_early_stopping_patience(tiny_body_path: str, toy_data: Any, toy_eval: Any,
                                                         pruner: Any) -> None:
    """With eval_strategy="no", the patience stops a torch head's epochs: each trial (pruner or not) trains with
    it, as the final training with the trial's hyperparameters does, and scores what that training scores."""
    epochs = HeadEpochs()
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, differentiable=True, callbacks=[epochs], max_steps=1,
                       num_epochs=(1, 30), eval_strategy="no")

    def space(trial: optuna.Trial) -> dict:
        return {"early_stopping_patience": trial.suggest_categorical("early_stopping_patience", [1, None]),
                "head_learning_rate": trial.suggest_categorical("head_learning_rate", [0.5])}

    def accuracy(metrics: dict) -> float:
        return metrics["accuracy"]

    best = trainer.hyperparameter_search(space, compute_objective=accuracy, n_trials=2, pruner=pruner,
                                         sampler=optuna.samplers.BruteForceSampler(seed=0))
    trials = best.study.trials
    assert sorted(str(t.params["early_stopping_patience"]) for t in trials) == ["1", "None"]
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2
    trial_epochs = list(epochs.runs)
    for trial, trained in zip(trials, trial_epochs):
        params = trial.user_attrs["hyperparameters"]
        assert trial.value == _retrained(trainer, params, accuracy), params
        assert epochs.runs[-1] == trained, params  # the same head epochs as the trial
        if params["early_stopping_patience"] is None:
            assert trained == 30
        else:
            assert trained < 30  # the patience stopped the head
            if pruner is None:  # the head's epochs were evaluated for the patience, and reported to the pruner
                assert len(trial.intermediate_values) > 1


def test_idle_patience_still_gives_the_pruner_evaluations(tiny_body_path: str, toy_data: Any,
                                                          toy_eval: Any) -> None:
    """A patience that stops nothing with eval_strategy="no" (a scikit-learn head, the body not evaluated) leaves
    the trial's per-epoch evaluations for the pruner, which change nothing it trains."""
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, differentiable=False, max_steps=2,
                       early_stopping_patience=1)

    def accuracy(metrics: dict) -> float:
        return metrics["accuracy"]

    best = trainer.hyperparameter_search(lambda t: {"seed": t.suggest_int("seed", 1, 40)}, n_trials=1,
                                         compute_objective=accuracy)
    (trial,) = best.study.trials
    assert len(trial.intermediate_values) == 2  # an evaluation during training, and the final one
    assert trial.value == _retrained(trainer, best.hyperparameters, accuracy)


def _brier(metrics: dict) -> float:
    return metrics["calibration"]["brier_score"]


@pytest.mark.parametrize("pruner", PRUNERS.values(), ids=PRUNERS.keys())
def test_objective_of_evaluate_only_keys_scores_the_trials(tiny_body_path: str, toy_data: Any, toy_eval: Any,
                                                          pruner: Any, caplog: pytest.LogCaptureFixture) -> None:
    """`compute_objective` scores `evaluate()`'s metrics: one reading `calibration`, which the evaluations during
    training lack, completes every trial (not pruned, said once) and scores it by `evaluate()`."""
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, differentiable=False, max_steps=2)
    with caplog.at_level(logging.WARNING, logger="setfit_lite.search.pruning"):
        best = trainer.hyperparameter_search(lambda t: {"seed": t.suggest_int("seed", 1, 40)}, n_trials=2,
                                             compute_objective=_brier, direction="minimize", pruner=pruner,
                                             sampler=optuna.samplers.RandomSampler(seed=0))
    trials = best.study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2
    assert best.objective == min(t.value for t in trials)
    for trial in trials:
        assert list(trial.intermediate_values.values()) in ([], [trial.value])  # only the final evaluation
        assert trial.value == _retrained(trainer, trial.user_attrs["hyperparameters"], _brier)
    notices = [r for r in caplog.records if r.name == "setfit_lite.search.pruning"]
    if pruner is None:
        assert len(notices) == 1 and "KeyError" in notices[0].getMessage()
        assert "calibration" in notices[0].getMessage()
    else:
        assert not notices  # NopPruner: no callback, nothing evaluated during training


def test_error_of_the_final_objective_is_raised(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    """An objective that fails on `evaluate()`'s metrics too is an error, not swallowed."""
    trainer = _trainer(tiny_body_path, toy_data, toy_eval, differentiable=False, max_steps=2)
    with pytest.raises(KeyError, match="no_such_metric"):
        trainer.hyperparameter_search(lambda t: {"seed": t.suggest_int("seed", 1, 40)}, n_trials=1,
                                      compute_objective=lambda m: m["no_such_metric"])


class _Trial:
    def __init__(self) -> None:
        self.reports: list[tuple[float, int]] = []

    def report(self, value: float, step: int) -> None:
        self.reports.append((value, step))

    def should_prune(self) -> bool:
        return False


def test_pruning_callback_stops_reporting_what_it_cannot_score(caplog: pytest.LogCaptureFixture) -> None:
    """The callback reports an objective it can compute; one it cannot is not reported (nor anything after it in
    the trial), and is logged once for the callbacks sharing their notices."""
    state = SimpleNamespace(global_step=3)
    ok, failing = _Trial(), _Trial()
    OptunaPruningCallback(ok, lambda m: m["accuracy"]).on_evaluate(None, state, None, metrics={"eval_accuracy": 0.75})
    assert ok.reports == [(0.75, 3)]
    callback = OptunaPruningCallback(failing, _brier)
    callback.on_evaluate(None, state, None, metrics={"eval_accuracy": 0.75})  # no KeyError
    assert failing.reports == [] and callback.last_step is None and "calibration" in str(callback.unusable)
    notices: set[str] = set()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="setfit_lite.search.pruning"):
        for trial in (_Trial(), _Trial()):
            callback = OptunaPruningCallback(trial, _brier, notices)
            for _ in range(2):
                callback.on_evaluate(None, state, None, metrics={"eval_accuracy": 0.75})
            assert trial.reports == []
    assert len([r for r in caplog.records if r.name == "setfit_lite.search.pruning"]) == 1
