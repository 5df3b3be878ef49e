"""Hyperparameter values as their receiver takes them: SigOpt's string categorical values converted, and every
categorical value and bound checked before the first trial.

SigOpt categorical values are strings; `check_space` converts each to the type its receiver
(`setfit_lite.search.routing`) takes: the ``TrainingArguments`` field's annotation (``"0"`` -> ``0`` for
``seed``, ``"1e-4"`` -> ``1e-4`` for rates, ``"true"`` -> ``True``, ``"none"`` -> ``None`` where allowed), a head
parameter's sklearn constraints or default, a ``model_init`` keyword's annotation or default. A value that does not
convert or is out of range is an error naming the parameter. The dict of a one-argument ``model_init`` gets values
as given. `convert` applies the conversions to each trial's parameters.
"""

from __future__ import annotations

import inspect
import numbers
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from ..training_args import TrainingArguments, check_argument
from .routing import head_spec, route, takes_params

__all__ = ["check_space", "convert"]

_SCALARS = (type(None), bool, int, float, str)
_KIND_NAMES = {type(None): "none", bool: "true/false", int: "an integer", float: "a number", str: "a string"}


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


def _sklearn_head(model: Any) -> Any:
    """The scikit-learn estimator the model's head is built from (a default `LogisticRegression` for the name),
    None for a torch head."""
    from ..heads import SKLEARN_HEAD_NAMES, TORCH_HEAD_NAMES

    spec = head_spec(model)
    if isinstance(spec, str) and spec in TORCH_HEAD_NAMES:
        return None
    if isinstance(spec, str) and spec in SKLEARN_HEAD_NAMES:
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression()
    return spec


def _head_param_kinds(model: Any, name: str) -> tuple[type, ...] | None:
    """The scalar types the head parameter ``name`` takes (None: unknown), for string categorical values."""
    from ..heads import TorchHead

    spec = _sklearn_head(model)
    if spec is None:
        return _hint_kinds(typing.get_type_hints(TorchHead.__init__).get(name))
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


def check_head_value(model: Any, name: str, value: Any) -> None:
    """ValueError/TypeError when a scikit-learn head would refuse ``value`` for its parameter ``name`` (its own
    parameter rules, as its ``fit`` checks them), before any trial trains a body only for the head to refuse."""
    spec = _sklearn_head(model)
    if spec is None or not hasattr(spec, "_validate_params"):
        return
    from sklearn.base import clone

    try:
        estimator = clone(spec).set_params(**{name: value})
    except ValueError:  # a name the estimator does not have: routing reports it
        return
    estimator._validate_params()


def _model_init_kinds(model_init: Callable[..., Any], name: str) -> tuple[type, ...] | None:
    """The scalar types of ``model_init``'s keyword parameter ``name`` (annotation, else default); None for the
    one-argument dict convention, whose values are passed as given."""
    if takes_params(model_init):
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


def check_space(trainer: Any, distributions: Mapping[str, BaseDistribution]) -> dict[str, dict[str, Any]]:
    """Before the first trial: route every parameter (TypeError for a name nothing accepts), convert string
    categorical values to their receiver's type and check every categorical value and bound a TrainingArguments
    field or a scikit-learn head would get (ValueError/TypeError naming the parameter). Returns
    ``{name: {string value: converted}}``."""
    hints = typing.get_type_hints(TrainingArguments)
    conversions: dict[str, dict[str, Any]] = {}
    for name, (receiver, key) in route(trainer, distributions).items():
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
                elif receiver == "head":
                    check_head_value(trainer.model, key, converted)
            except (TypeError, ValueError) as error:
                target = {"args": "TrainingArguments field", "head": "head parameter",
                          "model_init": "model_init parameter"}[receiver]
                raise type(error)(f"hyperparameter {name!r} ({target} {key!r}), {what} {value!r}: {error}") from None
    return conversions


def convert(params: Mapping[str, Any], conversions: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``params`` with string categorical values replaced by their converted values (`check_space`)."""
    return {name: conversions[name].get(value, value) if name in conversions and isinstance(value, str) else value
            for name, value in params.items()}
