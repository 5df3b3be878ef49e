"""Parameter routing: which receiver takes each hyperparameter.

A parameter is routed by name (`apply_hyperparameters`, each search trial, ``Trainer.train(trial=...)``):

- a `TrainingArguments` field (``body_learning_rate``, ``num_epochs``, ``batch_size``, ``seed``, ...) sets
  the training arguments (checked as ``TrainingArguments`` checks them);
- otherwise, a parameter the model's head accepts (``C``, ``max_iter``, ``solver``, ``class_weight`` of the default
  LogisticRegression; ``hidden_size``, ``dropout`` of the differentiable head; any ``get_params()`` name of an
  sklearn estimator given as the head) is applied to the model's next head;
- otherwise, a name ``model_init`` declares as a keyword parameter (``def model_init(norm=False, dropout=0.1)``)
  is passed to it as that keyword argument;
- a name marked ``model_init__<name>`` (`MODEL_INIT_PREFIX`) goes to ``model_init`` only, as ``<name>``; with
  keyword parameters, ``<name>`` must be one of them;
- any other name is a ``TypeError`` listing what accepts names (setfit silently drops it, so a typo searched
  nothing), except with setfit's one-argument convention, below.

setfit's one-argument ``model_init(params)`` receives every parameter in one dict, as in setfit: the names above
as they are (training arguments and head parameters are also applied as above), ``model_init__<name>`` as
``<name>``, and the names nothing else accepts (``model_id``, say). Where ``model_init__<name>`` and a training
argument or head parameter ``<name>`` are both given (``model_init__seed`` and ``seed``), ``<name>`` sets the training
arguments or the head and the marked value is the dict's ``<name>``: the prefix names model_init's own value. Two
names that only model_init takes under one key (``model_init__foo`` and ``foo``, ``foo`` accepted by nothing else,
or a keyword parameter ``foo``) are a ``TypeError``: neither value is the one meant. Its dict (`RecordingParams`)
records which keys ``model_init`` reads: a name only ``model_init`` takes (marked, or accepted by nothing else) that
it never read is the same ``TypeError``, raised once ``model_init`` returns, before the trial trains.

The type each value takes at its receiver, and the checks before the first trial: `setfit_lite.search.values`.

Below the trainer: it never imports it, and reaches a trainer only through its ``args``, ``model``,
``model_init`` and ``call_model_init``. Torch is imported only when a model is built or a head inspected.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any, NamedTuple

from ..training_args import TrainingArguments
from .seeding import seed_everything

__all__ = ["MODEL_INIT_PREFIX", "RecordingParams", "apply_head_params", "apply_hyperparameters", "build_model",
           "call_model_init", "head_param_names", "head_spec", "route", "split_hyperparameters", "takes_params",
           "trial_params"]

MODEL_INIT_PREFIX = "model_init__"


class RecordingParams(dict):
    """The parameters dict a one-argument ``model_init(params)`` receives: a dict that records the keys read.

    ``params[key]``, ``get``, ``in``, ``pop``, ``setdefault`` and ``popitem`` read their key (present or not);
    iteration, ``keys``, ``items``, ``values``, ``copy``, ``==`` and ``!=`` read every key, and so do the copies
    that go through ``keys`` (``dict(params)``, ``{**params}``, ``f(**params)``, ``params | other``). Its truth value
    (``params or {}``), ``len`` and ``repr`` read nothing.
    """

    __slots__ = ("_read", "_read_all")

    def __init__(self, params: Mapping[Any, Any] | None = None) -> None:
        super().__init__(params or {})
        self._read: set[Any] = set()
        self._read_all = False

    @property
    def read_keys(self) -> set[Any]:
        """The keys read one at a time (which may be absent from the dict)."""
        return set(self._read)

    def unread(self, keys: Iterable[Any]) -> list[Any]:
        """Those of ``keys`` never read (none once every key was read)."""
        return [] if self._read_all else [key for key in keys if key not in self._read]

    def _mark(self, key: Any) -> None:
        try:
            self._read.add(key)
        except TypeError:  # an unhashable key: the dict's own method raises
            pass

    def __getitem__(self, key: Any) -> Any:
        self._mark(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._mark(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._mark(key)
        return super().__contains__(key)

    def pop(self, key: Any, *default: Any) -> Any:
        self._mark(key)
        return super().pop(key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._mark(key)
        return super().setdefault(key, default)

    def popitem(self) -> tuple[Any, Any]:
        key, value = super().popitem()
        self._mark(key)
        return key, value

    def __iter__(self) -> Iterator[Any]:
        self._read_all = True
        return super().__iter__()

    def __reversed__(self) -> Iterator[Any]:
        self._read_all = True
        return super().__reversed__()

    def keys(self) -> KeysView[Any]:
        self._read_all = True
        return super().keys()

    def items(self) -> ItemsView[Any, Any]:
        self._read_all = True
        return super().items()

    def values(self) -> ValuesView[Any]:
        self._read_all = True
        return super().values()

    def copy(self) -> dict[Any, Any]:
        self._read_all = True
        return dict(super().items())

    def __eq__(self, other: object) -> bool:
        self._read_all = True
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        self._read_all = True
        return super().__ne__(other)

    __hash__ = None  # type: ignore[assignment]


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
    given; a copy unless it is a `RecordingParams`, whose reads the caller checks), as keyword arguments (a
    model_init that declares them), or no argument at all."""
    from ..modeling import SetFitModel

    if takes_params(model_init):
        model = model_init(params if params is None or isinstance(params, RecordingParams) else dict(params))
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


def _trainer_head(trainer: Any) -> tuple[str, set[str]]:
    """`head_param_names` of the trainer's model (none before it has one)."""
    model = getattr(trainer, "model", None)
    return head_param_names(model) if model is not None else ("no model yet", set())


def route(trainer: Any, names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Each name's receiver and key: ``("args", field)``, ``("head", parameter)`` or ``("model_init", key)``.

    ``"model_init"`` marks the names only model_init takes; a one-argument model_init also receives the others, under
    their own names, except a key a ``model_init__`` name also gives, whose value is the marked one.

    Raises:
        TypeError: Names nothing accepts (listing what accepts names; see the module doc for the rule), or two names
            that only model_init takes under one key (``model_init__foo`` and ``foo``).
    """
    model_init = getattr(trainer, "model_init", None)
    takes_dict, keywords = takes_params(model_init), _model_init_keywords(model_init)
    arg_names = _training_argument_names()
    head = functools.cache(functools.partial(_trainer_head, trainer))

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
            route = ("model_init", name) if takes_dict or name in keywords else None
        if route is None:
            unknown.append(name)
        else:
            routes[name] = route
    if unknown:
        raise _unaccepted(unknown, arg_names, head(), model_init, takes_dict, keywords)
    # a training argument or head parameter also given marked is not ambiguous: the marked value is model_init's
    init_keys = [key for receiver, key in routes.values() if receiver == "model_init"]
    twice = sorted({key for key in init_keys if init_keys.count(key) > 1})
    if twice:
        raise TypeError(f"model_init parameter(s) {', '.join(map(repr, twice))} given twice (with and without "
                        f"the {MODEL_INIT_PREFIX!r} prefix)")
    return routes


def _unaccepted(names: list[Any], arg_names: set[str], head: tuple[str, set[str]],
                model_init: Callable[..., Any] | None, takes_dict: bool, keywords: set[str],
                read: set[Any] | None = None) -> TypeError:
    """The error for ``names`` nothing accepts (``read``: the keys a one-argument model_init read, once it ran)."""
    description, head_names = head
    read_names = {key for key in read or () if isinstance(key, str)}
    if model_init is None:
        init = "there is no model_init"
    elif read is not None:
        init = (f"model_init(params) got it in its dict and never read it (it read "
                f"{', '.join(map(repr, sorted(read_names))) or 'no key'})")
    elif takes_dict:
        init = f"model_init(params) receives each name in its dict ({MODEL_INIT_PREFIX!r}<name> as <name>)"
    elif keywords:
        init = f"model_init takes its keyword parameters {', '.join(sorted(keywords))}"
    else:
        init = "model_init takes no parameters"
    candidates = sorted(arg_names | head_names | keywords | read_names)
    hints = [f"{name!r}: did you mean {match[0]!r}?" for name in names
             if isinstance(name, str) and (match := difflib.get_close_matches(name, candidates, n=1))]
    return TypeError(
        f"hyperparameter(s) {', '.join(map(repr, names))}: nothing accepts this name"
        + (f" ({'; '.join(hints)})" if hints else "")
        + f". Names go to TrainingArguments ({', '.join(sorted(arg_names))}); to the head ({description}: "
        f"{', '.join(sorted(head_names)) or 'no parameters'}); or to model_init: {init}.")


class _Partition(NamedTuple):
    """Parameters by receiver: ``model_init`` as model_init receives them (without the ``model_init__`` prefix;
    every parameter for a one-argument model_init, a marked value before an unmarked one), ``model_init_only``
    maps each of its keys that nothing else takes to the parameter's name."""

    args: dict[str, Any]
    head: dict[str, Any]
    model_init: dict[Any, Any]
    model_init_only: dict[Any, Any]


def _partition(trainer: Any, params: Mapping[str, Any]) -> _Partition:
    """``params`` by receiver (`route`); names nothing accepts raise TypeError."""
    if not isinstance(params, Mapping):
        raise TypeError(f"the hyperparameter space must give a dict of parameters, got {type(params).__name__}")
    takes_dict = takes_params(getattr(trainer, "model_init", None))
    parts = _Partition({}, {}, {}, {})
    for name, (receiver, key) in route(trainer, params).items():
        if receiver == "args":
            parts.args[key] = params[name]
        elif receiver == "head":
            parts.head[key] = params[name]
        else:
            parts.model_init_only[key] = name
        if receiver == "model_init":
            parts.model_init[key] = params[name]
        elif takes_dict:  # the dict's value under a key a marked name also gives is the marked one
            parts.model_init.setdefault(key, params[name])
    return parts


def split_hyperparameters(trainer: Any, params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(training-argument params, model_init params)``; head params are the others (see module doc).

    model_init params are keyed as model_init receives them (without the ``model_init__`` prefix); a one-argument
    model_init receives them all.
    """
    parts = _partition(trainer, params)
    return parts.args, parts.model_init


def build_model(trainer: Any, init_params: Mapping[Any, Any], must_read: Mapping[Any, Any] | None = None) -> Any:
    """A fresh model from ``trainer.model_init`` (through ``trainer.call_model_init``): ``init_params`` as its dict
    (one-argument convention) or as keyword arguments (a model_init that declares them).

    Args:
        trainer: The trainer whose ``model_init`` builds the model.
        init_params: What model_init receives.
        must_read: For a one-argument model_init: ``{key: hyperparameter name}`` for the keys of ``init_params``
            it must read, as nothing else takes them.

    Raises:
        TypeError: A one-argument model_init that never read a key of ``must_read`` (naming the hyperparameter).
    """
    if not takes_params(trainer.model_init):
        return trainer.call_model_init(dict(init_params))
    must_read = must_read or {}
    params = RecordingParams(init_params)
    model = trainer.call_model_init(params)
    unread = params.unread(must_read)
    if unread:
        raise _unaccepted([must_read[key] for key in unread], _training_argument_names(), _trainer_head(trainer),
                          trainer.model_init, True, set(), read=params.read_keys)
    return model


def apply_hyperparameters(trainer: Any, params: Mapping[str, Any], final_model: bool = False) -> None:
    """Route ``params`` as a trial does: ``trainer.args`` updated (and checked), a new model from ``model_init``
    when it receives parameters or ``final_model``, and the head parameters set on the trainer's model. Nothing
    changes on the trainer when any of it fails."""
    parts = _partition(trainer, params)
    args, model = trainer.args.update(parts.args), trainer.model
    if trainer.model_init is not None and (final_model or parts.model_init):
        seed_everything(args.seed)
        model = build_model(trainer, parts.model_init, parts.model_init_only)
    apply_head_params(model, parts.head)
    trainer.args, trainer.model = args, model


def trial_params(trial: Any) -> dict[str, Any]:
    """The parameters of ``trial``: a dict as given, or an Optuna trial's (its converted ``hyperparameters``
    attribute where a search stored one, else ``trial.params``)."""
    if isinstance(trial, Mapping):
        return dict(trial)
    params = getattr(trial, "params", None)
    if not isinstance(params, Mapping):
        raise TypeError(f"trial must be a dict of hyperparameters or an optuna trial, got {type(trial).__name__}")
    return dict(getattr(trial, "user_attrs", {}).get("hyperparameters", params))
