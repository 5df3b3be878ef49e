"""Hyperparameter search for :class:`setfit_lite.Trainer` with Optuna (SigOpt-style spaces translated to Optuna).

Each trial builds a fresh model with ``trainer.model_init``, trains it with the trial's parameters and scores it
with ``trainer.evaluate()`` on the eval dataset. A trial's parameters are routed by name:

- a :class:`TrainingArguments` field (``body_learning_rate``, ``num_epochs``, ``batch_size``, ``seed``, ...) sets
  the trial's training arguments (checked as ``TrainingArguments`` checks them);
- otherwise, a parameter the model's head accepts (``C``, ``max_iter``, ``solver``, ``class_weight`` of the default
  LogisticRegression; ``hidden_size``, ``dropout`` of the differentiable head; any ``get_params()`` name of an
  sklearn estimator given as the head) is applied to the trial model's head;
- otherwise, a name ``model_init`` declares as a keyword parameter (``def model_init(norm=False, dropout=0.1)``)
  is passed to it as that keyword argument;
- a name marked ``model_init__<name>`` (:data:`MODEL_INIT_PREFIX`) goes to ``model_init`` only: with setfit's
  one-argument convention (``def model_init(params)``) these are the only names its dict receives, keyed without
  the prefix (``{"norm": True}`` for ``model_init__norm``); with keyword parameters, ``<name>`` must be one of them.
- any other name is a ``TypeError`` before the first trial, listing what accepts names (setfit silently drops
  it, or hands it to ``model_init``, so a typo searched nothing).

SigOpt categorical values are strings; before the first trial each is converted to the type its receiver takes
(the ``TrainingArguments`` field's annotation: ``"0"`` -> ``0`` for ``seed``, ``"1e-4"`` -> ``1e-4`` for rates,
``"true"`` -> ``True``, ``"none"`` -> ``None`` where allowed; a head parameter's sklearn constraints or default; a
``model_init`` keyword's annotation or default), and every categorical value and bound a field would get is
checked: a value that does not convert or is out of range is an error naming the parameter, before any training.
Trials (and ``BestRun.hyperparameters``) get the converted values; the dict of a one-argument ``model_init``
gets them as given.

Pruning: while a trial trains, each evaluation during training (``eval_strategy`` "steps"/"epoch") is reported
with ``trial.report`` and the trial is pruned when the pruner says so; the final evaluation is reported at the
last step + 1. For there to be intermediate evaluations, a trial whose arguments leave ``eval_strategy="no"``
evaluates every epoch instead whenever the pruner is not ``optuna.pruners.NopPruner`` (Optuna's default pruner
is ``MedianPruner``): pass ``pruner=optuna.pruners.NopPruner()`` to train trials without those evaluations.

This module imports neither torch nor the trainer until a trial runs on a real model, so studies can be created,
inspected and shared between processes cheaply (:func:`create_study`).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import json
import math
import numbers
import os
import sys
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

__all__ = [
    "DEFAULT_HP_SPACE",
    "MODEL_INIT_PREFIX",
    "BestRun",
    "apply_head_params",
    "apply_hyperparameters",
    "build_model",
    "create_study",
    "default_compute_objective",
    "default_hp_space",
    "head_param_names",
    "load_space",
    "run_hyperparameter_search",
    "sigopt_to_optuna",
    "split_hyperparameters",
    "suggest_hyperparameters",
]

DEFAULT_HP_SPACE: dict[str, BaseDistribution] = {
    "body_learning_rate": FloatDistribution(1e-6, 1e-4, log=True),
    "num_epochs": IntDistribution(1, 3),
    "batch_size": CategoricalDistribution((4, 8, 16, 32)),
    "seed": IntDistribution(1, 40),
}

MODEL_INIT_PREFIX = "model_init__"

_DEFAULT_N_TRIALS = 10
_DEFAULT_DIRECTION = "maximize"
_DIRECTIONS = ("maximize", "minimize")
_OPTUNA_KWARGS = ("sampler", "pruner", "storage", "study_name", "load_if_exists", "timeout", "n_jobs",
                  "gc_after_trial", "callbacks", "catch", "show_progress_bar")
_PARAMETER_KEYS = ("name", "type", "bounds", "categorical_values", "transformation", "grid")
_EXPERIMENT_KEYS = ("parameters", "metrics", "observation_budget", "name", "project", "type", "metadata",
                    "parallel_bandwidth")
_JOURNAL_SUFFIXES = (".log", ".jsonl")
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_SCALARS = (type(None), bool, int, float, str)
_KIND_NAMES = {type(None): "none", bool: "true/false", int: "an integer", float: "a number", str: "a string"}


@dataclass
class BestRun:
    """The best trial: ``run_id`` (Optuna trial number), its ``objective`` and ``hyperparameters``.

    ``backend`` and ``study`` are the Optuna study (as in setfit), e.g. for ``optuna.visualization``.
    Unpacks like setfit's ``BestRun`` named tuple: ``run_id, objective, hyperparameters, backend = best``.
    """

    run_id: str
    objective: float
    hyperparameters: dict[str, Any]
    backend: Any = None
    study: Any = field(default=None, repr=False, compare=False)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.run_id, self.objective, self.hyperparameters, self.backend))


# ------------------------------------------------------------------------------------------------ spaces


def default_hp_space(trial: optuna.Trial) -> dict[str, Any]:
    """setfit's default space: body learning rate, epochs, batch size and seed (:data:`DEFAULT_HP_SPACE`)."""
    return suggest_hyperparameters(trial, DEFAULT_HP_SPACE)


def suggest_hyperparameters(trial: optuna.Trial, distributions: Mapping[str, BaseDistribution]) -> dict[str, Any]:
    """Sample each distribution with the trial's public ``suggest_*`` API (same distributions, exactly)."""
    params: dict[str, Any] = {}
    for name, dist in distributions.items():
        if isinstance(dist, FloatDistribution):
            params[name] = trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)
        elif isinstance(dist, IntDistribution):
            params[name] = trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
        elif isinstance(dist, CategoricalDistribution):
            params[name] = trial.suggest_categorical(name, dist.choices)
        else:
            raise TypeError(f"hyperparameter {name!r}: unsupported distribution {type(dist).__name__}")
    return params


@dataclass
class _Experiment:
    distributions: dict[str, BaseDistribution]
    direction: str | None = None
    n_trials: int | None = None
    metric: str | None = None


def sigopt_to_optuna(space: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> dict[str, BaseDistribution]:
    """Translate a SigOpt parameter list (or experiment dict with ``parameters``) to Optuna distributions.

    ``double`` -> ``FloatDistribution(min, max, log=transformation == "log")``, ``int`` -> ``IntDistribution``,
    ``categorical`` -> ``CategoricalDistribution`` of the value names, and a ``grid`` -> ``CategoricalDistribution``
    of the grid values. An invalid parameter raises ``ValueError`` naming it.
    """
    return _parse_experiment(space).distributions


def _parse_experiment(space: Any) -> _Experiment:
    if isinstance(space, Mapping):
        unknown = sorted(set(space) - set(_EXPERIMENT_KEYS))
        if unknown:
            raise ValueError(f"SigOpt experiment: unsupported key(s) {', '.join(map(str, unknown))}; "
                             f"supported: {', '.join(_EXPERIMENT_KEYS)}")
        if "parameters" not in space:
            raise ValueError("SigOpt experiment needs a 'parameters' list")
        if space.get("type", "offline") != "offline":
            raise ValueError(f"SigOpt experiment type {space['type']!r} is not supported; use type 'offline' and "
                             "choose the search algorithm with sampler= (e.g. optuna.samplers.RandomSampler())")
        experiment = _Experiment(_parse_parameters(space["parameters"]))
        budget = space.get("observation_budget")
        if budget is not None:
            if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget < 1:
                raise ValueError(f"SigOpt experiment: observation_budget must be a positive integer, got {budget!r}")
            experiment.n_trials = int(budget)
        if space.get("metrics") is not None:
            experiment.metric, experiment.direction = _parse_metrics(space["metrics"])
        return experiment
    return _Experiment(_parse_parameters(space))


def _parse_metrics(metrics: Any) -> tuple[str | None, str]:
    if not isinstance(metrics, Sequence) or isinstance(metrics, (str, bytes)):
        raise ValueError(f"SigOpt experiment: metrics must be a list of dicts, got {metrics!r}")
    optimized = []
    for metric in metrics:
        if not isinstance(metric, Mapping):
            raise ValueError(f"SigOpt experiment: each metric must be a dict, got {metric!r}")
        strategy = metric.get("strategy", "optimize")
        if strategy == "store":
            continue
        if strategy != "optimize":
            raise ValueError(f"SigOpt metric {metric.get('name')!r}: strategy {strategy!r} is not supported "
                             "(only 'optimize' and 'store')")
        objective = metric.get("objective", "maximize")
        if objective not in _DIRECTIONS:
            raise ValueError(f"SigOpt metric {metric.get('name')!r}: objective must be 'maximize' or 'minimize', "
                             f"got {objective!r}")
        optimized.append((metric.get("name"), objective))
    if len(optimized) != 1:
        raise ValueError(f"SigOpt experiment: exactly one optimized metric is supported, got {len(optimized)}")
    return optimized[0]


def _parse_parameters(parameters: Any) -> dict[str, BaseDistribution]:
    if not isinstance(parameters, Sequence) or isinstance(parameters, (str, bytes)):
        raise ValueError(f"a SigOpt space is a list of parameter dicts, got {type(parameters).__name__}")
    if not parameters:
        raise ValueError("the SigOpt space has no parameters")
    out: dict[str, BaseDistribution] = {}
    for index, parameter in enumerate(parameters):
        if not isinstance(parameter, Mapping):
            raise ValueError(f"SigOpt parameter #{index} must be a dict, got {parameter!r}")
        name = parameter.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"SigOpt parameter #{index} needs a non-empty string 'name', got {name!r}")
        if name in out:
            raise ValueError(f"SigOpt parameter {name!r} is defined twice (duplicate name)")
        out[name] = _parse_parameter(name, parameter)
    return out


def _parse_parameter(name: str, p: Mapping[str, Any]) -> BaseDistribution:
    def fail(problem: str) -> ValueError:
        return ValueError(f"SigOpt parameter {name!r}: {problem}")

    unknown = sorted(set(p) - set(_PARAMETER_KEYS))
    if unknown:
        raise fail(f"unsupported key(s) {', '.join(map(str, unknown))}; supported: {', '.join(_PARAMETER_KEYS)}")
    kind = p.get("type")
    if kind not in ("double", "int", "categorical"):
        raise fail(f"type must be 'double', 'int' or 'categorical', got {kind!r}")
    transformation = p.get("transformation")
    if transformation not in (None, "none", "log"):
        raise fail(f"transformation must be 'log' (or absent), got {transformation!r}")
    log = transformation == "log"
    if kind == "categorical":
        for key in ("bounds", "grid"):
            if key in p:
                raise fail(f"a categorical parameter takes categorical_values, not {key!r}")
        if log:
            raise fail("a categorical parameter cannot have a log transformation")
        return CategoricalDistribution(_categorical_values(p.get("categorical_values"), fail))
    if "categorical_values" in p:
        raise fail(f"categorical_values only apply to type 'categorical', not {kind!r}")
    if "grid" in p:
        if "bounds" in p:
            raise fail("give either bounds or grid, not both")
        grid = p["grid"]
        if not isinstance(grid, Sequence) or isinstance(grid, (str, bytes)) or not grid:
            raise fail(f"grid must be a non-empty list of numbers, got {grid!r}")
        values = tuple(_number(v, kind, "grid value", fail) for v in grid)
        if len(set(values)) != len(values):
            raise fail(f"grid has duplicate values: {list(grid)}")
        if log and min(values) <= 0:
            raise fail(f"a log transformation needs positive grid values, got {list(grid)}")
        return CategoricalDistribution(values)
    bounds = p.get("bounds")
    if not isinstance(bounds, Mapping) or set(bounds) != {"min", "max"}:
        raise fail(f"needs bounds {{'min': ..., 'max': ...}} (or a grid), got {bounds!r}")
    low, high = _number(bounds["min"], kind, "bounds.min", fail), _number(bounds["max"], kind, "bounds.max", fail)
    if low > high:
        raise fail(f"bounds.min ({low}) > bounds.max ({high})")
    if log and low <= 0:
        raise fail(f"a log transformation needs positive bounds, got min={low}")
    if kind == "int":
        return IntDistribution(int(low), int(high), log=log)
    return FloatDistribution(float(low), float(high), log=log)


def _number(value: Any, kind: str, what: str, fail: Callable[[str], ValueError]) -> int | float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise fail(f"{what} must be a finite number, got {value!r}")
    if kind == "int":
        if value != int(value):
            raise fail(f"{what} must be an integer for an int parameter, got {value!r}")
        return int(value)
    return float(value)


def _categorical_values(values: Any, fail: Callable[[str], ValueError]) -> tuple[str, ...]:
    if not isinstance(values, Sequence) or isinstance(values, (str, bytes)) or not values:
        raise fail(f"categorical_values must be a non-empty list, got {values!r}")
    names = []
    for value in values:
        if isinstance(value, Mapping):
            if not set(value) <= {"name", "enum_index"}:
                raise fail(f"a categorical value dict takes 'name' (and 'enum_index'), got {dict(value)!r}")
            value = value.get("name")
        if not isinstance(value, str) or not value:
            raise fail(f"categorical values must be non-empty strings or {{'name': str}} dicts, got {value!r}")
        names.append(value)
    if len(set(names)) != len(names):
        raise fail(f"categorical_values has duplicates: {names}")
    return tuple(names)


def load_space(path: str | os.PathLike) -> Any:
    """A SigOpt-style space (parameter list or experiment dict) from a JSON file, validated."""
    with open(path, encoding="utf-8") as handle:
        try:
            space = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from error
    _parse_experiment(space)
    return space


# ------------------------------------------------------------------------------------------------ routing


def _training_argument_names() -> set[str]:
    from .training_args import TrainingArguments

    return {f.name for f in dataclasses.fields(TrainingArguments)} - {"extra"}


def _takes_params(model_init: Callable[..., Any] | None) -> bool:
    """Whether ``model_init`` receives the parameters dict (one argument), as ``Trainer.call_model_init``."""
    if model_init is None:
        return False
    try:
        return len(inspect.signature(model_init).parameters) == 1
    except (TypeError, ValueError):
        return False


def _model_init_keywords(model_init: Callable[..., Any] | None) -> set[str]:
    """The names ``model_init`` declares as keyword parameters (none for the one-argument dict convention)."""
    if model_init is None or _takes_params(model_init):
        return set()
    try:
        parameters = inspect.signature(model_init).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _head_spec(model: Any) -> Any:
    from .heads import _SKLEARN_HEAD_NAMES, _TORCH_HEAD_NAMES

    spec = model.head_spec
    if spec is None:
        spec = _TORCH_HEAD_NAMES[0] if model.use_differentiable_head else _SKLEARN_HEAD_NAMES[0]
    return spec


def _is_estimator_spec(spec: Any) -> bool:
    if spec is None or isinstance(spec, str):
        return False
    from .heads import SklearnHead, TorchHead

    return not isinstance(spec, (SklearnHead, TorchHead)) and hasattr(spec, "get_params")


def head_param_names(model: Any) -> tuple[str, set[str]]:
    """``(description, names)``: the parameters the head of ``model`` accepts, as trained next."""
    from .heads import _SKLEARN_HEAD_NAMES, _TORCH_HEAD_NAMES, SklearnHead, TorchHead

    spec = _head_spec(model)
    if isinstance(spec, str) and spec in _TORCH_HEAD_NAMES:
        fixed = {"self", "in_features", "num_classes", "multi_label"}
        return "TorchHead", set(inspect.signature(TorchHead.__init__).parameters) - fixed
    if isinstance(spec, str) and spec in _SKLEARN_HEAD_NAMES:
        from sklearn.linear_model import LogisticRegression

        return "LogisticRegression", set(LogisticRegression().get_params(deep=False))
    if isinstance(spec, str):
        return f"unknown head {spec!r}", set()
    if isinstance(spec, (SklearnHead, TorchHead)):
        return f"a prebuilt {type(spec).__name__} (takes no parameters)", set()
    return type(spec).__name__, set(spec.get_params(deep=True))


def apply_head_params(model: Any, params: Mapping[str, Any]) -> None:
    """Make the next head of ``model`` use ``params`` (``model.head_params``, or the estimator's ``set_params``)."""
    if not params:
        return
    description, names = head_param_names(model)
    unknown = sorted(set(params) - names)
    if unknown:
        raise TypeError(f"the head ({description}) has no parameter(s) {', '.join(unknown)}")
    if _is_estimator_spec(model.head_spec):
        from sklearn.base import clone

        model.head_spec = clone(model.head_spec).set_params(**params)
    else:
        model.head_params = {**model.head_params, **params}


def _route(trainer: Any, names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Each name's receiver and key: ``("args", field)``, ``("head", parameter)`` or ``("model_init", keyword)``.

    Names nothing accepts raise ``TypeError`` listing what accepts names (see the module doc for the rule).
    """
    model_init = getattr(trainer, "model_init", None)
    takes_dict, keywords = _takes_params(model_init), _model_init_keywords(model_init)
    arg_names = _training_argument_names()

    @functools.cache
    def head() -> tuple[str, set[str]]:
        model = getattr(trainer, "model", None)
        return head_param_names(model) if model is not None else ("no model yet", set())

    routes: dict[str, tuple[str, str]] = {}
    unknown: list[str] = []
    for name in names:
        key = name.removeprefix(MODEL_INIT_PREFIX) if isinstance(name, str) else name
        if key != name:
            route = ("model_init", key) if key and (takes_dict or key in keywords) else None
        elif name in arg_names:
            route = ("args", name)
        elif name in head()[1]:
            route = ("head", name)
        else:
            route = ("model_init", name) if name in keywords else None
        if route is None:
            unknown.append(name)
        else:
            routes[name] = route
    if unknown:
        raise _unaccepted(unknown, arg_names, head(), model_init, takes_dict, keywords)
    init_keys = [key for receiver, key in routes.values() if receiver == "model_init"]
    twice = sorted({key for key in init_keys if init_keys.count(key) > 1})
    if twice:
        raise TypeError(f"model_init parameter(s) {', '.join(map(repr, twice))} given twice (with and without "
                        f"the {MODEL_INIT_PREFIX!r} prefix)")
    return routes


def _unaccepted(names: list[Any], arg_names: set[str], head: tuple[str, set[str]],
                model_init: Callable[..., Any] | None, takes_dict: bool, keywords: set[str]) -> TypeError:
    description, head_names = head
    if model_init is None:
        init = "there is no model_init"
    elif takes_dict:
        init = (f"model_init(params) receives, in its dict and without the prefix, only names marked "
                f"{MODEL_INIT_PREFIX!r} (e.g. {MODEL_INIT_PREFIX + str(names[0])!r})")
    elif keywords:
        init = f"model_init takes its keyword parameters {', '.join(sorted(keywords))}"
    else:
        init = "model_init takes no parameters"
    candidates = sorted(arg_names | head_names | keywords)
    hints = [f"{name!r}: did you mean {match[0]!r}?" for name in names
             if isinstance(name, str) and (match := difflib.get_close_matches(name, candidates, n=1))]
    return TypeError(
        f"hyperparameter(s) {', '.join(map(repr, names))}: nothing accepts this name"
        + (f" ({'; '.join(hints)})" if hints else "")
        + f". Names go to TrainingArguments ({', '.join(sorted(arg_names))}); to the head ({description}: "
        f"{', '.join(sorted(head_names)) or 'no parameters'}); or to model_init: {init}.")


def _partition(trainer: Any, params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(training-argument params, head params, model_init params)``; names nothing accepts raise TypeError."""
    if not isinstance(params, Mapping):
        raise TypeError(f"the hyperparameter space must give a dict of parameters, got {type(params).__name__}")
    parts: dict[str, dict[str, Any]] = {"args": {}, "head": {}, "model_init": {}}
    for name, (receiver, key) in _route(trainer, params).items():
        parts[receiver][key] = params[name]
    return parts["args"], parts["head"], parts["model_init"]


def split_hyperparameters(trainer: Any, params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(training-argument params, model_init params)``; head params are the others (see module doc).

    model_init params are keyed as model_init receives them (without the ``model_init__`` prefix).
    """
    args, _head, init = _partition(trainer, params)
    return args, init


def build_model(trainer: Any, init_params: Mapping[str, Any]) -> Any:
    """A fresh model from ``trainer.model_init``: ``init_params`` as its dict (one-argument convention) or as
    keyword arguments (a model_init that declares them)."""
    if _takes_params(trainer.model_init):
        return trainer.call_model_init(dict(init_params))
    if not init_params:
        return trainer.call_model_init()
    from .modeling import SetFitModel

    model = trainer.model_init(**init_params)
    if not isinstance(model, SetFitModel):
        raise TypeError(f"model_init must return a SetFitModel, got {type(model).__name__}")
    return model


def apply_hyperparameters(trainer: Any, params: Mapping[str, Any], final_model: bool = False) -> None:
    """Route ``params`` as a trial does: ``trainer.args`` updated (and checked), a new model from ``model_init``
    when it receives parameters or ``final_model``, and the head parameters set on the trainer's model."""
    arg_params, head_params, init_params = _partition(trainer, params)
    trainer.args = trainer.args.update(arg_params)
    if trainer.model_init is not None and (final_model or init_params):
        _set_seed(trainer.args.seed)
        trainer.model = build_model(trainer, init_params)
    apply_head_params(trainer.model, head_params)


# ------------------------------------------------------------------------------------------------ value types


def _hint_kinds(hint: Any) -> tuple[type, ...] | None:
    """The scalar types (None, bool, int, float, str) of a type hint; None when any value may do."""
    members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if hint is None or Any in members:
        return None
    return tuple(m for m in members if m in _SCALARS) or None


def _constraint_kinds(constraints: Sequence[Any]) -> tuple[type, ...] | None:
    """The scalar types an sklearn estimator's ``_parameter_constraints`` entry allows (None: unknown)."""
    kinds: list[type] = []
    for constraint in constraints:
        kind = getattr(constraint, "type", constraint)  # sklearn's Interval(type, ...)
        if constraint is None:
            kinds.append(type(None))
        elif isinstance(constraint, str):
            kinds += {"boolean": [bool], "verbose": [int, bool], "random_state": [type(None), int]}.get(constraint, [])
        elif isinstance(kind, type) and issubclass(kind, bool):
            kinds.append(bool)
        elif isinstance(kind, type) and issubclass(kind, numbers.Integral):
            kinds.append(int)
        elif isinstance(kind, type) and issubclass(kind, numbers.Real):
            kinds.append(float)
        elif hasattr(constraint, "options") or kind is str:  # StrOptions, Options, str
            kinds.append(str)
    return tuple(dict.fromkeys(kinds)) or None


def _head_param_kinds(model: Any, name: str) -> tuple[type, ...] | None:
    """The scalar types the head parameter ``name`` takes (None: unknown), for string categorical values."""
    from .heads import _SKLEARN_HEAD_NAMES, _TORCH_HEAD_NAMES, TorchHead

    spec = _head_spec(model)
    if isinstance(spec, str) and spec in _TORCH_HEAD_NAMES:
        return _hint_kinds(typing.get_type_hints(TorchHead.__init__).get(name))
    if isinstance(spec, str) and spec in _SKLEARN_HEAD_NAMES:
        from sklearn.linear_model import LogisticRegression

        spec = LogisticRegression()
    *path, key = name.split("__")
    try:
        owner = spec
        for step in path:  # nested estimators (Pipeline steps): "logisticregression__C"
            owner = owner.get_params(deep=True)[step]
        default = owner.get_params(deep=False)[key]
    except (AttributeError, KeyError, TypeError):
        return None
    constraints = getattr(type(owner), "_parameter_constraints", {}).get(key)
    if constraints is not None:
        return _constraint_kinds(constraints)
    return (type(default),) if type(default) in _SCALARS else None


def _model_init_kinds(model_init: Callable[..., Any], name: str) -> tuple[type, ...] | None:
    """The scalar types of ``model_init``'s keyword parameter ``name`` (annotation, else default); None for the
    one-argument dict convention, whose values are passed as given."""
    if _takes_params(model_init):
        return None
    try:
        hint = typing.get_type_hints(model_init).get(name)
    except (NameError, TypeError):
        hint = None
    if hint is not None:
        return _hint_kinds(hint)
    default = inspect.signature(model_init).parameters[name].default
    return (type(default),) if type(default) in _SCALARS else None


def _from_text(text: str, kinds: tuple[type, ...]) -> Any:
    """``text`` as the first of ``kinds`` that spells it (None, true/false, int, float, str); else ValueError."""
    word = text.strip().lower()
    if type(None) in kinds and word in ("none", "null"):
        return None
    if bool in kinds and word in ("true", "false"):
        return word == "true"
    for kind in (int, float):
        if kind in kinds:
            try:
                return kind(text)
            except ValueError:
                pass
    if str in kinds:
        return text
    raise ValueError(f"{text!r} is not {' or '.join(_KIND_NAMES[k] for k in kinds)}")


def _check_space(trainer: Any, distributions: Mapping[str, BaseDistribution]) -> dict[str, dict[str, Any]]:
    """Before the first trial: route every parameter (TypeError for a name nothing accepts), convert string
    categorical values to their receiver's type and check every categorical value and bound a TrainingArguments
    field would get (ValueError/TypeError naming the parameter). Returns ``{name: {string value: converted}}``."""
    from .training_args import TrainingArguments, check_argument

    hints = typing.get_type_hints(TrainingArguments)
    conversions: dict[str, dict[str, Any]] = {}
    for name, (receiver, key) in _route(trainer, distributions).items():
        dist = distributions[name]
        if isinstance(dist, CategoricalDistribution):
            values, what = dist.choices, "categorical value"
        elif isinstance(dist, (IntDistribution, FloatDistribution)):
            values, what = (dist.low, dist.high), "bound"
        else:
            continue
        if receiver == "args":
            kinds = _hint_kinds(hints[key])
        elif receiver == "head":
            kinds = _head_param_kinds(trainer.model, key)
        else:
            kinds = _model_init_kinds(trainer.model_init, key)
        for value in values:
            converted = value
            try:
                if isinstance(value, str) and kinds is not None:
                    converted = conversions.setdefault(name, {})[value] = _from_text(value, kinds)
                if receiver == "args":
                    check_argument(key, converted)
            except (TypeError, ValueError) as error:
                target = {"args": "TrainingArguments field", "head": "head parameter",
                          "model_init": "model_init parameter"}[receiver]
                raise type(error)(f"hyperparameter {name!r} ({target} {key!r}), {what} {value!r}: {error}") from None
    return conversions


def _convert(params: Mapping[str, Any], conversions: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``params`` with string categorical values replaced by their converted values (:func:`_check_space`)."""
    return {name: conversions[name].get(value, value) if name in conversions and isinstance(value, str) else value
            for name, value in params.items()}


# ------------------------------------------------------------------------------------------------ objective


def default_compute_objective(metrics: Mapping[str, Any]) -> float:
    """The metric if there is one; else the sum of the metrics (a loss only when it is alone), as transformers."""
    values = {k: float(v) for k, v in metrics.items()
              if isinstance(v, numbers.Real) and not isinstance(v, bool)
              and k not in ("epoch", "step") and not k.endswith(("_runtime", "_per_second"))}
    if not values:
        raise ValueError(f"no numeric metric to optimize in {dict(metrics)!r}; pass compute_objective")
    loss = values.pop("loss", None)
    if not values:
        return loss  # type: ignore[return-value]
    return sum(values.values())


def _metric_objective(name: str) -> Callable[[Mapping[str, Any]], float]:
    def objective(metrics: Mapping[str, Any]) -> float:
        if name not in metrics:
            raise ValueError(f"the experiment optimizes metric {name!r} but evaluation gives {sorted(metrics)}")
        return float(metrics[name])

    return objective


def _strip_eval(metrics: Mapping[str, Any]) -> dict[str, Any]:
    return {k.removeprefix("eval_"): v for k, v in metrics.items()}


def _set_seed(seed: int) -> None:
    if "torch" in sys.modules:  # a real model exists: seed everything as Trainer.train does
        from .trainer import set_seed

        set_seed(seed)


class _TrialRunner:
    """Trains and scores one trial's parameters on ``trainer`` (which it leaves holding the trial model)."""

    def __init__(self, trainer: Any, compute_objective: Callable[[Mapping[str, Any]], float],
                 evaluate_every_epoch: bool) -> None:
        self.trainer, self.compute_objective = trainer, compute_objective
        self.base_args, self.base_model = trainer.args, trainer.model
        self.evaluate_every_epoch = evaluate_every_epoch

    def __call__(self, params: Mapping[str, Any], trial: optuna.Trial | None = None) -> float:
        trainer = self.trainer
        trainer.args, trainer.model = self.base_args, self.base_model  # each trial routes against the originals
        apply_hyperparameters(trainer, params, final_model=True)
        args = trainer.args
        if self.evaluate_every_epoch and args.eval_strategy == "no":
            args = trainer.args = args.update({"eval_strategy": "epoch"})
        steps: list[int] = []

        def report(metrics: dict[str, float], step: int) -> None:
            assert trial is not None
            trial.report(float(self.compute_objective(_strip_eval(metrics))), step)
            steps.append(step)
            if trial.should_prune():
                raise optuna.TrialPruned(f"pruned at step {step}")

        trainer.report_hook = report if trial is not None else None
        try:
            trainer.train(args=args)
        except BaseException:
            backend = getattr(trainer, "backend", None)
            if backend is not None:
                backend.teardown()
            raise
        finally:
            trainer.report_hook = None
        metrics = trainer.evaluate()
        value = float(self.compute_objective(metrics))
        if trial is not None:
            last = max(steps) if steps else getattr(getattr(trainer, "state", None), "global_step", 0) or 0
            trial.report(value, last + 1)
            _set_json_attr(trial, "metrics", {k: v for k, v in metrics.items() if k != "groups"})
        return value


def _set_json_attr(trial: optuna.Trial, key: str, value: Any) -> None:
    """Store ``value`` as a user attribute when it survives JSON (any storage can keep it)."""
    try:
        trial.set_user_attr(key, json.loads(json.dumps(value)))
    except (TypeError, ValueError):
        pass


# ------------------------------------------------------------------------------------------------ studies


def _resolve_storage(storage: Any) -> Any:
    if storage is None or isinstance(storage, optuna.storages.BaseStorage):
        return storage
    if isinstance(storage, os.PathLike) or (isinstance(storage, str) and "://" not in storage):
        path = Path(storage)
        if path.suffix.lower() in _JOURNAL_SUFFIXES:
            from optuna.storages.journal import JournalFileBackend, JournalStorage

            return JournalStorage(JournalFileBackend(str(path)))
        if path.suffix.lower() in _SQLITE_SUFFIXES:
            return f"sqlite:///{path.resolve()}"
        raise ValueError(f"storage {str(storage)!r}: give a database URL (e.g. sqlite:///study.db), a path ending in "
                         f"{'/'.join(_SQLITE_SUFFIXES)} (SQLite) or {'/'.join(_JOURNAL_SUFFIXES)} (journal file), "
                         "or an optuna storage object")
    if isinstance(storage, str):
        return storage
    raise TypeError(f"storage must be a URL, a path or an optuna storage, got {type(storage).__name__}")


def create_study(storage: Any = None, study_name: str | None = None, direction: str = _DEFAULT_DIRECTION,
                 load_if_exists: bool = False, sampler: optuna.samplers.BaseSampler | None = None,
                 pruner: optuna.pruners.BasePruner | None = None) -> optuna.Study:
    """An Optuna study; ``storage`` may also be a ``.db``/``.sqlite`` path or a ``.log``/``.jsonl`` journal file.

    With ``load_if_exists`` an existing study of that name is continued (several processes may share it);
    its direction must match ``direction``.
    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
    study = optuna.create_study(storage=_resolve_storage(storage), sampler=sampler, pruner=pruner,
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
                                                         _Experiment | None]:
    if hp_space is None:
        return default_hp_space, None
    if isinstance(hp_space, Mapping) and hp_space and all(isinstance(v, BaseDistribution) for v in hp_space.values()):
        distributions = dict(hp_space)
        return (lambda trial: suggest_hyperparameters(trial, distributions)), _Experiment(distributions)
    if callable(hp_space):
        if backend == "sigopt":  # transformers' convention: the sigopt space function is called with None
            return None, _parse_experiment(hp_space(None))
        return hp_space, None
    if isinstance(hp_space, (Mapping, Sequence)) and not isinstance(hp_space, (str, bytes)):
        experiment = _parse_experiment(hp_space)
        return (lambda trial: suggest_hyperparameters(trial, experiment.distributions)), experiment
    raise TypeError("hp_space must be a function of an optuna trial, a SigOpt parameter list or experiment dict, "
                    f"or a dict of optuna distributions; got {type(hp_space).__name__}")


def run_hyperparameter_search(trainer: Any, hp_space: Any = None,
                              compute_objective: Callable[[Mapping[str, Any]], float] | None = None,
                              n_trials: int | None = _DEFAULT_N_TRIALS, direction: str = _DEFAULT_DIRECTION,
                              backend: str = "optuna", hp_name: Callable[[Any], str] | None = None,
                              **kwargs: Any) -> BestRun:
    """Search hyperparameters for ``trainer`` (which needs ``model_init`` and an eval dataset).

    ``hp_space``: a function of an Optuna trial returning a dict, a SigOpt parameter list or experiment dict
    (its optimized metric's ``objective`` sets the direction, its ``observation_budget`` replaces the default
    ``n_trials``, its metric ``name`` picks the metric to optimize), a dict of Optuna distributions, or None
    (:data:`DEFAULT_HP_SPACE`). ``compute_objective(metrics)`` scores ``trainer.evaluate()``'s metrics (default:
    :func:`default_compute_objective`). ``kwargs`` go to Optuna: ``sampler``, ``pruner``, ``storage`` (URL,
    ``.db`` or ``.log``/``.jsonl`` path, or storage object), ``study_name``, ``load_if_exists``, ``timeout``,
    ``n_jobs`` (1 only: trials share the trainer), ``gc_after_trial``, ``callbacks``, ``catch``,
    ``show_progress_bar``. The trainer's args, model and report hook are restored afterwards; use
    ``trainer.apply_hyperparameters(best.hyperparameters, final_model=True)`` to train the final model.
    """
    backend = getattr(backend, "value", backend)
    if backend not in ("optuna", "sigopt"):
        raise ValueError(f"backend must be 'optuna' or 'sigopt', got {backend!r}")
    if backend == "sigopt":
        if kwargs:
            raise TypeError(f"backend='sigopt' takes no Optuna argument(s): {', '.join(sorted(kwargs))}")
        _sigopt_connection_class()
    unknown = sorted(set(kwargs) - set(_OPTUNA_KWARGS))
    if unknown:
        raise TypeError(f"hyperparameter_search got unknown argument(s): {', '.join(unknown)}; "
                        f"Optuna arguments: {', '.join(_OPTUNA_KWARGS)}")
    if getattr(trainer, "model_init", None) is None:
        raise ValueError("To use hyperparameter search, you need to pass your model through a model_init function "
                         "(Trainer(model_init=...)): each trial needs a fresh model.")
    if getattr(trainer, "eval_dataset", None) is None:
        raise ValueError("hyperparameter search needs the Trainer's eval_dataset: each trial is scored on it")
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
    if kwargs.get("n_jobs", 1) != 1:
        raise ValueError("n_jobs must be 1: trials train on one Trainer. To search in parallel, run several "
                         "processes with the same storage and study_name (load_if_exists=True)")
    sample, experiment = _resolve_space(hp_space, backend)
    if experiment is not None:
        if experiment.direction is not None:
            if direction != _DEFAULT_DIRECTION and direction != experiment.direction:
                raise ValueError(f"direction={direction!r} conflicts with the experiment's metric objective "
                                 f"{experiment.direction!r}")
            direction = experiment.direction
        if experiment.n_trials is not None and n_trials in (None, _DEFAULT_N_TRIALS):
            n_trials = experiment.n_trials
        if compute_objective is None and experiment.metric:
            compute_objective = _metric_objective(experiment.metric)
    # fail before any study or training exists; string categorical values become their receiver's type
    conversions = _check_space(trainer, experiment.distributions) if experiment is not None else {}
    objective_fn = compute_objective or default_compute_objective
    saved = (trainer.args, trainer.model, trainer.report_hook)
    try:
        if backend == "sigopt":
            assert experiment is not None
            return _run_sigopt(trainer, hp_space, experiment, objective_fn, n_trials, direction, conversions)
        return _run_optuna(trainer, sample, objective_fn, n_trials, direction, hp_name, kwargs, conversions)
    finally:
        trainer.args, trainer.model, trainer.report_hook = saved


def _run_optuna(trainer: Any, sample: Callable[[optuna.Trial], Mapping[str, Any]] | None,
                compute_objective: Callable[[Mapping[str, Any]], float], n_trials: int | None, direction: str,
                hp_name: Callable[[Any], str] | None, kwargs: dict[str, Any],
                conversions: Mapping[str, Mapping[str, Any]]) -> BestRun:
    assert sample is not None
    study = create_study(storage=kwargs.pop("storage", None), study_name=kwargs.pop("study_name", None),
                         direction=direction, load_if_exists=kwargs.pop("load_if_exists", False),
                         sampler=kwargs.pop("sampler", None), pruner=kwargs.pop("pruner", None))
    evaluate_every_epoch = not isinstance(study.pruner, optuna.pruners.NopPruner)
    runner = _TrialRunner(trainer, compute_objective, evaluate_every_epoch)

    def objective(trial: optuna.Trial) -> float:
        params = sample(trial)
        if not isinstance(params, Mapping):
            raise TypeError(f"hp_space must return a dict of parameters, got {type(params).__name__}")
        params = _convert(params, conversions)
        _set_json_attr(trial, "hyperparameters", params)
        if hp_name is not None:
            trial.set_user_attr("name", str(hp_name(trial)))
        return runner(params, trial)

    study.optimize(objective, n_trials=n_trials, **kwargs)
    completed = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if not completed:
        raise RuntimeError(f"no trial of study {study.study_name!r} completed (all pruned or failed)")
    best = study.best_trial
    params = best.user_attrs.get("hyperparameters", best.params)
    return BestRun(str(best.number), float(best.value), dict(params), backend=study, study=study)


def _run_sigopt(trainer: Any, hp_space: Any, experiment: _Experiment,
                compute_objective: Callable[[Mapping[str, Any]], float], n_trials: int | None,
                direction: str, conversions: Mapping[str, Mapping[str, Any]]) -> BestRun:
    """Run through SigOpt's offline driver (``sigopt[lite]``), when installed."""
    Connection = _sigopt_connection_class()  # noqa: N806
    parameters = hp_space(None) if callable(hp_space) else hp_space
    parameters = parameters["parameters"] if isinstance(parameters, Mapping) else parameters
    budget = n_trials or _DEFAULT_N_TRIALS
    conn = Connection(driver="lite")
    created = conn.experiments().create(name="setfit-lite", parameters=list(parameters),
                                        metrics=[{"name": "objective", "objective": direction}],
                                        observation_budget=budget)
    runner = _TrialRunner(trainer, compute_objective, evaluate_every_epoch=False)
    results: list[tuple[str, float, dict[str, Any]]] = []
    for _ in range(budget):
        suggestion = conn.experiments(created.id).suggestions().create()
        params = _convert(dict(suggestion.assignments), conversions)
        value = runner(params)
        conn.experiments(created.id).observations().create(suggestion=suggestion.id,
                                                           values=[{"name": "objective", "value": value}])
        results.append((str(suggestion.id), value, params))
    pick = max if direction == "maximize" else min
    run_id, value, params = pick(results, key=lambda r: r[1])
    return BestRun(run_id, value, params, backend=created)
