"""``SklearnHead``: a scikit-learn classifier on embeddings, saved without pickle (safetensors or skops)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import sklearn
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from ..runtime.predictor import head_threshold_rule, predict_ids
from ..serialization import atomic_write_bytes, load_tensors, save_json, save_tensors
from ..serialization.validate import check_temperature, temperature_field
from .common import (
    FORMAT_VERSION,
    HEAD_CONFIG_NAME,
    HEAD_FILES,
    HEAD_SKOPS_NAME,
    HEAD_WEIGHTS_NAME,
    MULTI_TARGET_STRATEGIES,
    STRATEGY_OF_TYPE,
    read_head_config,
)
from .estimator_params import check_sklearn_version
from .linear import is_lr, lr_family_state, rebuild_lr_family
from .validation import as_features, check_head_param, check_labels


class SklearnHead:
    """A scikit-learn classifier on embeddings (by default `LogisticRegression(max_iter=1000)`, as in setfit).

    The estimator's attributes (`coef_`, `classes_`, `get_params`, ...) are readable on the head, as on setfit's
    `model.model_head`. Its `calibration_temperature` (saved with the head) is applied by the model's
    `predict_proba`, not here: `predict_proba` gives the estimator's probabilities.

    Args:
        estimator: A scikit-learn classifier instance, used as is (not cloned); None for a logistic regression.
        num_classes: The classes K; None infers K at `fit` (the largest id + 1, or the multi-hot width).
        multi_label: Whether labels are multi-hot rows.
        multi_target_strategy: How a multi-label head wraps the estimator: `"one-vs-rest"` (the default with
            `multi_label=True`, unless the estimator already is a wrapper), `"multi-output"` or
            `"classifier-chain"`.

    Raises:
        TypeError: An estimator that is not a scikit-learn classifier.
        ValueError: An unknown strategy, a strategy that conflicts with the estimator, or a multi-label strategy
            without `multi_label=True`.
    """

    def __init__(
        self,
        estimator: Any = None,
        num_classes: int | None = None,
        multi_label: bool = False,
        multi_target_strategy: str | None = None,
    ) -> None:
        check_head_param("num_classes", num_classes)
        if multi_target_strategy is not None and multi_target_strategy not in MULTI_TARGET_STRATEGIES:
            raise ValueError(
                f"unknown multi_target_strategy {multi_target_strategy!r}; "
                f"valid: {', '.join(MULTI_TARGET_STRATEGIES)} (or None)"
            )
        base = LogisticRegression(max_iter=1000) if estimator is None else estimator
        if not (hasattr(base, "fit") and hasattr(base, "get_params")):
            raise TypeError(f"estimator must be a scikit-learn classifier, got {type(base).__name__}")
        strategy = multi_target_strategy
        if type(base) in STRATEGY_OF_TYPE:
            own = STRATEGY_OF_TYPE[type(base)]
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
        self.calibration_temperature = 1.0

    def __getattr__(self, name: str) -> Any:
        """The scikit-learn estimator's attributes (``coef_``, ``classes_``, ``get_params``, ...), which setfit's
        ``model.model_head`` (the estimator itself) gives."""
        if name.startswith("__") or name == "estimator":
            raise AttributeError(name)
        try:
            return getattr(self.estimator, name)
        except AttributeError:
            raise AttributeError(f"'SklearnHead' object and its {type(self.estimator).__name__} have no attribute "
                                 f"{name!r}") from None

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

    def check_params(self) -> None:
        """Check the estimator's parameters (and those of the estimators it wraps) as scikit-learn's ``fit`` would,
        without fitting: a value scikit-learn refuses fails before any training, not at the head's fit after the
        body trained. An estimator that declares no parameter constraints is not checked.

        Raises:
            ValueError: A parameter scikit-learn refuses, named with `head_params` (scikit-learn's
                `InvalidParameterError`, also a `TypeError`).
        """
        nested = [v for v in self.estimator.get_params(deep=True).values() if hasattr(v, "get_params")]
        for estimator in (self.estimator, *nested):
            validate = getattr(estimator, "_validate_params", None)  # what fit() calls first
            if validate is None:
                continue
            try:
                validate()
            except (TypeError, ValueError) as error:
                raise type(error)(f"head_params (or the head estimator given) has a value scikit-learn refuses: "
                                  f"{error}") from None

    def fit(self, X: Any, y: Any) -> SklearnHead:
        """Fit the estimator on embeddings.

        Args:
            X: Embeddings `(n, d)`.
            y: Class ids `(n,)`, or multi-hot rows `(n, K)`.

        Returns:
            This head, fitted.

        Raises:
            ValueError: Labels that do not fit the head, or a single class for a logistic regression.
        """
        X = as_features(X)
        y = check_labels(y, self.num_classes, self.multi_label, X.shape[0])
        if self.num_classes is None:
            self.num_classes = int(y.shape[1] if self.multi_label else y.max(initial=-1) + 1) or 1
        if not self.multi_label and is_lr(self.estimator) and np.unique(y).size < 2:
            raise ValueError(
                f"LogisticRegression needs at least two distinct classes in y, got {np.unique(y).tolist()}"
            )
        self.estimator.fit(X, y)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """The class probabilities of embeddings.

        Args:
            X: Embeddings `(n, d)`.

        Returns:
            An array `(n, K)`, columns in class-id order (a class absent from the training data: zeros).

        Raises:
            NotFittedError: The head is not fitted.
        """
        self._check_fitted()
        X = as_features(X)
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
        """The predicted classes of embeddings.

        Args:
            X: Embeddings `(n, d)`.

        Returns:
            Class ids `(n,)`, or multi-hot rows `(n, K)` (a label present above 0.5, as the estimator decides), int64.

        Raises:
            NotFittedError: The head is not fitted.
        """
        self._check_fitted()
        if hasattr(self.estimator, "predict_proba"):
            return predict_ids(self.predict_proba(X), self.multi_label, rule=head_threshold_rule(self))
        return np.asarray(self.estimator.predict(as_features(X))).astype(np.int64)

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
            **temperature_field(self.calibration_temperature),
        }
        state = lr_family_state(self.estimator)
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
        for name in HEAD_FILES:
            if name != written:
                (folder / name).unlink(missing_ok=True)

    @classmethod
    def load(cls, folder: str | Path, *, trusted_types: Sequence[str] = ()) -> SklearnHead:
        """Load a saved head. ``trusted_types`` extends the skops allow-list (scikit-learn classes) by exact name.

        Warns when the head was saved with a newer scikit-learn than the installed one, or with parameters the
        installed one does not have.
        """
        folder = Path(folder)
        config_path, cfg = read_head_config(folder, "sklearn")
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
            estimator, ignored = rebuild_lr_family(cfg, load_tensors(path), path)
        elif fmt == "skops":
            estimator = _load_skops(folder / HEAD_SKOPS_NAME, cfg.get("estimator", "sklearn"), trusted_types)
            ignored = []
        else:
            raise ValueError(f"head config file {config_path} has unknown format {fmt!r}")
        check_sklearn_version(cfg, config_path, ignored)
        head = cls.__new__(cls)
        head.estimator, head.num_classes, head.multi_label = estimator, num_classes, multi_label
        head.multi_target_strategy = strategy
        head.calibration_temperature = check_temperature(cfg, config_path)
        if not head.fitted:
            raise ValueError(f"head in {folder} holds an unfitted estimator")
        return head


# ------------------------------------------------------------------------------------------------- skops


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
