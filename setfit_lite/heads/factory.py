"""Building a head from what the user asked for, and loading whichever head a folder holds."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from torch import nn

from ..serialization import load_json
from .common import HEAD_CONFIG_NAME
from .sklearn_head import SklearnHead
from .torch_head import TorchHead
from .validation import check_head_param

SKLEARN_HEAD_NAMES = ("logistic_regression", "sklearn")  # the first is the default head
TORCH_HEAD_NAMES = ("differentiable", "torch")  # the first is the default differentiable head
# The default logistic regression's C from this many classes on (single-label): 150 classes of normalised
# embeddings need larger weights to separate than C=1 allows. Chosen on CLINC150's validation split (8 per class,
# MiniLM-L6, seeds 0-1: C=1 86.2/87.6, C=10 87.6/88.3, C=100 88.7/88.7; Emotion's 6 classes: C=1 51.3, C=100
# 50.8); benchmarks/results/head_regularisation.md. TREC's 50 fine classes were not measured and keep C=1.
MANY_CLASSES = 65
MANY_CLASSES_C = 100.0


def default_logistic_params(num_classes: int | None, multi_label: bool) -> dict[str, Any]:
    """The default logistic regression's parameters for ``num_classes`` classes (``head_params`` override them)."""
    params: dict[str, Any] = {"max_iter": 1000}
    if not multi_label and num_classes is not None and num_classes >= MANY_CLASSES:
        params["C"] = MANY_CLASSES_C
    return params


def load_head(
    folder: str | Path, *, trusted_types: Sequence[str] = (), device: str | torch.device | None = None
) -> SklearnHead | TorchHead:
    """Load a saved head, whichever kind `folder/head_config.json` describes (no pickle is ever read).

    Args:
        folder: The head's folder (a saved model's `head/`).
        trusted_types: The types a `head.skops` file may hold beyond skops' own trusted ones.
        device: The device a torch head is loaded on; None for the CPU.

    Returns:
        A [`SklearnHead`][setfit_lite.heads.sklearn_head.SklearnHead] or a torch head.

    Raises:
        ValueError: A config of an unknown head type, or files that disagree with it.
    """
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
    """Build an unfitted head; every call returns a fresh, independent one (instances are copied, estimators with
    `sklearn.base.clone`).

    Args:
        head: None (a logistic regression, or a torch head with `use_differentiable_head`), a name
            (`"logistic_regression"`/`"sklearn"` or `"differentiable"`/`"torch"`), a scikit-learn estimator
            instance, or an unfitted head (checked against the data).
        num_classes: The classes K.
        multi_label: Whether labels are multi-hot rows.
        multi_target_strategy: A scikit-learn head's multi-label wrapper (see `SklearnHead`); a torch head
            ignores it (multi-label always means independent sigmoids).
        in_features: The embedding dimension (needed by a torch head).
        use_differentiable_head: Whether `head=None` builds a torch head.
        **head_kwargs: The torch head's arguments (see [`SetFitHead`][setfit_lite.heads.torch_head.SetFitHead])
            or the `LogisticRegression`'s.

    Returns:
        A [`SklearnHead`][setfit_lite.heads.sklearn_head.SklearnHead] or a torch head.

    Raises:
        ValueError: An unknown name, or a head or arguments that disagree with the data.
        TypeError: Arguments the head does not take.
    """
    check_head_param("num_classes", num_classes)
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
        head = TORCH_HEAD_NAMES[0] if use_differentiable_head else SKLEARN_HEAD_NAMES[0]
    if isinstance(head, str):
        if head in TORCH_HEAD_NAMES:
            if in_features is None or num_classes is None:
                raise ValueError("a differentiable head needs in_features (embedding size) and num_classes")
            _check_setfit_head_kwargs(head_kwargs, in_features, num_classes, multi_label)
            return TorchHead(in_features, num_classes, multi_label=multi_label, **head_kwargs)
        if head in SKLEARN_HEAD_NAMES:
            if use_differentiable_head:
                raise ValueError(f"head {head!r} is not differentiable but use_differentiable_head=True")
            estimator = LogisticRegression(**{**default_logistic_params(num_classes, multi_label), **head_kwargs})
            return SklearnHead(estimator, num_classes, multi_label, multi_target_strategy)
        raise ValueError(f"unknown head {head!r}; valid names: {', '.join(SKLEARN_HEAD_NAMES + TORCH_HEAD_NAMES)}")
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


def _check_setfit_head_kwargs(head_kwargs: dict[str, Any], in_features: int, num_classes: int,
                              multi_label: bool) -> None:
    """Take setfit's ``SetFitHead`` parameters out of ``head_kwargs`` where the data and the body decide them:
    ``in_features``, ``out_features`` (1 means 2 classes, as in setfit) and ``multitarget`` must agree with them."""
    given = {name: head_kwargs.pop(name) for name in ("in_features", "out_features", "multitarget")
             if name in head_kwargs}
    if given.get("in_features", in_features) != in_features:
        raise ValueError(f"head_params in_features={given['in_features']} but the body's embeddings have "
                         f"{in_features} features")
    out_features = given.get("out_features", num_classes)
    if out_features != num_classes and not (out_features == 1 and num_classes == 2):
        raise ValueError(f"head_params out_features={out_features} but the training data has {num_classes} classes")
    if given.get("multitarget", multi_label) != bool(multi_label):
        raise ValueError(f"head_params multitarget={given['multitarget']} but the training data is "
                         f"{'multi-label' if multi_label else 'single-label'}")
