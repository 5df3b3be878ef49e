"""Running a search: trials on the trainer, scored by ``trainer.evaluate()``, in an Optuna study (or SigOpt's
offline driver).

Each trial builds a fresh model with ``trainer.model_init``, trains it with the trial's parameters (routed by
`setfit_lite.search.routing`) and scores it with ``trainer.evaluate()`` on the eval dataset.

Pruning: while a trial trains, each evaluation during training (``eval_strategy`` "steps"/"epoch", or a torch
head's epochs evaluated for ``early_stopping_patience``) is reported with ``trial.report`` by an
`OptunaPruningCallback` added to the trainer for the trial, and the trial is pruned when the pruner says so; the
final evaluation is reported at the last step + 1. For there to be intermediate evaluations, a trial whose
arguments leave ``eval_strategy="no"`` evaluates every epoch instead whenever the pruner is not
``optuna.pruners.NopPruner`` (Optuna's default pruner is ``MedianPruner``), where that trains the model the user's
arguments train: not when ``early_stopping_patience`` stops a torch head's epochs (it would stop the body's
training too), whose epochs are evaluated and reported anyway. Pass ``pruner=optuna.pruners.NopPruner()`` to train
trials without those evaluations. A trial always trains the model that ``apply_hyperparameters(params,
final_model=True)`` and ``train()`` train.

Importing this module and creating studies (`create_study`) need neither torch nor the trainer, so studies
can be created, inspected and shared between processes cheaply; a trial loads transformers (and torch) for its
helpers (``set_seed``, ``number_of_arguments``, ``default_compute_objective``, ``TrainerCallback``).
"""

from __future__ import annotations

import json
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import optuna
from optuna.distributions import BaseDistribution

from ..config.params import check_param, check_params
from ..errors import NoCompletedTrialError
from ..verbosity import quiet_optuna
from .routing import apply_hyperparameters
from .spaces import DIRECTIONS, Experiment, default_hp_space, parse_experiment, suggest_hyperparameters
from .storages import open_storage
from .values import check_space, convert

__all__ = ["BestRun", "create_study", "default_compute_objective", "run_hyperparameter_search"]

class _DefaultStr(str):
    """A default that equals its text but is told apart, by identity, from the same text passed explicitly."""


class _DefaultInt(int):
    """A default that equals its number but is told apart, by identity, from the same number passed explicitly."""


# setfit's defaults; a SigOpt experiment's metric objective and observation_budget replace them, never a value the
# caller passed (an explicit direction="maximize" against an experiment that minimises is a conflict)
DEFAULT_N_TRIALS = _DefaultInt(10)
DEFAULT_DIRECTION = _DefaultStr("maximize")
_OPTUNA_KWARGS = ("sampler", "pruner", "storage", "study_name", "load_if_exists", "timeout", "n_jobs",
                  "gc_after_trial", "callbacks", "catch", "show_progress_bar")
# storage options (not Optuna's optimize arguments): several workers on one database study
_STORAGE_KWARGS = ("heartbeat_interval", "grace_period", "max_retry", "max_trials")
# numeric arguments, checked by their rules in setfit_lite.config.params before anything is built
_NUMBER_KWARGS = ("timeout", "n_jobs", "heartbeat_interval", "grace_period", "max_retry", "max_trials")



class BestRun(NamedTuple):
    """The best trial of a hyperparameter search: setfit's `BestRun` named tuple,
    `run_id, objective, hyperparameters, backend = best`, with the Optuna study as `best.study` too.

    Attributes:
        run_id: The Optuna trial number (SigOpt: the suggestion's id).
        objective: Its objective value.
        hyperparameters: Its hyperparameters, for `trainer.train(trial=best.hyperparameters)`.
        backend: The Optuna study (as in setfit; SigOpt: the experiment).
    """

    run_id: str
    objective: float
    hyperparameters: dict[str, Any]
    backend: Any = None

    @property
    def study(self) -> Any:
        """The Optuna study, such as for `optuna.visualization`: `backend` where the search ran on Optuna, else
        None."""
        import optuna

        return self.backend if isinstance(self.backend, optuna.study.Study) else None


# ------------------------------------------------------------------------------------------------ objective


def default_compute_objective(metrics: Mapping[str, Any]) -> float:
    """The default objective of a search: transformers' `default_compute_objective` on the numeric metrics.

    Args:
        metrics: `Trainer.evaluate()`'s metrics.

    Returns:
        The loss when it is alone (`loss` counts as transformers' `eval_loss`), else the sum of the metrics
        (`epoch` and speed metrics left out).

    Raises:
        ValueError: Nothing is left to optimize (only `groups`, say).
    """
    from transformers.trainer_utils import default_compute_objective as transformers_objective

    numeric = {("eval_loss" if k == "loss" else k): float(v) for k, v in metrics.items()
               if isinstance(v, numbers.Real) and not isinstance(v, bool)}
    objective = transformers_objective(numeric)
    if objective is None:
        raise ValueError(f"no numeric metric to optimize in {dict(metrics)!r}; pass compute_objective")
    return float(objective)


def _metric_objective(name: str) -> Callable[[Mapping[str, Any]], float]:
    def objective(metrics: Mapping[str, Any]) -> float:
        if name not in metrics:
            raise ValueError(f"the experiment optimizes metric {name!r} but evaluation gives {sorted(metrics)}")
        return float(metrics[name])

    return objective


class _TrialRunner:
    """Trains and scores one trial's parameters on ``trainer`` (which it leaves holding the trial model)."""

    def __init__(self, trainer: Any, compute_objective: Callable[[Mapping[str, Any]], float],
                 evaluate_every_epoch: bool) -> None:
        self.trainer, self.compute_objective = trainer, compute_objective
        self.base_args, self.base_model = trainer.args, trainer.model
        self.evaluate_every_epoch = evaluate_every_epoch
        self.pruner_notices: set[str] = set()  # what the trials' pruning callbacks logged, once per search

    def __call__(self, params: Mapping[str, Any], run: str, trial: optuna.Trial | None = None) -> float:
        trainer = self.trainer
        trainer.args, trainer.model = self.base_args, self.base_model  # each trial routes against the originals
        apply_hyperparameters(trainer, params, final_model=True)
        args = trainer.args
        if args.save_strategy != "no":  # each trial's checkpoints in its own folder, as transformers' run-N
            args = trainer.args = args.update({"output_dir": os.path.join(args.output_dir, f"run-{run}")})
        if self.evaluate_every_epoch and args.eval_strategy == "no" and _patience_is_idle(trainer.model, args):
            # evaluations for the pruner only, which change nothing the run trains: a patience that stops nothing
            # with eval_strategy="no" stays idle (with "epoch" it would stop the body's training)
            args = trainer.args = args.update({"eval_strategy": "epoch", "early_stopping_patience": None})
        reporter = None
        if trial is not None:
            from .pruning import OptunaPruningCallback

            reporter = OptunaPruningCallback(trial, self.compute_objective, self.pruner_notices)
            trainer.add_callback(reporter)
        try:
            trainer.train(args=args)  # tears its backend down, also when a trial is pruned
        finally:
            if reporter is not None:
                trainer.remove_callback(reporter)
        metrics = trainer.evaluate()
        value = float(self.compute_objective(metrics))
        if reporter is not None:
            last = reporter.last_step
            if last is None:
                last = getattr(getattr(trainer, "state", None), "global_step", 0) or 0
            reporter.trial.report(value, last + 1)
            _set_json_attr(reporter.trial, "metrics", {k: v for k, v in metrics.items() if k != "groups"})
        return value


def _patience_is_idle(model: Any, args: Any) -> bool:
    """Whether ``args.early_stopping_patience`` stops nothing in a run with ``eval_strategy="no"``.

    With ``eval_strategy="no"`` the body is not evaluated, nor a scikit-learn head or a torch head trained end to
    end; only a torch head fitted by epochs on fixed embeddings is, after each epoch, for the patience alone (as
    `Trainer.train` does). A head this cannot tell counts as evaluated: the trial then trains with the user's
    arguments as they are.

    Args:
        model: The trial's model (its head is built when training fits it).
        args: The trial's training arguments.

    Returns:
        True when the patience is None or acts on no phase of this run.
    """
    if args.early_stopping_patience is None:
        return True
    from ..heads import SKLEARN_HEAD_NAMES, SklearnHead, TorchHead
    from .routing import _is_estimator_spec, head_spec

    spec = head_spec(model)
    if isinstance(spec, str):
        return spec in SKLEARN_HEAD_NAMES or bool(args.end_to_end)
    if isinstance(spec, TorchHead):
        return bool(args.end_to_end)
    return isinstance(spec, SklearnHead) or _is_estimator_spec(spec)


def _set_json_attr(trial: optuna.Trial, key: str, value: Any) -> None:
    """Store ``value`` as a user attribute when it survives JSON (any storage can keep it)."""
    try:
        trial.set_user_attr(key, json.loads(json.dumps(value)))
    except (TypeError, ValueError):
        pass


# ------------------------------------------------------------------------------------------------ studies


def create_study(storage: Any = None, study_name: str | None = None, direction: str = DEFAULT_DIRECTION,
                 load_if_exists: bool = False, sampler: optuna.samplers.BaseSampler | None = None,
                 pruner: optuna.pruners.BasePruner | None = None, heartbeat_interval: int | None = None,
                 grace_period: int | None = None, max_retry: int | None = 3) -> optuna.Study:
    """Create (or continue) an Optuna study, checking its storage before anything runs.

    Args:
        storage: As in [`open_storage`][setfit_lite.search.open_storage]: None, a database URL, a
            `.db`/`.sqlite` path, a `.log`/`.jsonl` journal file or a storage object.
        study_name: The study's name; None for a generated one.
        direction: `"maximize"` or `"minimize"`.
        load_if_exists: Whether an existing study of that name is continued (several processes may share it, also
            when they all start at once on a fresh database); its direction must match.
        sampler: An Optuna sampler; None for Optuna's default.
        pruner: An Optuna pruner; None for Optuna's default.
        heartbeat_interval: Seconds between a running trial's heartbeats (database storages). A trial whose
            worker stopped beating for `grace_period` seconds (after `kill -9` or a lost machine, say) is marked
            failed by the next worker that starts a trial, and queued again with the same parameters (Optuna's
            `RetryHeartbeatStaleTrialCallback`).
        grace_period: The seconds without a heartbeat after which a trial is failed; None for
            `2 * heartbeat_interval`.
        max_retry: How often a failed trial is queued again; None for always.

    Returns:
        The `optuna.Study`.

    Raises:
        ValueError: A bad `direction`, or an existing study of another direction.
        ConnectionError: A database that cannot be reached or refuses the user or password (the message names
            the URL, password hidden).
        ImportError: A missing database driver (the message names the extra to install).
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
    resolved = open_storage(storage, heartbeat_interval, grace_period, max_retry)
    study = optuna.create_study(storage=resolved, sampler=sampler, pruner=pruner,
                                study_name=study_name, direction=direction, load_if_exists=load_if_exists)
    if study.direction.name.lower() != direction:
        raise ValueError(f"study {study.study_name!r} exists with direction {study.direction.name.lower()!r}, "
                         f"not {direction!r}")
    return study


def _sigopt_connection_class() -> Any:
    """``sigopt.Connection`` when SigOpt's offline driver (``sigopt[lite]``) is installed, else ImportError."""
    try:
        import sigoptlite  # noqa: F401
        from sigopt import Connection
    except ImportError as error:
        raise ImportError(
            f"backend='sigopt' is unavailable: {error.name or 'sigopt'} is not installed. SigOpt's hosted service "
            "has shut down; only its offline driver can run (`pip install 'sigopt[lite]'`). The same SigOpt-style "
            "space runs on Optuna: hyperparameter_search(hp_space=<the same parameter list or experiment>, "
            "backend='optuna')."
        ) from error
    return Connection


def _resolve_space(hp_space: Any, backend: str) -> tuple[Callable[[optuna.Trial], Mapping[str, Any]] | None,
                                                         Experiment | None]:
    if hp_space is None:
        return default_hp_space, None
    if isinstance(hp_space, Mapping) and hp_space and all(isinstance(v, BaseDistribution) for v in hp_space.values()):
        distributions = dict(hp_space)
        return (lambda trial: suggest_hyperparameters(trial, distributions)), Experiment(distributions)
    if callable(hp_space):
        if backend == "sigopt":  # transformers' convention: the sigopt space function is called with None
            return None, parse_experiment(hp_space(None))
        return hp_space, None
    if isinstance(hp_space, (Mapping, Sequence)) and not isinstance(hp_space, (str, bytes)):
        experiment = parse_experiment(hp_space)
        return (lambda trial: suggest_hyperparameters(trial, experiment.distributions)), experiment
    raise TypeError("hp_space must be a function of an optuna trial, a SigOpt parameter list or experiment dict, "
                    f"or a dict of optuna distributions; got {type(hp_space).__name__}")


def experiment_settings(experiment: Experiment, direction: str, n_trials: int | None,
                        trials_given: bool = True) -> tuple[str, int | None]:
    """The direction and trial count a search runs with a SigOpt experiment: its metric objective replaces the
    default direction (`DEFAULT_DIRECTION`, told apart by identity from an explicit ``"maximize"``), and a direction
    passed must agree with it; its `observation_budget` replaces ``n_trials`` when that is None or was not passed
    (``trials_given``).

    Raises:
        ValueError: A direction passed that the experiment's objective contradicts.
    """
    if experiment.direction is not None:
        if direction is not DEFAULT_DIRECTION and direction != experiment.direction:
            raise ValueError(f"direction={direction!r} conflicts with the experiment's metric objective "
                             f"{experiment.direction!r}")
        direction = experiment.direction
    if experiment.n_trials is not None and (n_trials is None or not trials_given):
        n_trials = experiment.n_trials
    return direction, n_trials


def run_hyperparameter_search(trainer: Any, hp_space: Any = None,
                              compute_objective: Callable[[Mapping[str, Any]], float] | None = None,
                              n_trials: int | None = DEFAULT_N_TRIALS, direction: str = DEFAULT_DIRECTION,
                              backend: str = "optuna", hp_name: Callable[[Any], str] | None = None,
                              **kwargs: Any) -> BestRun:
    """What [`Trainer.hyperparameter_search`][setfit_lite.trainer.Trainer.hyperparameter_search] runs.

    Several workers (processes or machines) share a study through a database `storage` and the same `study_name`
    with `load_if_exists=True`: `max_trials` stops each worker once the study holds that many complete trials,
    counting every worker's. The trainer's args and model are restored afterwards (each trial's pruning callback
    is removed when the trial ends).

    Args:
        trainer: A [`Trainer`][setfit_lite.trainer.Trainer] with a `model_init` and an `eval_dataset`.
        hp_space: As in `Trainer.hyperparameter_search`.
        compute_objective: As in `Trainer.hyperparameter_search`.
        n_trials: As in `Trainer.hyperparameter_search`.
        direction: As in `Trainer.hyperparameter_search`.
        backend: As in `Trainer.hyperparameter_search`.
        hp_name: As in `Trainer.hyperparameter_search`.
        **kwargs: As in `Trainer.hyperparameter_search`.

    Returns:
        The best run ([`BestRun`][setfit_lite.search.BestRun]).

    Raises:
        ValueError: No `model_init` or no `eval_dataset`, a bad `direction`, `backend` or search space.
        TypeError: An unknown keyword argument, or a `compute_objective` that is not callable.
        NoCompletedTrialError: No trial completed.
    """
    backend = "optuna" if backend is None else getattr(backend, "value", backend)  # None: setfit's default
    if backend not in ("optuna", "sigopt"):
        raise ValueError(f"backend must be 'optuna' or 'sigopt', got {backend!r}")
    if backend == "sigopt":
        if kwargs:
            raise TypeError(f"backend='sigopt' takes no Optuna argument(s): {', '.join(sorted(kwargs))}")
        _sigopt_connection_class()
    unknown = sorted(set(kwargs) - set(_OPTUNA_KWARGS) - set(_STORAGE_KWARGS))
    if unknown:
        raise TypeError(f"hyperparameter_search got unknown argument(s): {', '.join(unknown)}; "
                        f"Optuna arguments: {', '.join(_OPTUNA_KWARGS + _STORAGE_KWARGS)}")
    kwargs.update(check_params({name: kwargs[name] for name in _NUMBER_KWARGS if name in kwargs}))
    trials_given = n_trials is not DEFAULT_N_TRIALS  # before check_param, which may return an equal int
    n_trials = check_param("n_trials", n_trials)
    if getattr(trainer, "model_init", None) is None:
        raise ValueError("To use hyperparameter search, you need to pass your model through a model_init function "
                         "(Trainer(model_init=...)): each trial needs a fresh model.")
    if getattr(trainer, "eval_dataset", None) is None:
        raise ValueError("hyperparameter search needs the Trainer's eval_dataset: each trial is scored on it")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
    if compute_objective is not None and not callable(compute_objective):
        raise TypeError(f"compute_objective must be a function of the evaluation's metrics (a dict) returning the "
                        f"number to {direction}, or None for default_compute_objective; got "
                        f"{type(compute_objective).__name__} {compute_objective!r}")
    sample, experiment = _resolve_space(hp_space, backend)
    if experiment is not None:
        direction, n_trials = experiment_settings(experiment, direction, n_trials, trials_given)
        if compute_objective is None and experiment.metric:
            compute_objective = _metric_objective(experiment.metric)
    # fail before any study or training exists; string categorical values become their receiver's type
    if backend == "optuna":  # a storage that cannot be opened fails before check_space builds a model
        kwargs["storage"] = open_storage(kwargs.get("storage"),
                                         heartbeat_interval=kwargs.pop("heartbeat_interval", None),
                                         grace_period=kwargs.pop("grace_period", None),
                                         max_retry=kwargs.pop("max_retry", 3))
    conversions = check_space(trainer, experiment.distributions) if experiment is not None else {}
    objective_fn = compute_objective or default_compute_objective
    saved = (trainer.args, trainer.model)
    try:
        if backend == "sigopt":
            assert experiment is not None
            return _run_sigopt(trainer, hp_space, experiment, objective_fn, n_trials, direction, conversions)
        with quiet_optuna():  # no INFO line per trial unless setfit_lite.verbosity is "verbose"
            return _run_optuna(trainer, sample, objective_fn, n_trials, direction, hp_name, kwargs, conversions)
    finally:
        trainer.args, trainer.model = saved


def _run_optuna(trainer: Any, sample: Callable[[optuna.Trial], Mapping[str, Any]] | None,
                compute_objective: Callable[[Mapping[str, Any]], float], n_trials: int | None, direction: str,
                hp_name: Callable[[Any], str] | None, kwargs: dict[str, Any],
                conversions: Mapping[str, Mapping[str, Any]]) -> BestRun:
    assert sample is not None
    max_trials = kwargs.pop("max_trials", None)
    study = create_study(storage=kwargs.pop("storage", None), study_name=kwargs.pop("study_name", None),
                         direction=direction, load_if_exists=kwargs.pop("load_if_exists", False),
                         sampler=kwargs.pop("sampler", None), pruner=kwargs.pop("pruner", None))
    evaluate_every_epoch = not isinstance(study.pruner, optuna.pruners.NopPruner)
    runner = _TrialRunner(trainer, compute_objective, evaluate_every_epoch)
    # each trial's parameters as hp_space gave them: the stored copy is JSON (dict keys become str, numpy
    # values are not kept), for trials of earlier runs of a resumed study only
    given: dict[int, dict[str, Any]] = {}

    def objective(trial: optuna.Trial) -> float:
        params = sample(trial)
        if not isinstance(params, Mapping):
            raise TypeError(f"hp_space must return a dict of parameters, got {type(params).__name__}")
        params = convert(params, conversions)
        given[trial.number] = dict(params)
        _set_json_attr(trial, "hyperparameters", params)
        if hp_name is not None:
            trial.set_user_attr("name", str(hp_name(trial)))
        return runner(params, str(trial.number), trial)

    if max_trials is None:
        study.optimize(objective, n_trials=n_trials, **kwargs)
    elif len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))) < max_trials:
        stop = optuna.study.MaxTrialsCallback(int(max_trials), states=(optuna.trial.TrialState.COMPLETE,))
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or ()), stop]
        study.optimize(objective, n_trials=n_trials, **kwargs)
    completed = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if not completed:
        raise NoCompletedTrialError(f"no trial of study {study.study_name!r} completed (all pruned or failed): "
                                    f"see the trials' errors above, or give more trials or a longer timeout")
    best = study.best_trial
    params = given.get(best.number, best.user_attrs.get("hyperparameters", best.params))
    return BestRun(str(best.number), float(best.value), dict(params), backend=study)


def _run_sigopt(trainer: Any, hp_space: Any, experiment: Experiment,
                compute_objective: Callable[[Mapping[str, Any]], float], n_trials: int | None,
                direction: str, conversions: Mapping[str, Mapping[str, Any]]) -> BestRun:
    """Run through SigOpt's offline driver (``sigopt[lite]``), when installed."""
    Connection = _sigopt_connection_class()  # noqa: N806
    parameters = hp_space(None) if callable(hp_space) else hp_space
    parameters = parameters["parameters"] if isinstance(parameters, Mapping) else parameters
    budget = n_trials or DEFAULT_N_TRIALS
    conn = Connection(driver="lite")
    created = conn.experiments().create(name="setfit-lite", parameters=list(parameters),
                                        metrics=[{"name": "objective", "objective": direction}],
                                        observation_budget=budget)
    runner = _TrialRunner(trainer, compute_objective, evaluate_every_epoch=False)
    results: list[tuple[str, float, dict[str, Any]]] = []
    for _ in range(budget):
        suggestion = conn.experiments(created.id).suggestions().create()
        params = convert(dict(suggestion.assignments), conversions)
        value = runner(params, str(suggestion.id))
        conn.experiments(created.id).observations().create(suggestion=suggestion.id,
                                                           values=[{"name": "objective", "value": value}])
        results.append((str(suggestion.id), value, params))
    pick = max if direction == "maximize" else min
    run_id, value, params = pick(results, key=lambda r: r[1])
    return BestRun(run_id, value, params, backend=created)
