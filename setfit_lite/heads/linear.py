"""LogisticRegression and its multi-target wrappers without pickle: one walk over the fitted estimator gives the
arrays and parameters ``head.safetensors``/``head_config.json`` store, and the constants of the ONNX graph.

The family: a ``LogisticRegression``, or a ``OneVsRestClassifier``/``MultiOutputClassifier``/``ClassifierChain``
of them (one-vs-rest also holds scikit-learn's constant predictor for a label constant in the training data).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import LabelBinarizer

from ..serialization.validate import ModelFormatError, check_float_dtype, check_shape
from .common import HEAD_CONFIG_NAME, MULTI_TARGET_STRATEGIES, STRATEGY_OF_TYPE, corrupt_head_error
from .estimator_params import params_from_json, params_to_json

# label-binarizer state kept in config["label_binarizer"] beside its parameters
_BINARIZER_STATE = ("y_type", "sparse_input")


def is_lr(estimator: Any) -> bool:
    """Whether ``estimator`` is exactly a LogisticRegression (not a subclass, whose state may differ)."""
    return type(estimator) is LogisticRegression


def _constant_predictor_type() -> type | None:
    """The class OneVsRestClassifier fits for a label constant in the training data (None if it is gone).

    It is private (``sklearn.multiclass._ConstantPredictor``) and has no public equivalent: a DummyClassifier
    fitted on one class gives one ``predict_proba`` column where one-vs-rest reads column 1, and has no
    ``decision_function``. This function is the one use of a private scikit-learn name in the heads; without
    the class, such a head is saved with skops and a saved one cannot be rebuilt.
    """
    try:
        from sklearn.multiclass import _ConstantPredictor
    except ImportError:
        return None
    return _ConstantPredictor


@dataclass(frozen=True)
class LinearFamily:
    """A fitted estimator of the LogisticRegression family, taken apart."""

    strategy: str | None  # None for a plain LogisticRegression, else a key of MULTI_TARGET_STRATEGIES
    template: LogisticRegression  # the LogisticRegression whose parameters every member shares
    members: list[Any]  # fitted LogisticRegressions, or constant predictors (one-vs-rest only)


def lr_family(estimator: Any) -> LinearFamily | None:
    """``estimator`` taken apart if it is a fitted member of the LogisticRegression family, else None."""
    if is_lr(estimator):
        return LinearFamily(None, estimator, [estimator])
    strategy = STRATEGY_OF_TYPE.get(type(estimator))
    if strategy is None or not is_lr(estimator.estimator) or not hasattr(estimator, "estimators_"):
        return None
    members = list(estimator.estimators_)
    constant = _constant_predictor_type() if strategy == "one-vs-rest" else None
    if not all(is_lr(m) or (constant is not None and type(m) is constant) for m in members):
        return None
    return LinearFamily(strategy, estimator.estimator, members)


def lr_family_state(estimator: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """Tensors + config capturing a fitted estimator of the LogisticRegression family; None for other ones."""
    family = lr_family(estimator)
    if family is None:
        return None
    tensors: dict[str, np.ndarray] = {}
    kinds = []
    for i, member in enumerate(family.members):
        prefix = f"estimators.{i}."
        if is_lr(member):
            kinds.append("logistic_regression")
            tensors[prefix + "coef"] = np.asarray(member.coef_)
            tensors[prefix + "intercept"] = np.asarray(member.intercept_)
            tensors[prefix + "classes"] = np.asarray(member.classes_)
            if hasattr(member, "n_iter_"):
                tensors[prefix + "n_iter"] = np.asarray(member.n_iter_)
        else:
            kinds.append("constant")
            tensors[prefix + "y"] = np.asarray(member.y_)
    config: dict[str, Any] = {
        "estimator_params": params_to_json(family.template),
        "members": kinds,
        "member_n_features": [int(m.n_features_in_) for m in family.members],
    }
    if family.strategy is not None:
        config["wrapper_params"] = params_to_json(estimator, exclude=("estimator",))
    if family.strategy == "one-vs-rest":
        lb = estimator.label_binarizer_
        tensors["label_binarizer.classes"] = np.asarray(lb.classes_)
        config["label_binarizer"] = {
            "y_type": lb.y_type_,
            "sparse_input": bool(lb.sparse_input_),
            **params_to_json(lb),
        }
    elif family.strategy == "classifier-chain":
        tensors["chain.order"] = np.asarray(estimator.order_)
        config["chain_method"] = getattr(estimator, "chain_method_", "predict")
    return tensors, config


def _tensor(tensors: Mapping[str, torch.Tensor], key: str, path: Path) -> np.ndarray:
    if key not in tensors:
        raise corrupt_head_error(path, f"lacks tensor {key!r}")
    return tensors[key].numpy()


def _rebuild_lr(params: dict, tensors: Mapping[str, torch.Tensor], i: int, n_features: int, path: Path) -> Any:
    prefix = f"estimators.{i}."
    coef = _tensor(tensors, prefix + "coef", path)
    intercept = _tensor(tensors, prefix + "intercept", path)
    classes = _tensor(tensors, prefix + "classes", path)
    if classes.ndim != 1 or classes.shape[0] < 2:
        raise ModelFormatError(path, prefix + "classes", f"has shape {classes.shape}; a fitted LogisticRegression "
                                                         "has two classes or more")
    n_rows = 1 if classes.shape[0] == 2 else classes.shape[0]
    implied = f"its {classes.shape[0]} classes and {n_features} input features ({HEAD_CONFIG_NAME})"
    check_shape(path, prefix + "coef", coef.shape, (n_rows, n_features), implied)
    check_shape(path, prefix + "intercept", intercept.shape, (n_rows,), implied)
    for name, array in (("coef", coef), ("intercept", intercept)):
        check_float_dtype(path, prefix + name, array.dtype)
    lr = LogisticRegression(**params)
    lr.coef_, lr.intercept_, lr.classes_, lr.n_features_in_ = coef, intercept, classes, n_features
    if prefix + "n_iter" in tensors:
        lr.n_iter_ = tensors[prefix + "n_iter"].numpy()
    return lr


def _rebuild_constant(tensors: Mapping[str, torch.Tensor], i: int, n_features: int, path: Path) -> Any:
    constant = _constant_predictor_type()
    if constant is None:
        raise ValueError(f"head file {path} holds a one-vs-rest constant predictor, which the installed "
                         "scikit-learn no longer has; load it with the scikit-learn version it was saved with")
    member = constant()
    member.y_ = _tensor(tensors, f"estimators.{i}.y", path)
    member.n_features_in_ = n_features
    return member


def rebuild_lr_family(
    cfg: Mapping[str, Any], tensors: Mapping[str, torch.Tensor], path: Path
) -> tuple[Any, list[str]]:
    """Inverse of `lr_family_state`: ``(estimator, ignored)``, a fitted estimator whose predict_proba is
    bit-identical, and the saved parameters the installed scikit-learn does not have."""
    strategy, num_classes, multi_label = cfg["multi_target_strategy"], cfg["num_classes"], cfg["multi_label"]
    kinds, n_feats = cfg.get("members"), cfg.get("member_n_features")
    if not isinstance(kinds, list) or not isinstance(n_feats, list) or len(kinds) != len(n_feats) or not kinds:
        raise corrupt_head_error(path, "has an invalid member list")
    n_features = cfg.get("n_features_in")
    if not isinstance(n_features, int) or n_features < 1:
        raise corrupt_head_error(path, "has an invalid n_features_in")
    if strategy is None and len(kinds) != 1:
        raise corrupt_head_error(path, f"has {len(kinds)} estimators, expected 1")
    if multi_label and len(kinds) != num_classes:
        raise corrupt_head_error(path, f"has {len(kinds)} estimators, expected one per label ({num_classes})")
    params, ignored = params_from_json(LogisticRegression(), cfg.get("estimator_params"), path)
    members = []
    for i, (kind, nf) in enumerate(zip(kinds, n_feats)):
        expected_nf = n_features + (i if strategy == "classifier-chain" else 0)
        if nf != expected_nf:
            raise ModelFormatError(path.with_name(HEAD_CONFIG_NAME), "n_features_in",
                                   f"is {n_features} but member_n_features[{i}] is {nf} (expected {expected_nf}): "
                                   "the files do not match")
        if kind == "logistic_regression":
            member = _rebuild_lr(params, tensors, i, nf, path)
            classes = member.classes_
        elif kind == "constant" and strategy == "one-vs-rest":
            member = _rebuild_constant(tensors, i, nf, path)
            classes = member.y_
        else:
            raise corrupt_head_error(path, f"has an unknown estimator kind {kind!r}")
        valid = (0, 1) if multi_label or strategy == "one-vs-rest" else range(num_classes)
        if not np.isin(classes, valid).all():
            key = f"estimators.{i}.{'classes' if kind == 'logistic_regression' else 'y'}"
            raise ModelFormatError(path, key, f"has classes {classes.tolist()} outside {list(valid)} (num_classes "
                                              f"{num_classes} in {HEAD_CONFIG_NAME})")
        members.append(member)
    if strategy is None:
        return members[0], ignored
    wrapper_cls = MULTI_TARGET_STRATEGIES[strategy]
    wrapper_params, ignored_wrapper = params_from_json(
        wrapper_cls(LogisticRegression()), cfg.get("wrapper_params", {}), path
    )
    ignored += ignored_wrapper
    est = wrapper_cls(LogisticRegression(**params), **wrapper_params)
    est.estimators_ = members
    est.n_features_in_ = n_features
    if strategy == "one-vs-rest":
        lb_cfg = cfg.get("label_binarizer")
        if not isinstance(lb_cfg, dict):
            raise corrupt_head_error(path, "lacks the one-vs-rest label binarizer state")
        lb_params, ignored_lb = params_from_json(
            LabelBinarizer(), {k: v for k, v in lb_cfg.items() if k not in _BINARIZER_STATE}, path
        )
        ignored += ignored_lb
        lb = LabelBinarizer(**lb_params)
        lb.y_type_, lb.sparse_input_ = lb_cfg.get("y_type"), lb_cfg.get("sparse_input", False)
        lb.classes_ = est.classes_ = _tensor(tensors, "label_binarizer.classes", path)
        valid_ids = list(range(num_classes))
        if (multi_label and lb.classes_.tolist() != valid_ids) or not np.isin(lb.classes_, valid_ids).all():
            raise corrupt_head_error(
                path, f"has one-vs-rest classes {lb.classes_.tolist()} outside 0..{num_classes - 1}"
            )
        expected = len(lb.classes_) if len(lb.classes_) > 2 or str(lb.y_type_).startswith("multilabel") else 1
        if len(members) != expected:
            raise corrupt_head_error(path, f"has {len(members)} one-vs-rest estimators for {len(lb.classes_)} classes")
        est.label_binarizer_ = lb
    else:
        est.classes_ = [m.classes_ for m in members]
    if strategy == "classifier-chain":
        order = _tensor(tensors, "chain.order", path)
        if sorted(order.tolist()) != list(range(len(members))):
            raise corrupt_head_error(path, f"has an invalid chain order {order.tolist()}")
        est.order_ = order
        est.chain_method_ = cfg.get("chain_method", "predict")
    return est, ignored


# ---------------------------------------------------------------------------------------------- ONNX export


def estimator_name(estimator: Any) -> str:
    """The estimator's class name; a multi-target wrapper also names what it wraps."""
    name = type(estimator).__name__
    if type(estimator) in STRATEGY_OF_TYPE:
        return f"{name}({type(estimator.estimator).__name__})"
    return name


def _lr_uses_ovr(lr: Any) -> bool:
    """Whether a multiclass LogisticRegression's predict_proba is one-vs-rest (normalised sigmoids), not softmax.

    scikit-learn >= 1.8 always uses softmax; older versions use OvR for ``multi_class="ovr"`` or for
    ``"auto"`` with the liblinear solver.
    """
    multi_class = getattr(lr, "multi_class", "auto")
    return multi_class in ("ovr", "warn") or (multi_class in ("auto", "deprecated") and lr.solver == "liblinear")


def linear_head_spec(head: Any) -> dict[str, Any]:
    """Constant arrays and the activation reproducing an sklearn head's ``predict_proba`` as graph operations.

    ``head`` is a fitted ``SklearnHead``. Raises ValueError for heads without a graph equivalent.
    """
    est, k = head.estimator, head.num_classes
    name = estimator_name(est)
    family = lr_family(est)
    if family is None or family.strategy == "classifier-chain":
        raise ValueError(
            f"cannot export a {name} head to ONNX: only LogisticRegression heads (plain, one-vs-rest or "
            f"multi-output) and the differentiable TorchHead can be written as graph operations; {name} has "
            "no such form here. Keep it with save_pretrained, or train with the default head to export.")
    members = family.members
    if family.strategy is None:
        classes = np.asarray(est.classes_).astype(np.int64)
        if len(classes) <= 2:
            kind = "binary"
        else:
            kind = "normalized_sigmoid" if _lr_uses_ovr(est) else "softmax"
        return {"weight": est.coef_, "bias": est.intercept_, "kind": kind, "columns": classes, "num_classes": k}
    if family.strategy == "one-vs-rest":
        if head.multi_label:
            kind, columns = "sigmoid", np.arange(k)
        else:
            columns = np.asarray(est.label_binarizer_.classes_).astype(np.int64)
            kind = "binary" if len(members) == 1 else "normalized_sigmoid"
    else:  # multi-output
        if not all(list(np.asarray(m.classes_)) == [0, 1] for m in members):
            raise ValueError(f"cannot export the {name} head to ONNX: a label's estimator was not fitted on "
                             "both 0 and 1")
        kind, columns = "sigmoid", np.arange(k)
    d = int(est.n_features_in_)
    weight, bias = np.zeros((len(members), d)), np.zeros(len(members))
    constant = np.full(len(members), np.nan)
    for i, member in enumerate(members):
        if is_lr(member):
            weight[i], bias[i] = np.asarray(member.coef_).reshape(-1), np.asarray(member.intercept_).reshape(-1)[0]
        else:  # a label constant in the training data: predict_proba is that constant
            constant[i] = float(np.asarray(member.y_).reshape(-1)[0])
    return {"weight": weight, "bias": bias, "kind": kind, "columns": columns, "num_classes": k,
            "constant": constant if np.isfinite(constant).any() else None}
