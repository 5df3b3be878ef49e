"""Classification heads on sentence embeddings: a wrapped sklearn estimator and a differentiable torch head.

Heads are trained on class ids ``0..K-1``: single-label ``y`` has shape (n,) of ints, multi-label ``y`` is
multi-hot of shape (n, K). ``predict_proba`` always returns (n, K) with columns in class-id order; a class
absent from the training data gets a column of zeros (single-label). Multi-label columns are independent
per-label probabilities.

Heads are saved as ``head_config.json`` plus ``head.safetensors`` (LogisticRegression and its multi-target
wrappers, torch heads) or ``head.skops`` (any other sklearn estimator, when ``skops`` is installed). Never pickle.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import sklearn
import torch
import torch.nn.functional as F
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier, _ConstantPredictor
from sklearn.multioutput import ClassifierChain, MultiOutputClassifier
from sklearn.utils.validation import check_is_fitted
from torch import nn

from .serialization import atomic_write_bytes, load_json, load_tensors, save_json, save_tensors

__all__ = [
    "HEAD_CONFIG_NAME",
    "HEAD_SKOPS_NAME",
    "HEAD_WEIGHTS_NAME",
    "MULTI_TARGET_STRATEGIES",
    "SklearnHead",
    "TorchHead",
    "build_head",
    "load_head",
]

HEAD_CONFIG_NAME = "head_config.json"
HEAD_WEIGHTS_NAME = "head.safetensors"
HEAD_SKOPS_NAME = "head.skops"
_HEAD_FILES = (HEAD_WEIGHTS_NAME, HEAD_SKOPS_NAME)
FORMAT_VERSION = 1

MULTI_TARGET_STRATEGIES: dict[str, type] = {
    "one-vs-rest": OneVsRestClassifier,
    "multi-output": MultiOutputClassifier,
    "classifier-chain": ClassifierChain,
}
_STRATEGY_OF_TYPE = {v: k for k, v in MULTI_TARGET_STRATEGIES.items()}
_SKLEARN_HEAD_NAMES = ("logistic_regression", "sklearn")
_TORCH_HEAD_NAMES = ("differentiable", "torch")


# ------------------------------------------------------------------------------------------------ helpers


def _as_features(X: Any) -> np.ndarray:
    """Embeddings as a 2-D numpy array (dtype preserved)."""
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu()
        X = (X.float() if X.dtype in (torch.bfloat16, torch.float16) else X).numpy()
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"embeddings must be 2-D (n_samples, n_features), got shape {arr.shape}")
    return arr


def _check_labels(y: Any, num_classes: int | None, multi_label: bool, n_samples: int) -> np.ndarray:
    """Validate class ids (single-label, shape (n,)) or a multi-hot matrix (multi-label, (n, K)); return int64."""
    if isinstance(y, torch.Tensor):
        y = y.detach().cpu().numpy()
    arr = np.asarray(y)
    if arr.dtype == bool:
        arr = arr.astype(np.int64)
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"labels must be integer class ids or a multi-hot matrix, got dtype {arr.dtype}")
    if arr.shape[:1] != (n_samples,):
        raise ValueError(f"got {n_samples} embeddings but labels of shape {arr.shape}")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
        raise ValueError("labels must be whole numbers (class ids, or 0/1 for multi-label)")
    arr = arr.astype(np.int64)
    if multi_label:
        if arr.ndim != 2 or (num_classes is not None and arr.shape[1] != num_classes):
            raise ValueError(f"multi-label labels must be multi-hot of shape (n, {num_classes}), got {arr.shape}")
        if not np.isin(arr, (0, 1)).all():
            raise ValueError("multi-label labels must contain only 0 and 1")
    else:
        if arr.ndim != 1:
            raise ValueError(f"single-label labels must be class ids of shape (n,), got shape {arr.shape}")
        hi = num_classes if num_classes is not None else np.inf
        if arr.size and (arr.min() < 0 or arr.max() >= hi):
            valid = f"0..{num_classes - 1}" if num_classes is not None else ">= 0"
            raise ValueError(f"class ids must be in {valid}, got {arr.min()}..{arr.max()}")
    return arr


def _check_num_classes(num_classes: Any) -> None:
    if num_classes is not None and (
        isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 1
    ):
        raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")


def _fail(path: Path, problem: str) -> ValueError:
    return ValueError(f"head file {path} {problem}; the saved head is corrupt or does not match {HEAD_CONFIG_NAME}")


def _import_skops(estimator_name: str) -> ModuleType:
    """``skops.io``, or a clear error saying why it is needed."""
    try:
        return importlib.import_module("skops.io")
    except ImportError as exc:
        raise ImportError(
            f"cannot save or load a {estimator_name} head safely: only LogisticRegression (optionally wrapped "
            "for multi-target) is stored as safetensors; other sklearn estimators need the skops format. "
            "Run `pip install skops` (setfit_lite never uses pickle or joblib)."
        ) from exc


def _is_allowed_sklearn_type(name: str) -> bool:
    """Allow-list for skops: a class (not a function) defined in a scikit-learn module."""
    if not name.startswith("sklearn."):
        return False
    module_name, _, attr = name.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        return False
    return isinstance(obj, type) and getattr(obj, "__module__", "").startswith("sklearn")


# JSON encoding of sklearn params: dicts with non-str keys (e.g. class_weight={0: 2.0}) keep their key types.
_ITEMS_KEY = "__items__"
_SKIP = object()


def _to_json(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _SKIP
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        items = [_to_json(v) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    if isinstance(value, dict):
        items = [[_to_json(k), _to_json(v)] for k, v in value.items()]
        if any(k is _SKIP or v is _SKIP for k, v in items):
            return _SKIP
        if all(isinstance(k, str) for k in value) and _ITEMS_KEY not in value:
            return {k: v for k, v in items}
        return {_ITEMS_KEY: items}
    return _SKIP


def _from_json(value: Any) -> Any:
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {_ITEMS_KEY}:
            return {_hashable(_from_json(k)): _from_json(v) for k, v in value[_ITEMS_KEY]}
        return {k: _from_json(v) for k, v in value.items()}
    return value


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _json_params(estimator: Any, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """JSON-serialisable ``get_params(deep=False)``; other params are dropped with a warning."""
    out = {}
    for key, value in estimator.get_params(deep=False).items():
        if key in exclude:
            continue
        encoded = _to_json(value)
        if encoded is _SKIP:
            warnings.warn(
                f"{type(estimator).__name__} parameter {key}={value!r} is not JSON-serialisable and is not saved "
                "(it does not affect predictions; the default is used after loading)",
                stacklevel=4,
            )
            continue
        out[key] = encoded
    return out


def _params_for(cls: type, params: Any, path: Path) -> dict[str, Any]:
    """Decode saved params, keeping only those ``cls`` accepts in this sklearn version."""
    if not isinstance(params, dict):
        raise _fail(path, "has invalid estimator params")
    valid = set(cls._get_param_names())
    return {k: _from_json(v) for k, v in params.items() if k in valid and k != "estimator"}


# ---------------------------------------------------------------------- LogisticRegression <-> safetensors


def _is_lr(est: Any) -> bool:
    return type(est) is LogisticRegression


def _lr_family_state(est: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """Tensors + config capturing a fitted LogisticRegression (or OvR/MultiOutput/Chain of them); else None."""
    if _is_lr(est):
        members, wrapper = [est], None
    elif type(est) in _STRATEGY_OF_TYPE and _is_lr(est.estimator):
        members, wrapper = list(est.estimators_), _STRATEGY_OF_TYPE[type(est)]
        allowed = (LogisticRegression, _ConstantPredictor) if wrapper == "one-vs-rest" else (LogisticRegression,)
        if not all(type(m) in allowed for m in members):
            return None
    else:
        return None
    tensors: dict[str, np.ndarray] = {}
    kinds = []
    for i, member in enumerate(members):
        prefix = f"estimators.{i}."
        if _is_lr(member):
            kinds.append("logistic_regression")
            tensors[prefix + "coef"] = np.asarray(member.coef_)
            tensors[prefix + "intercept"] = np.asarray(member.intercept_)
            tensors[prefix + "classes"] = np.asarray(member.classes_)
            if hasattr(member, "n_iter_"):
                tensors[prefix + "n_iter"] = np.asarray(member.n_iter_)
        else:
            kinds.append("constant")
            tensors[prefix + "y"] = np.asarray(member.y_)
    lr = est if wrapper is None else est.estimator
    config: dict[str, Any] = {
        "estimator_params": _json_params(lr),
        "members": kinds,
        "member_n_features": [int(m.n_features_in_) for m in members],
    }
    if wrapper is not None:
        config["wrapper_params"] = _json_params(est, exclude=("estimator",))
    if wrapper == "one-vs-rest":
        lb = est.label_binarizer_
        tensors["label_binarizer.classes"] = np.asarray(lb.classes_)
        config["label_binarizer"] = {
            "y_type": lb.y_type_,
            "sparse_input": bool(lb.sparse_input_),
            **_json_params(lb),
        }
    elif wrapper == "classifier-chain":
        tensors["chain.order"] = np.asarray(est.order_)
        config["chain_method"] = getattr(est, "chain_method_", "predict")
    return tensors, config


def _tensor(tensors: Mapping[str, torch.Tensor], key: str, path: Path) -> np.ndarray:
    if key not in tensors:
        raise _fail(path, f"lacks tensor {key!r}")
    return tensors[key].numpy()


def _rebuild_lr(params: dict, tensors: Mapping[str, torch.Tensor], i: int, n_features: int, path: Path) -> Any:
    prefix = f"estimators.{i}."
    coef = _tensor(tensors, prefix + "coef", path)
    intercept = _tensor(tensors, prefix + "intercept", path)
    classes = _tensor(tensors, prefix + "classes", path)
    n_rows = 1 if classes.shape[:1] == (2,) else (classes.shape[0] if classes.ndim == 1 else -1)
    if classes.ndim != 1 or classes.shape[0] < 2 or coef.shape != (n_rows, n_features):
        raise _fail(
            path,
            f"has estimator {i} coef shape {coef.shape} / classes {classes.shape}, expected ({n_rows}, {n_features})",
        )
    if intercept.shape != (n_rows,):
        raise _fail(path, f"has estimator {i} intercept shape {intercept.shape}, expected ({n_rows},)")
    lr = LogisticRegression(**params)
    lr.coef_, lr.intercept_, lr.classes_, lr.n_features_in_ = coef, intercept, classes, n_features
    if prefix + "n_iter" in tensors:
        lr.n_iter_ = tensors[prefix + "n_iter"].numpy()
    return lr


def _rebuild_lr_family(cfg: Mapping[str, Any], tensors: Mapping[str, torch.Tensor], path: Path) -> Any:
    """Inverse of ``_lr_family_state``: a fitted estimator whose predict_proba is bit-identical."""
    strategy, num_classes, multi_label = cfg["multi_target_strategy"], cfg["num_classes"], cfg["multi_label"]
    kinds, n_feats = cfg.get("members"), cfg.get("member_n_features")
    if not isinstance(kinds, list) or not isinstance(n_feats, list) or len(kinds) != len(n_feats) or not kinds:
        raise _fail(path, "has an invalid member list")
    n_features = cfg.get("n_features_in")
    if not isinstance(n_features, int) or n_features < 1:
        raise _fail(path, "has an invalid n_features_in")
    if strategy is None and len(kinds) != 1:
        raise _fail(path, f"has {len(kinds)} estimators, expected 1")
    if multi_label and len(kinds) != num_classes:
        raise _fail(path, f"has {len(kinds)} estimators, expected one per label ({num_classes})")
    params = _params_for(LogisticRegression, cfg.get("estimator_params"), path)
    members = []
    for i, (kind, nf) in enumerate(zip(kinds, n_feats)):
        expected_nf = n_features + (i if strategy == "classifier-chain" else 0)
        if nf != expected_nf:
            raise _fail(path, f"expects {nf} input features for estimator {i}, config says {expected_nf}")
        if kind == "logistic_regression":
            member = _rebuild_lr(params, tensors, i, nf, path)
            classes = member.classes_
        elif kind == "constant" and strategy == "one-vs-rest":
            member = _ConstantPredictor()
            member.y_ = classes = _tensor(tensors, f"estimators.{i}.y", path)
            member.n_features_in_ = nf
        else:
            raise _fail(path, f"has an unknown estimator kind {kind!r}")
        valid = (0, 1) if multi_label or strategy == "one-vs-rest" else range(num_classes)
        if not np.isin(classes, valid).all():
            raise _fail(path, f"has estimator {i} classes {classes.tolist()} outside {list(valid)}")
        members.append(member)
    if strategy is None:
        return members[0]
    wrapper_cls = MULTI_TARGET_STRATEGIES[strategy]
    est = wrapper_cls(LogisticRegression(**params), **_params_for(wrapper_cls, cfg.get("wrapper_params", {}), path))
    est.estimators_ = members
    est.n_features_in_ = n_features
    if strategy == "one-vs-rest":
        from sklearn.preprocessing import LabelBinarizer

        lb_cfg = cfg.get("label_binarizer")
        if not isinstance(lb_cfg, dict):
            raise _fail(path, "lacks the one-vs-rest label binarizer state")
        lb = LabelBinarizer(**_params_for(LabelBinarizer, lb_cfg, path))
        lb.y_type_, lb.sparse_input_ = lb_cfg.get("y_type"), lb_cfg.get("sparse_input", False)
        lb.classes_ = est.classes_ = _tensor(tensors, "label_binarizer.classes", path)
        valid_ids = list(range(num_classes))
        if (multi_label and lb.classes_.tolist() != valid_ids) or not np.isin(lb.classes_, valid_ids).all():
            raise _fail(path, f"has one-vs-rest classes {lb.classes_.tolist()} outside 0..{num_classes - 1}")
        expected = len(lb.classes_) if len(lb.classes_) > 2 or str(lb.y_type_).startswith("multilabel") else 1
        if len(members) != expected:
            raise _fail(path, f"has {len(members)} one-vs-rest estimators for {len(lb.classes_)} classes")
        est.label_binarizer_ = lb
    else:
        est.classes_ = [m.classes_ for m in members]
    if strategy == "classifier-chain":
        order = _tensor(tensors, "chain.order", path)
        if sorted(order.tolist()) != list(range(len(members))):
            raise _fail(path, f"has an invalid chain order {order.tolist()}")
        est.order_ = order
        est.chain_method_ = cfg.get("chain_method", "predict")
    return est


# ------------------------------------------------------------------------------------------- SklearnHead


class SklearnHead:
    """A scikit-learn classifier on embeddings (default: ``LogisticRegression(max_iter=1000)``, as in setfit).

    Multi-label heads wrap the estimator per ``multi_target_strategy`` ("one-vs-rest", "multi-output",
    "classifier-chain"); with ``multi_label=True`` and no strategy, "one-vs-rest" is used unless the
    estimator already is one of those wrappers. A given estimator instance is used as is (not cloned).
    ``num_classes=None`` infers K at ``fit`` (max id + 1, or the multi-hot width).
    """

    def __init__(
        self,
        estimator: Any = None,
        num_classes: int | None = None,
        multi_label: bool = False,
        multi_target_strategy: str | None = None,
    ) -> None:
        _check_num_classes(num_classes)
        if multi_target_strategy is not None and multi_target_strategy not in MULTI_TARGET_STRATEGIES:
            raise ValueError(
                f"unknown multi_target_strategy {multi_target_strategy!r}; "
                f"valid: {', '.join(MULTI_TARGET_STRATEGIES)} (or None)"
            )
        base = LogisticRegression(max_iter=1000) if estimator is None else estimator
        if not (hasattr(base, "fit") and hasattr(base, "get_params")):
            raise TypeError(f"estimator must be a scikit-learn classifier, got {type(base).__name__}")
        strategy = multi_target_strategy
        if type(base) in _STRATEGY_OF_TYPE:
            own = _STRATEGY_OF_TYPE[type(base)]
            if strategy not in (None, own):
                raise ValueError(
                    f"estimator is already a {type(base).__name__}; it conflicts with strategy {strategy!r}"
                )
            strategy, wrapped = own, base
        else:
            if multi_label and strategy is None:
                strategy = "one-vs-rest"
            wrapped = MULTI_TARGET_STRATEGIES[strategy](base) if strategy else base
        if strategy in ("multi-output", "classifier-chain") and not multi_label:
            raise ValueError(f"multi_target_strategy {strategy!r} needs multi-label data (multi_label=True)")
        self.num_classes = int(num_classes) if num_classes is not None else None
        self.multi_label = bool(multi_label)
        self.multi_target_strategy = strategy
        self.estimator = wrapped

    def __repr__(self) -> str:
        return (
            f"SklearnHead({self.estimator!r}, num_classes={self.num_classes}, multi_label={self.multi_label}, "
            f"multi_target_strategy={self.multi_target_strategy!r})"
        )

    @property
    def fitted(self) -> bool:
        """Whether the estimator has been fitted."""
        try:
            check_is_fitted(self.estimator)
        except NotFittedError:
            return False
        return True

    def _check_fitted(self) -> None:
        if not self.fitted:
            raise NotFittedError("this SklearnHead is not fitted yet: call fit(X, y) (or train the model) first")

    def fit(self, X: Any, y: Any) -> SklearnHead:
        """Fit on embeddings ``X`` (n, d) and class ids (n,) or multi-hot (n, K)."""
        X = _as_features(X)
        y = _check_labels(y, self.num_classes, self.multi_label, X.shape[0])
        if self.num_classes is None:
            self.num_classes = int(y.shape[1] if self.multi_label else y.max(initial=-1) + 1) or 1
        if not self.multi_label and _is_lr(self.estimator) and np.unique(y).size < 2:
            raise ValueError(
                f"LogisticRegression needs at least two distinct classes in y, got {np.unique(y).tolist()}"
            )
        self.estimator.fit(X, y)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Probabilities (n, K), columns in class-id order (absent classes: zeros)."""
        self._check_fitted()
        X = _as_features(X)
        if not hasattr(self.estimator, "predict_proba"):
            raise AttributeError(f"{type(self.estimator).__name__} has no predict_proba; use predict()")
        raw = self.estimator.predict_proba(X)
        n, k = X.shape[0], self.num_classes
        if self.multi_label:
            if isinstance(raw, list):  # MultiOutputClassifier / native multi-output: one (n, c_j) array per label
                classes = self.estimator.classes_
                cols = [p[:, list(c).index(1)] if 1 in list(c) else np.zeros(n) for p, c in zip(raw, classes)]
                raw = np.column_stack(cols) if cols else np.zeros((n, 0))
            raw = np.asarray(raw)
            if k == 1 and raw.shape == (n, 2):
                raw = raw[:, 1:]
            if raw.shape != (n, k):
                raise ValueError(
                    f"{type(self.estimator).__name__}.predict_proba gave shape {raw.shape}, expected {(n, k)}"
                )
            return raw
        classes = np.asarray(self.estimator.classes_).astype(np.int64)
        out = np.zeros((n, k), dtype=raw.dtype if np.issubdtype(raw.dtype, np.floating) else np.float64)
        out[:, classes] = raw
        return out

    def predict(self, X: Any) -> np.ndarray:
        """Class ids (n,) or multi-hot (n, K) (threshold 0.5), int64."""
        self._check_fitted()
        if hasattr(self.estimator, "predict_proba"):
            proba = self.predict_proba(X)
            return (proba >= 0.5).astype(np.int64) if self.multi_label else proba.argmax(axis=1).astype(np.int64)
        return np.asarray(self.estimator.predict(_as_features(X))).astype(np.int64)

    def save(self, folder: str | Path) -> None:
        """Write ``head_config.json`` and ``head.safetensors`` (LogisticRegression family) or ``head.skops``."""
        self._check_fitted()
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {
            "type": "sklearn",
            "format_version": FORMAT_VERSION,
            "estimator": type(self.estimator).__name__,
            "num_classes": self.num_classes,
            "multi_label": self.multi_label,
            "multi_target_strategy": self.multi_target_strategy,
            "n_features_in": int(getattr(self.estimator, "n_features_in_", 0)) or None,
            "sklearn_version": sklearn.__version__,
        }
        state = _lr_family_state(self.estimator)
        if state is not None:
            tensors, extra = state
            config.update(extra, format="safetensors")
            save_tensors(folder / HEAD_WEIGHTS_NAME, tensors)
            written = HEAD_WEIGHTS_NAME
        else:
            sio = _import_skops(type(self.estimator).__name__)
            atomic_write_bytes(folder / HEAD_SKOPS_NAME, sio.dumps(self.estimator))
            config["format"], written = "skops", HEAD_SKOPS_NAME
        save_json(folder / HEAD_CONFIG_NAME, config)
        for name in _HEAD_FILES:
            if name != written:
                (folder / name).unlink(missing_ok=True)

    @classmethod
    def load(cls, folder: str | Path, *, trusted_types: Sequence[str] = ()) -> SklearnHead:
        """Load a saved head. ``trusted_types`` extends the skops allow-list (scikit-learn classes) by exact name."""
        folder = Path(folder)
        config_path = folder / HEAD_CONFIG_NAME
        cfg = load_json(config_path, what="head config")
        if not isinstance(cfg, dict) or cfg.get("type") != "sklearn":
            raise ValueError(f"head config file {config_path} does not describe an sklearn head")
        num_classes, multi_label, strategy = (
            cfg.get("num_classes"),
            cfg.get("multi_label"),
            cfg.get("multi_target_strategy"),
        )
        if (
            not isinstance(num_classes, int)
            or num_classes < 1
            or not isinstance(multi_label, bool)
            or (strategy is not None and strategy not in MULTI_TARGET_STRATEGIES)
        ):
            raise ValueError(
                f"head config file {config_path} has invalid num_classes/multi_label/multi_target_strategy"
            )
        fmt = cfg.get("format")
        if fmt == "safetensors":
            path = folder / HEAD_WEIGHTS_NAME
            estimator = _rebuild_lr_family(cfg, load_tensors(path), path)
        elif fmt == "skops":
            estimator = _load_skops(folder / HEAD_SKOPS_NAME, cfg.get("estimator", "sklearn"), trusted_types)
        else:
            raise ValueError(f"head config file {config_path} has unknown format {fmt!r}")
        head = cls.__new__(cls)
        head.estimator, head.num_classes, head.multi_label = estimator, num_classes, multi_label
        head.multi_target_strategy = strategy
        if not head.fitted:
            raise ValueError(f"head in {folder} holds an unfitted estimator")
        return head


def _load_skops(path: Path, estimator_name: str, trusted_types: Sequence[str]) -> Any:
    if not path.is_file():
        raise ValueError(f"head file {path} is missing")
    sio = _import_skops(str(estimator_name))
    data = path.read_bytes()
    try:
        untrusted = sio.get_untrusted_types(data=data)
    except Exception as exc:  # skops raises assorted errors for damaged archives
        raise ValueError(f"head file {path} is not a valid skops file: {exc}") from exc
    extra = set(trusted_types)
    refused = [t for t in untrusted if t not in extra and not _is_allowed_sklearn_type(t)]
    if refused:
        raise ValueError(
            f"head file {path} contains types outside the scikit-learn allow-list: {', '.join(refused)}. "
            "Pass trusted_types=[...] with these names only if you trust the file."
        )
    try:
        return sio.loads(data, trusted=list(untrusted))
    except Exception as exc:
        raise ValueError(f"head file {path} could not be loaded by skops: {exc}") from exc


# --------------------------------------------------------------------------------------------- TorchHead


class TorchHead(nn.Module):
    """Differentiable head: optional hidden layer (ReLU) then a linear layer with ``num_classes`` logits.

    Single-label uses softmax over K outputs (K=2 for binary, so columns always match labels);
    multi-label uses independent sigmoids.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        multi_label: bool = False,
        hidden_size: int | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        for name, value in (("in_features", in_features), ("num_classes", num_classes), ("hidden_size", hidden_size)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        in_features, num_classes = int(in_features), int(num_classes)
        hidden_size = int(hidden_size) if hidden_size else None
        self.in_features, self.num_classes, self.multi_label = in_features, num_classes, bool(multi_label)
        self.hidden_size, self.dropout_p = hidden_size, float(dropout)
        self.dropout = nn.Dropout(self.dropout_p)
        self.hidden = nn.Linear(in_features, hidden_size) if hidden_size else None
        self.linear = nn.Linear(hidden_size or in_features, num_classes)
        self.apply(self._init_weights)
        self.fitted = False  # set by fit/load (and by the trainer after end-to-end training)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):  # as setfit's SetFitHead
            nn.init.xavier_uniform_(module.weight)
            nn.init.constant_(module.bias, 1e-2)

    def extra_repr(self) -> str:
        return f"multi_label={self.multi_label}"

    def forward(self, embeddings: torch.Tensor | Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Logits (n, K) from embeddings (n, in_features) or a dict with ``sentence_embedding``."""
        x = embeddings["sentence_embedding"] if isinstance(embeddings, Mapping) else embeddings
        if x.shape[-1] != self.in_features:
            raise ValueError(f"expected embeddings with {self.in_features} features, got shape {tuple(x.shape)}")
        x = self.dropout(x)
        if self.hidden is not None:
            x = self.dropout(torch.relu(self.hidden(x)))
        return self.linear(x)

    def _param(self) -> torch.Tensor:
        return self.linear.weight

    def _as_input(self, X: Any) -> torch.Tensor:
        p = self._param()
        t = X.detach() if isinstance(X, torch.Tensor) else torch.as_tensor(_as_features(X))
        if t.ndim != 2:
            raise ValueError(f"embeddings must be 2-D (n_samples, n_features), got shape {tuple(t.shape)}")
        return t.to(device=p.device, dtype=p.dtype)

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Cross-entropy on class ids (single-label) or BCE-with-logits on multi-hot targets (multi-label)."""
        if self.multi_label:
            if y.shape != logits.shape:
                raise ValueError(
                    f"multi-hot targets of shape {tuple(y.shape)} do not match logits {tuple(logits.shape)}"
                )
            return F.binary_cross_entropy_with_logits(logits, y.to(logits.dtype))
        if y.ndim != 1 or y.shape[0] != logits.shape[0]:
            raise ValueError(f"class-id targets must have shape ({logits.shape[0]},), got {tuple(y.shape)}")
        return F.cross_entropy(logits, y.long())

    def predict_proba(self, X: np.ndarray | torch.Tensor) -> np.ndarray:
        """Softmax (or sigmoid for multi-label) probabilities as a numpy array (n, K), in eval mode."""
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad():
                logits = self(self._as_input(X))
                probs = torch.sigmoid(logits) if self.multi_label else torch.softmax(logits, dim=-1)
        finally:
            self.train(was_training)
        if probs.dtype not in (torch.float32, torch.float64):
            probs = probs.float()
        return probs.cpu().numpy()

    def predict(self, X: np.ndarray | torch.Tensor) -> np.ndarray:
        """Class ids (n,) or multi-hot (n, K) (threshold 0.5), int64."""
        proba = self.predict_proba(X)
        return (proba >= 0.5).astype(np.int64) if self.multi_label else proba.argmax(axis=1).astype(np.int64)

    def fit(
        self,
        X: np.ndarray | torch.Tensor,
        y: np.ndarray | torch.Tensor,
        epochs: int = 16,
        lr: float = 1e-2,
        batch_size: int = 2,
        weight_decay: float = 0.01,
        seed: int | None = None,
    ) -> TorchHead:
        """Train on fixed embeddings with AdamW (defaults follow setfit's head epochs/batch size/lr/l2_weight)."""
        if epochs < 0 or batch_size < 1:
            raise ValueError(f"need epochs >= 0 and batch_size >= 1, got {epochs} and {batch_size}")
        X_t = self._as_input(X)
        if X_t.shape[0] == 0:
            raise ValueError("cannot fit on zero samples")
        y_np = _check_labels(y, self.num_classes, self.multi_label, X_t.shape[0])
        y_t = torch.as_tensor(y_np, device=X_t.device)
        device = X_t.device
        fork = (
            torch.random.fork_rng(devices=[])
            if device.type == "cpu"
            else torch.random.fork_rng(device_type=device.type)
        )
        was_training = self.training
        with fork if seed is not None else contextlib.nullcontext():
            if seed is not None:
                torch.manual_seed(seed)
            optimizer = torch.optim.AdamW(self.parameters(), lr=lr, weight_decay=weight_decay)
            self.train()
            try:
                for _ in range(epochs):
                    order = torch.randperm(X_t.shape[0]).to(device)
                    for start in range(0, X_t.shape[0], batch_size):
                        idx = order[start : start + batch_size]
                        optimizer.zero_grad(set_to_none=True)
                        self.loss(self(X_t[idx]), y_t[idx]).backward()
                        optimizer.step()
            finally:
                self.train(was_training)
        self.fitted = True
        return self

    def config(self) -> dict[str, Any]:
        """The JSON config written by ``save``."""
        return {
            "type": "torch",
            "format_version": FORMAT_VERSION,
            "in_features": self.in_features,
            "num_classes": self.num_classes,
            "multi_label": self.multi_label,
            "hidden_size": self.hidden_size,
            "dropout": self.dropout_p,
        }

    def save(self, folder: str | Path) -> None:
        """Write ``head.safetensors`` (state dict) and ``head_config.json``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_tensors(folder / HEAD_WEIGHTS_NAME, self.state_dict())
        save_json(folder / HEAD_CONFIG_NAME, self.config())
        (folder / HEAD_SKOPS_NAME).unlink(missing_ok=True)

    @classmethod
    def load(cls, folder: str | Path, *, device: str | torch.device | None = None) -> TorchHead:
        """Load a saved head (in eval mode), checking tensor names and shapes against the config."""
        folder = Path(folder)
        config_path, path = folder / HEAD_CONFIG_NAME, folder / HEAD_WEIGHTS_NAME
        cfg = load_json(config_path, what="head config")
        if not isinstance(cfg, dict) or cfg.get("type") != "torch":
            raise ValueError(f"head config file {config_path} does not describe a torch head")
        try:
            head = cls(
                in_features=cfg["in_features"],
                num_classes=cfg["num_classes"],
                multi_label=cfg["multi_label"],
                hidden_size=cfg.get("hidden_size"),
                dropout=cfg.get("dropout", 0.0),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"head config file {config_path} is invalid: {exc}") from exc
        tensors = load_tensors(path)
        expected = head.state_dict()
        if set(tensors) != set(expected):
            raise _fail(path, f"has tensors {sorted(tensors)}, expected {sorted(expected)}")
        for name, value in expected.items():
            if tensors[name].shape != value.shape:
                raise _fail(path, f"has {name} of shape {tuple(tensors[name].shape)}, expected {tuple(value.shape)}")
        dtypes = {t.dtype for t in tensors.values()}
        if len(dtypes) == 1 and next(iter(dtypes)).is_floating_point:
            head = head.to(next(iter(dtypes)))
        head.load_state_dict(tensors)
        head.fitted = True
        if device is not None:
            head = head.to(device)
        return head.eval()


# ------------------------------------------------------------------------------------------ construction


def load_head(
    folder: str | Path, *, trusted_types: Sequence[str] = (), device: str | torch.device | None = None
) -> SklearnHead | TorchHead:
    """Load whichever head ``folder/head_config.json`` describes."""
    config_path = Path(folder) / HEAD_CONFIG_NAME
    cfg = load_json(config_path, what="head config")
    kind = cfg.get("type") if isinstance(cfg, dict) else None
    if kind == "sklearn":
        return SklearnHead.load(folder, trusted_types=trusted_types)
    if kind == "torch":
        return TorchHead.load(folder, device=device)
    raise ValueError(f"head config file {config_path} has unknown head type {kind!r} (expected 'sklearn' or 'torch')")


def build_head(
    head: str | Any | None = None,
    num_classes: int | None = None,
    multi_label: bool = False,
    multi_target_strategy: str | None = None,
    in_features: int | None = None,
    use_differentiable_head: bool = False,
    **head_kwargs: Any,
) -> SklearnHead | TorchHead:
    """Construct a head.

    ``head`` may be None (LogisticRegression, or a TorchHead if ``use_differentiable_head``), a name
    ("logistic_regression"/"sklearn" or "differentiable"/"torch"), an sklearn estimator instance (wrapped in
    ``SklearnHead``), or an unfitted ``SklearnHead``/``TorchHead`` (checked against the data). Instances are
    copied (estimators via ``sklearn.base.clone``), so every call returns a fresh, independent head.
    ``head_kwargs`` go to ``TorchHead`` (hidden_size, dropout) or ``LogisticRegression``.
    A TorchHead ignores ``multi_target_strategy`` (multi-label always means independent sigmoids).
    """
    _check_num_classes(num_classes)
    if isinstance(head, (SklearnHead, TorchHead)):
        if head_kwargs:
            raise ValueError("head_kwargs cannot be applied to an already built head")
        if (num_classes is not None and head.num_classes not in (None, num_classes)) or head.multi_label != bool(
            multi_label
        ):
            raise ValueError(
                f"head has num_classes={head.num_classes}, multi_label={head.multi_label} but the data has "
                f"num_classes={num_classes}, multi_label={bool(multi_label)}"
            )
        head = copy.deepcopy(head)
        if isinstance(head, SklearnHead) and head.num_classes is None:
            head.num_classes = int(num_classes) if num_classes is not None else None
        return head
    if head is None:
        head = _TORCH_HEAD_NAMES[0] if use_differentiable_head else _SKLEARN_HEAD_NAMES[0]
    if isinstance(head, str):
        if head in _TORCH_HEAD_NAMES:
            if in_features is None or num_classes is None:
                raise ValueError("a differentiable head needs in_features (embedding size) and num_classes")
            return TorchHead(in_features, num_classes, multi_label=multi_label, **head_kwargs)
        if head in _SKLEARN_HEAD_NAMES:
            if use_differentiable_head:
                raise ValueError(f"head {head!r} is not differentiable but use_differentiable_head=True")
            estimator = LogisticRegression(**{"max_iter": 1000, **head_kwargs})
            return SklearnHead(estimator, num_classes, multi_label, multi_target_strategy)
        raise ValueError(f"unknown head {head!r}; valid names: {', '.join(_SKLEARN_HEAD_NAMES + _TORCH_HEAD_NAMES)}")
    if isinstance(head, nn.Module):
        raise TypeError(f"unsupported torch head {type(head).__name__}; use setfit_lite.heads.TorchHead")
    if hasattr(head, "fit") and hasattr(head, "get_params"):
        if use_differentiable_head:
            raise ValueError(
                f"an sklearn estimator ({type(head).__name__}) is not differentiable but use_differentiable_head=True"
            )
        if head_kwargs:
            raise ValueError("head_kwargs cannot be combined with an estimator instance; set its params directly")
        return SklearnHead(clone(head), num_classes, multi_label, multi_target_strategy)
    raise TypeError(f"head must be None, a name, an sklearn estimator or a head object, got {type(head).__name__}")
