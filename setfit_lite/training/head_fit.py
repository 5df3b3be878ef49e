"""The head's features and its fitting.

The head is fitted and evaluated on the embeddings ``predict`` computes (`SetFitModel.embed_tokens`, in the
model's ``inference_precision``, whatever precision trained the body), so it is applied to features of the
precision it was fitted on (measured in docs/benchmarks/training_speed.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from trainers import Backend

from ..heads.linear import is_lr
from ..heads.sklearn_head import SklearnHead
from ..heads.torch_head import EpochHook
from ..training_args import TrainingArguments


def gather_embeddings(model: Any, tokens: list[list[int]], backend: Backend) -> np.ndarray:
    """Embeddings of all ``tokens``: each rank embeds its share, rank order restores the input order."""
    positions = np.fromiter(backend.iter_shard(range(len(tokens))), dtype=np.int64)
    local = model.embed_tokens([tokens[i] for i in positions])
    if not backend.is_distributed:
        return local
    out = np.empty((len(tokens), local.shape[1]), dtype=np.float32)
    for pos, emb in backend.gather_object((positions, local)):
        out[pos] = emb
    return out


def weigh_classes(head: Any, ids: np.ndarray, args: TrainingArguments) -> Any:
    """Give ``head`` the class weights ``args.head_class_weight`` asks for on the training ids ``ids``; returns the
    head's class weight (one it already has, e.g. from ``head_params``, is kept, and so is an explicit
    ``head_params={"class_weight": None}``).

    ``"auto"`` means ``"balanced"`` for single-label ids whose classes have unequal counts, else none (equal
    counts: the weights would all be 1). Heads without a
    ``class_weight`` (an sklearn estimator that takes none) and multi-label ids are left as they are.
    """
    if isinstance(head, torch.nn.Module):
        own, params = getattr(head, "class_weight", None), None
    else:
        params = head.estimator.get_params(deep=False)
        if "class_weight" not in params:
            return None
        own = params["class_weight"]
    wish = args.head_class_weight
    if wish == "auto":
        wish = "balanced" if ids.ndim == 1 and np.ptp(np.unique(ids, return_counts=True)[1]) > 0 else None
    if own is not None or getattr(head, "class_weight_given", False) or wish is None or ids.ndim > 1:
        return own  # the head's own weights, also an explicit class_weight=None of head_params
    if params is None:
        head.class_weight = wish
    else:
        head.estimator.set_params(class_weight=wish)
    return wish


def fit_head(head: Any, embeddings: np.ndarray, ids: np.ndarray, args: TrainingArguments,
             hook: EpochHook | None = None) -> Any:
    """Fit ``head`` on fixed embeddings (with the class weights of `weigh_classes`, which it returns): a
    torch head with the classifier-phase arguments (``hook`` told of its epochs), others as estimators."""
    class_weight = weigh_classes(head, ids, args)
    if isinstance(head, torch.nn.Module):
        head.fit(embeddings, ids, epochs=args.classifier_num_epochs, lr=args.head_learning_rate,
                 batch_size=args.classifier_batch_size, weight_decay=args.l2_weight or 0.0, seed=args.seed,
                 hook=hook)
    else:
        head.fit(embeddings, ids)
    return class_weight


def add_label_prior(head: Any, embeddings: np.ndarray, anchors: np.ndarray, temperature: float) -> str | None:
    """Fold the label texts into a fitted logistic-regression head as a prior; returns why not, or None.

    The head's probabilities are multiplied by a softmax over ``cos(embedding, label text) / temperature`` and
    renormalised. With unit-length embeddings that product is again a logistic regression: class ``k``'s
    weights gain ``anchor_k / temperature`` (binary heads: ``(anchor_1 - anchor_0) / temperature``), so the head
    keeps its type, its files and its ONNX graph. Needs unit-length embeddings (cosine = dot product) and a plain
    single-label ``LogisticRegression``.
    """
    estimator = getattr(head, "estimator", None)
    if not is_lr(estimator) or getattr(head, "multi_label", False):
        return "the head is not a single-label LogisticRegression"
    if not np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-3):
        return "the embeddings are not unit length (cosine is not a dot product)"
    _add_directions(estimator, anchors / np.linalg.norm(anchors, axis=1, keepdims=True) / temperature)
    return None


def _add_directions(estimator: Any, directions: np.ndarray) -> None:
    """Add row ``k`` of ``directions`` to class ``k``'s weights of a fitted logistic regression (binary: the
    difference of the two rows, as its single weight row is class 1 against class 0)."""
    classes = estimator.classes_
    if estimator.coef_.shape[0] == 1:
        estimator.coef_ = estimator.coef_ + (directions[classes[1]] - directions[classes[0]])[None, :]
    else:
        estimator.coef_ = estimator.coef_ + directions[classes]


def single_text_classes(texts: list[str], ids: np.ndarray) -> bool:
    """Whether every class of single-label ``ids`` has exactly one distinct text (a zero-shot templated set)."""
    if ids.ndim != 1 or len(ids) == 0:
        return False
    distinct: dict[int, set[str]] = {}
    for text, label in zip(texts, ids.tolist()):
        distinct.setdefault(label, set()).add(text)
    return all(len(group) == 1 for group in distinct.values())


def fit_prototypes(head: Any, embeddings: np.ndarray, ids: np.ndarray, temperature: float) -> None:
    """Make a logistic-regression head the nearest class prototype by cosine.

    The head is fitted (for its attributes), then its intercepts are set to zero and class ``k``'s weights to
    the unit mean embedding of its rows over ``temperature``: the scores are ``cos(x, prototype_k) / T`` for
    unit-length embeddings, and any embedding's predicted class is its nearest prototype by cosine.
    """
    estimator = head.estimator
    head.fit(embeddings, ids)
    num_classes = int(ids.max()) + 1
    prototypes = np.zeros((num_classes, embeddings.shape[1]), dtype=np.float64)
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    np.add.at(prototypes, ids, unit)
    norms = np.linalg.norm(prototypes, axis=1, keepdims=True)
    prototypes = np.divide(prototypes, norms, out=np.zeros_like(prototypes), where=norms > 0)
    estimator.coef_ = np.zeros_like(estimator.coef_)
    estimator.intercept_ = np.zeros_like(estimator.intercept_)
    _add_directions(estimator, prototypes / temperature)


def check_head_fits(head: Any, ids: np.ndarray, labels: Sequence[Any]) -> None:
    """ValueError, before any training, for a head that cannot fit: a scikit-learn head's parameters that
    scikit-learn refuses (`SklearnHead.check_params`), or labels it cannot fit: a scikit-learn head that fits one
    classifier per label (`multi_target_strategy` "multi-output" or "classifier-chain") needs each label present in
    some texts and absent from others (scikit-learn's own error came after the body had trained); one-vs-rest
    predicts a constant label as it is.

    Args:
        head: The head training will fit (unfitted).
        ids: The encoded training labels (multi-hot rows for multi-label).
        labels: The label names, in the columns' order.

    Raises:
        ValueError: A parameter scikit-learn refuses (its `InvalidParameterError`, also a `TypeError`), or a label
            that every text has, or none has, with such a head.
    """
    if isinstance(head, SklearnHead):
        head.check_params()
    strategy = getattr(head, "multi_target_strategy", None)
    if ids.ndim != 2 or strategy not in ("multi-output", "classifier-chain"):
        return
    constant = [(label, "every" if column.min() else "no") for label, column in zip(labels, ids.T)
                if column.min() == column.max()]
    if constant:
        shown = ", ".join(f"{label!r} ({which} text has it)" for label, which in constant)
        raise ValueError(f"multi_target_strategy={strategy!r} fits one classifier per label, which needs texts with "
                         f"and without each label: {shown}; use 'one-vs-rest' (the default) or add such texts")
