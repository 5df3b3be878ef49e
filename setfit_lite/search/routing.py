"""Parameter routing: which receiver takes each hyperparameter.

A parameter is routed by name (`apply_hyperparameters`, each search trial, ``Trainer.train(trial=...)``):

- a `TrainingArguments` field (``body_learning_rate``, ``num_epochs``, ``batch_size``, ``seed``, ...) sets
  the training arguments (checked as ``TrainingArguments`` checks them);
- otherwise, a parameter the model's head accepts (``C``, ``max_iter``, ``solver``, ``class_weight`` of the default
  LogisticRegression; ``hidden_size``, ``dropout`` of the differentiable head; any ``get_params()`` name of an
  sklearn estimator given as the head) is applied to the model's next head;
- otherwise, a name ``model_init`` declares as a keyword parameter (``def model_init(norm=False, dropout=0.1)``)
  is passed to it as that keyword argument;
- a name marked ``model_init__<name>`` (`MODEL_INIT_PREFIX`) goes to ``model_init`` only: with setfit's
  one-argument convention (``def model_init(params)``) these are the only names its dict receives, keyed without
  the prefix (``{"norm": True}`` for ``model_init__norm``); with keyword parameters, ``<name>`` must be one of them.
- any other name is a ``TypeError`` listing what accepts names (setfit silently drops it, or hands it to
  ``model_init``, so a typo searched nothing).

The type each value takes at its receiver, and the checks before the first trial: `setfit_lite.search.values`.

Below the trainer: it never imports it, and reaches a trainer only through its ``args``, ``model``,
``model_init`` and ``call_model_init``. Torch is imported only when a model is built or a head inspected.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..training_args import TrainingArguments
from .seeding import seed_everything

__all__ = ["MODEL_INIT_PREFIX", "apply_head_params", "apply_hyperparameters", "build_model", "call_model_init",
           "head_param_names", "head_spec", "route", "split_hyperparameters", "takes_params", "trial_params"]

MODEL_INIT_PREFIX = "model_init__"


def takes_params(model_init: Callable[..., Any] | None) -> bool:
    """Whether ``model_init`` receives the parameters dict: setfit's convention, one argument (counted by
    ``transformers.trainer_utils.number_of_arguments``, which also counts partials)."""
    if model_init is None:
        return False
    from transformers.trainer_utils import number_of_arguments

    try:
        return number_of_arguments(model_init) == 1
    except (TypeError, ValueError):
        return False


def call_model_init(model_init: Callable[..., Any], params: Mapping[str, Any] | None = None) -> Any:
    """A fresh model from ``model_init``: ``params`` as its one argument (setfit's convention; ``None`` when not
    given), as keyword arguments (a model_init that declares them), or no argument at all."""
    from ..modeling import SetFitModel

    if takes_params(model_init):
        model = model_init(None if params is None else dict(params))
    else:
        model = model_init(**(params or {}))
    if not isinstance(model, SetFitModel):
        raise TypeError(f"model_init must return a SetFitModel, got {type(model).__name__}")
    return model


def _training_argument_names() -> set[str]:
    return {f.name for f in dataclasses.fields(TrainingArguments) if f.init}


def _model_init_keywords(model_init: Callable[..., Any] | None) -> set[str]:
    """The names ``model_init`` declares as keyword parameters (none for the one-argument dict convention)."""
    if model_init is None or takes_params(model_init):
        return set()
    try:
        parameters = inspect.signature(model_init).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def head_spec(model: Any) -> Any:
    """The head ``model`` trains next: its ``head_spec``, or the default head's name."""
    from ..heads import SKLEARN_HEAD_NAMES, TORCH_HEAD_NAMES

    spec = model.head_spec
    if spec is None:
        spec = TORCH_HEAD_NAMES[0] if model.use_differentiable_head else SKLEARN_HEAD_NAMES[0]
    return spec


def _is_estimator_spec(spec: Any) -> bool:
    if spec is None or isinstance(spec, str):
        return False
    from ..heads import SklearnHead, TorchHead

    return not isinstance(spec, (SklearnHead, TorchHead)) and hasattr(spec, "get_params")


def head_param_names(model: Any) -> tuple[str, set[str]]:
    """``(description, names)``: the parameters the head of ``model`` accepts, as trained next."""
    from ..heads import SKLEARN_HEAD_NAMES, TORCH_HEAD_NAMES, SklearnHead, TorchHead

    spec = head_spec(model)
    if isinstance(spec, str) and spec in TORCH_HEAD_NAMES:
        fixed = {"self", "in_features", "num_classes", "multi_label"}
        return "TorchHead", set(inspect.signature(TorchHead.__init__).parameters) - fixed
    if isinstance(spec, str) and spec in SKLEARN_HEAD_NAMES:
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


def route(trainer: Any, names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Each name's receiver and key: ``("args", field)``, ``("head", parameter)`` or ``("model_init", keyword)``.

    Names nothing accepts raise ``TypeError`` listing what accepts names (see the module doc for the rule).
    """
    model_init = getattr(trainer, "model_init", None)
    takes_dict, keywords = takes_params(model_init), _model_init_keywords(model_init)
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
    for name, (receiver, key) in route(trainer, params).items():
        parts[receiver][key] = params[name]
    return parts["args"], parts["head"], parts["model_init"]


def split_hyperparameters(trainer: Any, params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(training-argument params, model_init params)``; head params are the others (see module doc).

    model_init params are keyed as model_init receives them (without the ``model_init__`` prefix).
    """
    args, _head, init = _partition(trainer, params)
    return args, init


def build_model(trainer: Any, init_params: Mapping[str, Any]) -> Any:
    """A fresh model from ``trainer.model_init`` (through ``trainer.call_model_init``): ``init_params`` as its dict
    (one-argument convention) or as keyword arguments (a model_init that declares them)."""
    return trainer.call_model_init(dict(init_params))


def apply_hyperparameters(trainer: Any, params: Mapping[str, Any], final_model: bool = False) -> None:
    """Route ``params`` as a trial does: ``trainer.args`` updated (and checked), a new model from ``model_init``
    when it receives parameters or ``final_model``, and the head parameters set on the trainer's model."""
    arg_params, head_params, init_params = _partition(trainer, params)
    trainer.args = trainer.args.update(arg_params)
    if trainer.model_init is not None and (final_model or init_params):
        seed_everything(trainer.args.seed)
        trainer.model = build_model(trainer, init_params)
    apply_head_params(trainer.model, head_params)


def trial_params(trial: Any) -> dict[str, Any]:
    """The parameters of ``trial``: a dict as given, or an Optuna trial's (its converted ``hyperparameters``
    attribute where a search stored one, else ``trial.params``)."""
    if isinstance(trial, Mapping):
        return dict(trial)
    params = getattr(trial, "params", None)
    if not isinstance(params, Mapping):
        raise TypeError(f"trial must be a dict of hyperparameters or an optuna trial, got {type(trial).__name__}")
    return dict(getattr(trial, "user_attrs", {}).get("hyperparameters", params))
