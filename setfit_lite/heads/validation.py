"""Checks on what heads are given: embeddings, class ids or multi-hot labels, sizes."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from sklearn.utils.validation import check_array

from ..config.rules import Rule, check_rule, integer, number, optional


def as_features(X: Any) -> np.ndarray:
    """Embeddings as a finite, numeric 2-D numpy array (dtype preserved; 16-bit torch floats become float32)."""
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu()
        X = (X.float() if X.dtype in (torch.bfloat16, torch.float16) else X).numpy()
    arr = np.asarray(X)
    if arr.ndim != 2:  # before check_array, whose message prints the whole array
        raise ValueError(f"embeddings must be 2-D (n_samples, n_features), got shape {arr.shape}")
    return check_array(arr, dtype="numeric", ensure_min_samples=0, input_name="embeddings")


def check_labels(y: Any, num_classes: int | None, multi_label: bool, n_samples: int) -> np.ndarray:
    """Validate class ids (single-label, shape (n,)) or a multi-hot matrix (multi-label, (n, K)); return int64.

    Hand-written rather than ``sklearn.utils.multiclass.type_of_target``: the contract is ids in ``0..K-1``
    and multi-hot of width K for a given K, which type_of_target does not check (and it reads a one-column
    multi-hot matrix as "binary"), so every check below would remain.
    """
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


# the numbers a head is built with, checked by the rule engine every other parameter goes through
HEAD_RULES: dict[str, Rule] = {
    "in_features": integer(),
    "num_classes": optional(integer(), "from the labels"),
    "hidden_size": optional(integer(), "no hidden layer"),
    "dropout": number(high=1.0, high_open=True),
    "temperature": number(low_open=True),
}


def check_head_param(name: str, value: Any) -> Any:
    """``value`` of the head parameter ``name`` (`HEAD_RULES`), normalised, or ``TypeError`` (wrong type) /
    ``ValueError`` (out of range) naming the parameter, the value and what is allowed."""
    return check_rule(HEAD_RULES[name], name, value)


def check_class_weight(class_weight: Any, num_classes: int) -> str | list[float] | None:
    """``class_weight`` as a head keeps it: None, ``"balanced"``, or one positive weight per class id (from a
    sequence of ``num_classes`` weights, or a ``{class id: weight}`` dict whose missing ids weigh 1, as in
    scikit-learn)."""
    if class_weight is None or class_weight == "balanced":
        return class_weight
    problem = f"class_weight must be None, 'balanced', {num_classes} weights or a dict of class id -> weight"
    if isinstance(class_weight, Mapping):
        if not all(isinstance(k, numbers.Integral) and 0 <= k < num_classes for k in class_weight):
            raise ValueError(f"{problem}; got ids {sorted(class_weight, key=str)} for {num_classes} classes")
        class_weight = [class_weight.get(k, 1.0) for k in range(num_classes)]
    if isinstance(class_weight, str) or not hasattr(class_weight, "__len__") or len(class_weight) != num_classes:
        raise ValueError(f"{problem}, got {class_weight!r}")
    weights = [float(w) for w in class_weight]
    if not all(math.isfinite(w) and w > 0 for w in weights):
        raise ValueError(f"class_weight weights must be finite and > 0, got {weights}")
    return weights


def class_weight_vector(class_weight: str | list[float] | None, y: np.ndarray, num_classes: int) -> np.ndarray | None:
    """The weight of each class id (``check_class_weight``'s forms): ``"balanced"`` gives a class of the
    single-label ids ``y`` ``n / (C * count)`` (C classes present; scikit-learn's formula), a class absent from
    ``y`` weight 1."""
    if class_weight is None:
        return None
    if class_weight != "balanced":
        return np.asarray(class_weight, dtype=np.float64)
    ids, counts = np.unique(y, return_counts=True)
    weights = np.ones(num_classes, dtype=np.float64)
    weights[ids] = len(y) / (len(ids) * counts)
    return weights
