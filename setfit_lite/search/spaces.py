"""SigOpt-style search spaces: parsing and checking them, and sampling Optuna distributions with a trial.

A SigOpt parameter list (or an experiment dict with ``parameters``, ``metrics`` and ``observation_budget``)
becomes Optuna distributions (`sigopt_to_optuna`); `suggest_hyperparameters` samples them through
the trial's public ``suggest_*`` API. Torch-free.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

__all__ = ["DEFAULT_HP_SPACE", "DIRECTIONS", "Experiment", "default_hp_space", "load_space", "parse_experiment",
           "sigopt_to_optuna", "suggest_hyperparameters"]

DEFAULT_HP_SPACE: dict[str, BaseDistribution] = {
    "body_learning_rate": FloatDistribution(1e-6, 1e-4, log=True),
    "num_epochs": IntDistribution(1, 3),
    "batch_size": CategoricalDistribution((4, 8, 16, 32)),
    "seed": IntDistribution(1, 40),
}

DIRECTIONS = ("maximize", "minimize")
_PARAMETER_KEYS = ("name", "type", "bounds", "categorical_values", "transformation", "grid")
_EXPERIMENT_KEYS = ("parameters", "metrics", "observation_budget", "name", "project", "type", "metadata",
                    "parallel_bandwidth")


def default_hp_space(trial: optuna.Trial) -> dict[str, Any]:
    """setfit's default search space: body learning rate, epochs, batch size and seed (`DEFAULT_HP_SPACE`).

    Args:
        trial: The Optuna trial.

    Returns:
        The sampled hyperparameters by name.
    """
    return suggest_hyperparameters(trial, DEFAULT_HP_SPACE)


def suggest_hyperparameters(trial: optuna.Trial, distributions: Mapping[str, BaseDistribution]) -> dict[str, Any]:
    """Sample distributions with the trial's public `suggest_*` API (the same distributions, exactly).

    Args:
        trial: The Optuna trial.
        distributions: Optuna distributions by hyperparameter name.

    Returns:
        The sampled hyperparameters by name.

    Raises:
        TypeError: A distribution of another kind.
    """
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
class Experiment:
    """A parsed SigOpt experiment: its distributions and, where it sets them, direction, budget and metric."""

    distributions: dict[str, BaseDistribution]
    direction: str | None = None
    n_trials: int | None = None
    metric: str | None = None


def sigopt_to_optuna(space: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> dict[str, BaseDistribution]:
    """Translate a SigOpt search space to Optuna distributions.

    `double` becomes `FloatDistribution(min, max, log=transformation == "log")`, `int` an `IntDistribution`,
    `categorical` a `CategoricalDistribution` of the value names, and a `grid` a `CategoricalDistribution` of the
    grid values.

    Args:
        space: A SigOpt parameter list, or an experiment dict with `parameters`.

    Returns:
        The distributions by parameter name.

    Raises:
        ValueError: An invalid parameter, named.

    Example:
        ```python
        from setfit_lite.search import sigopt_to_optuna

        space = sigopt_to_optuna([{"name": "num_epochs", "type": "int", "bounds": {"min": 1, "max": 3}}])
        ```
    """
    return parse_experiment(space).distributions


def parse_experiment(space: Any) -> Experiment:
    """A SigOpt parameter list or experiment dict, checked (``ValueError`` naming the problem) and parsed."""
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
        experiment = Experiment(_parse_parameters(space["parameters"]))
        budget = space.get("observation_budget")
        if budget is not None:
            if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget < 1:
                raise ValueError(f"SigOpt experiment: observation_budget must be a positive integer, got {budget!r}")
            experiment.n_trials = int(budget)
        if space.get("metrics") is not None:
            experiment.metric, experiment.direction = _parse_metrics(space["metrics"])
        return experiment
    return Experiment(_parse_parameters(space))


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
        if objective not in DIRECTIONS:
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
    """Read a SigOpt-style search space (a parameter list or an experiment dict) from a JSON file, validated.

    Args:
        path: The JSON file.

    Returns:
        The space, for `hyperparameter_search(hp_space=...)`.

    Raises:
        ValueError: Invalid JSON, or a space that is not a valid SigOpt space.
        OSError: The file cannot be read.
    """
    with open(path, encoding="utf-8") as handle:
        try:
            space = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from error
    parse_experiment(space)
    return space
