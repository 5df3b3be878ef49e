"""Read model folders written by setfit 1.x (``setfit.SetFitModel.save_pretrained``) into setfit_lite's heads.

Such a folder holds a sentence-transformers body, ``config_setfit.json`` (``{"labels": [...] or null,
"normalize_embeddings": bool}``) and ``model_head.pkl``: a joblib pickle of the head, either a scikit-learn
classifier (LogisticRegression, or a OneVsRest/MultiOutput/ClassifierChain wrapper for multi-target) or
setfit's differentiable ``SetFitHead`` (a torch module, which unpickles only where setfit is installed).
Reading the pickle can execute code, so it is done only for ``allow_pickle=True``. The head becomes a
pickle-free `SklearnHead` or `TorchHead` that predicts
as setfit does: ``predict_proba`` columns follow the head's classes, named by setfit's labels.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import ClassifierChain, MultiOutputClassifier

from ..data import relabelled
from ..serialization import load_json
from ..serialization.validate import check_labels
from . import SklearnHead, TorchHead

__all__ = ["SETFIT_CONFIG_NAME", "SETFIT_HEAD_NAME", "is_setfit_folder", "load_setfit_folder"]

SETFIT_CONFIG_NAME = "config_setfit.json"
SETFIT_HEAD_NAME = "model_head.pkl"


def is_setfit_folder(folder: str | Path) -> bool:
    """Whether ``folder`` holds setfit's config or head file."""
    return (Path(folder) / SETFIT_CONFIG_NAME).is_file() or (Path(folder) / SETFIT_HEAD_NAME).is_file()


def load_setfit_folder(folder: str | Path, labels: Sequence | None = None, *, allow_pickle: bool = False
                       ) -> dict[str, Any]:
    """The head and settings of a setfit folder: ``head`` (None if it has no ``model_head.pkl``), ``labels``,
    ``normalize_embeddings``, ``multi_target_strategy`` and ``use_differentiable_head``.

    ``labels`` names the class ids when ``config_setfit.json`` has none (as setfit's ``labels=`` does); it
    must not contradict the saved labels. Unpickling ``model_head.pkl`` needs ``allow_pickle=True``.
    """
    folder = Path(folder)
    config_path = folder / SETFIT_CONFIG_NAME
    config = load_json(config_path, what="setfit config") if config_path.is_file() else {}
    saved_labels = config.get("labels") if isinstance(config, dict) else None
    normalize = config.get("normalize_embeddings", False) if isinstance(config, dict) else None
    if not isinstance(config, dict) or not isinstance(saved_labels, (list, type(None))) \
            or not isinstance(normalize, bool):
        raise ValueError(f"setfit config file {config_path} must be an object with \"labels\" (a list or null) "
                         "and \"normalize_embeddings\" (true/false)")
    check_labels(config, "labels", config_path, optional=True)  # distinct: each names one class id
    names = relabelled(labels, saved_labels, config_path)
    out: dict[str, Any] = {"head": None, "labels": names, "normalize_embeddings": normalize,
                           "multi_target_strategy": None, "use_differentiable_head": False}
    head_path = folder / SETFIT_HEAD_NAME
    if not head_path.is_file():
        return out
    if not allow_pickle:
        raise ValueError(f"refusing to unpickle {head_path}: pickles can execute arbitrary code when loaded. "
                         "Pass allow_pickle=True only if you trust the source of this file.")
    warnings.warn(f"unpickling {head_path} (allow_pickle=True): a pickle can run any code when it loads; load "
                  "only folders you trust, and save_pretrained writes the model without it", UserWarning,
                  stacklevel=3)
    obj = _unpickle(head_path)
    if isinstance(obj, torch.nn.Module):
        head, out["labels"] = _from_setfit_head(obj, names, head_path)
        out["use_differentiable_head"] = True
    else:
        head, out["labels"] = _from_sklearn(obj, names, head_path)
        out["multi_target_strategy"] = head.multi_target_strategy
    out["head"] = head
    return out


def _unpickle(path: Path) -> Any:
    """``joblib.load`` (how setfit wrote the file), with errors that say what is missing."""
    import joblib

    try:
        return joblib.load(path)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "setfit":
            raise ValueError(
                f"cannot load {path}: it holds setfit's differentiable head (setfit.modeling.SetFitHead), a "
                "pickled class from the setfit package, which is not installed, and a pickle cannot be read "
                "without the classes it names. Install setfit (`pip install setfit`) once to convert the model "
                "to setfit_lite's pickle-free format with from_pretrained(..., allow_pickle=True) then "
                "save_pretrained(...)."
            ) from exc
        raise ValueError(f"cannot load {path}: it needs the module {exc.name!r}, which is not installed") from exc
    except Exception as exc:  # unpickling raises anything: truncated files, incompatible library versions
        raise ValueError(f"cannot load {path} ({type(exc).__name__}: {exc}); the file may be truncated or written "
                         "by an incompatible version of scikit-learn/joblib") from exc


def _name_of(class_value: Any, names: Sequence | None, path: Path) -> Any:
    """The label setfit's ``predict`` gives for a head class: ``labels[class]`` for numeric classes when labels
    are set, else the class itself.

    A bool class is numeric here, as it is to setfit (``labels[True]`` is ``labels[1]``): setfit trains its ABSA
    aspect head on True/False and names them ``["no aspect", "aspect"]``."""
    value = class_value.item() if isinstance(class_value, np.generic) else class_value
    if names is not None and isinstance(value, bool):
        value = int(value)
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if names is None or not numeric:
        return value
    if value != int(value) or not 0 <= int(value) < len(names):
        raise ValueError(f"{path}: the head predicts class {value!r}, which has no name in the labels {list(names)} "
                         f"of {SETFIT_CONFIG_NAME}")
    return names[int(value)]


def _from_sklearn(estimator: Any, names: Sequence | None, path: Path) -> tuple[SklearnHead, list]:
    """A pickle-free head predicting as the fitted scikit-learn ``estimator`` and its labels (column order)."""
    if isinstance(estimator, OneVsRestClassifier):
        binarizer = getattr(estimator, "label_binarizer_", None)
        multi_label = str(getattr(binarizer, "y_type_", "")).startswith("multilabel")
    else:
        multi_label = isinstance(estimator, (MultiOutputClassifier, ClassifierChain))
    try:
        head = SklearnHead(estimator, multi_label=multi_label)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path} holds a {type(estimator).__name__}, not a usable scikit-learn head: {exc}") from exc
    if not head.fitted:
        raise ValueError(f"{path} holds an unfitted {type(estimator).__name__}: the setfit model was never trained")
    if multi_label:
        k = len(binarizer.classes_) if isinstance(estimator, OneVsRestClassifier) else len(estimator.estimators_)
        if names is not None and len(names) != k:
            raise ValueError(f"{path} predicts {k} labels but {SETFIT_CONFIG_NAME} names {len(names)}: {list(names)}")
        labels = list(names) if names is not None else list(range(k))
    else:
        classes = np.asarray(estimator.classes_)
        labels = [_name_of(c, names, path) for c in classes]
        ids = np.arange(len(classes))
        if not np.array_equal(classes, ids):  # our heads work on class ids 0..K-1, in the classes_ order
            if isinstance(estimator, OneVsRestClassifier):
                binarizer.classes_ = ids
            elif hasattr(estimator, "coef_"):
                estimator.classes_ = ids
            else:
                raise ValueError(f"{path}: cannot convert a {type(estimator).__name__} with classes "
                                 f"{classes.tolist()}; only heads trained on class ids 0..K-1 can be converted")
    head.num_classes = len(labels)
    return head, labels


def _from_setfit_head(module: torch.nn.Module, names: Sequence | None, path: Path) -> tuple[TorchHead, list]:
    """A `TorchHead` with setfit's ``SetFitHead`` weights (its temperature folded into them)."""
    linear = getattr(module, "linear", None)
    temperature, eps = getattr(module, "temperature", None), getattr(module, "eps", None)
    if not isinstance(linear, torch.nn.Linear) or isinstance(linear, torch.nn.LazyLinear) \
            or not isinstance(temperature, (int, float)) or not isinstance(eps, (int, float)):
        raise ValueError(f"{path} holds a {type(module).__name__}, not a trained setfit SetFitHead "
                         "(a linear layer with temperature)")
    k = linear.out_features
    if names is not None and len(names) != k:
        raise ValueError(f"{path} has {k} outputs but {SETFIT_CONFIG_NAME} names {len(names)} labels: {list(names)}")
    head = TorchHead(linear.in_features, k, multi_label=bool(getattr(module, "multitarget", False)))
    scale = 1.0 / (temperature + eps)  # setfit divides the logits by temperature + eps
    with torch.no_grad():
        head.linear.weight.copy_(linear.weight.detach().float().cpu() * scale)
        bias = linear.bias if linear.bias is not None else torch.zeros(k)
        head.linear.bias.copy_(bias.detach().float().cpu() * scale)
    head.fitted = True
    return head.eval(), list(names) if names is not None else list(range(k))
